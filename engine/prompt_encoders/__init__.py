"""Programmatic prompt encoders, used in place of a chat template for models that ship none.

One module per ``model_type`` (``deepseek_v4.py``), each exposing ``encode_messages(messages, *,
tools, thinking, reasoning_effort, add_generation_prompt, bos) -> str``. Picked by name with
``importlib``, as mlx-lm picks its tool parsers: no registry to keep in sync.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["encoder_for"]

_ENCODED_MODEL_TYPES = frozenset({"deepseek_v4"})


def encoder_for(model_type: str | None) -> ModuleType | None:
    """The encoder module for ``model_type``, or None when the model's chat template applies."""
    if model_type not in _ENCODED_MODEL_TYPES:
        return None
    return importlib.import_module(f"{__name__}.{model_type}")
