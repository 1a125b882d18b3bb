"""Every reach into mlx-lm's and transformers' internals from the engine, in one place.

Each function here uses something its library does not document as public API (a helper of
``mlx_lm.server``, a private attribute or function). Checked against mlx-lm 0.32.2 and
transformers 5.24.0 (the versions pyproject pins or allows); when one of them changes, this
module is where the engine breaks and the only place to fix.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["role_mapping_prompt", "system_fingerprint", "hf_tokenizer", "infer_tool_parser",
           "infer_thinking"]


def role_mapping_prompt(messages: list[dict], role_mapping: dict | None) -> str:
    """mlx_lm.server's ``convert_chat``: the prompt it builds for tokenizers without a chat
    template, so the engine's tokens match the server's (parity)."""
    from mlx_lm.server import convert_chat

    return convert_chat(messages, role_mapping)


@functools.cache
def system_fingerprint() -> str:
    """mlx_lm.server's ``get_system_fingerprint``: the same value the server reports."""
    from mlx_lm.server import get_system_fingerprint

    return get_system_fingerprint()


def hf_tokenizer(wrapper: Any) -> Any:
    """The Hugging Face tokenizer inside mlx-lm's ``TokenizerWrapper`` (``_tokenizer``)."""
    return wrapper._tokenizer


def infer_tool_parser(hf_tokenizer: Any) -> str | None:
    """mlx-lm's ``tokenizer_utils._infer_tool_parser``: the tool parser module it would pick."""
    from mlx_lm.tokenizer_utils import _infer_tool_parser

    return _infer_tool_parser(hf_tokenizer)


def infer_thinking(hf_tokenizer: Any) -> tuple:
    """mlx-lm's ``tokenizer_utils._infer_thinking``: (start, end, start id, end id) markers."""
    from mlx_lm.tokenizer_utils import _infer_thinking

    return _infer_thinking(hf_tokenizer)
