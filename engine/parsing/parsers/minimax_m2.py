"""MiniMax-M2 ``<minimax:tool_call>`` bodies: ``<invoke name="f"><parameter name="p">v</parameter>
...</invoke>``.

mlx-lm's parser, with its two scans made linear. Its patterns ``<invoke name=(.*?)</invoke>``
and ``<parameter name=(.*?)</parameter>`` search from every opening to the end of the body
when no closing tag follows it, so a body of openings without ends (a model stuck repeating
``<invoke name=``) cost time quadratic in its length. The same matches are found here with
one search for each closing tag; names and the typing of values by the tool's schema are
mlx-lm's own.
"""

from __future__ import annotations

from typing import Any

import regex as re
from mlx_lm.tool_parsers import minimax_m2 as _mlx

__all__ = ["parse_tool_call", "tool_call_end", "tool_call_start"]

tool_call_start, tool_call_end = _mlx.tool_call_start, _mlx.tool_call_end


def parse_tool_call(text: str, tools: list | None = None) -> Any:
    invokes = list(_between(text, "<invoke name=", "</invoke>"))
    if not invokes:
        raise ValueError("No tool call found")
    param_config_for = {}
    for tool in tools or ():
        if (function := tool.get("function", False)) and (
                parameters := function.get("parameters", False)):
            param_config_for[function["name"]] = parameters.get("properties", {})
    calls = []
    for invoke in invokes:
        name_match = re.search(r"^([^>]+)", invoke)
        if not name_match:
            continue
        name = _mlx._extract_name(name_match.group(1))
        param_config = param_config_for.get(name, {})
        arguments = {}
        for parameter in _between(invoke, "<parameter name=", "</parameter>"):
            match = re.search(r"^([^>]+)>(.*)", parameter, re.DOTALL)
            if match:
                key = _mlx._extract_name(match.group(1))
                value = match.group(2).strip()
                value = value.removeprefix("\n").removesuffix("\n")
                arguments[key] = _mlx._convert_param_value_with_types(
                    value, _mlx._get_param_types_from_config(key, param_config))
        calls.append(dict(name=name, arguments=arguments))
    return calls[0] if len(calls) == 1 else calls


def _between(text: str, opening: str, closing: str):
    """What ``re.findall(opening + "(.*?)" + closing, text, re.DOTALL)`` finds."""
    pos = 0
    while (start := text.find(opening, pos)) != -1:
        end = text.find(closing, start + len(opening))
        if end == -1:
            return
        yield text[start + len(opening):end]
        pos = end + len(closing)
