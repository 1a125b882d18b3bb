"""DeepSeek-R1 / V3 tool calls: ``<｜tool▁calls▁begin｜>`` blocks (mlx-lm ships no parser).

Two layouts are in use, both with FULLWIDTH VERTICAL LINE (U+FF5C) and LOWER ONE EIGHTH
BLOCK (U+2581) in the markers. R1 and V3 (0324) write the call type, the name, and the
arguments in a fenced JSON block::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
    ```json
    {"city": "Paris"}
    ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>

V3.1 and later drop the type and the fence: ``<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>
{"city": "Paris"}<｜tool▁call▁end｜>``. Written as a scanner over the markers (no regex),
raising ValueError when the block is cut off or holds no call; a single call that does not
read comes back as ``{"problem": raw, "message": ...}`` among the others. Whether arguments
are an object is checked once for every parser, in ``parsing._tool_calls``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_tool_call", "tool_call_end", "tool_call_start"]

tool_call_start = "<｜tool▁calls▁begin｜>"
tool_call_end = "<｜tool▁calls▁end｜>"

_CALL_BEGIN = "<｜tool▁call▁begin｜>"
_CALL_END = "<｜tool▁call▁end｜>"
_SEP = "<｜tool▁sep｜>"


def parse_tool_call(text: str, tools: Any | None = None) -> list[dict[str, Any]]:
    """Parse the calls inside one ``<｜tool▁calls▁begin｜>`` block (markers tolerated)."""
    body = text.strip()
    body = body.removeprefix(tool_call_start)
    body = body.removesuffix(tool_call_end)
    calls = []
    pos = 0
    while True:
        begin = body.find(_CALL_BEGIN, pos)
        if begin == -1:
            if body[pos:].strip():
                raise ValueError(f"unexpected text outside a call: {body[pos:pos + 40]!r}")
            break
        end = body.find(_CALL_END, begin)
        if end == -1:
            raise ValueError("a DeepSeek tool call is cut off before <｜tool▁call▁end｜>")
        try:
            calls.append(_parse_call(body[begin + len(_CALL_BEGIN): end]))
        except ValueError as exc:  # one bad call does not sink its siblings
            calls.append({"problem": body[begin: end + len(_CALL_END)], "message": str(exc)})
        pos = end + len(_CALL_END)
    if not calls:
        raise ValueError("the tool-call block holds no <｜tool▁call▁begin｜>")
    return calls


def _parse_call(call: str) -> dict[str, Any]:
    head, sep, rest = call.partition(_SEP)
    if not sep:
        raise ValueError("a DeepSeek tool call has no <｜tool▁sep｜>")
    head = head.strip()
    if head == "function" or head == "":
        # R1/V3 layout: the name is the first line after the separator, then a fence.
        name, _, args = rest.partition("\n")
        args = _unfence(args)
    else:
        name, args = head, rest
    name = name.strip()
    if not name:
        raise ValueError("a DeepSeek tool call has no function name")
    return {"name": name, "arguments": json.loads(args) if args.strip() else {}}


def _unfence(args: str) -> str:
    """Strip a Markdown code fence (```json ... ```) around the arguments, if any."""
    stripped = args.strip()
    if stripped.startswith("```"):
        newline = stripped.find("\n")
        stripped = stripped[newline + 1:] if newline != -1 else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
    return stripped
