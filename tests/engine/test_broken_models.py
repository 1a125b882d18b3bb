"""A broken model directory is refused in one sentence naming the file and the fix, before a
loaded model is given up for it wherever the damage can be seen without loading (a config that
is not JSON, a layer count the weights do not hold, a cut download); what only loading shows
(a tensor of the wrong shape) is one sentence too."""

from __future__ import annotations

import json
import shutil
import sys

import mlx.core as mx
import pytest

from mlx_notebook.engine import Engine, EngineConfig, EngineError
from mlx_notebook.engine.models._store import _checked_mlx_dir, check_model_spec, resolve_model

pytestmark = pytest.mark.model


def refusal(spec) -> str:
    with pytest.raises(EngineError) as caught:
        check_model_spec(str(spec))
    return str(caught.value)


def test_a_config_that_is_not_a_configuration_is_refused_by_name(broken):
    (broken / "config.json").write_text("{model_type: qwen3")
    assert refusal(broken).startswith(f"{broken}/config.json is not valid JSON (")
    (broken / "config.json").write_text('["qwen3"]')
    assert refusal(broken) == (f"{broken}/config.json is not a model configuration: it needs a "
                               'JSON object with a "model_type"; fix or re-download the model.')


def test_a_layer_count_the_weights_do_not_hold_is_refused_before_anything_is_built(broken):
    config = json.loads((broken / "config.json").read_text())
    held = config["num_hidden_layers"]
    (broken / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 10**9}))
    assert refusal(broken) == (f"{broken}/config.json says 1000000000 layers but the weights hold "
                               f"{held}: the configuration does not match the weights.")
    (broken / "config.json").write_text(json.dumps({**config, "num_hidden_layers": -1}))
    assert "num_hidden_layers is -1" in refusal(broken)


def test_a_cut_download_is_refused_with_its_sizes(broken):
    (weights,) = broken.glob("*.safetensors")
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    assert refusal(broken) == (f"{weights} is not a whole safetensors file: it is cut short "
                               f"({len(data) // 2:,} of {len(data):,} bytes); re-download or "
                               f"re-import the model at {broken}.")


def test_float_layers_stored_as_integers_are_refused_before_loading(broken, smollm2_4bit_path):
    (weights,) = broken.glob("*.safetensors")
    tensors = mx.load(str(weights))
    name = "model.layers.1.self_attn.k_proj.weight"
    tensors[name] = tensors[name].astype(mx.int32)
    mx.save_safetensors(str(weights), tensors)
    assert refusal(broken) == (
        f"{broken} stores {name} as I32 with no quantization scales beside it (1 such weight): a "
        "model runs on float or quantized weights; re-convert or re-download it.")
    assert check_model_spec(str(smollm2_4bit_path))  # packed uint32 beside its scales: fine

def test_weights_holding_nan_are_refused_at_load(broken):
    (weights,) = broken.glob("*.safetensors")
    tensors = mx.load(str(weights))
    name = "model.layers.1.mlp.up_proj.weight"
    spoiled = tensors[name]
    tensors[name] = mx.where(mx.arange(spoiled.size).reshape(spoiled.shape) == 7, mx.nan, spoiled)
    mx.save_safetensors(str(weights), tensors)
    with pytest.raises(EngineError) as caught:
        Engine(str(broken), progress=False)
    assert str(caught.value) == (f"The weights at {broken} hold NaN ({name} is the first): the "
                                 "model cannot compute a reply; re-convert or re-download it.")

def test_urls_and_links_to_nowhere_say_what_they_are(tmp_path):
    assert refusal("https://huggingface.co/Qwen/Qwen3-0.6B").endswith(
        "is a URL: models load from this machine (no model hub is asked); download it and give "
        "its directory or .gguf file.")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert refusal(tmp_path / "a") == f"{tmp_path / 'a'} is a symbolic link that leads to no directory."


def test_a_tensor_of_the_wrong_shape_fails_the_load_in_one_sentence(broken):
    (weights,) = broken.glob("*.safetensors")
    tensors = mx.load(str(weights))
    name = next(k for k in tensors if k.endswith("embed_tokens.weight"))
    tensors[name] = tensors[name][:, :8]
    mx.save_safetensors(str(weights), tensors)
    with pytest.raises(EngineError) as caught:
        Engine(str(broken), progress=False)
    message = str(caught.value)
    assert message.startswith(f"Cannot load the model at {broken} (ValueError: Expected shape")
    assert message.endswith("fix or re-download it.") and "\n" not in message


