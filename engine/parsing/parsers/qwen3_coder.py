"""Qwen3-Coder / Qwen3.5 XML tool calls: ``<function=name><parameter=p>value</parameter>...``.

mlx-lm's ``qwen3_coder`` parser reads values with a regex up to ``</parameter>``, so a value
the model forgot to close swallows the next parameter, and it only honours a schema's plain
``type`` (not ``anyOf``/``["integer", "null"]`` as Pydantic writes optional fields). This
scanner ends a value at ``</parameter>``, the next ``<parameter=`` or ``</function>``,
whichever comes first, and types values by the tool schema the way vLLM's parser does.
Without a schema entry a value stays the string the model wrote. A function whose body is a
JSON object instead of parameters (Llama 3.1's ``<function=name>{...}</function>``) is read
as JSON.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from .json_tools import tool_call_end, tool_call_start

__all__ = ["function_end", "function_start", "parse_tool_call", "tool_call_end", "tool_call_start"]

# The ``<tool_call>`` wrapper is Hermes's (``json_tools``); the model sometimes skips it and
# writes the function element bare, so the element's own tags delimit a call too.
function_start = "<function="
function_end = "</function>"
_PARAM, _PARAM_END = "<parameter=", "</parameter>"
_STRING_TYPES = {"string", "str", "text", "varchar", "char", "enum"}


def parse_tool_call(text: str, tools: Any | None = None):
    calls = []
    pos = text.find(function_start)
    while pos != -1:
        end = text.find(function_end, pos)
        stop = end if end != -1 else len(text)
        calls.append(_parse_function(text[pos + len(function_start): stop], tools))
        pos = text.find(function_start, stop)
    if not calls:
        raise ValueError("No function provided.")
    return calls[0] if len(calls) == 1 else calls


_TAG_NAME = re.compile(r"\s*([^\s<>]+)(?:>|(?=[\s<]))")
"""A function or parameter name, then its ``>``: as mlx-lm reads it, the name also ends at
whitespace or ``<`` when the model forgot the ``>`` (``<function=read_file\n<parameter=``).
A name the text ends in may be cut short: no name."""


def _tag_name(body: str, start: int, what: str) -> tuple[str, int]:
    """The name opening at ``start`` and where the element's content begins."""
    match = _TAG_NAME.match(body, start)
    if match is None:
        raise ValueError(f"the {what} tag has no whole name" if body[start:].strip()
                         else f"No {what} name provided.")
    return match[1], match.end()


def _parse_function(body: str, tools: Any) -> dict[str, Any]:
    name, close = _tag_name(body, 0, "function")
    schema = _properties(tools, name)
    arguments: dict[str, Any] = {}
    pos = body.find(_PARAM, close)
    rest = body[close:].strip()
    if pos == -1 and rest.startswith("{"):
        # Llama 3.1's ``<function=name>{json}</function>`` shares the opening tag.
        return {"name": name, "arguments": json.loads(rest)}
    while pos != -1:
        key, key_end = _tag_name(body, pos + len(_PARAM), "parameter")
        ends = [i for i in (body.find(_PARAM_END, key_end), body.find(_PARAM, key_end))
                if i != -1]
        value_end = min(ends) if ends else len(body)
        value = body[key_end: value_end]
        # The template writes each value on its own lines: drop that one newline each side.
        value = value.removeprefix("\n")
        value = value.removesuffix("\n")
        arguments[key] = _convert(value, schema.get(key))
        pos = body.find(_PARAM, value_end)
    return {"name": name, "arguments": arguments}


def _properties(tools: Any, name: str) -> dict[str, Any]:
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name") == name:
            params = function.get("parameters") or {}
            return params.get("properties") or {} if isinstance(params, dict) else {}
    return {}


def _schema_type(schema: Any) -> str | None:
    """The first non-null type a schema allows (``type``, type lists, anyOf/oneOf)."""
    if not isinstance(schema, dict):
        return None
    declared = schema.get("type")
    candidates = declared if isinstance(declared, list) else [declared] if declared else []
    for choice in ("anyOf", "oneOf"):
        for option in schema.get(choice) or ():
            t = _schema_type(option)
            candidates.append(t)
    if not candidates and "enum" in schema:
        return "string"
    for t in candidates:
        if isinstance(t, str) and t != "null":
            return t.strip().lower()
    return None


def _convert(value: str, schema: Any) -> Any:
    if value.lower() == "null":
        return None
    kind = _schema_type(schema)
    if kind is None:
        if isinstance(schema, dict):
            # Described but untyped: JSON containers are read, anything else stays text.
            try:
                parsed = json.loads(value)
            except ValueError:
                return value
            return parsed if isinstance(parsed, (dict, list)) else value
        return value
    if kind in _STRING_TYPES:
        return value
    if kind.startswith(("int", "uint", "long", "short", "unsigned")):
        number = float(value)
        if number != int(number):
            raise ValueError(f"Invalid integer literal {value!r}")
        return int(number)
    if kind.startswith(("num", "float", "double")):
        number = float(value)
        return int(number) if number == int(number) else number
    if kind in ("boolean", "bool", "binary"):
        return value.strip().lower() == "true"
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value
