"""Scanners that find where a tool call ends when its format has no closing marker.

Mistral writes ``[TOOL_CALLS]name[ARGS]{...}`` (or the older ``[TOOL_CALLS][{...}]``) and then
simply stops or goes on with text, so the end of a call is where its JSON value closes. A
scanner reads the body one character at a time, keeping only a bracket depth and string
flags, so streaming costs O(delta) per feed, never a re-parse of the whole body. The quote and
bracket bookkeeping is ``parsers._brackets.BracketScanner``, shared with the pythonic parser.
"""

from __future__ import annotations

from .parsers._brackets import BracketScanner
from .parsers.gemma4 import string_quote as GEMMA_QUOTE
from .parsers.llama3_json import CALL_KEYS

__all__ = ["BareCallScanner", "CallListScanner", "FunctionTagScanner", "GemmaValueScanner",
           "JsonCallScanner", "JsonValueScanner", "make_scanner"]


class JsonValueScanner:
    """Finds the end of the first JSON object/array after an optional ``name[ARGS]`` header.

    Example::

        s = JsonValueScanner()
        s.feed('get_weather[ARGS]{"city": "Pa')   # -> None (still open)
        s.feed('ris"} trailing')                  # -> 5 (chars of this feed in the call)
    """

    __slots__ = ("_bracket", "_header", "_list", "_value")

    def __init__(self, quotes: str = '"', depth: int = 0) -> None:
        # Only JSON's brackets count; ``depth`` is 1 when the opening bracket was the marker.
        self._value = BracketScanner(quotes, depth=depth, opening="[{", closing="]}")
        self._header = False  # a name was read, so a later "[" is "[ARGS]", not a list
        self._bracket = False  # ...unless a "{" follows it: a "[" after the header, so far
        self._list = ""  # "item": in such a list's first object; "after": past its "}"

    @property
    def opened(self) -> bool:
        """Whether the value began (an open call whose value never did has no arguments)."""
        return self._value.depth > 0 or self._list == "after"

    def feed(self, text: str) -> int | None:
        """Consume ``text``; return how many of its characters complete the value, or None."""
        value, start = self._value, 0
        if value.depth == 0 and not self._list:
            # Before the value: a ``{`` starts it, and so does a ``[`` before any name (the
            # older ``[TOOL_CALLS][{...}]`` list); other text is the header. A ``[`` after
            # the header is ``[ARGS]`` or ``[CALL_ID]``, or a list if a ``{`` comes next and
            # a ``,`` or ``]`` follows that object: the value then spans the list, so that
            # ``[TOOL_CALLS] prose [{...}]`` is one problem up to its ``]``, not one cut at
            # the ``}`` before it; anything else after the object, and the value ended there.
            for start, ch in enumerate(text, 1):
                if ch == "{" or (ch == "[" and not self._header):
                    value.depth = 1
                    self._list = "item" if ch == "{" and self._bracket else ""
                    break
                if ch.isspace():
                    continue
                self._bracket = ch == "["
                self._header = True
            else:
                return None
        while True:
            if self._list == "after":
                at = start
                while at < len(text) and text[at].isspace():
                    at += 1
                if at == len(text):
                    return None
                if text[at] not in ",]":
                    # (the whitespace read after the "}" stays with it, however it was fed)
                    return self._ended(at)
                if text[at] == "]":
                    return self._ended(at + 1)
                value.depth, self._list, start = 1, "", at + 1  # the list goes on to its "]"
            stop = value.scan(text, start)
            if stop == -1:
                return None
            if self._list != "item":
                return self._ended(stop + 1)
            self._list, start = "after", stop + 1

    def _ended(self, end: int) -> int:
        self._header = self._bracket = False
        self._list = ""
        return end


