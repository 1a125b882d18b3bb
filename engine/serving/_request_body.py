"""Reading a completion request's body: its announced length, a gzip or deflate encoding,
and the JSON object it must be. Plain functions of the bytes and headers; the completion
handler (``_completions``) answers what they refuse."""

from __future__ import annotations

import functools
import json
import math
import re
import zlib
from typing import Any

from tornado import httputil

from .._errors import EngineRequestError, json_failure
from ._error_objects import cut

__all__ = ["ZLIB_WINDOW", "announced_length", "stalled_body_message", "inflate", "json_object"]

# zlib's window bits for a compressed request body: gzip's format, or zlib's (which HTTP
# calls "deflate", RFC 9110).
ZLIB_WINDOW = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
               "deflate": zlib.MAX_WBITS}


def announced_length(headers: httputil.HTTPHeaders) -> str | None:
    """The body's Content-Length, its digits as sent, or None (a chunked body). The
    header is a count or a list of equal counts: the listener refused any other
    (``HeadChecked``)."""
    length = headers.get("Content-Length")
    return None if length is None else re.split(r",[ \t]*", length)[0]


def stalled_body_message(received: int, announced: str | None, timeout: float) -> str:
    """Why a body that has not come whole within ``timeout`` seconds is refused: a
    Content-Length larger than the body sent, or a chunked body never ended."""
    waited = f"{timeout:g} s"
    if announced is not None:
        return (f"The request body stopped coming after {received} of the "
                f"{announced} bytes its Content-Length announced "
                f"({waited}); send them all, or a Content-Length that counts the body's "
                "bytes.")
    return (f"The chunked request body stopped coming after {received} bytes "
            f"({waited}) without its last, zero-size chunk; end the body with one.")


def inflate(decoder: Any, window: int, data: bytes, most: int) -> tuple[Any, bytes]:
    """``data`` decompressed, at most ``most`` bytes, and the decompressor to go on with. A
    gzip body may hold several members one after another, and zero padding between or after
    them, as ``gzip -d`` and Python's ``gzip`` read it (RFC 1952); other bytes after the end
    are an error (``zlib.error``)."""
    out = b""
    while data and len(out) < most:
        if decoder.eof:
            data = data.lstrip(b"\0")
            if not data:
                break
            if window == ZLIB_WINDOW["deflate"]:
                raise zlib.error("data after the end of the deflate stream")
            decoder = zlib.decompressobj(window)
        out += decoder.decompress(data, most - len(out))
        data = decoder.unused_data if decoder.eof else b""
    return decoder, out


def json_object(raw: bytes) -> dict:
    """The body's JSON object; an ``EngineRequestError`` (a 400) says why it is none."""
    odd: list[str] = []  # NaN, Infinity or 1e999 as sent: Python's json reads them
    try:
        body = json.loads(raw, parse_constant=functools.partial(_odd_number, odd),
                          parse_float=functools.partial(_odd_number, odd))
    except (ValueError, RecursionError) as exc:  # bad bytes or syntax, a 5,000-digit number
        raise EngineRequestError(f"The request body is not valid JSON ({json_failure(exc)}); "
                                 "send a JSON object.") from None
    if not isinstance(body, dict):
        raise EngineRequestError(f"The request body must be a JSON object of the request's "
                                 f"fields, not {_json_kind(body)}.")
    if odd:
        # No JSON parser but Python's reads them, and a reply echoes parts of the body (a
        # Responses reply its tools' schemas): refused, as OpenAI refuses such a body.
        where = _non_finite_at(body)
        raise EngineRequestError(f"'{cut(where)}' is {odd[0]}, which is no JSON number; send a "
                                 "finite number.", param=where)
    return body


def _json_kind(value: Any) -> str:
    """What a JSON value is, as a sentence names it ("an array")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return {list: "an array", str: "a string", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _odd_number(odd: list[str], text: str) -> float:
    """``text`` (a JSON float, or NaN, Infinity, -Infinity) as a float; ``odd`` gets the text
    of one that is not finite."""
    value = float(text)
    if not math.isfinite(value):
        odd.append(text)
    return value


def _non_finite_at(body: dict) -> str:
    """Where in ``body`` its first non-finite number is, as a field path
    (``tools[0].parameters.maximum``)."""
    stack: list[tuple[Any, str]] = [(body, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return path
        if isinstance(value, dict):
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(value))))
    return "body"
