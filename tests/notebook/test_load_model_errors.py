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
    # A repo id is looked up in the local cache before the loaded model is given up; its
    # name keeps its capitals.
    ("Acme/Not-Cached", "%load_model: Acme/Not-Cached is not in the local Hugging Face cache;"),
    # Flags of a remote engine without --remote were ignored: the default model loaded.
    ("--api-key k --model m", "%load_model: --api-key and --model are only for --remote URL (a "
                              "server's model); a local model is the spec, e.g. %load_model "
                              "tiny-reasoner."),
    ("{tiny} --timeout 5", "%load_model: --timeout is only for --remote URL (a server's model)"),
    # Default sampling is checked before the loaded model is given up (it was unloaded first).
    ("{tiny} --temp -1", "%load_model: --temperature must be at least 0, got -1.0."),
    ("{tiny} --top-k -3", "%load_model: --top-k must be at least 0, got -3."),
    ("{tiny} --max-tokens 0", "%load_model: --max-tokens must be at least 1, got 0."),
    ("{tiny} --temp nan", "%load_model: --temperature must be a finite number, got nan."),
])
def test_a_spec_adapter_or_draft_that_cannot_load_keeps_the_loaded_model(
        shell, tiny_reasoner_path, capsys, flags, message):
    engine = _magics(shell).engine
    result = shell.run_cell(f"%load_model {flags.format(tiny=tiny_reasoner_path)} --no-progress")
    assert not result.success
    err = capsys.readouterr().err
    assert message.format(tiny=tiny_reasoner_path) in err and "Traceback" not in err
    assert "unloaded" not in err
    assert _magics(shell).engine is engine and engine.healthy
    assert shell.run_cell("%%chat --max-tokens 4\nWhat is 17 + 25?").success


def _copy(tiny_reasoner_path, tmp_path):
    import shutil

    copy = tmp_path / "Broken Model"
    shutil.copytree(tiny_reasoner_path, copy)
    return copy


def test_a_config_that_is_not_json_and_a_bad_template_file_keep_the_loaded_model(
        shell, tiny_reasoner_path, tmp_path, capsys):
    engine = _magics(shell).engine
    broken = _copy(tiny_reasoner_path, tmp_path)
    (broken / "config.json").write_text("{")
    template = tmp_path / "chat.jinja"
    template.write_text("{% for m in messages %}{{ m.content }")
    for line, message in [
        (f"'{broken}'", f"%load_model: {broken}/config.json is not valid JSON ("),
        (f"{tiny_reasoner_path} --chat-template {template}",
         "%load_model: the chat template given has a syntax error on line 1 (unexpected '}'); fix it."),
    ]:
        result = shell.run_cell(f"%load_model {line} --no-progress")
        assert not result.success and str(result.error_in_exec).startswith(message)
        assert _magics(shell).engine is engine and engine.healthy
    capsys.readouterr()


def test_a_model_only_loading_can_refuse_says_the_old_one_was_unloaded_and_how_to_reload_it(
        tiny_reasoner_path, tmp_path, capsys):
    import mlx.core as mx

    shell = _shell()
    try:
        assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
        broken = _copy(tiny_reasoner_path, tmp_path)
        (weights,) = broken.glob("*.safetensors")
        tensors = mx.load(str(weights))
        name = next(k for k in tensors if k.endswith("embed_tokens.weight"))
        tensors[name] = tensors[name][:, :8]
        mx.save_safetensors(str(weights), tensors)
        assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress "
                              "--fused-first-token --cudnn-for-few-rows").success
        assert _magics(shell).engine.config.fused_first_token
        assert _magics(shell).engine.config.cudnn_for_few_rows
        capsys.readouterr()
        assert shell.run_cell("%mlx status").success
        assert ("engine: healthy, first token read with the prompt's last chunk "
                "(--fused-first-token), cuDNN attention for short passes "
                "(--cudnn-for-few-rows)\n") in capsys.readouterr().out
        result = shell.run_cell(f"%load_model '{broken}' --no-progress")
        message = str(result.error_in_exec)
        assert message.startswith(f"%load_model: cannot load the model at {broken} (ValueError: "
                                  "Expected shape")
        assert message.endswith(" The model loaded before was unloaded to make room; "
                                f"%load_model {tiny_reasoner_path} --fused-first-token "
                                "--cudnn-for-few-rows loads it again.")
        assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
        # A default max_tokens past the model's context is only known once it has loaded;
        # it used to load and then fail every %%chat over a flag the cell never set.
        result = shell.run_cell(f"%load_model {tiny_reasoner_path} --max-tokens 99999 "
                                "--no-progress")
        assert str(result.error_in_exec) == (
            "%load_model: --max-tokens must be at most 2048 (the model's context), got 99999. "
            f"The model loaded before was unloaded to make room; %load_model {tiny_reasoner_path} "
            "loads it again.")
        assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
    finally:
        shell.run_line_magic("unload_ext", "mlx_notebook")
