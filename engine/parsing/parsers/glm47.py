"""GLM 4.7 ``<tool_call>`` bodies: ``name<arg_key>k</arg_key><arg_value>v</arg_value>...``.

mlx-lm's parser, with its argument scan made linear (``arg_pairs``, which LongCat's parser
uses too). Its pattern
``<arg_key>(.*?)</arg_key>\\s*<arg_value>(.*?)</arg_value>`` lets a key's lazy group run on
to a later ``</arg_key>`` when no value follows the first, so a body of many keys without
values (a model stuck repeating ``<arg_key>``) cost time quadratic in its length: 10 s for
200,000 characters, on the engine thread. The same matches are found here from the positions
of the closing tags, each looked up once: the same calls, in linear time. Everything else
(names, the fallback shapes, value decoding by the tool's schema) is mlx-lm's own.
"""

from __future__ import annotations

import bisect
import functools
from typing import Any

import regex as re
from mlx_lm.tool_parsers import glm47 as _mlx

__all__ = ["arg_pairs", "parse_tool_call", "tool_call_end", "tool_call_start"]

tool_call_start, tool_call_end = _mlx.tool_call_start, _mlx.tool_call_end


def parse_tool_call(text: str, tools: list[Any] | None = None) -> Any:
    match = _mlx._func_name_regex.search(text)
    if not match:
        return _mlx.parse_tool_call(text, tools)  # the fallback shapes (no <arg_key> at all)
    name = match.group(1).strip()
    string_args = _mlx._get_string_arg_names(name, tools)
    arguments = {}
    for key, value in arg_pairs(text):
        arguments[key] = value if key in string_args else _mlx._deserialize(value)
    return dict(name=name, arguments=arguments)


def arg_pairs(text: str, prefix: str = ""):
    r"""(key, value) pairs, stripped, as mlx-lm's pattern
    ``<arg_key>(.*?)</arg_key>(?:\\n|\s)*<arg_value>(.*?)</arg_value>`` finds them
    (``finditer``), with ``prefix`` before each tag name (LongCat's ``longcat_``)."""
    key_tag, value_end = f"<{prefix}arg_key>", f"</{prefix}arg_value>"
    joins = [(m.start(), m.end()) for m in _key_then_value(prefix).finditer(text)]
    join_starts = [start for start, _ in joins]
    ends, at = [], text.find(value_end)
    while at != -1:
        ends.append(at)
        at = text.find(value_end, at + 1)
    pos = 0
    while (key_at := text.find(key_tag, pos)) != -1:
        key_from = key_at + len(key_tag)
        j = bisect.bisect_left(join_starts, key_from)  # the first "</arg_key> <arg_value>"
        if j == len(joins):
            return
        value_from = joins[j][1]
        k = bisect.bisect_left(ends, value_from)  # then the first "</arg_value>"
        if k == len(ends):
            return
        yield text[key_from:joins[j][0]].strip(), text[value_from:ends[k]].strip()
        pos = ends[k] + len(value_end)


@functools.cache
def _key_then_value(prefix: str) -> re.Pattern:
    return re.compile(rf"</{prefix}arg_key>(?:\\n|\s)*<{prefix}arg_value>")
