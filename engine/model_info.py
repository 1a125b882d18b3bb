"""What the notebook shows about a loaded model: a frozen ``ModelInfo``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_flatten

__all__ = ["ModelInfo", "describe_model"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    path: str
    model_type: str
    parameters: int
    """Parameter count (quantized weights counted unpacked)."""
    quantization: str
    """``4-bit``, ``8-bit``, ... or the weight dtype (``float32``, ``bfloat16``)."""
    memory_bytes: int
    """Bytes the weights take in memory."""
    context_length: int | None
    thinking: bool
    """The tokenizer knows reasoning markers (``<think>``)."""
    tool_calling: bool
    """The tokenizer knows tool-call markers and has a tool parser."""
    draft_model: str | None = None
    """The model drafting tokens for speculative decoding, if one is loaded."""


def _quantization(config: dict, params) -> str:
    q = config.get("quantization") or config.get("quantization_config")
    if isinstance(q, dict) and q.get("bits"):
        return f"{q['bits']}-bit"
    for _, p in params:
        if mx.issubdtype(p.dtype, mx.floating):
            return str(p.dtype).split(".")[-1]
    return "unknown"


def _parameter_count(config: dict, params) -> int:
    q = config.get("quantization")
    bits = q.get("bits") if isinstance(q, dict) else None
    total = 0
    for name, p in params:
        if name.endswith((".scales", ".biases")) and bits:
            continue
        if bits and p.dtype == mx.uint32:
            total += p.size * 32 // bits  # packed: 32/bits weights per uint32
        else:
            total += p.size
    return total


def _display_name(spec: str | None, path: Path | None) -> str:
    # An alias or repo id names itself; an absolute path is named by its folder.
    if spec and not Path(str(spec)).is_absolute():
        return str(spec)
    return Path(spec or path).name


def describe_model(model, tokenizer, config: dict, path: Path, spec: str | None,
                   draft_spec: str | None = None) -> ModelInfo:
    params = tree_flatten(model.parameters())
    text_config = config.get("text_config") or {}
    context = (config.get("max_position_embeddings")
               or text_config.get("max_position_embeddings")
               or config.get("max_seq_len"))
    return ModelInfo(
        name=_display_name(spec, path),
        path=str(path),
        model_type=str(config.get("model_type", "")),
        parameters=_parameter_count(config, params),
        quantization=_quantization(config, params),
        memory_bytes=sum(p.nbytes for _, p in params),
        context_length=int(context) if context else None,
        thinking=bool(tokenizer.has_thinking),
        tool_calling=bool(tokenizer.has_tool_calling and tokenizer.tool_parser is not None),
        draft_model=_display_name(draft_spec, None) if draft_spec else None,
    )
