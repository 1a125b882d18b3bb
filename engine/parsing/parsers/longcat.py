"""LongCat ``<longcat_tool_call>`` bodies: GLM 4.7's shape with ``longcat_`` tag names.

mlx-lm's parser with the argument scan and typing of ``glm47`` (``arg_pairs``, linear where
mlx-lm's pattern costs time quadratic in a body of keys without values, and refusing a body
with a broken pair where that pattern drops it; ``typed_arguments``,
which keeps string values as written and optional strings as strings) and a call without
arguments read as its name alone; everything else is mlx-lm's own.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mlx_lm.tool_parsers import longcat as _mlx

from .glm47 import arg_pairs, typed_arguments

__all__ = ["parse_tool_call", "tool_call_end", "tool_call_start"]

tool_call_start, tool_call_end = _mlx.tool_call_start, _mlx.tool_call_end
_NAME = re.compile(r"[\w.:-]+")


def parse_tool_call(text: str, tools: list[Any] | None = None) -> Any:
    text = text.strip()
    if text.startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    match = _mlx._func_name_regex.search(text)
    if match is None:
        # A call without arguments is its name alone (mlx-lm's pattern needs a key after it
        # and fails on it, as GLM 4.7's does not).
        if not _NAME.fullmatch(text):
            raise ValueError(f"no function name: {text[:60]!r}")
        return dict(name=text, arguments={})
    name = match.group(1).strip()
    return dict(name=name, arguments=typed_arguments(arg_pairs(text, "longcat_"), tools, name))
