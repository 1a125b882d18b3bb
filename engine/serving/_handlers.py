"""The listener's tornado handlers: the endpoints of ``mlx_lm.server``, on the one request path.

A completion handler admits the body through ``Engine.submit`` (on an executor thread: a
long conversation takes milliseconds to render) with an ``on_event`` that hands each event
to the IO loop through the listener's one ``Deliveries``: what every request produced since
the loop last looked reaches it in one wake-up (paced: at most one per ``PACE_SECONDS``,
but at once for a reply's first text or its end), where the engine's own chunk builders
(``request/_responses``) turn it into SSE ``data:`` lines, a request's deltas from one
wake-up joined into one chunk (``merge_deltas``). No thread per request: with 64 clients
streaming, a pump thread each (blocking on its events, waking the loop per token) cost the
engine a fifth of its throughput in GIL hand-offs. A client that goes away cancels its
request (``RequestHandle.cancel``) at the next write or as soon as tornado sees the
connection close.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hmac
import ipaddress
import json
import logging
import math
import re
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from tornado.web import Finish, RequestHandler, stream_request_body

from ..request._respond import several_prompts, submit_each
from .._errors import EngineDeadError, EngineError, EngineRequestError, json_failure
from .._events import Error, Finished, TokenLogprobs
from ..request import _responses as responses
from ..request import _responses_api as responses_api
from ..request._admission import DEFAULT_MODEL_ALIAS
from ..request._handle import RequestHandle
from ..request._job import PACE_SECONDS, TEXT_EVENTS, urgent

__all__ = ["ServedRequest", "Deliveries", "merge_deltas", "CompletionsHandler", "ModelsHandler",
           "HealthHandler", "NotFoundHandler"]
_log = logging.getLogger("mlx_notebook.engine.serving")


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One request the listener is serving now."""

    request_id: str
    client: str
    """The client's address, ``host:port``."""
    endpoint: str
    """The path it came on (``/v1/chat/completions``, ``/v1/responses``, ...)."""
    stream: bool
    started: float
    """``time.time()`` when it was admitted."""


class Deliveries:
    """Events from the engine's threads to the IO loop, shared by every request: one loop
    wake-up for whatever came meanwhile (``call_soon_threadsafe`` writes the loop's self-pipe
    each time), and paced as a request's own reader is (``PACE_SECONDS``): after a wake-up
    that found events, the next comes a pace later, or at once for a reply's first text or
    its end (``urgent``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pace: float = PACE_SECONDS):
        self._loop = loop
        self._pace = pace
        self._items: collections.deque = collections.deque()
        self._signalled = False
        self._urgent = False
        self._timer: asyncio.TimerHandle | None = None

    def sender(self, handler: "CompletionsHandler") -> Callable[[Any], None]:
        """The ``on_event`` for ``handler``'s request (called on any thread)."""
        items = self._items
        text_seen = False

        def deliver(event: Any) -> None:
            nonlocal text_seen
            items.append((handler, event))  # before the check: a pending wake-up covers it
            try:
                if not self._signalled:
                    self._signalled = True
                    self._loop.call_soon_threadsafe(self._drain)
                elif urgent(event, text_seen) and not self._urgent:
                    self._urgent = True
                    self._loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the listener stopped: its loop is closed, nobody reads
                return
            text_seen = text_seen or type(event) in TEXT_EVENTS
        return deliver

    def _drain(self) -> None:
        self._signalled = self._urgent = False
        items = self._items
        if not items:
            return  # nothing came within the pace: the next event wakes the loop at once
        batches: dict[int, tuple[CompletionsHandler, list]] = {}
        while items:
            handler, event = items.popleft()
            batch = batches.get(id(handler))
            if batch is None:
                batches[id(handler)] = batch = (handler, [])
            batch[1].append(event)
        for handler, events in batches.values():
            try:
                for event in merge_deltas(events):
                    handler.on_event(event)
                handler.send()
            except Exception:  # a bug of ours on one request never drops the others' events
                _log.exception("The listener failed on request %s", handler.request.path)
                handler.abort()
        self._signalled = True
        if self._timer is None:
            self._timer = self._loop.call_later(self._pace, self._paced)

    def _paced(self) -> None:
        self._timer = None
        self._drain()


