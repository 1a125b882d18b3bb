"""Pythonic tool calls: ``[get_weather(city='Paris'), get_time()]``.

LFM2 wraps the list in ``<|tool_call_start|>``/``<|tool_call_end|>``, Llama 4 in
``<|python_start|>``/``<|python_end|>``, and Llama 3.2 writes it bare. mlx-lm's ``pythonic``
parser evaluates the whole list at once, so one bad call sinks its siblings, and models'
near-Python (raw newlines or same-style quotes inside strings, ``07``, sets) fails outright.
Here the list is split into calls by a quote-aware scanner (at call boundaries when a stray
quote or bracket never balances) and each call is read with ``ast`` on its own; a call that
does not read as Python is repaired (escape raw newlines and NULs, treat a quote that is not
followed by ``,)]}:`` as text, and one that is as text too when the call reads no other way,
drop leading zeros, rename a parameter called like a Python keyword, ``from=1``) and
otherwise becomes a problem, ``{"problem": source, "message": ...}``.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
from typing import Any

from ._brackets import BracketScanner

__all__ = [
    "list_start",
    "parse_tool_call",
    "python_end",
    "python_start",
    "tool_call_end",
    "tool_call_start",
]

tool_call_start = "<|tool_call_start|>"  # LFM2
tool_call_end = "<|tool_call_end|>"
python_start = "<|python_start|>"  # Llama 4
python_end = "<|python_end|>"
list_start = "["  # Llama 3.2's bare list, only at the very start of a reply

_MARKERS = (tool_call_start, tool_call_end, python_start, python_end)
# Where one call ends and the next begins ("), name("), for a list whose quotes or brackets
# do not balance: one call's stray quote must not swallow the calls after it.
_CALL_BOUNDARY = re.compile(r"\)\s*,\s*(?=[A-Za-z_][\w.]*\s*\()")
_JSON_NAMES = {"true": True, "false": False, "null": None}


def parse_tool_call(text: str, tools: Any | None = None) -> list[dict[str, Any]]:
    body = text
    for marker in _MARKERS:
        body = body.replace(marker, "")
    start, end = body.find("["), body.rfind("]")
    if start == -1 or end <= start:
        raise ValueError("No function provided.")
    sources = _split_calls(body[start + 1: end])
    if not sources:
        if body[:start].strip() or body[end + 1:].strip():
            raise ValueError("the block holds text but no call")  # (kept as a problem's text)
        return []  # "[]": a block with no calls (vLLM's lfm2 tests), not a failed one
    results = []
    for source in sources:
        try:
            results.extend(_parse_calls(source))
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as exc:
            message = ("the call is too complex for Python's parser to read"
                       if isinstance(exc, (MemoryError, RecursionError))
                       else f"{type(exc).__name__}: {exc}")
            results.append({"problem": source, "message": message})
    if len(results) == 1 and "problem" in results[0]:
        raise ValueError(results[0]["message"])
    return results


def _split_calls(inner: str) -> list[str]:
    """Top-level comma-separated items of the list, respecting brackets and strings.

    When the quotes or brackets never balance (a call with a stray quote), the list is cut
    at call boundaries instead, so the broken call fails alone and its siblings still parse.
    """
    scanner, items, begin, pos = BracketScanner(quotes="'\""), [], 0, 0
    while (stop := scanner.scan(inner, pos, separators=",")) != -1:
        if inner[stop] == ",":
            items.append(inner[begin:stop])
            begin = stop + 1
        pos = stop + 1
    items.append(inner[begin:])
    if not scanner.balanced:
        items = [inner[a:b] for a, b in _call_spans(inner)]
    return [item.strip() for item in items if item.strip()]


def _call_spans(inner: str) -> list[tuple[int, int]]:
    """``(begin, end)`` of each call, cut after every ``)`` that a ``, name(`` follows."""
    spans, begin = [], 0
    for match in _CALL_BOUNDARY.finditer(inner):
        spans.append((begin, match.start() + 1))
        begin = match.end()
    spans.append((begin, len(inner)))
    return spans


def _parse_calls(source: str) -> list[dict[str, Any]]:
    """The call ``source`` holds, or the calls: a list whose quotes balanced only by pairing
    one call's stray quote with the next's (``f(a='x 'y'), g(b='p 'q')``) came as one item,
    and its repair reads as their tuple."""
    try:
        node = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError):
        node = _repaired(source)
    if isinstance(node, ast.Tuple) and node.elts and all(
            isinstance(e, ast.Call) for e in node.elts):
        return [_call(e, source) for e in node.elts]
    return [_call(node, source)]


def _call(node: ast.expr, source: str) -> dict[str, Any]:
    if not isinstance(node, ast.Call) or node.args:
        raise ValueError(f"not a call with keyword arguments: {source[:60]!r}")
    name = _dotted_name(node.func)
    if name is None:
        raise ValueError(f"not a function name: {source[:60]!r}")
    arguments = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ValueError("**kwargs is not a tool argument")
        arguments[_RESERVED.get(keyword.arg, keyword.arg)] = _value(keyword.value)
    return {"name": name, "arguments": arguments}


def _dotted_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        parent = _dotted_name(func.value)
        return f"{parent}.{func.attr}" if parent else None
    return None


def _value(node: ast.expr) -> Any:
    """A JSON-compatible value: literals, containers, JSON's true/false/null; sets as lists."""
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("** inside a dict is not a literal")
        return {_key(k): _value(v) for k, v in zip(node.keys, node.values)}
    try:
        value = ast.literal_eval(node)
    except ValueError:  # (its message holds the node's address: not the same twice)
        raise ValueError(f"{ast.unparse(node)[:60]!r} is not a literal value") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} is not a JSON number")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"{type(value).__name__} is not a JSON value")