@pytest.mark.parametrize("options, message", [
    ({"max_kv_size": 2**31}, "max_kv_size must be at most 1,073,741,824 tokens, not 2,147,483,648."),
    ({"max_kv_size": 2}, "max_kv_size must be a whole number of at least 8, not 2."),
    ({"prompt_cache_bytes": "lots"}, "prompt_cache_bytes must be a whole number of at least 0, not 'lots'."),
    ({"fused_first_token": "yes"}, "fused_first_token must be True or False, not 'yes'."),
    ({"cudnn_for_few_rows": 1}, "cudnn_for_few_rows must be True or False, not 1."),
    ({"chat_template": "  "}, "The chat template given is empty: give a Jinja template, or leave "
                              "it out to use the model's own."),
    ({"chat_template": "{% for m in messages %}{{ m.content }"},
     "The chat template given has a syntax error on line 1 (unexpected '}'); fix it."),
])
def test_engine_options_no_model_could_use_are_refused_in_one_sentence(tiny_reasoner_path, options, message):
    with pytest.raises(EngineError) as caught:
        EngineConfig(model_spec=str(tiny_reasoner_path), **options)
    assert str(caught.value) == message


def test_an_empty_adapter_draft_or_spec_is_none(tiny_reasoner_path):
    config = EngineConfig(model_spec=str(tiny_reasoner_path), adapter_path="", draft_model=" ",
                          prompt_cache_bytes=2e6, fused_first_token=None,
                          cudnn_for_few_rows=None)
    assert (config.adapter_path, config.draft_model, config.prompt_cache_bytes) == (None, None, 2_000_000)
    assert config.fused_first_token is False and config.cudnn_for_few_rows is False
    # A blank spec is the default model, named as such (%load_model '  ' was named "  ").
    assert EngineConfig(model_spec="   ").model_spec is None


@pytest.mark.parametrize("template, message", [
    (7, "The model's chat template is not a Jinja template (tokenizer_config.json holds int); "
        "pass chat_template=... to use another one."),
    ("{{ 'x' * 2000000 }}", "The model's chat template cannot be used: one short message renders "
                            "as 2,000,000 characters; pass chat_template=... to use another one."),
])
def test_a_model_template_no_request_could_use_is_refused_at_load(broken, template, message):
    settings = json.loads((broken / "tokenizer_config.json").read_text())
    (broken / "tokenizer_config.json").write_text(json.dumps({**settings, "chat_template": template}))
    (broken / "chat_template.jinja").unlink(missing_ok=True)
    with pytest.raises(EngineError) as caught:
        Engine(str(broken), progress=False)
    assert str(caught.value) == message


def test_a_model_template_that_never_ends_is_refused_at_load(broken, monkeypatch):
    from mlx_notebook.engine.request import _rendering

    monkeypatch.setattr(_rendering, "_SAMPLE_RENDER_SECONDS", 1.0)
    endless = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    settings = json.loads((broken / "tokenizer_config.json").read_text())
    (broken / "tokenizer_config.json").write_text(json.dumps({**settings, "chat_template": endless}))
    (broken / "chat_template.jinja").unlink(missing_ok=True)
    tracer = sys.gettrace()
    with pytest.raises(EngineError) as caught:
        Engine(str(broken), progress=False)
    assert str(caught.value) == (
        "The model's chat template cannot be used: one short message took more than 1 s to "
        "render (a loop that does not end); pass chat_template=... to use another one.")
    assert sys.gettrace() is tracer  # a debugger's or coverage's tracer is put back

def test_templates_transformers_accepts_are_accepted(broken, tiny_reasoner_path):
    own = json.loads((broken / "tokenizer_config.json").read_text()).get("chat_template")
    own = own or (broken / "chat_template.jinja").read_text()
    settings = json.loads((broken / "tokenizer_config.json").read_text())
    (broken / "tokenizer_config.json").write_text(json.dumps({**settings, "chat_template": {
        "default": own, "tool_use": own}}))  # named templates, as Hermes-2-Pro ships them
    (broken / "chat_template.jinja").unlink(missing_ok=True)
    with Engine(str(broken), progress=False) as engine:
        assert engine.chat_completions({"messages": [{"role": "user", "content": "What is 17 + 25?"}],
                                        "max_tokens": 3})["choices"]
    looped = "{% for m in messages %}{% if loop.index > 9 %}{% break %}{% endif %}{{ m.content }}{% endfor %}"
    assert EngineConfig(model_spec=str(tiny_reasoner_path), chat_template=looped).chat_template == looped


def test_a_load_that_fails_keeps_nothing_of_the_model_it_read(broken):
    import gc

    (broken / "tokenizer.json").write_text("{not json")  # fails after the weights are read
    weights = sum(p.stat().st_size for p in broken.glob("*.safetensors"))
    gc.collect()
    before = mx.get_active_memory()
    with pytest.raises(EngineError) as caught:
        Engine(str(broken), progress=False)
    assert "tokenizer.json" in str(caught.value)
    gc.collect()
    assert mx.get_active_memory() - before < weights / 4  # the traceback held them before