class _HeaderThenValue:
    """A scanner that reads a header one character at a time, then hands the rest of the call
    to a ``JsonValueScanner`` that finds where its value closes.

    ``feed`` returns the characters that complete the call, None while it is open, or
    ``-(n + 1)`` when the ``n``-th character shows this is not a call, so the filter gives the
    text back unparsed. A subclass's ``_header(text, i)`` judges ``text[i]``: None to read on,
    ``_REJECT``, ``_CLOSED`` when the call ends on it, or ``(scanner, offset)`` when the value
    starts (``offset`` 0 scans this character too, 1 starts after it).
    """

    __slots__ = ("_value",)

    def __init__(self) -> None:
        self._value: JsonValueScanner | None = None

    def feed(self, text: str) -> int | None:
        offset = 0
        if self._value is None:
            for i in range(len(text)):
                judged = self._header(text, i)
                if judged is None:
                    continue
                if judged is _REJECT:
                    return -(i + 1)
                if judged is _CLOSED:
                    return i + 1
                self._value, skip = judged
                offset = i + skip
                break
            else:
                return None
        n = self._value.feed(text[offset:])
        if n is None:
            return None
        return offset + n if n >= 0 else n - offset  # (a rejection counts from text[0] too)

    def _header(self, text: str, i: int):
        raise NotImplementedError


_REJECT, _CLOSED = object(), object()


def _json(quotes: str = '"') -> JsonValueScanner:
    """A value scanner inside a bracket the header opened (or is about to scan)."""
    return JsonValueScanner(quotes=quotes, depth=1)


class BareCallScanner(_HeaderThenValue):
    """Finds the end of a bare ``name{...}`` after ``call:``, or rejects it as plain text (a
    name holds only letters, digits, ``_``, ``.`` and ``-``); the value is read by a
    ``GemmaValueScanner``.
    """

    __slots__ = ("_named",)

    def __init__(self) -> None:
        super().__init__()
        self._named = False

    def _header(self, text: str, i: int):
        ch = text[i]
        if ch == "{" and self._named:
            return GemmaValueScanner(), 1
        if ch.isalnum() or ch in "_.-":
            self._named = True
            return None
        return _REJECT


class GemmaValueScanner:
    """Where a Gemma value closes, inside the ``{`` that opened it. Gemma's strings open and
    close with the token ``<|"|>`` and know no other quote and no escape, so a ``"`` inside
    one (``<|"|>TV 55" screen<|"|>``) is text, and brackets count only outside them."""

    __slots__ = ("_depth", "_held", "_in_string")

    def __init__(self) -> None:
        self._depth = 1
        self._in_string = False
        self._held = ""  # the end of the last piece, where the token may have begun

    def feed(self, text: str) -> int | None:
        held, token = self._held, GEMMA_QUOTE
        buf, i = held + text, 0
        self._held = ""
        while i < len(buf):
            ch = buf[i]
            if ch == "<":
                if buf.startswith(token, i):
                    self._in_string = not self._in_string
                    i += len(token)
                    continue
                if len(buf) - i < len(token) and token.startswith(buf[i:]):
                    # Cut inside the token: wait for the rest.
                    self._held = buf[i:]
                    return None
            elif not self._in_string:
                if ch in "{[":
                    self._depth += 1
                elif ch in "}]":
                    self._depth -= 1
                    if self._depth == 0:
                        return i + 1 - len(held)
            i += 1
        return None


_LITERALS = ("true", "false", "null", "NaN", "Infinity")  # (what json.loads takes)
_COLON, _VALUE, _FIRST_VALUE, _KEY, _FIRST_KEY, _IN_KEY, _IN_STRING, _NUMBER, _WORD, _AFTER = (
    range(10))


