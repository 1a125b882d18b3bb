"""Kimi K2 tool calls: a section of ``<|tool_call_begin|>id<|tool_call_argument_begin|>{json}``.

::

    <|tool_calls_section_begin|>
    <|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}
    <|tool_call_end|>
    <|tool_calls_section_end|>

The id is ``functions.<name>:<index>`` (the ``functions.`` prefix is sometimes missing, and
sometimes all but the counter is: then the tools offered name the call when only one fits).
mlx-lm's ``kimi_k2`` parser fails the whole section when one call is malformed; this scanner
reads each call on its own, so one bad call becomes one problem (``{"problem": raw,
"message": ...}``) and its siblings still run.
"""

from __future__ import annotations

import json
from typing import Any

from ._schema import functions, properties

__all__ = [
    "parse_tool_call",
    "call_end",
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
call_end = _END  # one call's end inside the section


def parse_tool_call(text: str, tools: Any | None = None) -> list[dict[str, Any]]:
    if not text.strip():
        return []  # an empty section: no calls (vLLM's kimi_k2 tests), not a problem
    if _BEGIN not in text:
        return [_parse_call(text, tools)]  # a bare call without its begin marker
    results = []
    pos = text.find(_BEGIN)
    while pos != -1:
        end = text.find(_END, pos)
        raw = text[pos: end + len(_END)] if end != -1 else text[pos:]
        try:
            if end == -1:
                raise ValueError("the call is cut off before <|tool_call_end|>")
            results.append(_parse_call(text[pos + len(_BEGIN): end], tools))
        except ValueError as exc:
            results.append({"problem": raw, "message": str(exc)})
        pos = text.find(_BEGIN, end) if end != -1 else -1
    return results


def _parse_call(call: str, tools: Any = None) -> dict[str, Any]:
    call_id, sep, args = call.partition(_ARGS)
    if not sep:
        raise ValueError("the call has no <|tool_call_argument_begin|>")
    call_id = call_id.strip()
    name, colon, index = call_id.rpartition(":")
    bare = call_id.isdigit()  # the model wrote only the counter: the tools may name it
    if not bare and (not colon or not index.strip().isdigit() or not name):
        raise ValueError(f"malformed call id {call_id!r} (expected functions.<name>:<n>)")
    try:
        arguments = json.loads(args) if args.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments of call {call_id!r} are not valid JSON: {exc}") from None
    name = _named_by_tools(call_id, arguments, tools) if bare else name.removeprefix("functions.")
    return {"id": call_id, "name": name, "arguments": arguments}


def _named_by_tools(call_id: str, arguments: Any, tools: Any) -> str:
    """The one tool a bare-counter call can be (vLLM's rule): the only tool offered, or the
    only one whose parameters include every argument given."""
    offered = functions(tools)
    names = [f["name"] for f in offered]
    if len(names) > 1 and isinstance(arguments, dict):
        names = [f["name"] for f in offered if set(arguments) <= set(properties(f))]
    if len(names) != 1:
        raise ValueError(f"malformed call id {call_id!r} (expected functions.<name>:<n>), and "
                         "the tools offered do not tell which function it calls")
    return names[0]
