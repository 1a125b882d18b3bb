"""FunctionGemma tool calls: ``<start_function_call>call:name{k:<escape>v<escape>,...}``.

The syntax is Gemma 4's with ``<escape>`` as the string delimiter, so the scanner is shared
(``gemma4.read_calls``). mlx-lm's ``function_gemma`` parser stops at the first ``}`` and
assumes a comma after every string, so nested objects and ``a:<escape>x<escape>b:...``
(FunctionGemma often omits the comma) break it. As in vLLM, an escaped value that reads as
a JSON number, boolean or null becomes one unless the tool schema says it is a string.
"""

from __future__ import annotations

import json
from typing import Any

from .gemma4 import read_calls

__all__ = ["parse_tool_call", "tool_call_end", "tool_call_start"]

tool_call_start = "<start_function_call>"
tool_call_end = "<end_function_call>"

_ESCAPE = "<escape>"


def parse_tool_call(text: str, tools: Any | None = None):
    body = text.strip()
    body = body.removeprefix(tool_call_start)
    body = body.removesuffix(tool_call_end)
    raw = read_calls(body, _ESCAPE)
    calls = [
        {"name": c["name"], "arguments": _typed(c["name"], c["arguments"], tools)} for c in raw
    ]
    return calls[0] if len(calls) == 1 else calls


def _typed(name: str, arguments: dict[str, Any], tools: Any) -> dict[str, Any]:
    strings = _string_params(name, tools)
    out = {}
    for key, value in arguments.items():
        if isinstance(value, str) and key not in strings:
            try:
                decoded = json.loads(value)
            except ValueError:
                decoded = value
            if decoded is None or isinstance(decoded, (bool, int, float)):
                value = decoded
        out[key] = value
    return out


def _string_params(name: str, tools: Any) -> set[str]:
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name") == name:
            props = (function.get("parameters") or {}).get("properties") or {}
            return {k for k, v in props.items() if isinstance(v, dict) and v.get("type") == "string"}
    return set()
