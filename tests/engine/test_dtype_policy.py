"""The dtype a model runs in is chosen for the device, applied, and said, with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import mlx_lm
import pytest
from mlx.utils import tree_flatten

from mlx_notebook.engine import Engine, EngineError
from mlx_notebook.engine.models._dtype_policy import accelerator, choose_dtype
from mlx_notebook.engine.models._info import describe_weights
from mlx_notebook.engine.models._store import resolve_model

CPU = None  # what accelerator() answers on a CPU
# The model-backed tests below load models under the CPU's policy; on a GPU, the table covers it.
on_a_cpu_only = pytest.mark.skipif(accelerator() is not CPU, reason="the CPU's dtype policy")


@pytest.mark.parametrize(
    ("requested", "parameters", "own", "quantized", "device", "dtype", "reason"),
    [
        ("auto", 134_515_008, "float32", False, CPU, "float32",
         "auto: float32 on a CPU (BLAS makes it the fast path)"),
        ("auto", 494_000_000, "bfloat16", False, CPU, "float32",
         "auto: float32 on a CPU, widened from bfloat16 (BLAS makes it the fast path)"),
        ("auto", 7_000_000_000, "bfloat16", False, CPU, "keep",
         "auto: kept bfloat16 (7.0B parameters are too many to widen to float32, 28 GB)"),
        ("auto", 134_515_008, "4-bit", True, CPU, "keep",
         "auto: kept 4-bit, as quantized (dtype='float32' is faster on a CPU but dequantizes it)"),
        ("auto", 134_515_008, "4-bit", True, "Metal", "keep", "auto: the model's own 4-bit on Metal"),
        ("auto", 134_515_008, "bfloat16", False, "CUDA", "keep", "auto: the model's own bfloat16 on CUDA"),
        ("keep", 134_515_008, "bfloat16", False, CPU, "keep", "dtype='keep' asked for the model's own bfloat16"),
        ("bfloat16", 134_515_008, "float32", False, "Metal", "bfloat16", "dtype='bfloat16' asked for bfloat16"),
    ],
)
def test_auto_picks_float32_only_for_small_unquantized_models_on_a_cpu(
        requested, parameters, own, quantized, device, dtype, reason):
    choice = choose_dtype(requested, parameters=parameters, own=own, quantized=quantized, device=device)
    assert (choice.dtype, choice.reason) == (dtype, reason)


def test_an_unknown_dtype_is_refused_before_loading():
    with pytest.raises(EngineError, match=r"^Unknown dtype 'float8': use one of auto, keep, float32, bfloat16\.$"):
        Engine("tiny-reasoner", dtype="float8", progress=False)


def _copy_with_weights(source: Path, dest: Path, convert) -> Path:
    """An mlx-lm directory like ``source`` whose weights ``convert(model)`` rewrote."""
    model, _ = mlx_lm.load(str(source))
    extra = convert(model) or {}
    shutil.copytree(source, dest)
    mx.save_safetensors(str(dest / "model.safetensors"), dict(tree_flatten(model.parameters())))
    config = json.loads((dest / "config.json").read_text())
    (dest / "config.json").write_text(json.dumps({**config, **extra}))
    return dest


@pytest.mark.model
@on_a_cpu_only
def test_a_bfloat16_directory_runs_in_float32_on_a_cpu_and_says_so(tiny_reasoner_path, tmp_path):
    bf16 = _copy_with_weights(tiny_reasoner_path, tmp_path / "bf16", lambda m: m.set_dtype(mx.bfloat16))
    with Engine(str(bf16), progress=False) as engine:
        info = engine.model_info
        assert (info.dtype, info.quantization) == ("float32", "float32")
        assert info.dtype_reason == "auto: float32 on a CPU, widened from bfloat16 (BLAS makes it the fast path)"
        assert info.memory_bytes == 4 * info.parameters
    with Engine(str(bf16), dtype="keep", progress=False) as kept:
        assert (kept.model_info.dtype, kept.model_info.memory_bytes) == ("bfloat16", 2 * info.parameters)


def _quantize(model):
    nn.quantize(model, group_size=64, bits=4)
    return {"quantization": {"group_size": 64, "bits": 4}}


@pytest.mark.model
@on_a_cpu_only
def test_a_quantized_directory_is_kept_unless_float32_is_asked_for(tiny_reasoner_path, tmp_path):
    q4 = _copy_with_weights(tiny_reasoner_path, tmp_path / "q4", _quantize)
    with Engine(str(q4), progress=False) as engine:
        info = engine.model_info
    assert (info.quantization, info.dtype) == ("4-bit", "4-bit")
    assert info.dtype_reason == ("auto: kept 4-bit, as quantized (dtype='float32' is faster on a CPU "
                                 "but dequantizes it)")
    with Engine(str(q4), dtype="float32", progress=False) as widened:
        assert (widened.model_info.quantization, widened.model_info.dtype) == ("float32", "float32")
        assert widened.model_info.dtype_reason == "dtype='float32' asked for float32"
        assert widened.model_info.parameters == info.parameters


@pytest.mark.model
def test_auto_gives_the_float32_import_of_the_default_model_on_a_cpu(smollm2_path):
    assert resolve_model("smollm2-135m-instruct", progress=False) == smollm2_path


@pytest.mark.model
def test_4bit_and_float32_smollm2_count_the_same_parameters(smollm2_path, smollm2_4bit_path):
    q4 = describe_weights(mlx_lm.load(str(smollm2_4bit_path))[0])
    f32 = describe_weights(mlx_lm.load(str(smollm2_path))[0])
    assert q4.parameters == f32.parameters == 134_515_008
    assert (q4.quantization, q4.dtype) == ("4-bit (embedding 8-bit)", "4-bit")
    assert f32.quantization == "float32"