def merge_deltas(events: list) -> list:
    """``events`` with each run of text deltas of one kind joined into one delta.

    A client then reads the same text in fewer SSE chunks: one per request per wake-up
    instead of one per token, which is most of the IO loop's work with many clients
    streaming. The token logprobs between the joined deltas move before the joined one, so
    the chunk that carries its text carries theirs, as the separate chunks did.
    """
    out: list = []
    for event in events:
        kind = type(event)
        if kind in TEXT_EVENTS:
            last = len(out) - 1
            while last >= 0 and type(out[last]) is TokenLogprobs:
                last -= 1
            if last >= 0 and type(out[last]) is kind:
                event = kind(out.pop(last).text + event.text)
        out.append(event)
    return out


def _cut(text: str, limit: int = 200) -> str:
    """``text`` as an error message quotes it: a 500 kB path is not echoed whole."""
    return text if len(text) <= limit else f"{text[:limit]}…"


class _Base(RequestHandler):
    """OpenAI error objects for every failure, tornado's own (405, 500) included."""

    def initialize(self, listener: Any) -> None:
        self.listener = listener

    def set_default_headers(self) -> None:  # also for error responses (``clear`` calls it)
        self.set_header("Content-Type", "application/json")
        origin = self.request.headers.get("Origin")
        if not origin or not self._origin_allowed(origin):
            return
        allowed = self.application.settings["allowed_origins"]
        self.set_header("Access-Control-Allow-Origin", "*" if "*" in allowed else origin)
        self.set_header("Vary", "Origin, Access-Control-Request-Headers")
        self.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
        # The headers the page's client asked for (the openai JS SDK sends eight of its own
        # x-stainless-* headers), as header names; a bare "*" would not cover Authorization.
        asked = _HEADER_NAME.findall(self.request.headers.get("Access-Control-Request-Headers", ""))
        self.set_header("Access-Control-Allow-Headers",
                        ", ".join(dict.fromkeys(["Authorization", "Content-Type", *asked])))

    def _origin_allowed(self, origin: str) -> bool:
        allowed = self.application.settings.get("allowed_origins", ())
        return "*" in allowed or origin in allowed

    def options(self, *args: Any) -> None:
        """A browser's CORS preflight: 204, with the allow headers when its origin is allowed
        (``Listener(allowed_origins=...)``); a preflight carries no token, so none is asked."""
        self.set_status(204)
        self.finish()

    def fail(self, status: int, message: str, *, type: str = "invalid_request_error",
             param: str | None = None, code: str | None = None):
        """Answer with an OpenAI error object; returns the future of its flush."""
        self.set_status(status)
        error = {"message": message, "type": type, "param": param, "code": code}
        return self.finish({"error": error})

    def decode_argument(self, value: bytes | None, name: str | None = None) -> str | None:
        """A part of the path, as text (tornado's own refusal says only "Bad Request")."""
        try:
            return None if value is None else value.decode("utf-8")
        except UnicodeDecodeError:
            self.fail(400, "The request's path is not UTF-8 once its %-escapes are decoded; "
                           "percent-encode the UTF-8 bytes of the name.")
            raise Finish() from None

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        if status_code == 405:  # (RFC 9110: a 405 lists the methods the resource has)
            self.set_header("Allow", ", ".join(
                [m for m in ("GET", "HEAD", "POST") if m.lower() in type(self).__dict__]
                + ["OPTIONS"]))
        message = {405: f"{_cut(self.request.method)} is not allowed on "
                        f"{_cut(self.request.path)}.",
                   500: "The server failed on this request; see the listener's log."}
        self.finish({"error": {"message": message.get(status_code, self._reason),
                               "type": "server_error" if status_code >= 500 else
                               "invalid_request_error", "param": None, "code": None}})

    def say_close(self) -> None:
        """Answer ``Connection: close`` (the connection ends after this answer).

        tornado answers every HTTP/1.0 request that asked for keep-alive "Keep-Alive", over
        this header, even on a connection it then closes: the request's own header goes."""
        self.request.headers.pop("Connection", None)
        self.set_header("Connection", "close")

    def authorized(self) -> bool:
        """True, or the request has been answered with 401 (no token or a wrong one) or 403.

        Without a token (loopback only) the token cannot keep web pages out, so two checks
        do: a browser request from a page whose origin is not allowed (a form or a no-cors
        fetch reaches the server without a preflight) and a Host that is no loopback name (a
        DNS-rebinding page, which would be same-origin and read the replies) are refused.
        """
        token = self.listener.token
        if not token:
            origin = self.request.headers.get("Origin")
            if origin is not None and not self._origin_allowed(origin):
                self.fail(403, f"Requests from the web page {origin[:100]!r} are not allowed; "
                               "start the listener with its origin in --allowed-origins.",
                          code="origin_not_allowed")
                return False
            host = self.request.headers.get("Host")
            if host is not None and not _loopback_name(host):
                self.fail(403, f"This listener serves without a token, so only on this "
                               f"machine's loopback names, not as {host[:100]!r}; use "
                               "127.0.0.1 or localhost, or give the listener a token.",
                          code="host_not_allowed")
                return False
            return True
        scheme, _, given = self.request.headers.get("Authorization", "").partition(" ")
        given = given.strip().encode()
        if scheme.lower() == "bearer" and hmac.compare_digest(given, token.encode()):
            return True
        self.set_header("WWW-Authenticate", "Bearer")
        self.fail(401, "Missing or wrong API key: send 'Authorization: Bearer TOKEN' with the "
                       "token the listener printed when it started.", code="invalid_api_key")
        return False

    def engine(self) -> Any:
        """The engine, or None once the request has been answered with 503."""
        engine = self.listener.engine
        if engine is None or not engine.healthy:
            self.fail(503, "No model is loaded in the served engine; load one and retry.",
                      type="server_error", code="model_not_loaded")
            return None
        return engine


