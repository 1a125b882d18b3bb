"""Mistral tool calls after ``[TOOL_CALLS]``, in every layout the tokenizers produce.

mlx-lm's ``mistral`` parser reads ``name[ARGS]{...}`` and the older ``[{...}]`` list, but not
the same call decoded without special tokens (``name{...}``, as vLLM's tests and servers that
skip special tokens see it) nor the v13 ``name[CALL_ID]id[ARGS]{...}``. This scanner reads all
of them: a JSON list of ``{"name", "arguments"}`` objects, or a name, an optional call id and
a JSON object of arguments. Raises ValueError when the body is none of these.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_tool_call", "think_end", "think_start", "tool_call_end", "tool_call_start"]

tool_call_start = "[TOOL_CALLS]"
tool_call_end = ""  # none: a call ends where its JSON value does
think_start = "[THINK]"  # Magistral's reasoning markers
think_end = "[/THINK]"

_ARGS = "[ARGS]"
_CALL_ID = "[CALL_ID]"


def parse_tool_call(text: str, tools: Any | None = None) -> list[dict[str, Any]]:
    body = text.strip()
    if body.startswith(tool_call_start):
        body = body[len(tool_call_start):].lstrip()
    if body.startswith("["):
        return _parse_list(body)
    return [_parse_named(body)]


def _parse_list(body: str) -> list[dict[str, Any]]:
    payload, end = json.JSONDecoder().raw_decode(body)
    if not isinstance(payload, list) or not payload:
        raise ValueError("expected a non-empty JSON list of calls")
    _nothing_after(body, end, "the call list")
    # Each item is a call object as the filter's normalizer reads them (names, arguments
    # written as a JSON string, ids): a bad item becomes a problem beside its siblings.
    return payload


def _parse_named(body: str) -> dict[str, Any]:
    # The name runs up to "[CALL_ID]", "[ARGS]" or the arguments' "{".
    ends = [i for i in (body.find(_CALL_ID), body.find(_ARGS), body.find("{")) if i != -1]
    if not ends:
        raise ValueError(f"no arguments after tool name {body[:40]!r}")
    cut = min(ends)
    name = body[:cut].strip()
    if not name or any(c.isspace() for c in name):
        raise ValueError(f"not a tool name: {name!r}")
    rest = body[cut:]
    call_id = None
    if rest.startswith(_CALL_ID):
        rest = rest[len(_CALL_ID):]
        stop = [i for i in (rest.find(_ARGS), rest.find("{")) if i != -1]
        if not stop:
            raise ValueError("no arguments after the call id")
        call_id, rest = rest[: min(stop)].strip(), rest[min(stop):]
    rest = rest.removeprefix(_ARGS)
    rest = rest.lstrip()
    arguments, end = json.JSONDecoder().raw_decode(rest)
    _nothing_after(rest, end, "the arguments")
    call = {"name": name, "arguments": arguments}
    if call_id:
        call["id"] = call_id
    return call


def _nothing_after(text: str, end: int, what: str) -> None:
    # The filter's scanner ends a body where its value closes; text after it (the "]" of a
    # list that prose came before, "name[{...}]") is model text a call would not show.
    if text[end:].strip():
        raise ValueError(f"text after {what}: {text[end:].strip()[:40]!r}")
