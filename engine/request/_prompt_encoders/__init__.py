"""Programmatic prompt encoders, used in place of a chat template for models that ship none.

One module per ``model_type`` (``deepseek_v4.py``), each exposing ``encode_messages(messages, *,
tools, thinking, reasoning_effort, add_generation_prompt, bos) -> str``. ``encoder_for`` picks
the module named after the model's ``model_type`` with ``importlib``, as mlx-lm picks its tool
parsers: adding a module is all it takes, there is no registry to keep in sync.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from types import ModuleType

__all__ = ["encoder_for"]


@lru_cache(maxsize=64)  # every render asks; a failed import would search the path each time
def encoder_for(model_type: str | None) -> ModuleType | None:
    """The encoder module for ``model_type``, or None when the model's chat template applies."""
    if not model_type or not model_type.isidentifier() or model_type.startswith("_"):
        return None  # a config's model_type is a bare name; anything else is no module of ours
    name = f"{__name__}.{model_type}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise  # the encoder exists but something it imports is missing
        return None