class HealthHandler(_Base):
    """``GET /health``: ``{"status": "ok"}`` (200) or ``unavailable`` (503); no token needed,
    it tells nothing but whether the engine runs."""

    def get(self) -> None:
        engine = self.listener.engine
        ok = engine is not None and engine.healthy
        self.set_status(200 if ok else 503)
        self.finish({"status": "ok" if ok else "unavailable"})

    head = get  # (uptime checkers ask with HEAD; tornado sends no body for it)


class ModelsHandler(_Base):
    """``GET /v1/models``: the one loaded model, as ``mlx_lm.server`` lists models;
    ``GET /v1/models/{id}``: that model's object, as OpenAI answers it (the server answers
    with the list filtered to it), or 404 when the engine serves another. ``default_model``,
    the name a response without ``model`` carries, is the loaded model too."""

    def get(self, model_id: str | None = None) -> None:
        if not self.authorized():
            return
        engine = self.listener.engine
        model = None
        if engine is not None and engine.healthy:
            model = {"id": engine.model_info.name, "object": "model",
                     "created": self.listener.created, "owned_by": "mlx-notebook"}
        if not model_id:
            self.finish({"object": "list", "data": [model] if model else []})
        elif model is not None and model_id in (model["id"], engine.model_info.path,
                                                DEFAULT_MODEL_ALIAS):
            self.finish({**model, "id": model_id})  # the id a response named is the id asked
        else:
            served = f"; this listener serves {model['id']!r}" if model else ""
            self.fail(404, f"The model {_cut(model_id)!r} is not loaded{served}.", param="model",
                      code="model_not_found")

    head = get


class _EveryMethod:
    def __contains__(self, method: object) -> bool:
        return True


