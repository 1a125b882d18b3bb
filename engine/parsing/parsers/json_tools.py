"""Hermes/Qwen3 JSON tool calls: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

mlx-lm's ``json_tools`` parses the block with one ``json.loads``; models sometimes put two
calls in one block (one JSON object per line) or a JSON list of calls. This reads every
JSON value in the block with ``raw_decode`` and returns each call; a block that holds no
JSON value at all raises ValueError (the filter reports it as a problem).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_tool_call", "tool_call_end", "tool_call_start"]

tool_call_start = "<tool_call>"
tool_call_end = "</tool_call>"


def parse_tool_call(text: str, tools: Any | None = None) -> Any:
    decoder = json.JSONDecoder()
    values, pos, text = [], 0, text.strip()
    while pos < len(text):
        value, pos = decoder.raw_decode(text, pos)
        values.extend(value if isinstance(value, list) else [value])
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
    if not values:
        raise ValueError("the tool call is empty")
    return values[0] if len(values) == 1 else values
