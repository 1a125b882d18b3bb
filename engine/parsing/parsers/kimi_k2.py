"""Kimi K2 tool calls: a section of ``<|tool_call_begin|>id<|tool_call_argument_begin|>{json}``.

::

    <|tool_calls_section_begin|>
    <|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}
    <|tool_call_end|>
    <|tool_calls_section_end|>

The id is ``functions.<name>:<index>`` (the ``functions.`` prefix is sometimes missing).
mlx-lm's ``kimi_k2`` parser fails the whole section when one call is malformed; this scanner
reads each call on its own, so one bad call becomes one problem (``{"problem": raw,
"message": ...}``) and its siblings still run.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "parse_tool_call",
    "singular_tool_call_end",
    "singular_tool_call_start",
    "tool_call_end",
    "tool_call_start",
]

tool_call_start = "<|tool_calls_section_begin|>"
tool_call_end = "<|tool_calls_section_end|>"
# Kimi K2 sometimes writes the section markers in the singular.
singular_tool_call_start = "<|tool_call_section_begin|>"
singular_tool_call_end = "<|tool_call_section_end|>"

_BEGIN, _END, _ARGS = "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"


def parse_tool_call(text: str, tools: Any | None = None) -> list[dict[str, Any]]:
    if _BEGIN not in text:
        return [_parse_call(text)]  # a bare call without its begin marker
    results = []
    pos = text.find(_BEGIN)
    while pos != -1:
        end = text.find(_END, pos)
        raw = text[pos: end + len(_END)] if end != -1 else text[pos:]
        try:
            if end == -1:
                raise ValueError("the call is cut off before <|tool_call_end|>")
            results.append(_parse_call(text[pos + len(_BEGIN): end]))
        except ValueError as exc:
            results.append({"problem": raw, "message": str(exc)})
        pos = text.find(_BEGIN, end) if end != -1 else -1
    return results


def _parse_call(call: str) -> dict[str, Any]:
    call_id, sep, args = call.partition(_ARGS)
    if not sep:
        raise ValueError("the call has no <|tool_call_argument_begin|>")
    call_id = call_id.strip()
    name, colon, index = call_id.rpartition(":")
    if not colon or not index.strip().isdigit() or not name:
        raise ValueError(f"malformed call id {call_id!r} (expected functions.<name>:<n>)")
    name = name.removeprefix("functions.")
    try:
        arguments = json.loads(args) if args.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments of {name!r} are not valid JSON: {exc}") from None
    return {"id": call_id, "name": name, "arguments": arguments}