def _key(node: ast.expr) -> str:
    key = _value(node)
    return key if isinstance(key, str) else str(key).lower() if isinstance(key, bool) else str(key)


def _repaired(source: str) -> ast.expr:
    """``source`` read after ``_repair``. Where a quote followed by ``,)]}:`` ended a string
    and the result does not read, the string may have gone on (``mul_symbol='\\,'`` inside
    a quoted ``python -c`` command): each such closer is tried as text in turn, then with
    the later ones (depth first, at most ``_REPAIRS`` readings)."""
    tries = [frozenset()]
    first_error = None
    for _ in range(max(1, min(_REPAIRS, _REPAIR_CHARACTERS // max(1, len(source))))):
        if not tries:
            break
        kept_open = tries.pop()
        text, closers = _repair(source, kept_open)
        try:
            return ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError) as exc:
            first_error = first_error or exc
        later = [c for c in closers if c > max(kept_open, default=-1)][:_REPAIRS]
        tries.extend(kept_open | {c} for c in reversed(later))
    raise first_error


_REPAIRS = 32
_REPAIR_CHARACTERS = 64 * 1024
"""Characters all readings of one call may go through: a long call gets fewer (one, past
64 KiB), so a reply of stray quotes costs what one reading costs."""


def _repair(source: str, kept_open: frozenset = frozenset()) -> tuple[str, list[int]]:
    """Best-effort near-Python to Python (see the module docstring), and where a quote
    followed by ``,)]}:`` was taken to end its string; those in ``kept_open`` are text."""
    out, closers, quote, escape, i, n = [], [], "", False, 0, len(source)
    while i < n:
        ch = source[i]
        if quote:
            if escape:
                escape = False
                out.append(ch)
            elif ch == "\\":
                escape = True
                out.append(ch)
            elif ch == quote:
                after = _NEXT_NON_SPACE.search(source, i + 1)  # (a slice here: quadratic)
                if after is None or (after.group() in ",)]}:" and i not in kept_open):
                    quote = ""
                    out.append(ch)
                    if after is not None:
                        closers.append(i)
                else:
                    out.append("\\" + ch)  # a quote inside the text, not its end
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\r":
                out.append("\\r")
            elif ch == "\x00":
                out.append("\\x00")
            else:
                out.append(ch)
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        elif ch == "0" and i + 1 < n and source[i + 1].isdigit() and not _in_word(out):
            pass  # a leading zero ("07", "007"): Python 3 rejects it, the value is 7
        elif (ch.isalpha() and (reserved := _RESERVED_ARGUMENT.match(source, i))
              and _after_separator(out)):
            out.append(_PLACEHOLDER + reserved[1])  # from=1: a keyword Python cannot take
            i = reserved.end(1)
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out), closers


_NEXT_NON_SPACE = re.compile(r"\S")
_RESERVED_ARGUMENT = re.compile(
    r"(" + "|".join(k for k in keyword.kwlist if k.islower()) + r")\s*=(?!=)")
_PLACEHOLDER = "_mlxnb_reserved_"
_RESERVED = {_PLACEHOLDER + k: k for k in keyword.kwlist}
"""A parameter named like a Python keyword (``from``, ``in``, ``class``), renamed to read."""


def _in_word(out: list[str]) -> bool:
    """Whether what was written so far ends in an identifier or a number (so a 0 next is
    not leading)."""
    return bool(out) and (out[-1][-1].isalnum() or out[-1][-1] in "_.")


def _after_separator(out: list[str]) -> bool:
    """Whether the next name written would be a keyword argument's: after ``(`` or ``,``."""
    for piece in reversed(out):
        text = piece.rstrip()
        if text:
            return text[-1] in "(,"
    return False
