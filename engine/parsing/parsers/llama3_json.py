"""Llama 3.1-3.3 tool calls: a bare ``{"name": "f", "parameters": {...}}``.

The Llama 3 chat templates ask for one JSON object per call and nothing around it; models
write it at the start of the reply, after ``<|python_tag|>`` (the template's built-in tool
form, and what llama-models' docs show), or after a sentence, and separate several with
``;`` or newlines. mlx-lm has no parser for it, so a Llama model's calls reached the user as
text. A bare object is a call only when it reads as one: a ``name`` and ``parameters`` (or
``arguments``; OpenAI's ``{"type": "function", "function": {...}}`` unwrapped), parameters that
are not a JSON schema (the prompt lists each tool's definition in that very shape), and, when
tools were offered, a name among them: ``{"name": "Ada", "age": 36}`` in an answer stays text.
After ``<|python_tag|>`` the model said it is calling, so any name is a call and a bad body is
a problem. Meta's other documented form, ``<function=name>{...}</function>`` (Functionary's
too), and Llama 3.2's ``[f(x=1)]`` (when a prompt asks for that form) are read as well.
"""

from __future__ import annotations

from typing import Any

from . import json_tools, pythonic, qwen3_coder

__all__ = ["function_start", "json_start", "parse_tool_call", "tool_call_end", "tool_call_start"]

tool_call_start = "<|python_tag|>"
tool_call_end = ""
json_start = "{"
function_start = qwen3_coder.function_start  # "<function=name>{...}</function>"

CALL_KEYS = ("name", "type", "function", "parameters", "arguments")
"""What a call object's first key can be (the stream filter's scanner gives others back at
once)."""


def parse_tool_call(text: str, tools: Any | None = None) -> Any:
    tagged = text.startswith(tool_call_start)
    body = text.removeprefix(tool_call_start).strip()
    if body.startswith(pythonic.list_start) and not body[1:].lstrip().startswith("{"):
        return pythonic.parse_tool_call(body, tools)
    if body.startswith(function_start):
        values = qwen3_coder.parse_tool_call(body, tools)
    else:
        values = json_tools.parse_tool_call(body, tools)
    values = values if isinstance(values, list) else [values]
    calls = [value if body.startswith(function_start) else _call(value) for value in values]
    offered = None if tagged else _offered_names(tools)
    for call in calls:
        if offered is not None and call["name"] not in offered:
            raise ValueError(f"{call['name']!r} is not an offered tool")
    return calls[0] if len(calls) == 1 else calls


def _call(value: Any) -> dict[str, Any]:
    """One call object, or ValueError for JSON that is not one."""
    if (isinstance(value, dict) and value.get("type") == "function"
            and isinstance(inner := value.get("function"), dict)):
        value = inner  # OpenAI's shape, which some fine-tunes write
    if not isinstance(value, dict):
        raise ValueError("not a call object")
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError("the object has no function name")
    if "arguments" in value:
        arguments = value["arguments"]
    elif "parameters" in value:
        arguments = value["parameters"]
    else:
        raise ValueError(f"the object {name!r} has no parameters")
    if "description" in value or _is_schema(arguments):
        raise ValueError(f"the object defines a tool {name!r}, it does not call one")
    return value


def _is_schema(arguments: Any) -> bool:
    """Arguments shaped as a tool's JSON schema (what the prompt shows for each tool)."""
    return (isinstance(arguments, dict) and arguments.get("type") == "object"
            and isinstance(arguments.get("properties"), dict))


def _offered_names(tools: Any) -> set[str] | None:
    if not tools:
        return None
    return {t["function"].get("name") for t in tools if isinstance(t.get("function"), dict)}
