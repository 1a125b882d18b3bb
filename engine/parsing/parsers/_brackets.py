"""The one quote- and bracket-aware scanner: where a value closes, which commas are top level.

Two readers need the same bookkeeping (bracket depth, whether we are inside a string, an
escape pending): the stream filter's body scanners, which find where a Mistral JSON value or a
bare Python call list ends while it streams in, and the pythonic parser, which splits a call
list at its top-level commas. State survives between ``scan`` calls, so text can be read in
pieces at O(piece) cost.
"""

from __future__ import annotations

__all__ = ["BracketScanner"]


class BracketScanner:
    """Bracket depth and string state of text read in pieces.

    ``scan`` stops at the first character that matters to a caller: a closing bracket that
    brings the depth back to 0, or one of ``separators`` at depth 0 outside a string.

    Example::

        s = BracketScanner(quotes="'\\"")
        text = "f(a='x, y'), g()"
        s.scan(text, 0, ",")   # -> 9   (the ")" closing f's arguments)
        s.scan(text, 10, ",")  # -> 10  (the top-level comma)
        s.scan(text, 11, ",")  # -> 15  (the ")" closing g's)
        s.scan(text, 16, ",")  # -> -1  (ran out of text; state kept for the next piece)
    """

    __slots__ = ("_closing", "_opening", "_quotes", "depth", "escape", "quote")

    def __init__(
        self, quotes: str = '"', *, depth: int = 0, opening: str = "([{", closing: str = ")]}"
    ) -> None:
        self.depth = depth
        self.quote = ""
        """The quote character of the string being read, "" outside one."""
        self.escape = False
        self._quotes, self._opening, self._closing = quotes, opening, closing

    @property
    def balanced(self) -> bool:
        """Outside every string and bracket."""
        return self.depth == 0 and not self.quote

    def scan(self, text: str, start: int = 0, separators: str = "") -> int:
        """Read ``text[start:]``; return the index where it stopped, or -1 at its end."""
        depth, quote, escape = self.depth, self.quote, self.escape
        quotes, opening, closing = self._quotes, self._opening, self._closing
        stop = -1
        for i in range(start, len(text)):
            ch = text[i]
            if quote:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == quote:
                    quote = ""
            elif ch in quotes:
                quote = ch
            elif ch in opening:
                depth += 1
            elif ch in closing:
                depth -= 1
                if depth == 0:
                    stop = i
                    break
            elif depth == 0 and ch in separators:
                stop = i
                break
        self.depth, self.quote, self.escape = depth, quote, escape
        return stop
