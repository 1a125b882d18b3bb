"""The listener's tornado handlers: the endpoints of ``mlx_lm.server``, on the one request path.

A completion handler admits the body through ``Engine.submit`` and builds its replies with
the engine's own chunk builders (``request/_responses``), on a pump thread per request: the
engine's event stream blocks, and the IO loop must never wait on it. The pump hands each
chunk to the loop through a ``_Mailbox``; the handler writes it as an SSE ``data:`` line.
A client that goes away cancels its request (``RequestHandle.cancel``) at the next write or
as soon as tornado sees the connection close.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler, stream_request_body

from .._errors import EngineDeadError, EngineError, EngineRequestError
from ..request import _responses as responses
from ..request._handle import RequestHandle

__all__ = ["ServedRequest", "CompletionsHandler", "ModelsHandler", "HealthHandler",
           "NotFoundHandler"]


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One request the listener is serving now."""

    request_id: str
    client: str
    """The client's address, ``host:port``."""
    endpoint: str
    """``/v1/chat/completions`` or ``/v1/completions``."""
    stream: bool
    started: float
    """``time.time()`` when it was admitted."""


_END = object()
"""Put in a request's mailbox by its pump thread after the last chunk."""


class _Mailbox:
    """Items from a pump thread to the IO loop, with one loop wake-up per batch of items.

    With many clients streaming, a wake-up per token per client (``call_soon_threadsafe``
    writes the loop's self-pipe each time) costs more than the write itself; the pump only
    schedules a wake-up when none is pending, and the loop takes everything that arrived.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._items: collections.deque = collections.deque()
        self._ready = asyncio.Event()
        self._signalled = False

    def put(self, item: Any) -> None:
        """From the pump thread."""
        self._items.append(item)  # before the check: a pending wake-up then covers it
        if not self._signalled:
            self._signalled = True
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        self._signalled = False
        self._ready.set()

    async def get(self) -> Any:
        """The next item, waiting for it on the loop."""
        while not self._items:
            self._ready.clear()  # no await between the check and here: _wake cannot slip in
            await self._ready.wait()
        return self._items.popleft()

    def drain(self) -> list:
        """Whatever else has arrived, without waiting."""
        out = []
        while self._items:
            out.append(self._items.popleft())
        return out


class _Base(RequestHandler):
    """OpenAI error objects for every failure, tornado's own (405, 500) included."""

    def initialize(self, listener: Any) -> None:
        self.listener = listener

    def set_default_headers(self) -> None:
        self.set_header("Content-Type", "application/json")

    def fail(self, status: int, message: str, *, type: str = "invalid_request_error",
             param: str | None = None, code: str | None = None):
        """Answer with an OpenAI error object; returns the future of its flush."""
        self.set_status(status)
        error = {"message": message, "type": type, "param": param, "code": code}
        return self.finish({"error": error})

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        message = {405: f"{self.request.method} is not allowed on {self.request.path}.",
                   500: "The server failed on this request; see the listener's log."}
        self.finish({"error": {"message": message.get(status_code, self._reason),
                               "type": "server_error" if status_code >= 500 else
                               "invalid_request_error", "param": None, "code": None}})

    def authorized(self) -> bool:
        """True, or the request has been answered with 401."""
        token = self.listener.token
        if not token:
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


class ModelsHandler(_Base):
    """``GET /v1/models``: the one loaded model, as ``mlx_lm.server`` lists models."""

    def get(self, _filter: str | None = None) -> None:
        if not self.authorized():
            return
        engine = self.listener.engine
        data = []
        if engine is not None and engine.healthy:
            data.append({"id": engine.model_info.name, "object": "model",
                         "created": self.listener.created})
        self.finish({"object": "list", "data": data})


class NotFoundHandler(_Base):
    def prepare(self) -> None:
        self.fail(404, f"There is no endpoint {self.request.path}; use /v1/chat/completions, "
                       "/v1/completions, /v1/models or /health.", code="not_found")


