"""What the notebook shows about a loaded model: a frozen ``ModelInfo``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

__all__ = ["ModelInfo", "WeightsSummary", "describe_model", "describe_weights"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    path: str
    model_type: str
    parameters: int
    """Parameter count (quantized weights counted unpacked)."""
    quantization: str
    """``4-bit``, ``4-bit (embedding 8-bit)``, ... or the weight dtype (``float32``, ``bfloat16``)."""
    memory_bytes: int
    """Bytes the weights take in memory."""
    context_length: int | None
    thinking: bool
    """The tokenizer knows reasoning markers (``<think>``)."""
    tool_calling: bool
    """The tokenizer knows tool-call markers and has a tool parser."""
    draft_model: str | None = None
    """The model drafting tokens for speculative decoding, if one is loaded."""
    dtype: str = ""
    """What the weights run in, as the footer shows it: ``float32``, ``bfloat16``, ``float16``,
    or a quantized model's main width (``4-bit``; ``quantization`` names any others)."""
    dtype_reason: str = ""
    """Why it runs in that dtype, e.g. ``auto: float32 on a CPU (BLAS makes it the fast path)``."""


@dataclass(frozen=True, slots=True)
class WeightsSummary:
    """The ``ModelInfo`` fields read off the weights (they change when the dtype does)."""

    parameters: int
    quantization: str
    dtype: str
    memory_bytes: int

    @property
    def quantized(self) -> bool:
        return self.dtype.endswith("-bit")


def _own_arrays(module: nn.Module):
    # A module's own arrays, not its children's: each weight is counted once, by its owner.
    return ((key, value) for key, value in module.items() if isinstance(value, mx.array))


def _parameter_count(model: nn.Module) -> int:
    # Each quantized module has its own bits (a GGUF import mixes 8-bit embeddings with
    # 4-bit layers), so unpack each packed weight by its owner's bits, not the config's.
    total = 0
    for _, module in model.named_modules():
        bits = getattr(module, "bits", None)
        for key, value in _own_arrays(module):
            if bits and key in ("scales", "biases"):
                continue
            total += value.size * 32 // bits if bits and key == "weight" else value.size
    return total


def _label(path: str) -> str:
    leaf = path.rsplit(".", 1)[-1]
    return {"embed_tokens": "embedding", "lm_head": "output"}.get(leaf, leaf)


def _quantization(model: nn.Module, dtype: str) -> str:
    """``4-bit``, mixed widths named (``4-bit (embedding 8-bit)``), or ``dtype`` if none."""
    weights_by_bits: Counter[int] = Counter()
    labels_by_bits: dict[int, list[str]] = {}
    for path, module in model.named_modules():
        bits = getattr(module, "bits", None)
        if bits and "weight" in module:
            weights_by_bits[bits] += module["weight"].size * 32 // bits
            label = _label(path)
            if label not in labels_by_bits.setdefault(bits, []):
                labels_by_bits[bits].append(label)
    if not weights_by_bits:
        return dtype
    main = weights_by_bits.most_common(1)[0][0]
    others = [
        f"{', '.join(labels_by_bits[bits]) if len(labels_by_bits[bits]) <= 3 else 'some layers'} {bits}-bit"
        for bits in sorted(weights_by_bits) if bits != main
    ]
    return f"{main}-bit" + (f" ({'; '.join(others)})" if others else "")


def _float_dtype(params) -> str:
    sizes: Counter[str] = Counter()
    for _, p in params:
        if mx.issubdtype(p.dtype, mx.floating):
            sizes[str(p.dtype).split(".")[-1]] += p.size
    return sizes.most_common(1)[0][0] if sizes else "unknown"


def describe_weights(model: nn.Module) -> WeightsSummary:
    params = tree_flatten(model.parameters())
    quantization = _quantization(model, _float_dtype(params))
    return WeightsSummary(
        parameters=_parameter_count(model),
        quantization=quantization,
        dtype=quantization.split(" (", 1)[0],  # "4-bit (embedding 8-bit)" -> "4-bit"
        memory_bytes=sum(p.nbytes for _, p in params),
    )


def _display_name(spec: str | None, path: Path | None) -> str:
    # An alias or repo id names itself; an absolute path is named by its folder.
    if spec and not Path(str(spec)).is_absolute():
        return str(spec)
    return Path(spec or path).name


def describe_model(model, tokenizer, config: dict, path: Path, spec: str | None,
                   draft_spec: str | None = None, dtype_reason: str = "") -> ModelInfo:
    weights = describe_weights(model)
    text_config = config.get("text_config") or {}
    context = (config.get("max_position_embeddings")
               or text_config.get("max_position_embeddings")
               or config.get("max_seq_len"))
    return ModelInfo(
        name=_display_name(spec, path),
        path=str(path),
        model_type=str(config.get("model_type", "")),
        parameters=weights.parameters,
        quantization=weights.quantization,
        memory_bytes=weights.memory_bytes,
        context_length=int(context) if isinstance(context, (int, float)) and context > 0 else None,
        thinking=bool(tokenizer.has_thinking),
        tool_calling=bool(tokenizer.has_tool_calling and tokenizer.tool_parser is not None),
        draft_model=_display_name(draft_spec, None) if draft_spec else None,
        dtype=weights.dtype,
        dtype_reason=dtype_reason,
    )
