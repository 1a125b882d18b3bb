"""GLM 4.7 ``<tool_call>`` bodies: ``name<arg_key>k</arg_key><arg_value>v</arg_value>...``.

mlx-lm's parser, with its argument scan made linear (``arg_pairs``, which LongCat's parser
uses too). Its pattern
``<arg_key>(.*?)</arg_key>\\s*<arg_value>(.*?)</arg_value>`` lets a key's lazy group run on
to a later ``</arg_key>`` when no value follows the first, so a body of many keys without
values (a model stuck repeating ``<arg_key>``) cost time quadratic in its length: 10 s for
200,000 characters, on the engine thread. The same matches are found here from the positions
of the closing tags, each looked up once: the same calls, in linear time. String values keep
their whitespace and optional strings stay strings (``typed_arguments``); everything else
(names, the fallback shapes, decoding other values) is mlx-lm's own.
"""

from __future__ import annotations

import bisect
import functools
from typing import Any

import regex as re
from mlx_lm.tool_parsers import glm47 as _mlx

from ._schema import parameter_schemas, schema_types

__all__ = ["arg_pairs", "parse_tool_call", "tool_call_end", "tool_call_start", "typed_arguments"]

tool_call_start, tool_call_end = _mlx.tool_call_start, _mlx.tool_call_end


def parse_tool_call(text: str, tools: list[Any] | None = None) -> Any:
    match = _mlx._func_name_regex.search(text)
    if not match:
        return _mlx.parse_tool_call(text, tools)  # the fallback shapes (no <arg_key> at all)
    name = match.group(1).strip()
    return dict(name=name, arguments=typed_arguments(arg_pairs(text), tools, name))


def typed_arguments(pairs, tools: list[Any] | None, name: str) -> dict[str, Any]:
    """The (key, value) ``pairs`` of tool ``name``'s call, each value read by its schema.

    A value the schema lets be a string (``Optional[str]``'s ``anyOf`` and type lists too,
    which mlx-lm reads as JSON: an ``api_key`` of ``12345678`` became a number) is the text
    the model wrote, its whitespace kept (a diff's or a file's indentation; the template
    writes values unpadded), as vLLM's GLM parser keeps it. Any other is decoded as mlx-lm
    decodes it.
    """
    schemas = parameter_schemas(tools, name)
    return {key: value if "string" in schema_types(schemas.get(key))
            else _mlx._deserialize(value.strip()) for key, value in pairs}


def arg_pairs(text: str, prefix: str = ""):
    r"""(key, value) pairs, the keys stripped, as mlx-lm's pattern
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
        yield text[key_from:joins[j][0]].strip(), text[value_from:ends[k]]
        pos = ends[k] + len(value_end)


@functools.cache
def _key_then_value(prefix: str) -> re.Pattern:
    return re.compile(rf"</{prefix}arg_key>(?:\\n|\s)*<{prefix}arg_value>")
