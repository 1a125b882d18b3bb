"""``HeadChecked``: what the listener refuses from a request's head, before any handler runs.

tornado refuses some requests itself, below the handlers: headers past its limit (it closes
the connection), and whatever HTTP forbids (no ``Host``, a body framed both by
``Content-Length`` and ``Transfer-Encoding``, a Content-Length that is no number), answered
``HTTP/1.1 400 Bad Request`` with no body, and so no word of why. Checked here first, each is
answered as every other refusal is: an OpenAI error object whose message names the header and
the fix. What tornado refuses later, as it reads them (a malformed header line, a chunked body
whose framing breaks), it still answers itself; ``explain_refusals`` gives that answer a body.
"""

from __future__ import annotations

import json
import re
import sys
from urllib.parse import urlsplit, urlunsplit

from tornado import httputil
from tornado.iostream import StreamClosedError

from .._errors import EngineRequestError
from ._error_objects import error_object

__all__ = ["HeadChecked", "MAX_HEADER_BYTES", "error_body", "explain_refusals"]

MAX_HEADER_BYTES = 64 * 1024
"""The most bytes of path and headers served (tornado's own limit, past which it closes
without a word; the server reads further, to answer 431)."""


def error_body(message: str) -> bytes:
    """An OpenAI error object for an answer written below tornado's handlers."""
    return json.dumps(error_object(EngineRequestError(message))).encode()


class HeadChecked(httputil.HTTPMessageDelegate):
    """Hands a request on to ``delegate`` unless its head is refused: 431 for headers past
    ``MAX_HEADER_BYTES`` (a browser's pile of localhost cookies, say), 400 for a head HTTP
    forbids (``framing_problem``, or one tornado refuses as it reads it)."""

    def __init__(self, delegate: httputil.HTTPMessageDelegate, connection) -> None:
        self.delegate, self.connection, self.refused = delegate, connection, False

    def headers_received(self, start_line, headers):
        head = start_line.method == "HEAD"
        problem = framing_problem(headers)
        if problem is not None:
            # tornado, reading the body after this, would refuse it again (a bare 400 after
            # this answer): it reads none, and closes the connection once this is sent.
            headers.pop("Transfer-Encoding", None)
            headers["Content-Length"] = "0"
        size = len(start_line.path) + sum(len(name) + len(value) + 4
                                          for name, value in headers.get_all())
        if size > MAX_HEADER_BYTES:
            return self._refuse(431, "Request Header Fields Too Large", headers, head,
                                f"The request's path and headers are {size} bytes, over the "
                                f"listener's limit of {MAX_HEADER_BYTES}; send fewer or shorter "
                                "headers (cookies, say).")
        if problem is None:
            start_line = _origin_form(start_line, headers)
            if headers.get("Expect", "").lower() == "100-continue":
                # Java's HttpClient sends "100-Continue" and waits for the 100 (forever, before
                # JDK 24) that tornado sends only to the lowercase spelling; RFC 9110 (10.1.1)
                # has the value case-insensitive.
                headers["Expect"] = "100-continue"
            try:
                return self.delegate.headers_received(start_line, headers)
            except httputil.HTTPInputError as exc:  # no Host, say: the request is not built
                problem = _unreadable(exc, headers)
        return self._refuse(400, "Bad Request", headers, head, problem)

    async def _refuse(self, status: int, reason: str, headers: httputil.HTTPHeaders, head: bool,
                      message: str) -> None:
        self.refused = True
        # (tornado would answer an HTTP/1.0 request that asked for keep-alive "Keep-Alive")
        headers.pop("Connection", None)
        body = error_body(message)
        try:
            await self.connection.write_headers(
                httputil.ResponseStartLine("HTTP/1.1", status, reason),
                httputil.HTTPHeaders({"Content-Type": "application/json", "Connection": "close",
                                      "Content-Length": str(len(body))}),
                None if head else body)
            # Finished before the body was read: tornado closes the connection once it is sent.
            self.connection.finish()
        except StreamClosedError:
            pass

    def data_received(self, chunk: bytes):
        return None if self.refused else self.delegate.data_received(chunk)

    def finish(self) -> None:
        if not self.refused:
            self.delegate.finish()

    def on_connection_close(self) -> None:
        if not self.refused:
            self.delegate.on_connection_close()


