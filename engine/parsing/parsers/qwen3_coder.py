"""Qwen3-Coder / Qwen3.5 XML tool calls: ``<function=name><parameter=p>value</parameter>...``.

mlx-lm's ``qwen3_coder`` parser reads values with a regex up to ``</parameter>``, so a value
the model forgot to close swallows the next parameter, and it only honours a schema's plain
``type`` (not ``anyOf``/``["integer", "null"]`` as Pydantic writes optional fields). This
scanner ends a value at the ``</parameter>`` that the next parameter or ``</function>``
follows (a value may hold parameter markup), or, when the model left it open, at the next
``<parameter=``; and it types values by the tool schema the way vLLM's parser does: a value
the type cannot read stays the string the model wrote, as does one without a schema entry.
A function whose body is a JSON object instead of parameters (Llama 3.1's
``<function=name>{...}</function>``) is read as JSON.
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

from ._schema import parameter_schemas
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
        stop = _function_stop(text, pos + len(function_start))
        calls.append(_parse_function(text[pos + len(function_start): stop], tools))
        pos = text.find(function_start, stop)
    if not calls:
        raise ValueError("No function provided.")
    return calls[0] if len(calls) == 1 else calls


def _function_stop(text: str, start: int) -> int:
    """Where the function element whose name starts at ``start`` ends: at the
    ``</function>`` after its last parameter's value (a value may hold the tag itself: code
    or docs about this format), or at the end of ``text``."""
    at, end = start, text.find(function_end, start)
    while True:
        if end != -1 and end < at:  # (found again only once passed: linear in the body)
            end = text.find(function_end, at)
        param = text.find(_PARAM, at)
        if param == -1 or end != -1 and end < param:
            return end if end != -1 else len(text)
        try:
            _, value_start = _tag_name(text, param + len(_PARAM), "parameter")
        except ValueError:
            return end if end != -1 else len(text)
        at = _value_end(text, value_start)  # (past the opening: each turn moves on)


_TAG_NAME = re.compile(r"\s*(?:([^\n<>]*?[^\s<>])\s*>|([^\s<>]+)(?=[\s<]))")
"""A function or parameter name, then its ``>`` on the same line (``<function=f >``); when
the model forgot the ``>``, the name ends, as mlx-lm reads it, at whitespace or ``<``
(``<function=read_file\n<parameter=``). A name the text ends in may be cut short: none."""


def _tag_name(body: str, start: int, what: str) -> tuple[str, int]:
    """The name opening at ``start`` and where the element's content begins."""
    match = _TAG_NAME.match(body, start)
    if match is None:
        raise ValueError(f"the {what} tag has no whole name" if body[start:].strip()
                         else f"No {what} name provided.")
    return match[1] or match[2], match.end()


_FUNCTION_NAME = re.compile(r"[\w.:-]+")


def _parse_function(body: str, tools: Any) -> dict[str, Any]:
    name, close = _tag_name(body, 0, "function")
    if not _FUNCTION_NAME.fullmatch(name):  # "{{ tc.name }}": a template, not a call
        raise ValueError(f"{name!r} is not a function name")
    schema = parameter_schemas(tools, name)
    arguments: dict[str, Any] = {}
    pos = body.find(_PARAM, close)
    rest = body[close:].strip()
    if pos == -1 and rest.startswith("{"):
        # Llama 3.1's ``<function=name>{json}</function>`` shares the opening tag.
        return {"name": name, "arguments": json.loads(rest)}
    while pos != -1:
        key, key_end = _tag_name(body, pos + len(_PARAM), "parameter")
        value_end = _value_end(body, key_end)
        value = body[key_end: value_end]
        # The template writes each value on its own lines: drop that one newline each side.
        value = value.removeprefix("\n")
        value = value.removesuffix("\n")
        arguments[key] = _convert(value, schema.get(key))
        pos = body.find(_PARAM, value_end)
    return {"name": name, "arguments": arguments}


_TAGS = re.compile(re.escape(_PARAM) + "|" + re.escape(_PARAM_END))


def _value_end(body: str, start: int) -> int:
    """Where the parameter value opening at ``start`` ends.

    At the ``</parameter>`` that the next parameter or the function's end follows, skipping
    whole ``<parameter=…>…</parameter>`` pairs and closers followed by other text inside the
    value: a value may hold such markup (an agent writing a parser's fixture), as vLLM's
    parser reads it. A value the model never closed ends at the first closer or the next
    parameter or the function's end, whichever comes first.
    """
    depth = openings = 0
    for tag in _TAGS.finditer(body, start):
        if tag[0] == _PARAM:
            openings += 1
            if openings > _MARKUP_IN_A_VALUE:  # parameters left open one after another, or junk
                break
            depth += 1
        elif depth:
            depth -= 1
        elif _NEXT_PARAMETER.match(body, tag.end()):
            return tag.start()
    ends = [i for i in (body.find(_PARAM_END, start), body.find(_PARAM, start),
                        body.find(function_end, start)) if i != -1]
    return min(ends) if ends else len(body)


_MARKUP_IN_A_VALUE = 64
"""Parameter openings looked at inside one value: more are not a value's markup, and the
bound keeps a body of thousands of parameters linear (each value's scan stops here)."""

_NEXT_PARAMETER = re.compile(r"\s*(?:\Z|" + re.escape(function_end) + "|" + re.escape(_PARAM)
                             + _TAG_NAME.pattern + ")")
"""What follows a value's real closer: the function's end or its next parameter."""


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
    """``value`` typed by its schema, as vLLM's parser types it: a value the type cannot read
    stays the text the model wrote (never a failed call), ``null``/``None`` is null unless the
    parameter is a string that cannot be null."""
    kind = _schema_type(schema)
    if value.strip().lower() == "null" or value.strip() == "None":
        if kind not in _STRING_TYPES or _allows_null(schema):
            return None
        return value
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
    if kind.startswith(("int", "uint", "long", "short", "unsigned", "num", "float", "double")):
        return _number(value, integer=not kind.startswith(("num", "float", "double")))
    if kind in ("boolean", "bool", "binary"):
        return value.strip().lower() == "true"
    read = _literal(value)
    if isinstance(read, str) and kind in _CONTAINER_TYPES:
        return _unwrapped_container(read)
    return read


_CONTAINER_TYPES = {"object", "dict", "array", "list"}


def _literal(value: str) -> Any:
    """``value`` read as JSON, else as a Python literal, else the text itself."""
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value


def _unwrapped_container(text: str) -> Any:
    """An object or array parameter the model wrote as a quoted string of one
    (``"{'key': 'value'}"``: templates that ``json.dumps`` a ``str(dict)`` teach that): the
    container inside, read once more; any other string stays as it is."""
    inner = _literal(text)
    return inner if isinstance(inner, (dict, list)) else text


def _number(value: str, integer: bool) -> Any:
    """An integer or a number read from ``value``, or ``value`` itself when it is not one
    (``abc``, ``3.5`` for an integer, ``nan``: JSON has no such number)."""
    text = value.strip()
    if "_" in text:  # Python reads 1_000; JSON and the model's intent do not
        return value
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return value
    if not math.isfinite(number) or integer and number != int(number):
        return value
    return int(number) if number == int(number) else number


def _allows_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    declared = schema.get("type")
    if declared == "null" or isinstance(declared, list) and "null" in declared:
        return True
    if schema.get("nullable") is True:  # OpenAPI's form, which transformers writes for Optional
        return True
    return any(_allows_null(option) for choice in ("anyOf", "oneOf")
               for option in schema.get(choice) or () if isinstance(option, dict))
