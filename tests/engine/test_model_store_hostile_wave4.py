"""Hostile files for the model store, round four: a GGUF whose metadata is malformed or does
not match its tensors, a store that cannot be written, JSON nested thousands deep. Each ends
in one sentence naming the file and the fix, and leaves no store entry behind to break the
next load."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import mlx.core as mx
import pytest

from mlx_notebook.engine import EngineError
from mlx_notebook.engine.models._store import check_model_spec, resolve_model


@pytest.fixture(scope="session")
def smollm2_metadata(smollm2_gguf) -> dict:
    """The default model's GGUF metadata: a real byte-level BPE tokenizer to build on."""
    return mx.load(str(smollm2_gguf), return_metadata=True)[1]


def _u32(value: int) -> mx.array:
    return mx.array(value, dtype=mx.uint32)


def tiny_gguf(path: Path, metadata: dict, *, drop=(), override=None, tensors=None) -> Path:
    """A one-layer llama GGUF of width 16 with SmolLM2's tokenizer, damaged as asked."""
    meta = {k: v for k, v in metadata.items() if k not in drop}
    meta.update({"llama.embedding_length": _u32(16), "llama.attention.head_count": _u32(2),
                 "llama.attention.head_count_kv": _u32(2), "llama.block_count": _u32(1),
                 "llama.feed_forward_length": _u32(32), "llama.rope.dimension_count": _u32(8),
                 "general.file_type": _u32(0)})
    meta = {k: v for k, v in meta.items() if k not in drop}
    meta.update(override or {})
    weights = {"token_embd.weight": mx.zeros((len(metadata["tokenizer.ggml.tokens"]), 16)),
               "output_norm.weight": mx.ones((16,))}
    for name, shape in [("attn_q", (16, 16)), ("attn_k", (16, 16)), ("attn_v", (16, 16)),
                        ("attn_output", (16, 16)), ("ffn_gate", (32, 16)), ("ffn_up", (32, 16)),
                        ("ffn_down", (16, 32)), ("attn_norm", (16,)), ("ffn_norm", (16,))]:
        weights[f"blk.0.{name}.weight"] = mx.zeros(shape)
    weights.update(tensors or {})
    mx.save_gguf(str(path), weights, meta)
    return path


def _leftovers(store: Path) -> list[str]:
    models = store / "models"
    return sorted(p.name for p in models.iterdir()) if models.is_dir() else []


@pytest.mark.model
def test_a_tiny_gguf_that_is_whole_imports(empty_store, tmp_path, smollm2_metadata):
    # The control for the table below: what is damaged there is all that is wrong.
    model = resolve_model(str(tiny_gguf(tmp_path / "tiny.gguf", smollm2_metadata)),
                          dtype="keep", progress=False)
    assert (model / "config.json").is_file()
    # A file type that is text is a wrong label, not a reason to refuse (was a bare ValueError).
    labelled = tiny_gguf(tmp_path / "label.gguf", smollm2_metadata, override={"general.file_type": "Q4_0"})
    assert (resolve_model(str(labelled), dtype="keep", progress=False) / "config.json").is_file()


@pytest.mark.model
@pytest.mark.parametrize("damage, message", [
    # each was a bare KeyError, ZeroDivisionError or IndexError
    ({"drop": ("tokenizer.ggml.merges",)},
     "Cannot import this GGUF file: its metadata lacks tokenizer.ggml.merges, which a byte-level "
     "BPE tokenizer needs."),
    ({"drop": ("tokenizer.ggml.token_type",)},
     "Cannot import this GGUF file: its metadata lacks tokenizer.ggml.token_type, which a "
     "byte-level BPE tokenizer needs."),
    ({"override": {"llama.attention.head_count": _u32(0)}},
     "Cannot import this GGUF file: its metadata says llama.attention.head_count is 0, and a "
     "size is a whole number of at least 1."),
    ({"override": {"llama.context_length": "long"}},
     "Cannot import this GGUF file: its metadata holds a value of the wrong kind (ValueError: "
     "invalid literal for int() with base 10: 'long')."),
    ({"tensors": {"rope_freqs": mx.zeros((4,))}},
     "Cannot import this GGUF file: unknown llama tensor rope_freqs."),
    ({"tensors": {"blk.0.attn_q": mx.zeros((4,))}},
     "Cannot import this GGUF file: unknown llama tensor blk.0.attn_q."),
    # these imported, and every load then failed saying to rebuild the entry: the same again
    ({"override": {"llama.block_count": _u32(30)}},
     "Cannot import damaged.gguf: its metadata says 30 layers (llama.block_count) but it holds "
     "tensors for 1; the file is damaged or was written wrong: download or convert it again."),
    ({"tensors": {"token_embd.weight": mx.zeros((10, 16))}},
     "Cannot import damaged.gguf: its tensors do not fit the model its metadata describes "
     "(ValueError: Expected shape (49152, 16) but received shape (10, 16) for parameter "
     "model.embed_tokens.weight); the file is damaged or was written wrong: download or "
     "convert it again."),
])
def test_a_gguf_whose_metadata_is_malformed_or_lies_is_one_sentence_and_leaves_nothing(
        empty_store, tmp_path, smollm2_metadata, damage, message):
    gguf = tiny_gguf(tmp_path / "damaged.gguf", smollm2_metadata, **damage)
    with pytest.raises(EngineError) as caught:
        resolve_model(str(gguf), dtype="keep", progress=False)
    assert str(caught.value) == message
    assert _leftovers(empty_store) == []


