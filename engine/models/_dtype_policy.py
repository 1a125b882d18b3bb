"""Which dtype a model runs in: chosen for the device unless the user names one.

On a CPU, mlx's float32 matmuls go through BLAS while its quantized and half-precision
kernels do not: with OpenBLAS, SmolLM2 in float32 prefills about 14x faster than in 4-bit
(DESIGN.md, "Linux CPU performance note"). On Metal and CUDA the quantized and half-precision
kernels are the fast ones and take less memory, so there a model keeps its own dtype. Widening
costs 4 bytes a parameter, so ``auto`` widens only small models (at most 2B parameters, 8 GB
in float32: what a laptop holds next to everything else), and never dequantizes an mlx-lm
directory that was quantized on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx
import mlx.nn as nn

__all__ = [
    "DTYPES",
    "SMALL_MODEL_PARAMETERS",
    "DtypeChoice",
    "accelerator",
    "apply_dtype",
    "choose_dtype",
    "gguf_parameter_bound",
]

DTYPES = ("auto", "keep", "float32", "bfloat16")
SMALL_MODEL_PARAMETERS = 2_000_000_000
# The fewest bits a weight takes in a GGUF file mlx can read as stored (Q4_0: 4 bits + a
# float16 scale per 32 weights), so bytes * 8 / 4.5 bounds its parameter count from above.
_FEWEST_GGUF_BITS_PER_WEIGHT = 4.5


@dataclass(frozen=True, slots=True)
class DtypeChoice:
    """What to do to a model's weights, and the sentence that says why."""

    dtype: str
    """``keep`` (the model's own dtype or quantization), ``float32`` or ``bfloat16``."""
    reason: str
    """Shown next to the dtype, e.g. ``auto: float32 on a CPU (BLAS makes it the fast path)``."""


def accelerator() -> str | None:
    """``Metal`` or ``CUDA`` when mlx computes on a GPU, None on a CPU."""
    if mx.default_device().type == mx.DeviceType.cpu:
        return None
    if mx.metal.is_available():
        return "Metal"
    cuda = getattr(mx, "cuda", None)  # mlx builds without the CUDA backend lack mx.cuda
    if cuda is not None and cuda.is_available():
        return "CUDA"
    return "the GPU"


def gguf_parameter_bound(file_bytes: int) -> int:
    """The most parameters a GGUF file of this size can hold (to decide before importing)."""
    return int(file_bytes * 8 / _FEWEST_GGUF_BITS_PER_WEIGHT)


def choose_dtype(requested: str, *, parameters: int, own: str, quantized: bool,
                 device: str | None = None) -> DtypeChoice:
    """Turn ``auto`` into ``keep`` or ``float32`` for this model on this device.

    ``own`` names the model's own format (``bfloat16``, ``4-bit``); ``device`` is
    ``accelerator()``'s answer (passed in by tests).
    """
    if requested == "keep":
        return DtypeChoice("keep", f"dtype='keep' asked for the model's own {own}")
    if requested != "auto":
        return DtypeChoice(requested, f"dtype={requested!r} asked for {requested}")
    if device is not None:
        return DtypeChoice("keep", f"auto: the model's own {own} on {device}")
    if own == "float32":
        return DtypeChoice("float32", "auto: float32 on a CPU (BLAS makes it the fast path)")
    if quantized:
        return DtypeChoice("keep", f"auto: kept {own}, as quantized (dtype='float32' is faster "
                                   "on a CPU but dequantizes it)")
    if parameters > SMALL_MODEL_PARAMETERS:
        return DtypeChoice("keep", f"auto: kept {own} ({parameters / 1e9:.1f}B parameters are "
                                   f"too many to widen to float32, {parameters * 4 / 1e9:.0f} GB)")
    return DtypeChoice("float32", f"auto: float32 on a CPU, widened from {own} (BLAS makes "
                                  "it the fast path)")


def apply_dtype(model: nn.Module, choice: DtypeChoice) -> None:
    """Dequantize and cast ``model`` in place as ``choice`` says (nothing for ``keep``)."""
    if choice.dtype == "keep":
        return
    if any(hasattr(module, "bits") for _, module in model.named_modules()):
        from mlx_lm.utils import dequantize_model

        dequantize_model(model)  # only on an explicit dtype: choose_dtype keeps quantized models
    # set_dtype's default predicate casts floating parameters only (never token ids or masks).
    model.set_dtype(getattr(mx, choice.dtype))
    mx.eval(model.parameters())