class JsonSyntaxScanner:
    """Where a JSON object closes, read as JSON: the first character JSON cannot have where it
    stands rejects the object (``-(i + 1)``), so prose that began like a call (an example the
    model never closes, ``{"name": "f", "parameters": {...} and then``) is given back at
    once instead of being held until the reply ends. It starts inside the object, right after
    its first key, which ``JsonCallScanner`` has read.
    """

    __slots__ = ("_escape", "_stack", "_state", "_word")

    def __init__(self) -> None:
        self._stack = ["{"]  # the containers open around the text read
        self._state = _COLON
        self._word = ""
        self._escape = False

    def feed(self, text: str) -> int | None:
        stack, state, word, escape = self._stack, self._state, self._word, self._escape
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            if state == _IN_STRING or state == _IN_KEY:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == '"':
                    state = _COLON if state == _IN_KEY else _AFTER
                elif ch < " ":  # (json.loads refuses a raw control character in a string)
                    return -(i + 1)
                i += 1
                continue
            if state == _NUMBER:
                if ch in "0123456789+-.eEInfinity":  # (-Infinity too; json.loads judges the rest)
                    i += 1
                    continue
                state = _AFTER  # this character follows the number
            elif state == _WORD:
                if ch.isalpha():
                    word += ch
                    if not any(literal.startswith(word) for literal in _LITERALS):
                        return -(i + 1)
                    i += 1
                    continue
                if word not in _LITERALS:
                    return -(i + 1)
                state, word = _AFTER, ""
            if ch in " \t\r\n":
                i += 1
                continue
            if state == _COLON:
                if ch != ":":
                    return -(i + 1)
                state = _VALUE
            elif state == _VALUE or state == _FIRST_VALUE:
                if ch == "]" and state == _FIRST_VALUE:
                    stack.pop()
                    if not stack:
                        return i + 1
                    state = _AFTER
                elif ch == "{":
                    stack.append("{")
                    state = _FIRST_KEY
                elif ch == "[":
                    stack.append("[")
                    state = _FIRST_VALUE
                elif ch == '"':
                    state = _IN_STRING
                elif ch in "-0123456789":
                    state = _NUMBER
                elif ch in "tfnNI":
                    state, word = _WORD, ch
                else:
                    return -(i + 1)
            elif state == _KEY or state == _FIRST_KEY:
                if ch == '"':
                    state = _IN_KEY
                elif ch == "}" and state == _FIRST_KEY:
                    stack.pop()
                    if not stack:
                        return i + 1
                    state = _AFTER
                else:
                    return -(i + 1)
            else:  # _AFTER a value: a comma, or the close of its container
                top = stack[-1]
                if ch == ",":
                    state = _KEY if top == "{" else _VALUE
                elif ch == ("}" if top == "{" else "]"):
                    stack.pop()
                    if not stack:
                        return i + 1
                else:
                    return -(i + 1)
            i += 1
        self._state, self._word, self._escape = state, word, escape
        return None


class JsonCallScanner(_HeaderThenValue):
    """After a bare ``{``: the end of the object if its first key is one a call object starts
    with (``keys``), else a rejection at the first character that shows it is not.

    Llama 3 writes a call as bare JSON, so every ``{`` in a reply may open one: the key is
    read first so that code, prose in braces and other objects are given back at once
    instead of being withheld until they close.
    """

    __slots__ = ("_key", "_keys")

    def __init__(self, keys: tuple[str, ...]) -> None:
        super().__init__()
        self._keys = keys
        self._key: str | None = None  # the first key's characters so far (None: before it)

    def _header(self, text: str, i: int):
        ch = text[i]
        if self._key is None:
            if ch == '"':
                self._key = ""
                return None
            return None if ch.isspace() else _REJECT
        if ch == '"' and self._key in self._keys:
            return JsonSyntaxScanner(), 1
        self._key += ch  # (a key is at most a few characters: a longer one is rejected)
        return None if any(key.startswith(self._key) for key in self._keys) else _REJECT


