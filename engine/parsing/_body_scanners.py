"""Scanners that find where a tool call ends when its format has no closing marker.

Mistral writes ``[TOOL_CALLS]name[ARGS]{...}`` (or the older ``[TOOL_CALLS][{...}]``) and then
simply stops or goes on with text, so the end of a call is where its JSON value closes. A
scanner reads the body one character at a time, keeping only a bracket depth and string
flags, so streaming costs O(delta) per feed, never a re-parse of the whole body.
"""

from __future__ import annotations

__all__ = ["BareCallScanner", "JsonValueScanner", "make_scanner"]


class JsonValueScanner:
    """Finds the end of the first JSON object/array after an optional ``name[ARGS]`` header.

    Example::

        s = JsonValueScanner()
        s.feed('get_weather[ARGS]{"city": "Pa')   # -> None (still open)
        s.feed('ris"} trailing')                  # -> 5 (chars of this feed in the call)
    """

    __slots__ = ("_depth", "_escape", "_header", "_quotes", "_string")

    def __init__(self, quotes: str = '"', depth: int = 0) -> None:
        self._depth = depth  # 1 when the opening bracket was the marker itself
        self._string = ""  # the quote that opened the string being read, "" outside one
        self._escape = False
        self._header = False  # a name was read, so a later "[" is "[ARGS]", not a list
        self._quotes = quotes

    def feed(self, text: str) -> int | None:
        """Consume ``text``; return how many of its characters complete the value, or None."""
        depth, string, escape, header = self._depth, self._string, self._escape, self._header
        quotes = self._quotes
        for i, ch in enumerate(text):
            if string:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == string:
                    string = ""
            elif depth == 0:
                # Before the value: a ``{`` starts it, and so does a ``[`` before any name
                # (the older ``[TOOL_CALLS][{...}]`` list); other text is the header.
                if ch == "{" or (ch == "[" and not header):
                    depth = 1
                elif not ch.isspace():
                    header = True
            elif ch in quotes:
                string = ch
            elif ch == "{" or ch == "[":
                depth += 1
            elif ch == "}" or ch == "]":
                depth -= 1
                if depth == 0:
                    self._depth, self._string, self._escape, self._header = 0, "", False, False
                    return i + 1
        self._depth, self._string, self._escape, self._header = depth, string, escape, header
        return None


class BareCallScanner:
    """Finds the end of a bare ``name{...}`` after ``call:``, or rejects it as plain text.

    ``feed`` returns the characters that complete the call, None while it is open, or
    ``-(n + 1)`` when the ``n``-th character shows this is not a call (a name holds only
    letters, digits, ``_``, ``.`` and ``-``), so the filter gives the text back unparsed.
    Gemma strings are ``<|"|>``-delimited: their ``"`` toggles the string state.
    """

    __slots__ = ("_name", "_value")

    def __init__(self) -> None:
        self._name = 0  # name characters read so far
        self._value: JsonValueScanner | None = None

    def feed(self, text: str) -> int | None:
        offset = 0
        if self._value is None:
            for i, ch in enumerate(text):
                if ch == "{" and self._name:
                    self._value = JsonValueScanner(quotes='"', depth=1)
                    offset = i + 1
                    break
                if ch.isalnum() or ch in "_.-":
                    self._name += 1
                    continue
                return -(i + 1)
            else:
                return None
        n = self._value.feed(text[offset:])
        return None if n is None else offset + n


def make_scanner(name: str | None):
    if name is None:
        return None
    if name == "mistral":
        return JsonValueScanner()
    if name == "python_list":
        # Opened by the "[" marker; Python strings may use either quote.
        return JsonValueScanner(quotes="\"'", depth=1)
    if name == "bare_call":
        return BareCallScanner()
    raise ValueError(f"Unknown tool-call body scanner {name!r}.")
