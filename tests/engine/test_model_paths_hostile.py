"""Model specs and directories a newcomer gets wrong: absurd sizes in config.json, a model
without a tokenizer, ``~user`` paths, an alias spelled as its model card spells it, and a
store entry damaged after it was built. Each is one sentence naming the path, or mended."""

from __future__ import annotations

import json
import shutil

import pytest

from mlx_notebook.engine import EngineError
from mlx_notebook.engine.models._store import _checked_mlx_dir, check_model_spec, resolve_model

pytestmark = pytest.mark.model


@pytest.fixture
def broken(tmp_path, tiny_reasoner_path):
    copy = tmp_path / "model"
    shutil.copytree(tiny_reasoner_path, copy)
    return copy


def refusal(spec) -> str:
    with pytest.raises(EngineError) as caught:
        check_model_spec(str(spec))
    return str(caught.value)


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
    assert refusal(broken) == (f"{broken}/config.json says {key} is {value!r}; a size is a whole "
                               "number from 1 to 2,147,483,647: fix or re-download the model.")


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
