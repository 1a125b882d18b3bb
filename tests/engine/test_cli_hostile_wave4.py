"""The ``mlx-notebook`` command line as a script drives it: ``models --remove "$NAME"`` with
``NAME`` empty must fail, not list the store and succeed."""

from __future__ import annotations

import pytest

from mlx_notebook.engine.cli import main as cli_main


@pytest.mark.parametrize("name", ["", "  "])
def test_removing_an_empty_name_fails_instead_of_listing(tmp_path, monkeypatch, capsys, name):
    # Before: '' read as "no --remove", so the store was listed and the exit status was 0: a
    # cleanup script whose variable was unset reported success and removed nothing.
    monkeypatch.setenv("MLX_NOTEBOOK_CACHE", str(tmp_path))
    assert cli_main(["models", "--remove", name]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (f"mlx-notebook models: The model store has nothing called "
                                 f"{name!r}: `mlx-notebook models` lists what it holds.\n")
