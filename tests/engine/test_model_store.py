"""The model store: every kind of spec, and the exact error a user sees for each bad one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import mlx.core as mx
import pytest

from mlx_notebook.engine.cli import main as cli_main
from mlx_notebook.engine._errors import ModelStoreError
from mlx_notebook.engine.models._store import resolve_model

QUESTION = "What is the capital of France? Answer in one sentence."


def _leftovers(store: Path) -> list[str]:
    models = store / "models"
    return sorted(p.name for p in models.iterdir()) if models.is_dir() else []


def _greedy(model_dir: Path, messages, max_tokens=40, **template_kwargs) -> str:
    import mlx_lm

    model, tokenizer = mlx_lm.load(str(model_dir))
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, **template_kwargs)
    return mlx_lm.generate(model, tokenizer, prompt, max_tokens=max_tokens)


@pytest.mark.model
def test_cli_fetch_of_the_default_alias_gives_a_directory_that_answers_paris(smollm2_path):
    done = subprocess.run(
        [sys.executable, "-m", "mlx_notebook.engine.cli", "--quiet", "fetch", "smollm2-135m-instruct"],
        capture_output=True, text=True, check=True,
    )
    model_dir = Path(done.stdout.strip().splitlines()[-1])
    assert (model_dir / "config.json").is_file()
    reply = _greedy(model_dir, [{"role": "user", "content": QUESTION}])
    assert reply == "The capital of France is Paris."


@pytest.mark.model
def test_float32_import_answers_like_the_quantized_one(smollm2_path):
    assert _greedy(smollm2_path, [{"role": "user", "content": QUESTION}]) == "The capital of France is Paris."


@pytest.mark.model
def test_a_gguf_file_is_imported_once_and_reused(empty_store, smollm2_gguf):
    first = resolve_model(str(smollm2_gguf), dtype="bfloat16", progress=False)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    second = resolve_model(str(smollm2_gguf), dtype="bfloat16", progress=False)
    assert first == second and (second / "model.safetensors").stat().st_mtime_ns == stamp
    assert first.parent == empty_store / "models"
    assert _leftovers(empty_store) == [first.name]


@pytest.mark.model
def test_cli_import_writes_to_a_chosen_directory(tmp_path, smollm2_gguf, capsys):
    dest = tmp_path / "smol"
    assert cli_main(["--quiet", "import", str(smollm2_gguf), str(dest)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(dest)
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in dest.iterdir()}


def test_a_local_mlx_directory_is_used_as_is(smollm2_path):
    assert resolve_model(str(smollm2_path)) == smollm2_path


@pytest.mark.model
def test_a_repo_in_the_local_hugging_face_cache_resolves_offline(tmp_path, tiny_reasoner_path):
    snapshot = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / "0123abcd"
    shutil.copytree(tiny_reasoner_path, snapshot)
    (tmp_path / "hub" / "models--acme--tiny" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--tiny" / "refs" / "main").write_text("0123abcd")
    assert resolve_model("acme/tiny", hf_cache_dir=tmp_path / "hub") == snapshot


def test_a_repo_not_in_the_local_cache_says_how_to_get_it(tmp_path):
    with pytest.raises(ModelStoreError) as caught:
        resolve_model("acme/missing", hf_cache_dir=tmp_path)
    assert str(caught.value) == (
        "acme/missing is not in the local Hugging Face cache; download it on a connected machine "
        "with `hf download acme/missing` (or copy its cache folder here) and try again."
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        ("smollm3", "Unknown model 'smollm3': use an alias (smollm2-135m-instruct, tiny-reasoner), "
                    "a .gguf file, an mlx-lm model directory or a Hugging Face repo id."),
        ("./no/such/dir", "No such model directory: ./no/such/dir."),
        ("missing.gguf", "No such GGUF file: missing.gguf."),
    ],
)
def test_bad_specs_get_one_clear_sentence(empty_store, spec, message):
    with pytest.raises(ModelStoreError) as caught:
        resolve_model(spec)
    assert str(caught.value) == message


def test_a_directory_without_a_model_is_refused(tmp_path):
    with pytest.raises(ModelStoreError, match=r"is not an mlx-lm model directory: it has no config.json\.$"):
        resolve_model(str(tmp_path))


def test_an_unknown_dtype_is_refused():
    with pytest.raises(ModelStoreError) as caught:
        resolve_model("tiny-reasoner", dtype="int3")
    assert str(caught.value) == "Unknown dtype 'int3': use one of auto, keep, float32, bfloat16."


def test_a_corrupt_gguf_leaves_nothing_in_the_cache(empty_store, tmp_path):
    bad = tmp_path / "garbage.gguf"
    bad.write_bytes(b"not a gguf file at all" * 100)
    with pytest.raises(ModelStoreError) as caught:
        resolve_model(str(bad), progress=False)
    assert str(caught.value) == "Cannot read garbage.gguf: the GGUF file is corrupt or truncated ([load_gguf] gguf_init failed)."
    assert _leftovers(empty_store) == []


@pytest.mark.model
def test_a_truncated_gguf_leaves_nothing_in_the_cache(empty_store, tmp_path, smollm2_gguf):
    cut = tmp_path / "cut.gguf"
    with open(smollm2_gguf, "rb") as src:
        cut.write_bytes(src.read(5_000_000))
    with pytest.raises(ModelStoreError, match=r"^Cannot read cut.gguf: the GGUF file is corrupt or truncated"):
        resolve_model(str(cut), progress=False)
    assert _leftovers(empty_store) == []


def test_an_unsupported_architecture_is_named(empty_store, tmp_path):
    gguf = tmp_path / "falcon.gguf"
    mx.save_gguf(str(gguf), {"token_embd.weight": mx.zeros((4, 4))}, {"general.architecture": "falcon"})
    with pytest.raises(ModelStoreError) as caught:
        resolve_model(str(gguf), progress=False)
    assert str(caught.value) == "Cannot import falcon.gguf: GGUF architecture 'falcon' is not supported (supported: llama)."
    assert _leftovers(empty_store) == []


def test_cli_reports_errors_in_one_line_and_fails(empty_store, capsys):
    assert cli_main(["fetch", "nope"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("mlx-notebook fetch: Unknown model 'nope'") and "\n" not in err


def _bytes_under(*paths: Path) -> int:
    return sum(f.stat().st_size for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())


@pytest.mark.model
def test_cli_models_counts_the_downloaded_gguf_with_the_default_model(smollm2_path, capsys, monkeypatch):
    store = smollm2_path.parent.parent
    monkeypatch.setenv("MLX_NOTEBOOK_CACHE", str(store))
    assert cli_main(["models"]) == 0
    out = capsys.readouterr().out
    expected = _bytes_under(store / "gguf", *store.glob("models/smollm2-135m-instruct-*"))
    row = next(line for line in out.splitlines() if line.startswith("smollm2-135m-instruct "))
    assert row.split()[-2:] == [f"{expected / 1e6:.1f}", "MB"]
    assert "  gguf/SmolLM2-135M-Instruct.Q4_1.gguf" in out and "MiB" not in out


def _fake_store(store: Path) -> dict[str, int]:
    """A store with the layout model_store writes, and made-up files of known sizes."""
    files = {
        "gguf/SmolLM2-135M-Instruct.Q4_1.gguf": 93_900_000,
        "models/smollm2-135m-instruct-float32/model.safetensors": 538_000_000,
        "models/smollm2-135m-instruct-float32/config.json": 1_000,
        "models/smollm2-135m-instruct-gguf/model.safetensors": 98_300_000,
        "models/tiny-reasoner-0123456789ab/model.safetensors": 530_000,
        "models/tiny-reasoner-ba9876543210/model.safetensors": 530_000,
    }
    for name, size in files.items():
        (store / name).parent.mkdir(parents=True, exist_ok=True)
        with open(store / name, "wb") as f:
            f.truncate(size)  # sparse: the sizes are what the listing reads
    return files


def test_cli_models_lists_every_byte_once_per_model_in_decimal_units(empty_store, capsys):
    _fake_store(empty_store)
    assert cli_main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Cache: {empty_store} (731.3 MB in all)"
    assert out[1].split() == ["smollm2-135m-instruct", "730.2", "MB"]
    assert out[2].split() == ["93.9", "MB", "gguf/SmolLM2-135M-Instruct.Q4_1.gguf"]
    assert out[3].split() == ["538.0", "MB", "models/smollm2-135m-instruct-float32"]
    assert out[5].split() == ["tiny-reasoner", "1.1", "MB"]
    assert [line for line in out if line.startswith("blas ")] == []
    (empty_store / "blas" / "0123").mkdir(parents=True)
    (empty_store / "blas" / "0123" / "libmlx_notebook_openblas.so").write_bytes(b"x" * 2000)
    assert cli_main(["models"]) == 0
    (blas,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("blas ")]
    assert blas.split()[1:] == ["2.0", "kB", "(OpenBLAS", "for", "the", "CPU", "fast", "path,",
                                "not", "a", "model)"]
    assert out[-1] == "Remove one with `mlx-notebook models --remove NAME` (a name or a path listed above)."


def test_cli_remove_deletes_every_file_of_a_model_and_says_what_it_freed(empty_store, capsys):
    _fake_store(empty_store)
    assert cli_main(["models", "--remove", "smollm2-135m-instruct"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "removed gguf/SmolLM2-135M-Instruct.Q4_1.gguf",
        "removed models/smollm2-135m-instruct-float32",
        "removed models/smollm2-135m-instruct-gguf",
        "Freed 730.2 MB (smollm2-135m-instruct).",
    ]
    assert sorted(p.name for p in (empty_store / "gguf").iterdir()) == []
    assert _leftovers(empty_store) == ["tiny-reasoner-0123456789ab", "tiny-reasoner-ba9876543210"]


def test_cli_remove_of_one_listed_path_keeps_the_rest_of_the_model(empty_store, capsys):
    _fake_store(empty_store)
    assert cli_main(["models", "--remove", "models/smollm2-135m-instruct-float32"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "Freed 538.0 MB (smollm2-135m-instruct-float32)."
    assert (empty_store / "gguf/SmolLM2-135M-Instruct.Q4_1.gguf").is_file()
    assert "smollm2-135m-instruct-gguf" in _leftovers(empty_store)


def test_cli_remove_by_gguf_file_deletes_its_imports_never_the_file(empty_store, tmp_path, capsys):
    import hashlib

    source = tmp_path / "mine.gguf"
    source.write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()[:12]
    for tag in ("float32", "gguf"):
        (empty_store / "models" / f"mine-{digest}-{tag}").mkdir(parents=True)
        (empty_store / "models" / f"mine-{digest}-{tag}" / "model.safetensors").write_bytes(b"x" * 1500)
    assert cli_main(["models"]) == 0
    assert f"mine-{digest}" in capsys.readouterr().out
    assert cli_main(["models", "--remove", str(source)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"Freed 3.0 kB (mine-{digest})."
    assert _leftovers(empty_store) == [] and source.read_bytes() == b"weights"


def test_cli_remove_of_an_unknown_name_refuses_in_one_line(empty_store, capsys):
    _fake_store(empty_store)
    assert cli_main(["models", "--remove", "llama-70b"]) == 1
    assert capsys.readouterr().err == (
        "mlx-notebook models: The model store has nothing called 'llama-70b': "
        "`mlx-notebook models` lists what it holds.\n"
    )
    assert len(_leftovers(empty_store)) == 4


def test_a_build_killed_midway_is_swept_away_by_the_next_one(empty_store, tmp_path):
    abandoned = empty_store / "models" / ".garbage.partial-999999999-abc"
    abandoned.mkdir(parents=True)
    (abandoned / "model.safetensors").write_bytes(b"half")
    bad = tmp_path / "garbage.gguf"
    bad.write_bytes(b"junk")
    with pytest.raises(ModelStoreError):
        resolve_model(str(bad), progress=False)
    assert _leftovers(empty_store) == []


def _gguf_with_one_q4_k_tensor(path: Path, file_type: int) -> None:
    """A minimal GGUF v3 file: mx.save_gguf cannot write K-quants, so the bytes are laid out here."""
    import struct

    def text(value: str) -> bytes:
        return struct.pack("<Q", len(value.encode())) + value.encode()

    data = b"GGUF" + struct.pack("<IQQ", 3, 1, 2)
    data += text("general.architecture") + struct.pack("<I", 8) + text("llama")
    data += text("general.file_type") + struct.pack("<II", 4, file_type)
    data += text("token_embd.weight") + struct.pack("<IQQIQ", 2, 256, 1, 12, 0)  # type 12: Q4_K
    data += b"\0" * (-len(data) % 32) + b"\0" * 144  # one 256-element Q4_K block
    path.write_bytes(data)


def test_a_quantization_mlx_cannot_keep_is_named_with_the_fix(empty_store, tmp_path):
    gguf = tmp_path / "kquant.gguf"
    _gguf_with_one_q4_k_tensor(gguf, file_type=15)
    with pytest.raises(ModelStoreError) as caught:
        resolve_model(str(gguf), dtype="keep", progress=False)
    assert str(caught.value) == (
        "Cannot keep the quantization of kquant.gguf: mlx keeps only Q4_0, Q4_1 and Q8_0, not Q4_K_M; "
        "import it with --dtype float32 or bfloat16 to dequantize."
    )
    assert _leftovers(empty_store) == []


def test_missing_llama_metadata_is_named(empty_store, tmp_path):
    gguf = tmp_path / "bare.gguf"
    mx.save_gguf(str(gguf), {"token_embd.weight": mx.zeros((4, 4))}, {"general.architecture": "llama"})
    with pytest.raises(ModelStoreError) as caught:
        resolve_model(str(gguf), progress=False)
    assert str(caught.value) == (
        "Cannot import this GGUF file: its metadata lacks llama.embedding_length, "
        "llama.attention.head_count, llama.block_count, llama.feed_forward_length, tokenizer.ggml.tokens."
    )