@stream_request_body
class CompletionsHandler(_Base):
    """``POST /v1/chat/completions`` and ``POST /v1/completions``, streaming or not."""

    def initialize(self, listener: Any, kind: str) -> None:
        super().initialize(listener)
        self.kind = kind
        self.handle: RequestHandle | None = None
        self.gone = False
        self.parts: list[bytes] = []
        self.size = 0

    async def prepare(self) -> None:
        # Runs after the headers, before the body is read: refuse early, read nothing more.
        if not self.authorized():
            return
        limit = self.listener.max_body_bytes
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > limit:
            await self._refuse_body(limit)
            return
        # A chunked body has no length up front; tornado stops reading it past the limit.
        self.request.connection.set_max_body_size(limit)

    async def _refuse_body(self, limit: int) -> None:
        self.set_header("Connection", "close")
        await self.fail(413, f"The request body is over the listener's limit of {limit} bytes; "
                             "send a shorter conversation.", code="request_too_large")
        # The body is never read: close rather than let tornado answer it a second time.
        self.request.connection.close()

    def data_received(self, chunk: bytes) -> None:
        self.parts.append(chunk)

    def on_connection_close(self) -> None:
        super().on_connection_close()
        self.gone = True
        if self.handle is not None:
            self.handle.cancel()

    async def post(self) -> None:
        try:
            body = json.loads(b"".join(self.parts) or b"null")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.fail(400, f"The request body is not valid JSON ({exc}); send a JSON object.")
            return
        if not isinstance(body, dict):
            self.fail(400, "The request body must be a JSON object.")
            return
        engine = self.engine()
        if engine is None:
            return
        queue = _Mailbox(asyncio.get_running_loop())
        threading.Thread(target=_pump, args=(engine, body, self.kind, queue.put),
                         name="mlx-notebook-serve", daemon=True).start()
        first = await queue.get()
        if isinstance(first, EngineError):
            self._fail_with(first)
            return
        self.handle = first
        if self.gone:
            first.cancel()
            return
        record = ServedRequest(first.id, self._client(), self.request.path, first.request.stream,
                               time.time())
        self.listener.track(record, first)
        try:
            if first.request.stream:
                await self._stream(queue)
            else:
                await self._reply(queue)
        finally:
            self.listener.untrack(record)
            if not first.done:
                first.cancel()

    def _client(self) -> str:
        address = getattr(self.request.connection.context, "address", None)
        if isinstance(address, tuple) and len(address) >= 2:
            return f"{address[0]}:{address[1]}"
        return self.request.remote_ip or "unknown"

    async def _reply(self, queue: _Mailbox) -> None:
        result = await queue.get()
        await queue.get()  # _END
        if isinstance(result, EngineError):
            self._fail_with(result)
        elif not self.gone:
            self.finish(result)

    async def _stream(self, queue: _Mailbox) -> None:
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        # Headers go out at once: the client sees 200 while the prompt is still prefilling.
        ended = not await self._flushed()
        while not ended:
            # Whatever else arrived meanwhile goes out in the same write.
            items = [await queue.get(), *queue.drain()]
            for item in items:
                if item is _END:
                    ended = True
                elif isinstance(item, EngineError):
                    self.write(_sse(_error_object(item)))
                else:
                    self.write(_sse(item))
            if ended:
                self.write(b"data: [DONE]\n\n")
            if not await self._flushed():
                break
        if self.gone:
            while not ended:  # the pump ends promptly once cancelled
                ended = await queue.get() is _END
            return
        self.finish()

    async def _flushed(self) -> bool:
        """Flush; False (and the request cancelled) when the client has gone."""
        try:
            await self.flush()
            return True
        except StreamClosedError:
            self.gone = True
            self.handle.cancel()
            return False

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


def _pump(engine: Any, body: dict, kind: str, deliver) -> None:
    """On its own thread: admit the request, then deliver its handle, its response (or each
    chunk), and ``_END``; an ``EngineError`` is delivered in place of what failed."""
    try:
        handle = engine.submit(body, kind=kind)
    except Exception as exc:
        deliver(_engine_error(exc))
        return
    deliver(handle)
    request = handle.request
    if kind == "chat":
        build = responses.chat_chunks if request.stream else responses.chat_completion
    else:
        build = responses.completion_chunks if request.stream else responses.text_completion
    try:
        result = build(handle.events(), request=request, request_id=handle.id,
                       created=int(time.time()))
        if request.stream:
            for chunk in result:
                deliver(chunk)
        else:
            deliver(result)
    except Exception as exc:
        deliver(_engine_error(exc))
    finally:
        deliver(_END)


def _engine_error(exc: Exception) -> EngineError:
    # Anything else is a bug in the engine; the client still gets an answer, not a hang.
    if isinstance(exc, EngineError):
        return exc
    return EngineRequestError(f"The engine failed on this request: {exc}", type="server_error")


def _error_object(error: EngineError) -> dict:
    if isinstance(error, EngineRequestError):
        return {"error": dict(error.error)}
    return {"error": {"message": str(error), "type": "server_error", "param": None, "code": None}}


def _sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"
