"""Gemma 4 tool calls: ``<|tool_call>call:name{key:value,...}<tool_call|>``.

mlx-lm's ``gemma4`` parser turns the arguments into JSON with regular expressions, which
misses dotted names (``call:weather.get{...}``), bare string values and cut-off strings. This
is a small recursive-descent scanner over Gemma's value syntax instead:

- strings are delimited by ``<|"|>`` on both sides (no escapes inside);
- objects ``{k:v,...}`` have bare keys or ``<|"|>``-delimited ones;
- arrays ``[v,...]``; bare values are ``true``/``false``/``null`` (or ``None``), numbers, or
  plain text.

Several ``call:`` entries may share one block. Raises ValueError when no call is found.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = [
    "bare_call_start",
    "parse_tool_call",
    "read_calls",
    "response_channel",
    "string_quote",
    "think_end",
    "think_label",
    "think_start",
    "tool_call_end",
    "tool_call_start",
    "turn_end",
]

tool_call_start = "<|tool_call>"
tool_call_end = "<tool_call|>"
turn_end = "<turn|>"  # sometimes closes a call instead of ``tool_call_end``
bare_call_start = "call:"  # a call written without ``tool_call_start`` (right after a thought)
think_start = "<|channel>"  # the thought channel, anywhere in a reply
think_end = "<channel|>"
think_label = "thought\n"  # written right after ``think_start``; not part of the thought
# The answer's own channel: it ends a thought without ``think_end`` (vllm-mlx's production
# streams), and its label is no more the answer than ``thought`` is the thought.
response_channel = think_start + "response\n"

string_quote = '<|"|>'  # opens and closes a string; no escapes inside


def parse_tool_call(text: str, tools: Any | None = None):
    body = text.strip()
    body = body.removeprefix(tool_call_start)
    body = body.removesuffix(tool_call_end)
    calls = read_calls(body, string_quote)
    return calls[0] if len(calls) == 1 else calls


def read_calls(body: str, quote: str) -> list[dict[str, Any]]:
    """Every ``call:name{...}`` in ``body``, strings delimited by ``quote`` on both sides."""
    calls = []
    pos = body.find(bare_call_start)
    while pos != -1:
        brace = body.find("{", pos)
        if brace == -1:
            raise ValueError(f"call {body[pos:pos + 40]!r} has no arguments")
        name = body[pos + len(bare_call_start): brace].strip()
        if not name:
            raise ValueError("a call has no function name")
        arguments, end = _Reader(body, quote).object(brace)
        calls.append({"name": name, "arguments": arguments})
        pos = body.find(bare_call_start, end)
    if not calls:
        raise ValueError("No function provided.")
    return calls


class _Reader:
    """Reads one Gemma value at a position; each method returns (value, position after)."""

    def __init__(self, text: str, quote: str = string_quote) -> None:
        self.text = text
        self.quote = quote

    def value(self, pos: int, stops: str) -> tuple[Any, int]:
        pos = self._space(pos)
        text = self.text
        if text.startswith(self.quote, pos):
            return self.string(pos)
        if pos < len(text) and text[pos] == "{":
            return self.object(pos)
        if pos < len(text) and text[pos] == "[":
            return self.array(pos)
        end = pos
        while end < len(text) and text[end] not in stops:
            end += 1
        return _bare(text[pos:end].strip()), end

    def string(self, pos: int) -> tuple[str, int]:
        start = pos + len(self.quote)
        end = self.text.find(self.quote, start)
        if end == -1:  # cut off: the rest is the string
            return self.text[start:], len(self.text)
        return self.text[start:end], end + len(self.quote)

    def object(self, pos: int) -> tuple[dict[str, Any], int]:
        text, result = self.text, {}
        pos = self._space(pos + 1)
        while pos < len(text) and text[pos] != "}":
            if text.startswith(self.quote, pos):
                key, pos = self.string(pos)
                colon = text.find(":", pos)
            else:
                colon = text.find(":", pos)
                key = text[pos:colon].strip() if colon != -1 else ""
                if len(key) > 2 and key[0] == key[-1] == '"':
                    key = key[1:-1]  # a key the model quoted JSON's way: the quotes are no name
            if colon == -1 or not key:
                raise ValueError(f"malformed argument near {text[pos:pos + 40]!r}")
            result[key], pos = self.value(colon + 1, ",}")
            pos = self._space(pos)
            if pos < len(text) and text[pos] == ",":
                pos = self._space(pos + 1)
        if pos >= len(text):
            raise ValueError("the arguments are cut off before '}'")
        return result, pos + 1

    def array(self, pos: int) -> tuple[list[Any], int]:
        text, result = self.text, []
        pos = self._space(pos + 1)
        while pos < len(text) and text[pos] != "]":
            item, pos = self.value(pos, ",]")
            result.append(item)
            pos = self._space(pos)
            if pos < len(text) and text[pos] == ",":
                pos = self._space(pos + 1)
        if pos >= len(text):
            raise ValueError("an array is cut off before ']'")
        return result, pos + 1

    def _space(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos].isspace():
            pos += 1
        return pos


def _bare(word: str) -> Any:
    """true/false and numbers as JSON reads them; ``null``, ``none`` and ``nil`` in any case
    (``None``, ``NULL``) as null, which Gemma 4 writes for an optional argument left out; and
    ``108.`` as 108.0, as vLLM's parser reads Gemma 4's bare values. Anything else stays a
    string, a number no JSON number carries (``NaN``, ``1e10000``) too, as vLLM keeps it."""
    if word.lower() in _NULL_WORDS:
        return None
    try:
        value = json.loads(word)
    except ValueError:
        return float(word) if _TRAILING_DOT_FLOAT.fullmatch(word) else word
    return word if isinstance(value, float) and not math.isfinite(value) else value


_NULL_WORDS = ("null", "none", "nil")


_TRAILING_DOT_FLOAT = re.compile(r"-?\d+\.")