@pytest.mark.model
def test_a_store_that_is_a_file_is_one_sentence(tmp_path, monkeypatch, smollm2_metadata):
    store = tmp_path / "store"
    store.write_text("not a folder")  # MLX_NOTEBOOK_CACHE set to a file by mistake: a bare OSError
    monkeypatch.setenv("MLX_NOTEBOOK_CACHE", str(store))
    gguf = tiny_gguf(tmp_path / "tiny.gguf", smollm2_metadata)
    with pytest.raises(EngineError) as caught:
        resolve_model(str(gguf), dtype="keep", progress=False)
    assert str(caught.value).startswith("Cannot write tiny-")
    assert str(caught.value).endswith(f" into {store}/models: Not a directory ({store}/models); "
                                      "free some disk space, or set MLX_NOTEBOOK_CACHE to a "
                                      "folder that can hold it.")


@pytest.mark.model
def test_an_import_onto_a_full_disk_is_one_sentence_and_leaves_nothing(tmp_path, smollm2_gguf):
    # A file-size limit stands in for a full disk: mlx's writer fails the same way ("[write]
    # Unable to write ..."), which was a bare RuntimeError.
    store = tmp_path / "store"
    script = textwrap.dedent(f"""
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, 1_000_000))
        from mlx_notebook.engine import EngineError
        from mlx_notebook.engine.models._store import resolve_model
        try:
            resolve_model({str(smollm2_gguf)!r}, dtype="keep", progress=False)
        except EngineError as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "MLX_NOTEBOOK_CACHE": str(store)},
                          timeout=300)
    assert done.stderr == ""
    assert re.fullmatch(
        rf"Cannot write SmolLM2-135M-Instruct\.Q4_1-[0-9a-f]{{12}}-gguf into {re.escape(str(store))}"
        r"/models: cannot write model\.safetensors \(\[write\] Unable to write \d+ bytes to "
        r"file\); free some disk space, or set MLX_NOTEBOOK_CACHE to a folder that can hold it\.\n",
        done.stdout), done.stdout
    assert _leftovers(store) == []


def refusal(spec) -> str:
    with pytest.raises(EngineError) as caught:
        check_model_spec(str(spec))
    return str(caught.value)


@pytest.mark.model
def test_json_nested_thousands_deep_is_one_sentence(broken):
    # Both were a bare RecursionError.
    (broken / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    assert refusal(broken) == (f"{broken}/config.json is not a configuration (it nests thousands "
                               f"of levels deep); fix or re-download the model at {broken}.")
    (broken / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    weights = broken / "model.safetensors"
    header = b"[" * 100_000 + b"]" * 100_000
    weights.write_bytes(len(header).to_bytes(8, "little") + header)
    assert refusal(broken) == (f"{weights} is not a whole safetensors file (its header cannot be "
                               f"read); re-download or re-import the model at {broken}.")


@pytest.mark.model
def test_an_empty_model_type_is_refused_not_blamed_on_mlx_lm(broken):
    # Was "Model type not supported ... upgrade mlx-lm", which no upgrade mends.
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "model_type": " "}))
    assert refusal(broken) == (f"{broken}/config.json is not a model configuration: it needs a "
                               'JSON object with a "model_type"; fix or re-download the model.')


@pytest.mark.model
def test_a_model_folder_whose_name_ends_in_gguf_is_a_folder(tmp_path, tiny_reasoner_path):
    # Was "No such GGUF file" for a folder that is there.
    folder = tmp_path / "qwen3.gguf"
    shutil.copytree(tiny_reasoner_path, folder)
    assert check_model_spec(str(folder)) == ("dir", str(folder))
    (tmp_path / "empty.gguf").mkdir()
    assert refusal(tmp_path / "empty.gguf") == (f"{tmp_path}/empty.gguf is not an mlx-lm model "
                                                "directory: it has no config.json.")
