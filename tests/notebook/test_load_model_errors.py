"""A ``%load_model`` that cannot succeed says why in one sentence and keeps the loaded model."""

from __future__ import annotations

import pytest

from conftest import _shell

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def shell(tiny_reasoner_path):
    shell = _shell()
    assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
    yield shell
    shell.run_line_magic("unload_ext", "mlx_notebook")


def _magics(shell):
    return shell.magics_manager.registry["MlxMagics"]


@pytest.mark.parametrize("flags, message", [
    ("/nonexistent/model", "%load_model: no such model directory: /nonexistent/model."),
    ("{tiny} --adapter /nonexistent", "%load_model: no adapter at /nonexistent: give the directory "
                                       "mlx_lm.lora wrote, with adapter_config.json and the adapter "
                                       "weights."),
    ("{tiny} --adapter {tiny}", "%load_model: no adapter at {tiny}:"),
    ("{tiny} --draft-model /nonexistent/draft", "%load_model: no such model directory: /nonexistent/draft."),
])
def test_a_spec_adapter_or_draft_that_cannot_load_keeps_the_loaded_model(
        shell, tiny_reasoner_path, capsys, flags, message):
    engine = _magics(shell).engine
    result = shell.run_cell(f"%load_model {flags.format(tiny=tiny_reasoner_path)} --no-progress")
    assert not result.success
    err = capsys.readouterr().err
    assert message.format(tiny=tiny_reasoner_path) in err and "Traceback" not in err
    assert _magics(shell).engine is engine and engine.healthy
    assert shell.run_cell("%%chat --max-tokens 4\nWhat is 17 + 25?").success