class NotFoundHandler(_Base):
    SUPPORTED_METHODS = _EveryMethod()  # type: ignore[assignment]
    """A path nobody serves is a 404 whatever the method: tornado would answer a method it
    does not know (PROPFIND, TRACE, a typo) 405, allowing only OPTIONS there."""

    def prepare(self) -> None:
        stored = _STORED_RESPONSE.fullmatch(self.request.path)
        if stored:  # the openai SDK's responses.retrieve, .delete, .cancel, .input_items.list
            self.fail(404, f"The response {_cut(stored[1])!r} is not stored: this server stores "
                           "no responses (each says \"store\": false); keep the one you got, "
                           "and send the whole conversation in 'input'.", code="not_found")
            return
        self.fail(404, f"There is no endpoint {_cut(self.request.path)}; use /v1/chat/completions, "
                       "/v1/responses, /v1/completions, /v1/models or /health.", code="not_found")


_STORED_RESPONSE = re.compile(r"(?:/v1)?/responses/(resp_[^/]+)(?:/(?:cancel|input_items)?)?")


# zlib's window bits for a compressed request body: gzip's format, or zlib's (which HTTP
# calls "deflate", RFC 9110).
_ZLIB_WINDOW = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
                "deflate": zlib.MAX_WBITS}


@stream_request_body
class CompletionsHandler(_Base):
    """``POST /v1/chat/completions``, ``POST /v1/responses`` (a chat request, in and out in
    the Responses API's shapes: ``request/_responses_api``) and ``POST /v1/completions``,
    streaming or not."""

    def initialize(self, listener: Any, kind: str) -> None:
        super().initialize(listener)
        self.kind = kind
        self.body: dict = {}
        """The body as the client sent it (a Responses body's fields are echoed back)."""
        self.frame = _typed_sse if kind == "responses" else _sse
        self.done_line = b"" if kind == "responses" else b"data: [DONE]\n\n"
        """What ends a stream: chat and completion streams end with [DONE], a Responses
        stream with its response.completed event."""
        self.handle: RequestHandle | None = None
        self.several: list[RequestHandle] = []
        """A completion over a list of prompts: one request each (``_serve_several``)."""
        self.ended: asyncio.Future | None = None
        """Done when the last event was written (or the client went away)."""
        self.early: list | None = []
        """Events that came before ``submit`` returned (None once they are replayed)."""
        self.chunks: Any = None
        """The chunk builder of a streamed reply."""
        self.respond: Any = None
        """The response builder of a whole reply, which takes ``events``."""
        self.events: list = []
        self.out: list[bytes] = []
        self.gone = False
        self.parts: list[bytes] = []
        self.size = 0
        """Bytes of the body read so far, decompressed."""
        self.received = 0
        """Bytes of the body read so far, as sent."""
        self.stalled: asyncio.TimerHandle | None = None
        """Answers 408 if the body has not come whole within the listener's body_timeout."""
        self.decoder: Any = None
        """A zlib decompressor for a gzip or deflate body (``Content-Encoding``)."""
        self.window = 0
        self.body_read = False
        """Whether the whole body has come (``post`` runs)."""
        self.close_when_sent = False
        """Whether the connection closes once the reply is sent (``_stream_headers``)."""

    async def prepare(self) -> None:
        # Runs after the headers, before the body is read: refuse early, read nothing more.
        if self.request.method == "OPTIONS":
            return
        if not self.authorized():
            return
        limit = self.listener.max_body_bytes
        length = self._announced_length()
        if length is not None and int(length) > limit:
            await self._refuse_body(limit)
            return
        encoding = self.request.headers.get("Content-Encoding", "").strip().lower()
        if encoding in _ZLIB_WINDOW:
            self.window = _ZLIB_WINDOW[encoding]
            self.decoder = zlib.decompressobj(self.window)
        elif encoding not in ("", "identity"):
            await self._refuse(415, f"The request body is encoded as {encoding[:40]!r}; send it "
                                    "uncompressed, or as gzip or deflate.",
                               code="unsupported_content_encoding")
            return
        # A chunked body has no length up front: data_received counts it. (tornado's own limit
        # would end the connection with a bare 400, so it is lifted for this request.)
        self.request.connection.set_max_body_size(2**62)
        self.stalled = asyncio.get_running_loop().call_later(self.listener.body_timeout,
                                                             self._body_stalled)

    def _announced_length(self) -> str | None:
        """The body's Content-Length, its digits as sent, or None (a chunked body). The
        header is a count or a list of equal counts: the listener refused any other
        (``HeadChecked``)."""
        length = self.request.headers.get("Content-Length")
        return None if length is None else re.split(r",[ \t]*", length)[0]

    def _body_stalled(self) -> None:
        """The body has not come whole in time: a Content-Length larger than the body sent,
        or a chunked body never ended. Answered, the client that waits for its reply learns
        why; tornado would close the connection without a word."""
        if self.body_read or self._finished or self.gone:
            return
        announced = self._announced_length()
        waited = f"{self.listener.body_timeout:g} s"
        if announced is not None:
            message = (f"The request body stopped coming after {self.received} of the "
                       f"{announced} bytes its Content-Length announced "
                       f"({waited}); send them all, or a Content-Length that counts the body's "
                       "bytes.")
        else:
            message = (f"The chunked request body stopped coming after {self.received} bytes "
                       f"({waited}) without its last, zero-size chunk; end the body with one.")
        asyncio.ensure_future(self._refuse(408, message, code="request_timeout"))

    async def _refuse_body(self, limit: int) -> None:
        unpacked = ", decompressed," if self.decoder is not None else ""
        await self._refuse(413, f"The request body{unpacked} is over the listener's limit of "
                                f"{limit} bytes; send a shorter conversation.",
                           code="request_too_large")

    def fail(self, status: int, message: str, **kwargs: Any):
        if not self.body_read:
            # Answered before its body is read (a wrong token, a body too large), after which
            # tornado closes the connection: the answer says so, or a client that reuses the
            # connection for its next request finds it reset.
            self.say_close()
        return super().fail(status, message, **kwargs)

    async def _refuse(self, status: int, message: str, code: str | None = None) -> None:
        self.say_close()
        await self.fail(status, message, code=code)
        # The body is never read: close rather than let tornado answer it a second time.
        self.request.connection.close()

    async def data_received(self, chunk: bytes) -> None:
        if self._finished:
            return  # refused; the connection is closing
        self.received += len(chunk)
        limit = self.listener.max_body_bytes
        if self.decoder is not None:
            try:
                # At most one byte past the limit, however far the bytes would expand.
                chunk = self._inflate(chunk, limit - self.size + 1)
            except zlib.error:
                await self._refuse_encoding()
                return
        self.size += len(chunk)
        if self.size > limit:
            await self._refuse_body(limit)
            return
        self.parts.append(chunk)

    def _inflate(self, data: bytes, most: int) -> bytes:
        """``data`` decompressed, at most ``most`` bytes. A gzip body may hold several members
        one after another, and zero padding between or after them, as ``gzip -d`` and
        Python's ``gzip`` read it (RFC 1952); other bytes after the end are an error."""
        out = b""
        while data and len(out) < most:
            if self.decoder.eof:
                data = data.lstrip(b"\0")
                if not data:
                    break
                if self.window == _ZLIB_WINDOW["deflate"]:
                    raise zlib.error("data after the end of the deflate stream")
                self.decoder = zlib.decompressobj(self.window)
            out += self.decoder.decompress(data, most - len(out))
            data = self.decoder.unused_data if self.decoder.eof else b""
        return out

    async def _refuse_encoding(self) -> None:
        encoding = self.request.headers["Content-Encoding"].strip().lower()
        await self._refuse(400, f"The request body is not valid {encoding} data, though its "
                                f"Content-Encoding says so; send it as {encoding} or "
                                "uncompressed, without the header.")

    def on_connection_close(self) -> None:
        super().on_connection_close()
        if self.stalled is not None:
            self.stalled.cancel()
        self._client_gone()

    async def post(self) -> None:
        self.body_read = True
        if self.stalled is not None:
            self.stalled.cancel()
        if self.decoder is not None and not self.decoder.eof:
            await self._refuse_encoding()
            return
        if not self.parts:  # (curl -X POST without -d, a body the client forgot)
            self.fail(400, "The request has no body; send the request's fields as a JSON "
                           "object, e.g. {\"messages\": [...]}.")
            return
        odd: list[str] = []  # NaN, Infinity or 1e999 as sent: Python's json reads them
        try:
            body = json.loads(b"".join(self.parts),
                              parse_constant=functools.partial(_odd_number, odd),
                              parse_float=functools.partial(_odd_number, odd))
        except (ValueError, RecursionError) as exc:  # bad bytes or syntax, a 5,000-digit number
            self.fail(400, f"The request body is not valid JSON ({json_failure(exc)}); send a "
                           "JSON object.")
            return
        if not isinstance(body, dict):
            self.fail(400, f"The request body must be a JSON object of the request's fields, "
                           f"not {_json_kind(body)}.")
            return
        if odd:
            # No JSON parser but Python's reads them, and a reply echoes parts of the body (a
            # Responses reply its tools' schemas): refused, as OpenAI refuses such a body.
            where = _non_finite_at(body)
            self.fail(400, f"'{_cut(where)}' is {odd[0]}, which is no JSON number; send a "
                           "finite number.", param=where)
            return
        engine = self.engine()
        if engine is None:
            return
        self.body = body
        if self.kind == "responses":
            try:
                body = responses_api.chat_body(body)
            except EngineRequestError as exc:
                self._fail_with(exc)
                return
        prompts = several_prompts(body) if self.kind == "completion" else None
        if prompts is not None:
            await self._serve_several(engine, body, prompts)
            return
        loop = asyncio.get_running_loop()
        self.ended = loop.create_future()
        submit = functools.partial(engine.submit, body,
                                   kind="completion" if self.kind == "completion" else "chat",
                                   on_event=self.listener.deliveries.sender(self))
        try:
            handle = await loop.run_in_executor(None, submit)
        except Exception as exc:
            error = _engine_error(exc)
            if self.kind == "responses" and isinstance(error, EngineRequestError):
                error = responses_api.in_responses_terms(error, self.body)
            self._fail_with(error)
            return
        self.handle = handle
        if self.gone:
            handle.cancel()
        record = ServedRequest(handle.id, self._client(), self.request.path,
                               handle.request.stream, time.time())
        self.listener.track(record, handle)
        try:
            await self._serve(handle)
        finally:
            self.listener.untrack(record)
            if not self.ended.done() or self.gone:
                handle.cancel()

    async def _serve_several(self, engine: Any, body: dict, prompts: list[str]) -> None:
        """A legacy completion over a list of prompts: one request each, as ``Engine.completions``
        serves it, read through the engine's own list builders (choice ``i`` answers prompt
        ``i``) on a thread of its own (``_read_on_own_thread``)."""
        loop = asyncio.get_running_loop()
        try:
            handles = await loop.run_in_executor(None, submit_each, engine, body, prompts)
        except Exception as exc:
            self._fail_with(_engine_error(exc))
            return
        self.several = handles
        records = [ServedRequest(h.id, self._client(), self.request.path, h.request.stream,
                                 time.time()) for h in handles]
        for record, handle in zip(records, handles):
            self.listener.track(record, handle)
        request = handles[0].request
        streams = [h.events() for h in handles]
        ids = {"request": request, "request_id": handles[0].id, "created": int(time.time())}
        try:
            if self.gone:
                return
            if not request.stream:
                whole = _read_on_own_thread(
                    _called(functools.partial(responses.text_completion_list, streams, **ids)))
                result = await whole.get()
                if isinstance(result, Exception):
                    raise result
                if not self.gone:
                    self.finish(result)
                return
            self._stream_headers()
            self.flush().add_done_callback(self._flushed)
            chunks = _read_on_own_thread(responses.completion_list_chunks(streams, **ids))
            while not self.gone:
                chunk = await chunks.get()
                if chunk is _END:
                    break
                if isinstance(chunk, EngineError):  # an Error event: the error, then the end
                    self.write(_sse(_error_object(chunk)))
                    break
                if isinstance(chunk, Exception):
                    raise chunk
                self.write(_sse(chunk))
                self.flush().add_done_callback(self._flushed)
            if not self.gone:
                self.write(b"data: [DONE]\n\n")
                self.finish()
        except EngineError as exc:
            self._fail_with(exc)
        finally:
            for record, handle in zip(records, handles):
                self.listener.untrack(record)
                if not handle.done:
                    handle.cancel()

    def _stream_headers(self) -> None:
        """The headers of an SSE reply, whose length nobody knows up front.

        HTTP/1.1 sends it chunked; HTTP/1.0 has no chunks, so the body ends only when the
        connection closes. tornado keeps an HTTP/1.0 connection that asked for keep-alive
        (ApacheBench's ``ab -k``, an old proxy) open after it, answering "Keep-Alive": the
        client would wait for an end that never comes. Such a stream says ``close`` and closes.
        """
        self.set_header("Content-Type", _EVENT_STREAM)
        self.set_header("Cache-Control", "no-cache")
        if self.request.version == "HTTP/1.0":
            self.say_close()
            self.close_when_sent = True

    def finish(self, chunk: Any = None) -> "asyncio.Future":
        sent = super().finish(chunk)
        if self.close_when_sent:
            sent.add_done_callback(lambda _: self.request.connection.close())
        return sent

    def _client(self) -> str:
        address = getattr(self.request.connection.context, "address", None)
        if isinstance(address, tuple) and len(address) >= 2:
            return f"{address[0]}:{address[1]}"
        return self.request.remote_ip or "unknown"

    async def _serve(self, handle: RequestHandle) -> None:
        request = handle.request
        named = {"request": request, "request_id": handle.id, "created": int(time.time())}
        if self.kind == "responses":
            named["body"] = self.body
        if request.stream:
            self._stream_headers()
            self.chunks = {"chat": responses.ChatChunks, "completion": responses.CompletionChunks,
                           "responses": responses_api.ResponseEvents}[self.kind](**named)
            if self.kind == "responses":
                self.write(b"".join(map(self.frame, self.chunks.start())))
            # Headers go out at once: the client sees 200 while the prompt is still prefilling.
            self.flush().add_done_callback(self._flushed)
        else:
            self.respond = functools.partial(
                {"chat": responses.chat_completion, "completion": responses.text_completion,
                 "responses": responses_api.response_object}[self.kind], **named)
        early, self.early = self.early, None
        for event in early:  # what the engine made before the handle came back
            self.on_event(event)
        self.send()
        await self.ended
        if not self.gone and not self._finished:
            self.finish()

    # -- on the IO loop, from Deliveries ---------------------------------------------------------
    def on_event(self, event: Any) -> None:
        """One event of this request; its chunks wait in ``self.out`` for ``send``."""
        if self.early is not None:
            self.early.append(event)
            return
        if self.ended.done():
            return  # the client went away, or the reply is complete
        last = type(event) is Finished or type(event) is Error
        if self.chunks is None:  # not streaming: one response at the end
            self.events.append(event)
            if last:
                self._respond_whole()
            return
        try:
            self.out.extend(map(self.frame, self.chunks.feed(event)))
            if last:
                self.out.extend(map(self.frame, self.chunks.end()))
        except EngineError as exc:  # an Error event: the error object, then the end
            self.out.append(self.frame(_error_object(exc)))
        if last:
            self.out.append(self.done_line)
            self.ended.set_result(None)

    def abort(self) -> None:
        """This request's events could not be written: end it with a server error (the
        client must not wait for a reply that will not come) and stop its generation."""
        if self.handle is not None:
            self.handle.cancel()
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(None)
        self.out.clear()
        if self.gone or self._finished:
            return
        error = EngineRequestError("The server failed on this request; see the listener's log.",
                                   type="server_error")
        if self._headers_written:  # a stream under way: its error object, then the end
            self.write(self.frame(_error_object(error)) + self.done_line)
            self.finish()
        else:
            self._fail_with(error)

    def _respond_whole(self) -> None:
        try:
            result = self.respond(iter(self.events))
        except EngineError as exc:
            self._fail_with(exc)
        else:
            if not self.gone:
                self.finish(result)
        self.ended.set_result(None)

    def send(self) -> None:
        """Write what ``on_event`` made since the last call, in one write."""
        if not self.out or self.gone or self._finished:
            self.out.clear()
            return
        self.write(b"".join(self.out))
        self.out.clear()
        self.flush().add_done_callback(self._flushed)

    def _flushed(self, future: "asyncio.Future") -> None:
        if future.cancelled() or future.exception() is not None:  # StreamClosedError
            self._client_gone()

    def _client_gone(self) -> None:
        self.gone = True
        if self.handle is not None:
            self.handle.cancel()
        for handle in self.several:
            handle.cancel()
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(None)

    def _fail_with(self, error: EngineError) -> None:
        if self.gone:
            return
        obj = _error_object(error)["error"]
        if isinstance(error, EngineDeadError):
            status = 503
        elif obj["code"] == "model_not_found":
            status = 404
        elif obj["type"] == "server_error":
            status = 500
        else:
            status = 400
        self.set_status(status)
        self.finish({"error": obj})


