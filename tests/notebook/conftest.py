"""Real IPython shells with the extension loaded: one per model, loaded once per session.

``smollm2_shell`` is the process's ``InteractiveShell`` singleton (so ``capture_output`` and
``get_ipython()`` see it); the tiny reasoner and model-less shells are further instances.
Tests keep apart by using their own ``--session`` names.
"""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell


def _shell(*, singleton: bool = False) -> InteractiveShell:
    shell = InteractiveShell.instance() if singleton else InteractiveShell()
    shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "mlx_notebook")
    return shell


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
