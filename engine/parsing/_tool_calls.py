"""Reading one tool-call block with its family's parser into plain ``{name, arguments}``.

Parsers differ in what they return (a dict, a list, arguments as a JSON string, a marker
for one bad call among good ones); this is the one place that turns all of it into calls
and problems, so the stream filter itself never sees a parser's quirks.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from typing import Any

from ._families import Family

__all__ = ["CallProblem", "normalize_tools", "parse_calls"]


@dataclass(frozen=True, slots=True)
class CallProblem:
    """One call of a block that did not parse while its siblings did."""

    text: str
    message: str


def parse_calls(family: Family, text: str, tools) -> list[dict[str, Any] | CallProblem]:
    """Parse one call body with the family's parser into ``[{"name", "arguments"[, "id"]}]``.

    Raises when the block as a whole does not parse; an empty block is no calls (``[]``).
    A single bad call among good ones (a parser may report it as ``{"problem": raw,
    "message": ...}``) comes back as a ``CallProblem`` in its place.
    """
    module = family.parser_module()
    if module is None:
        raise ValueError(f"family {family.name!r} has no tool-call parser")
    with warnings.catch_warnings():
        # Parsers read values with ``ast`` (mlx-lm's and ours): a model's "\\d" in a regex
        # argument makes Python warn of the invalid escape on stderr (a SyntaxWarning since
        # 3.12, which a notebook shows under the cell). The value reads as written.
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        result = module.parse_tool_call(text.strip(), tools)
    if result == []:
        return []  # an empty block (Kimi's section, LFM2's "[]"): no calls, and no problem
    items = result if isinstance(result, list) else [result]
    calls: list[dict[str, Any] | CallProblem] = []
    for item in items:
        if isinstance(item, dict) and "problem" in item:
            calls.append(CallProblem(str(item["problem"]), str(item.get("message", ""))))
            continue
        try:
            calls.append(_normalize_call(item))
        except (ValueError, TypeError) as exc:
            if len(items) == 1:
                raise
            # The bad item's own text, so that its good siblings are not shown twice (once
            # as calls, once inside the whole block the problem would otherwise carry).
            calls.append(CallProblem(_item_text(item), str(exc)))
    if all(isinstance(c, CallProblem) for c in calls):
        raise ValueError("; ".join(c.message for c in calls))  # nothing parsed: one problem
    return calls


def _item_text(item: Any) -> str:
    """A list item that is no call, as JSON text ("" if it cannot be written as JSON)."""
    try:
        return json.dumps(item, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return ""


def normalize_tools(tools: list[Any] | None) -> list[dict[str, Any]] | None:
    """Tools in the Chat Completions shape parsers expect: ``{"type", "function": {...}}``.

    The Responses API writes them flat (``{"type": "function", "name", "parameters"}``);
    pydantic models are dumped to dicts; a function without ``parameters`` gets an empty
    schema (some mlx-lm parsers index it), and a malformed one keeps only what is well formed
    (``_readable_schema``). Anything else is left out: a schema only refines argument types,
    so a tool we cannot read must not turn a good call into a problem.
    """
    if not tools:
        return tools
    shaped = []
    for tool in tools:
        if hasattr(tool, "model_dump"):
            tool = tool.model_dump()
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        if function is None and "name" in tool:
            function = {k: v for k, v in tool.items() if k != "type"}
        if not isinstance(function, dict):
            continue
        parameters = _readable_schema(function.get("parameters"))
        shaped.append({"type": "function", "function": {**function, "parameters": parameters}})
    return shaped


_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf")
_SCHEMA_DEPTH = 64


def _readable_schema(schema: Any, depth: int = 0) -> dict[str, Any]:
    """``schema`` with the keywords parsers type arguments by kept only where well formed.

    Parsers (ours and mlx-lm's) index ``properties``, ``type``, ``anyOf``… as JSON Schema
    shapes them; a client's malformed schema (``"properties": 5``) must leave the argument
    untyped, not turn the model's good call into a problem. A boolean schema is untyped, and
    so is anything nested deeper than ``_SCHEMA_DEPTH``.
    """
    if not isinstance(schema, dict) or depth > _SCHEMA_DEPTH:
        return {}
    readable = dict(schema)
    kind = schema.get("type")
    if kind is not None and not (isinstance(kind, str) or isinstance(kind, list) and all(
            isinstance(k, str) for k in kind)):
        del readable["type"]
    for key in _SCHEMA_LISTS:
        if key in schema:
            options = schema[key]
            if isinstance(options, list) and True not in options:  # ``true``: any type at all
                readable[key] = [_readable_schema(o, depth + 1) for o in options
                                 if isinstance(o, dict)]
            else:
                del readable[key]
    if "enum" in schema and not isinstance(schema["enum"], list):
        del readable["enum"]
    if "items" in schema:
        readable["items"] = _readable_schema(schema["items"], depth + 1)
    if "properties" in schema:
        properties = schema["properties"]
        readable["properties"] = {  # a property whose schema is unreadable stays, untyped
            name: _readable_schema(sub, depth + 1) for name, sub in properties.items()
        } if isinstance(properties, dict) else {}
    return readable


def _not_json(value: Any, depth: int = 0) -> str | None:
    """Why ``value`` cannot go to a client as strict JSON in UTF-8, or None."""
    if depth > _DEEPEST:
        return "nested too deeply"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a lone surrogate"
        return None
    if value is None or isinstance(value, int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "NaN or Infinity"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"a key of type {type(key).__name__}"
            why = _not_json(key, depth + 1) or _not_json(item, depth + 1)
            if why:
                return why
        return None
    if isinstance(value, (list, tuple)):
        for item in value:
            why = _not_json(item, depth + 1)
            if why:
                return why
        return None
    return f"a {type(value).__name__}"


_DEEPEST = 500


def _normalize_call(call: Any) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise ValueError(f"expected a call object, got {type(call).__name__}")  # noqa: TRY004
    name = call.get("name")
    if "arguments" in call:
        arguments = call["arguments"]
    else:
        arguments = call.get("parameters", {})
    if not isinstance(name, str) or not name:
        raise ValueError("the call has no function name")
    if isinstance(arguments, str):
        # Some templates render the arguments as a JSON string.
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            shown = arguments if len(arguments) <= 60 else arguments[:60] + "…"
            raise ValueError(f"the arguments of {name!r} are the text {shown!r}, "
                             "not a JSON object") from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments of {name!r} are not an object")  # noqa: TRY004
    # What a client is sent is strict UTF-8 JSON; a parser's literal_eval makes sets or
    # integer keys, JSON readers take NaN, and a lone surrogate escape decodes to text no
    # UTF-8 writer can send.
    why = _not_json(name) or _not_json(arguments)
    if why:
        raise ValueError(f"the arguments of {name!r} hold a value JSON cannot carry ({why})")
    if name == "unknown" and set(arguments) == {"raw"}:
        # mlx-lm's glm47 parser labels text it could not read this way.
        raise ValueError("no function name or arguments could be read")
    out = {"name": name, "arguments": arguments}
    if isinstance(call.get("id"), str):
        out["id"] = call["id"]
    return out