_END = object()
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _read_on_own_thread(items: Iterable) -> asyncio.Queue:
    """Iterate ``items`` (a blocking read of generations) on a thread of its own; each item
    reaches the returned queue, then ``_END`` or the exception that stopped the iteration.

    The loop's default executor admits every request (``Engine.submit``) and has a few
    threads (CPU count + 4): a read that waits on a whole generation must never hold one, or
    a handful of list-prompt completions would keep every other client from being admitted.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()

    def hand_over(item: Any) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the listener stopped: nobody reads the queue any more
            pass

    def run() -> None:
        try:
            for item in items:
                hand_over(item)
        except Exception as exc:
            hand_over(exc)
        else:
            hand_over(_END)

    threading.Thread(target=run, name="mlx-notebook-list-reader", daemon=True).start()
    return queue


def _called(fn: Callable[[], Any]):
    yield fn()


def _loopback_name(host: str) -> bool:
    """Whether a Host header names this machine: localhost (or a name under it) or a loopback
    address, with or without a port."""
    name = host.strip().lower()
    if name.startswith("["):  # [::1]:8080
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


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


def _engine_error(exc: Exception) -> EngineError:
    # Anything else is a bug in the engine; the client still gets an answer, not a hang.
    if isinstance(exc, EngineError):
        return exc
    return EngineRequestError(f"The engine failed on this request: {exc}", type="server_error")


def _error_object(error: EngineError) -> dict:
    if isinstance(error, EngineRequestError):
        return {"error": dict(error.error)}
    return {"error": {"message": str(error), "type": "server_error", "param": None, "code": None}}


_EVENT_STREAM = "text/event-stream; charset=utf-8"
"""SSE is UTF-8 by its spec, but a client reading by the declared charset (Python's requests:
ISO-8859-1 for any text/* that names none) turned "18 °C" into "18 Â°C"."""


def _sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def _typed_sse(obj: dict) -> bytes:
    """A Responses stream's event: its type also on an ``event:`` line (an error object's is
    ``error``), as OpenAI sends them."""
    kind = obj.get("type") or ("error" if "error" in obj else "message")
    return f"event: {kind}\n".encode() + _sse(obj)
