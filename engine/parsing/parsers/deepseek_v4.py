"""DeepSeek-V4 DSML tool calls: the body between ``<｜DSML｜tool_calls>`` and its closing tag.

Same surface as ``mlx_lm/tool_parsers/*.py`` (``tool_call_start``, ``tool_call_end``,
``parse_tool_call``); mlx-lm 0.32 ships no DSML parser (its ``chat_templates/deepseek_v32.py``
only encodes V3.2's ``function_calls`` block), so this one is ours, written as a scanner.

A block as the model writes it (the markers use FULLWIDTH VERTICAL LINE U+FF5C)::

    <｜DSML｜tool_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    <｜DSML｜invoke name="...">...</｜DSML｜invoke>
    </｜DSML｜tool_calls>

``string="true"`` values are raw text, kept verbatim (quotes, ``<``/``>``, JSON-looking text,
newlines, surrounding spaces); ``string="false"`` values are JSON, and one that is not JSON
is kept as its raw text rather than failing the call. When the request's tool
schema types a parameter, the schema decides instead (vLLM's rule): ``42`` for an integer even
if marked ``string="true"``, a bare word for a string even if marked ``string="false"``, and a
lone ``arguments``/``input`` wrapper around the real parameters is undone. Facts matched against:

- deepseek-ai's reference encoder ``encoding/encoding_dsv4.py`` (shipped with the V4 model
  repos), as copied in vllm-project/vllm ``vllm/tokenizers/deepseek_v4_encoding.py`` and
  supermy/ds4rs ``encoding/encoding_dsv4.py``: ``parse_tool_calls`` / ``decode_dsml_to_arguments``
  (string="true" values are JSON-quoted, string="false" values inserted as JSON literals).
- vllm-project/vllm ``vllm/tool_parsers/deepseekv4_tool_parser.py`` (V4 = V3.2 grammar with the
  ``tool_calls`` block name instead of ``function_calls``), ``deepseekv32_tool_parser.py`` and
  ``tests/tool_parsers/test_deepseekv4_tool_parser.py``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ._schema import parameter_schemas, schema_types

__all__ = [
    "DSML_TOKEN",
    "function_calls_end",
    "function_calls_start",
    "invoke_end",
    "parse_tool_call",
    "tool_call_end",
    "tool_call_start",
]

DSML_TOKEN = "｜DSML｜"
tool_call_start = f"<{DSML_TOKEN}tool_calls>"
tool_call_end = f"</{DSML_TOKEN}tool_calls>"
# DeepSeek-V3.2 writes the same grammar in a block of another name.
function_calls_start = f"<{DSML_TOKEN}function_calls>"
function_calls_end = f"</{DSML_TOKEN}function_calls>"

_INVOKE_OPEN = f"<{DSML_TOKEN}invoke"
_INVOKE_CLOSE = invoke_end = f"</{DSML_TOKEN}invoke>"
_PARAM_OPEN = f"<{DSML_TOKEN}parameter"
_PARAM_CLOSE = f"</{DSML_TOKEN}parameter>"
_WHITESPACE = " \t\r\n"


def parse_tool_call(text: str, tools: list | None = None) -> list[dict[str, Any]]:
    """Parse one DSML block body into ``[{"name": str, "arguments": dict}, ...]``.

    ``text`` is what lies between the block markers (the markers themselves are tolerated).
    ``tools`` (OpenAI tool schemas, optional) type the parameters they declare.
    Raises ValueError with one sentence when the markup is malformed or cut off; a
    ``string="false"`` value that is not JSON is kept as the string the model wrote.
    """
    body = _strip_block_markers(text)
    calls: list[dict[str, Any]] = []
    pos = _skip_space(body, 0)
    while pos < len(body):
        if not body.startswith(_INVOKE_OPEN, pos):
            raise ValueError(
                f"DSML tool call: expected {_INVOKE_OPEN!r} at offset {pos}, "
                f"found {_excerpt(body, pos)!r}."
            )
        call, pos = _read_invoke(body, pos, tools)
        calls.append(call)
        pos = _skip_space(body, pos)
    if not calls:
        raise ValueError(
            f"DSML tool call: the block holds no {_INVOKE_OPEN!r} element."
        )
    return calls


def _strip_block_markers(text: str) -> str:
    """Drop the outer markers when a caller passes the whole block (as vLLM's tests do)."""
    body = text.strip(_WHITESPACE)
    body = body.removeprefix(tool_call_start)
    body = body.removesuffix(tool_call_end)
    return body


def _read_invoke(body: str, pos: int, tools: list | None) -> tuple[dict[str, Any], int]:
    """Read ``<｜DSML｜invoke name="..."> params </｜DSML｜invoke>`` starting at ``pos``."""
    attrs, pos = _read_attributes(body, pos + len(_INVOKE_OPEN), "invoke")
    name = attrs.get("name")
    if not name:
        raise ValueError("DSML tool call: an invoke element has no name attribute.")
    schema = parameter_schemas(tools, name)
    arguments: dict[str, Any] = {}
    while True:
        pos = _skip_space(body, pos)
        if body.startswith(_INVOKE_CLOSE, pos):
            call = {"name": name, "arguments": _unwrap_arguments(arguments, schema)}
            return call, pos + len(_INVOKE_CLOSE)
        if not body.startswith(_PARAM_OPEN, pos):
            if pos >= len(body):
                raise ValueError(
                    f"DSML tool call {name!r} is cut off before {_INVOKE_CLOSE!r}."
                )
            raise ValueError(
                f"DSML tool call {name!r}: expected a parameter or {_INVOKE_CLOSE!r}, "
                f"found {_excerpt(body, pos)!r}."
            )
        key, value, pos = _read_parameter(body, pos, name, schema)
        if key in arguments:
            raise ValueError(f"DSML tool call {name!r} repeats parameter {key!r}.")
        arguments[key] = value


def _read_parameter(
    body: str, pos: int, tool: str, schema: dict[str, Any]
) -> tuple[str, Any, int]:
    """Read one parameter element; return its name, decoded value and the offset after it."""
    attrs, pos = _read_attributes(body, pos + len(_PARAM_OPEN), "parameter")
    key = attrs.get("name")
    if not key:
        raise ValueError(f"DSML tool call {tool!r}: a parameter has no name attribute.")
    end = body.find(_PARAM_CLOSE, pos)
    if end == -1:
        raise ValueError(f"DSML tool call {tool!r}: parameter {key!r} is never closed.")
    raw = body[pos:end]
    return (
        key,
        _decode_value(raw, attrs.get("string"), tool, key, schema.get(key)),
        end + len(_PARAM_CLOSE),
    )


def _read_attributes(body: str, pos: int, element: str) -> tuple[dict[str, str], int]:
    """Scan ``name="value"`` pairs up to the closing ``>``; return them and the offset after it."""
    attrs: dict[str, str] = {}
    while True:
        start = pos
        pos = _skip_space(body, pos)
        if pos >= len(body):
            raise ValueError(f"DSML tool call: a {element} tag is cut off.")
        if body[pos] == ">":
            return attrs, pos + 1
        if pos == start:
            # Attributes must be separated from the tag name and from each other.
            raise ValueError(
                f"DSML tool call: malformed {element} tag near {_excerpt(body, pos)!r}."
            )
        eq = body.find("=", pos)
        if eq == -1 or eq + 1 >= len(body) or body[eq + 1] != '"':
            raise ValueError(
                f"DSML tool call: malformed {element} attribute near {_excerpt(body, pos)!r}."
            )
        attr = body[pos:eq].strip(_WHITESPACE)
        close = body.find('"', eq + 2)
        if close == -1 or not attr or any(c in attr for c in '<>"'):
            raise ValueError(
                f"DSML tool call: malformed {element} attribute near {_excerpt(body, pos)!r}."
            )
        attrs[attr] = body[eq + 2 : close]
        pos = close + 1


def _decode_value(
    raw: str, string: str | None, tool: str, key: str, schema: Any
) -> Any:
    """Decode one parameter value: by the tool schema when it types the parameter, else by
    the ``string`` attribute (raw text for "true", JSON for "false")."""
    if string not in (None, "true", "false"):
        raise ValueError(
            f'DSML tool call {tool!r}: parameter {key!r} has string="{string}", '
            'expected "true" or "false".'
        )
    types = schema_types(schema)
    if types:
        if string == "true" and "string" in types:
            return raw
        # The schema outranks the attribute, as in vLLM's DSML parser: a string="true" 42 for
        # an integer parameter is the model's slip, and a bare word for a string is fine.
        return _coerce_by_schema(raw, types)
    if string == "true":
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        # Marked JSON (or unmarked) but not JSON: the model's text is still its value, and
        # one bad value must not sink the call (the reference and vLLM keep the raw string).
        return raw


def _coerce_by_schema(value: str, types: set[str]) -> Any:
    """Read ``value`` as the first schema type it fits (vLLM's order), else as JSON, else raw."""
    if "null" in types and value.strip(_WHITESPACE).lower() == "null":
        return None
    if "integer" in types:
        try:
            return int(value)
        except ValueError:
            pass
    if "number" in types:
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return int(number) if number.is_integer() else number
    if "boolean" in types:
        word = value.strip(_WHITESPACE).lower()
        if word in ("true", "1", "false", "0"):
            return word in ("true", "1")
    for kind, python_type in (("object", dict), ("array", list)):
        if kind in types:
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError:
                parsed = None
            if isinstance(parsed, python_type):
                return parsed
    if "string" in types:
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _unwrap_arguments(
    arguments: dict[str, Any], schema: dict[str, Any]
) -> dict[str, Any]:
    """Undo a lone ``arguments``/``input`` wrapper the schema does not know (as vLLM does)."""
    if len(arguments) != 1 or not schema:
        return arguments
    ((wrapper, inner),) = arguments.items()
    if wrapper not in ("arguments", "input") or wrapper in schema:
        return arguments
    if isinstance(inner, str):
        try:
            inner = json.loads(inner)
        except json.JSONDecodeError:
            return arguments
    if isinstance(inner, dict) and set(inner) <= set(schema):
        return inner
    return arguments


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos


def _excerpt(text: str, pos: int, width: int = 40) -> str:
    return text[pos : pos + width] if pos < len(text) else "<end of text>"