def test_what_this_mlx_lm_cannot_run_says_to_upgrade_it(broken):
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "model_type": "frobnicator"}))
    with pytest.raises(EngineError) as caught:
        Engine(str(broken), progress=False)
    assert str(caught.value).endswith("(ValueError: Model type frobnicator not supported); this "
                                      "mlx-lm cannot run that architecture: upgrade mlx-lm.")


def test_a_missing_shard_and_a_malformed_repo_id_are_named(broken):
    (broken / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"a": "model.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    assert refusal(broken) == (f"{broken} lacks model-00002-of-00002.safetensors, which its "
                               "model.safetensors.index.json names; finish the download.")
    assert refusal("my model/x") == "No such model directory or Hugging Face repo id: my model/x."


# -- what a newcomer gets wrong: absurd sizes, no tokenizer, ~user paths, an alias spelled as
# its model card spells it, a store entry damaged after it was built (mended, or one sentence)
@pytest.mark.parametrize("key, value", [
    ("vocab_size", -1),           # mlx-lm: a bare AssertionError
    ("hidden_size", 0),           # a ZeroDivisionError
    ("num_attention_heads", 0),
    ("hidden_size", "64"),        # a TypeError
    ("intermediate_size", 10**12),
])
def test_a_size_no_model_has_is_refused_by_name(broken, key, value):
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, key: value}))
    least = 0 if key == "intermediate_size" else 1
    assert refusal(broken) == (f"{broken}/config.json says {key} is {value!r}; a size is a whole "
                               f"number from {least} to 2,147,483,647: fix or re-download the model.")


def test_a_config_without_a_dense_mlp_is_not_refused(broken):
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "intermediate_size": 0}))
    assert check_model_spec(str(broken))[0] == "dir"


def test_a_model_without_tokenizer_files_is_refused_not_given_an_empty_tokenizer(broken):
    # With no tokenizer file at all, transformers built a one-token tokenizer and the model
    # loaded and answered gibberish; with tokenizer.json alone missing, a paragraph on sentencepiece.
    (broken / "tokenizer.json").unlink()
    message = (f"{broken} has no tokenizer (no tokenizer.json, tokenizer.model or vocab.json): "
               "copy the model's tokenizer files into it or re-download it.")
    assert refusal(broken) == message
    (broken / "tokenizer_config.json").unlink()
    assert refusal(broken) == message


def test_a_home_folder_of_a_user_this_machine_lacks_is_one_sentence():
    assert refusal("~no-such-user-here/models/qwen") == (
        "~no-such-user-here/models/qwen names nothing here: this machine has no user "
        "'no-such-user-here' (~no-such-user-here is that user's home folder).")


def test_an_alias_spelled_as_the_model_card_spells_it_is_the_alias():
    assert check_model_spec("Tiny-Reasoner") == ("tiny-reasoner", "tiny-reasoner")
    assert check_model_spec("SmolLM2-135M-Instruct")[0] == "default"


@pytest.mark.parametrize("damage", ["no config.json", "weights cut short", "a file in its place"])
def test_a_store_entry_damaged_after_it_was_built_is_rebuilt(tmp_path, monkeypatch,
                                                             tiny_reasoner_path, damage):
    store = tmp_path / "store"
    monkeypatch.setenv("MLX_NOTEBOOK_CACHE", str(store))
    entry = store / "models" / tiny_reasoner_path.name
    shutil.copytree(tiny_reasoner_path, entry)
    if damage == "no config.json":  # was a raw OSError (Directory not empty), on every load
        (entry / "config.json").unlink()
    elif damage == "weights cut short":  # was handed to the loader, to fail on every load
        weights = entry / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:1000])
    else:  # was a raw NotADirectoryError
        shutil.rmtree(entry)
        entry.write_text("not a model")
    assert resolve_model("tiny-reasoner", progress=False) == entry
    assert _checked_mlx_dir(entry) == entry
    assert sorted(p.name for p in entry.parent.iterdir()) == [entry.name]  # nothing half-built


def test_a_store_entry_that_fails_to_load_says_how_to_rebuild_it(tmp_path, monkeypatch,
                                                                   tiny_reasoner_path):
    from mlx_notebook.engine import Engine

    monkeypatch.setenv("MLX_NOTEBOOK_CACHE", str(tmp_path))
    entry = tmp_path / "models" / "tiny-copy"
    shutil.copytree(tiny_reasoner_path, entry)
    (entry / "tokenizer.json").write_text('{"model": ')  # cut short after it was built
    with pytest.raises(EngineError) as caught:
        Engine(str(entry), progress=False)
    assert str(caught.value).endswith(
        "it was built into the model store: remove it (mlx-notebook models --remove "
        "tiny-copy) and load it again to rebuild it.")
