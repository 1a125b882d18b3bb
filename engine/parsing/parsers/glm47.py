"""GLM 4.7 ``<tool_call>`` bodies: ``name<arg_key>k</arg_key><arg_value>v</arg_value>...``.

mlx-lm's parser, with its argument scan rewritten (``arg_pairs``, which LongCat's parser uses
too). Its pattern ``<arg_key>(.*?)</arg_key>\\s*<arg_value>(.*?)</arg_value>``, run with
``finditer``, skips whatever does not match: a pair whose ``</arg_key>`` the model forgot
(``<arg_key>city <arg_value>Paris</arg_value>``) vanished, and the call ran without an
argument the model wrote. A key's lazy group also runs on to a later ``</arg_key>`` when no
value follows the first, so a body of many keys without values (a model stuck repeating
``<arg_key>``) cost time quadratic in its length: 10 s for 200,000 characters, on the engine
thread. ``arg_pairs`` walks the pairs in one linear pass and reads a body whose pairs are all
whole as that pattern does (the same calls), and refuses any other: the block becomes a
problem holding the model's text. Recovering a broken pair would be a guess (where does a key
without ``</arg_key>`` end, in ``<arg_key>city state<arg_value>``?), and a call runs only
with arguments as the model wrote them (a Kimi call whose JSON breaks is a problem too). String
values keep their whitespace and optional strings stay strings (``typed_arguments``);
everything else (names, the fallback shapes, decoding other values) is mlx-lm's own.
"""

from __future__ import annotations

from typing import Any

import regex as re
from mlx_lm.tool_parsers import glm47 as _mlx

from ._schema import parameter_schemas, schema_types

__all__ = ["arg_pairs", "parse_tool_call", "tool_call_end", "tool_call_start", "typed_arguments"]

tool_call_start, tool_call_end = _mlx.tool_call_start, _mlx.tool_call_end


def parse_tool_call(text: str, tools: list[Any] | None = None) -> Any:
    match = _mlx._func_name_regex.search(text)
    if not match:
        # The fallback shapes (no <arg_key> at all). An argument's other tags without its
        # "<arg_key>" are a pair the model broke, which they read as part of a name, a key
        # or the "raw" text after the name; a JSON value may hold them as any text.
        call = _mlx.parse_tool_call(text, tools)
        if any(tag in read for read in _unparsed(call) for tag in _PAIR_TAGS):
            raise ValueError("an argument's tags without its <arg_key>")
        return call
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


def arg_pairs(text: str, prefix: str = "") -> list[tuple[str, str]]:
    r"""(key, value) pairs, the keys stripped, from the first ``<arg_key>`` of ``text`` on,
    with ``prefix`` before each tag name (LongCat's ``longcat_``).

    Each pair is ``<arg_key>k</arg_key>`` (``k`` holding no tag), whitespace (or mlx-lm's
    literal ``\n``), ``<arg_value>v</arg_value>``, and only such whitespace comes between
    pairs and after the last: then these are the pairs mlx-lm's pattern
    ``<arg_key>(.*?)</arg_key>(?:\\n|\s)*<arg_value>(.*?)</arg_value>`` finds. Where that
    pattern would skip text the model wrote (a key without its ``</arg_key>``, one without a
    value, a value never closed, text between pairs) and run the call without it, or run a
    key on into the next pair, this raises ValueError: the filter shows the block as a
    problem. A value is all its text, tags too (code may write them).
    """
    key_open, key_close = f"<{prefix}arg_key>", f"</{prefix}arg_key>"
    value_open, value_close = f"<{prefix}arg_value>", f"</{prefix}arg_value>"
    gap = _GAP.match
    pairs, pos = [], text.find(key_open)
    while pos != -1 and (pos := gap(text, pos).end()) < len(text):
        if not text.startswith(key_open, pos):
            raise ValueError(f"text outside an argument: {_shown(text[pos:])}")
        key_from = pos + len(key_open)
        key_to = text.find(key_close, key_from)
        key = text[key_from:] if key_to == -1 else text[key_from:key_to]
        if key_to == -1 or any(tag in key for tag in (key_open, value_open, value_close)):
            raise ValueError(f"the argument key {_shown(key.partition('<')[0].strip())} has "
                             f"no {key_close}")
        pos = gap(text, key_to + len(key_close)).end()
        if not text.startswith(value_open, pos):
            raise ValueError(f"the argument {_shown(key.strip())} has no {value_open}")
        value_from = pos + len(value_open)
        value_to = text.find(value_close, value_from)
        if value_to == -1:
            raise ValueError(f"the value of {_shown(key.strip())} has no {value_close}")
        pairs.append((key.strip(), text[value_from:value_to]))
        pos = value_to + len(value_close)
    return pairs


_GAP = re.compile(r"(?:\\n|\s)*")  # (mlx-lm's pattern lets a literal "\n" stand for a newline)
_PAIR_TAGS = ("</arg_key>", "<arg_value>", "</arg_value>")


def _unparsed(call: dict) -> list[str]:
    """The texts of a fallback call that were not read as JSON values: its name, its keys,
    and the text after the name when that became ``{"raw": text}``."""
    arguments = call.get("arguments")
    texts = [str(call.get("name"))]
    if isinstance(arguments, dict):
        texts += map(str, arguments)
        if set(arguments) == {"raw"}:
            texts.append(str(arguments["raw"]))
    return texts


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")
