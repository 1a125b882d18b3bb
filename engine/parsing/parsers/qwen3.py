"""Qwen3-family ``<tool_call>`` bodies, whichever way the model writes them.

Qwen3 (Hermes style) writes JSON, ``{"name": ..., "arguments": {...}}``; Qwen3-Coder and
Qwen3.5 write XML, ``<function=name><parameter=p>value</parameter></function>``, inside the
same ``<tool_call>`` markers and with the same think tags. The body says which: XML starts
with ``<function=``. Serving one through the other's family then still yields the call.
"""

from __future__ import annotations

from typing import Any

from . import json_tools, qwen3_coder
from .json_tools import tool_call_end, tool_call_start

__all__ = ["parse_tool_call", "tool_call_end", "tool_call_start"]


def parse_tool_call(text: str, tools: Any | None = None) -> Any:
    if text.lstrip().startswith(qwen3_coder.function_start):
        return qwen3_coder.parse_tool_call(text, tools)
    return json_tools.parse_tool_call(text, tools)
