"""Real IPython shells with the extension loaded: one per model, loaded once per session, and
the helpers tests run cells with (``run``, ``fails_with``, ``magics_of``).

``smollm2_shell`` is the process's ``InteractiveShell`` singleton (so ``capture_output`` and
``get_ipython()`` see it); the tiny reasoner and model-less shells are further instances.
Tests keep apart by using their own ``--session`` names.
"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell


def _shell(*, singleton: bool = False) -> InteractiveShell:
    shell = InteractiveShell.instance() if singleton else InteractiveShell()
    shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "mlx_notebook")
    return shell


def magics_of(shell: InteractiveShell):
    return shell.magics_manager.registry["MlxMagics"]


def run(shell: InteractiveShell, source: str, capsys):
    """Run a cell; return (result, stdout, stderr)."""
    capsys.readouterr()
    result = shell.run_cell(source)
    out, err = capsys.readouterr()
    return result, out, err


def fails_with(shell: InteractiveShell, source: str, message: str, capsys) -> None:
    """The cell fails with exactly ``message``, printed as one line (no traceback)."""
    capsys.readouterr()
    result = shell.run_cell(source)
    _, err = capsys.readouterr()
    error = result.error_in_exec or result.error_before_exec
    assert isinstance(error, UsageError), error
    assert str(error) == message
    assert err == f"UsageError: {message}\n"


def _load(shell: InteractiveShell, path) -> None:
    result = shell.run_cell(f"%load_model {path} --no-progress")
    assert result.success, result.error_in_exec


@pytest.fixture(scope="session")
def smollm2_shell(smollm2_path):
    shell = _shell(singleton=True)
    _load(shell, smollm2_path)
    yield shell
    shell.run_line_magic("unload_ext", "mlx_notebook")


@pytest.fixture(scope="session")
def reasoner_shell(tiny_reasoner_path):
    shell = _shell()
    _load(shell, tiny_reasoner_path)
    yield shell
    shell.run_line_magic("unload_ext", "mlx_notebook")


@pytest.fixture
def bare_shell():
    """The extension loaded, no model."""
    shell = _shell()
    yield shell
    shell.run_line_magic("unload_ext", "mlx_notebook")