class CallListScanner(_HeaderThenValue):
    """After a bare ``[`` (Llama's ``[get_weather(city='Paris')]``): the end of the list if it
    starts like a list of calls (``name()``, ``name(keyword=`` or a JSON object), else a
    rejection at the first character that shows it is prose, so ``[1]``, ``[Editor's note]``
    or ``[Update (2024): it's done]`` goes out at once instead of waiting for a bracket an
    apostrophe keeps open. ``[]`` closes at once.
    """

    __slots__ = ("_state",)

    # Before the first name, in it, right after its "(", in the first keyword, after the
    # keyword's whitespace.
    _START, _NAME, _OPEN, _KEYWORD, _KEYWORD_END = range(5)

    def __init__(self) -> None:
        super().__init__()
        self._state = self._START

    def _header(self, text: str, i: int):
        ch, state = text[i], self._state
        word = ch.isalnum() or ch == "_"
        if state == self._START:
            if ch.isspace():
                return None
            if ch == "]":
                return _CLOSED
            if ch == "{":  # a JSON list of call objects, scanned from this brace
                return _json(), 0
            self._state = self._NAME
            return None if word and not ch.isdigit() else _REJECT
        if state == self._NAME:
            if ch == "(":
                self._state = self._OPEN
                return None
            return None if word or ch == "." else _REJECT
        if state == self._OPEN:
            if ch == ")":  # "f()": the rest of the list as written
                return _json("\"'"), 1
            if word and not ch.isdigit():
                self._state = self._KEYWORD
                return None
            return None if ch.isspace() else _REJECT
        if ch == "=" and not text.startswith("==", i):  # a keyword's value: Python from here
            return _json("\"'"), 1
        if ch.isspace():
            self._state = self._KEYWORD_END
            return None
        return None if word and state == self._KEYWORD else _REJECT


class TaggedValueScanner(_HeaderThenValue):
    """After a marker that announces code or a call (Llama's ``<|python_tag|>``): the end of
    the JSON object or Python list that follows, or a rejection when something else does
    (built-in tools' ``brave_search.call(...)``, code), which stays text."""

    __slots__ = ()

    def _header(self, text: str, i: int):
        ch = text[i]
        if ch in "{[":
            return _json("\"'" if ch == "[" else '"'), 1
        return None if ch.isspace() else _REJECT


class FunctionTagScanner:
    """After ``<function=`` (Meta's custom-tool form, ``<function=name>{...}</function>``):
    the end of ``</function>`` if a name, ``>``, one JSON object and the closing tag follow,
    else a rejection at the first character that breaks that shape."""

    __slots__ = ("_closing", "_named", "_state", "_value")

    _CLOSE = "</function>"

    def __init__(self) -> None:
        self._state = "name"  # name -> object -> value -> closing
        self._named = False
        self._value: JsonValueScanner | None = None
        self._closing = 0  # characters of the closing tag matched

    def feed(self, text: str) -> int | None:
        i = 0
        while i < len(text):
            ch = text[i]
            if self._state == "name":
                if ch == ">" and self._named:
                    self._state = "object"
                elif ch.isalnum() or ch in "_.-":
                    self._named = True
                else:
                    return -(i + 1)
            elif self._state == "object":
                if ch == "{":
                    self._state, self._value = "value", JsonValueScanner(quotes='"', depth=1)
                elif not ch.isspace():
                    return -(i + 1)
            elif self._state == "value":
                n = self._value.feed(text[i:])
                if n is None:
                    return None
                self._state, i = "closing", i + n
                continue
            elif ch == self._CLOSE[self._closing]:
                self._closing += 1
                if self._closing == len(self._CLOSE):
                    return i + 1
            elif not (ch.isspace() and self._closing == 0):
                return -(i + 1)
            i += 1
        return None


def make_scanner(name: str | None):
    if name is None:
        return None
    if name == "mistral":
        return JsonValueScanner()
    if name == "bare_call":
        return BareCallScanner()
    if name == "json_call":
        return JsonCallScanner(CALL_KEYS)
    if name == "tagged_value":
        return TaggedValueScanner()
    if name == "call_list":
        return CallListScanner()
    if name == "function_tag":
        return FunctionTagScanner()
    raise ValueError(f"Unknown tool-call body scanner {name!r}.")