def framing_problem(headers: httputil.HTTPHeaders) -> str | None:
    """Why the body's length cannot be known from ``headers`` as tornado reads it, or None.

    Both a Content-Length and a Transfer-Encoding (RFC 9112 lets a server refuse it: two
    parsers would end the body at different bytes), a transfer coding other than chunked,
    and a Content-Length that is not one count of bytes (HTTP allows a list of equal ones)."""
    coding, length = headers.get("Transfer-Encoding"), headers.get("Content-Length")
    if coding is not None and length is not None:
        return ("The request has both a Transfer-Encoding and a Content-Length header, which "
                "HTTP forbids; send only one of them.")
    if coding is not None and coding.lower() != "chunked":
        return (f"The request's Transfer-Encoding {coding[:40]!r} is not read here; send the "
                "body with a Content-Length or chunked (compressed, it takes "
                "Content-Encoding: gzip).")
    if length is not None:
        counts = set(re.split(r",[ \t]*", length))  # (tornado's own reading)
        # tornado's int() would also take " 5" or "²"
        if len(counts) != 1 or not all(c.isascii() and c.isdigit() for c in counts):
            return (f"The Content-Length header ({length[:40]!r}) is not a byte count; send "
                    "the body's length in bytes.")
    return None


def _origin_form(start_line: httputil.RequestStartLine,
                 headers: httputil.HTTPHeaders) -> httputil.RequestStartLine:
    """``start_line`` with an absolute-form target (``POST http://host/v1/...``, as sent to a
    proxy) as the path it names, and ``headers``' Host as its host: RFC 9112 (3.2.2) has a
    server accept that form and take the host from it (tornado would route the whole URL,
    a 404)."""
    target = urlsplit(start_line.path)
    if target.scheme.lower() not in ("http", "https") or not target.netloc:
        return start_line
    headers["Host"] = target.netloc
    return start_line._replace(path=urlunsplit(("", "", target.path or "/", target.query, "")))


def _unreadable(exc: httputil.HTTPInputError, headers: httputil.HTTPHeaders) -> str:
    """The sentence for a head tornado could not make a request of."""
    said = str(exc)
    if said.startswith("Missing Host"):
        return ("The request has no Host header, which HTTP/1.1 requires; send one with the "
                "host and port of the listener's URL (every HTTP client does).")
    if "host header" in said.lower():
        return (f"The Host header {headers.get('Host', '')[:100]!r} is not one host name or "
                "address; send one, with the host and port of the listener's URL.")
    if said.startswith("Invalid query string"):
        return (f"The request's query string cannot be read ({said.partition(': ')[2][:100]}); "
                "the listener reads a request's fields from its JSON body, not its URL.")
    return f"The request is not valid HTTP ({said[:200]}); send it with an HTTP client."


_BARE_REFUSAL = b"HTTP/1.1 400 Bad Request\r\n\r\n"
"""What tornado writes for a request it cannot read (``HTTP1Connection._read_message``)."""


def explain_refusals(stream) -> None:
    """Have ``stream``'s bare refusals say why, as JSON with one sentence.

    tornado writes ``_BARE_REFUSAL`` in the ``except HTTPInputError`` that caught what it
    could not read, and nothing else: its write is swapped for the same status with the
    reason's sentence (the exception being handled is the reason). Should tornado change
    how it refuses, the refusal is only bare again.
    """
    write = stream.write

    def explained(data, *args, **kwargs):
        reason = sys.exc_info()[1]
        if data == _BARE_REFUSAL and isinstance(reason, httputil.HTTPInputError):
            body = error_body(_unread(str(reason)))
            data = (b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        return write(data, *args, **kwargs)
    stream.write = explained


def _unread(said: str) -> str:
    """The sentence for what tornado could not read, from its own words."""
    if said == "invalid chunk size":
        return ("A chunk-size line of the chunked body is not a hexadecimal byte count (chunk "
                "extensions are not read); send each chunk as its size in hex, CRLF, its bytes, "
                "CRLF, or the body with a Content-Length.")
    if said == "improperly terminated chunked request":
        return ("The chunked body does not end with a zero-size chunk and an empty line "
                "(trailer fields are not read); end it so, or send the body with a "
                "Content-Length.")
    if said == "improperly terminated chunk":
        return ("A chunk of the chunked body is longer than its size line says; send each "
                "chunk's size in hex, or the body with a Content-Length.")
    return (f"The request is not valid HTTP/1.1 ({said[:200]}); send it with an HTTP client "
            "library, or as one request line, header lines and an empty line, each ending in "
            "CRLF.")
