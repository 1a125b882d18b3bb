"""``CompletionsHandler``: the listener's completion endpoints, on the one request path.

A completion handler admits the body through ``Engine.submit`` (on an executor thread: a
long conversation takes milliseconds to render) with an ``on_event`` that hands each event
to the IO loop through the listener's one ``Deliveries`` (``_deliveries``), where the
engine's own chunk builders (``request/_responses``) turn it into SSE ``data:`` lines. A
client that goes away cancels its request (``RequestHandle.cancel``) at the next write or as
soon as tornado sees the connection close. What a body must be to be read is
``_request_body``'s.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import zlib
from typing import Any

from tornado.web import stream_request_body

from .._errors import EngineError, EngineRequestError
from .._events import Error, Finished, PrefillProgress
from ..request import _responses as responses
from ..request import _responses_api as responses_api
from ..request._handle import RequestHandle
from ..request._respond import several_prompts, submit_each
from ._base_handler import BaseHandler
from ._deliveries import ServedRequest
from ._error_objects import engine_error, error_object, http_status
from ._request_body import (
    ZLIB_WINDOW, announced_length, inflate, json_object, stalled_body_message,
)
from ._sse import EVENT_STREAM, keepalive, sse, typed_sse
from ._thread_reader import END, called, read_on_own_thread

__all__ = ["CompletionsHandler"]
_log = logging.getLogger("mlx_notebook.engine.serving")


@stream_request_body
class CompletionsHandler(BaseHandler):
    """``POST /v1/chat/completions``, ``POST /v1/responses`` (a chat request, in and out in
    the Responses API's shapes: ``request/_responses_api``) and ``POST /v1/completions``,
    streaming or not."""

    def initialize(self, listener: Any, kind: str) -> None:
        super().initialize(listener)
        self.kind = kind
        self.body: dict = {}
        """The body as the client sent it (a Responses body's fields are echoed back)."""
        self.frame = typed_sse if kind == "responses" else sse
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
        self.unread: asyncio.TimerHandle | None = None
        """While written bytes wait for the client, looks every write_timeout whether it
        read any since; a client that read none is taken as gone (``_watch_reads``)."""
        self.read_up_to = 0
        """Bytes of the connection the client had read when ``unread`` last looked."""
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
        length = announced_length(self.request.headers)
        if length is not None and int(length) > limit:
            await self._refuse_body(limit)
            return
        encoding = self.request.headers.get("Content-Encoding", "").strip().lower()
        if encoding in ZLIB_WINDOW:
            self.window = ZLIB_WINDOW[encoding]
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

    def _body_stalled(self) -> None:
        """The body has not come whole in time: a Content-Length larger than the body sent,
        or a chunked body never ended. Answered, the client that waits for its reply learns
        why; tornado would close the connection without a word."""
        if self.body_read or self._finished or self.gone:
            return
        message = stalled_body_message(self.received, announced_length(self.request.headers),
                                       self.listener.body_timeout)
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
                self.decoder, chunk = inflate(self.decoder, self.window, chunk,
                                              limit - self.size + 1)
            except zlib.error:
                await self._refuse_encoding()
                return
        self.size += len(chunk)
        if self.size > limit:
            await self._refuse_body(limit)
            return
        self.parts.append(chunk)

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
        try:
            body = json_object(b"".join(self.parts))
        except EngineRequestError as exc:
            self.fail(400, exc.message, param=exc.param)
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
            error = engine_error(exc)
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
        ``i``) on a thread of its own (``read_on_own_thread``)."""
        loop = asyncio.get_running_loop()
        try:
            handles = await loop.run_in_executor(None, submit_each, engine, body, prompts)
        except Exception as exc:
            self._fail_with(engine_error(exc))
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
                whole = read_on_own_thread(
                    called(functools.partial(responses.text_completion_list, streams, **ids)))
                result = await whole.get()
                if isinstance(result, Exception):
                    raise result
                if not self.gone:
                    self.finish(result)
                return
            self._stream_headers()
            self._flush()
            chunks = read_on_own_thread(responses.completion_list_chunks(streams, **ids))
            while not self.gone:
                chunk = await chunks.get()
                if chunk is END:
                    break
                if isinstance(chunk, EngineError):  # an Error event: the error, then the end
                    self.write(sse(error_object(chunk)))
                    break
                if isinstance(chunk, Exception):
                    raise chunk
                self.write(sse(chunk))
                self._flush()
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
        self.set_header("Content-Type", EVENT_STREAM)
        self.set_header("Cache-Control", "no-cache")
        if self.request.version == "HTTP/1.0":
            self.say_close()
            self.close_when_sent = True

    def finish(self, chunk: Any = None) -> "asyncio.Future":
        sent = super().finish(chunk)
        if self.unread is not None:  # the reply is whole: nothing is left to cancel
            self.unread.cancel()
            self.unread = None
        if self.close_when_sent:
            # Closed once the stream has sent everything: ``sent`` resolves when any earlier
            # write completes (tornado keeps one write future), and a close then drops the rest.
            stream = self.request.connection.stream
            if stream.closed():
                self.request.connection.close()
            else:
                stream.write(b"").add_done_callback(lambda _: self.request.connection.close())
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
            self._flush()
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
        if type(event) is PrefillProgress and self.kind != "responses":
            # (A Responses stream is typed events only, as OpenAI sends it.)
            self.out.append(keepalive(event.processed, event.total))
            return
        try:
            self.out.extend(map(self.frame, self.chunks.feed(event)))
            if last:
                self.out.extend(map(self.frame, self.chunks.end()))
        except EngineError as exc:  # an Error event: the error object, then the end
            self.out.append(self.frame(error_object(exc)))
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
            self.write(self.frame(error_object(error)) + self.done_line)
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
        self._flush()

    def _flush(self) -> None:
        """Send what was written; a client that reads none of it for the listener's
        ``write_timeout`` is taken as gone."""
        if self.unread is None:
            self._watch_reads()
        self.flush().add_done_callback(self._flushed)

    def _flushed(self, future: "asyncio.Future") -> None:
        # (tornado resolves only a connection's newest write future: one flush waited on
        # behind another never calls back, so progress is read off the stream instead)
        if future.cancelled() or future.exception() is not None:  # StreamClosedError
            self._client_gone()

    def _watch_reads(self, look: bool = False) -> None:
        """Look again in ``write_timeout``: until the stream has sent all it holds, each
        ``look`` must find that the client read more since the last."""
        stream = self.request.connection.stream
        # (bytes the socket took: past its buffers, only as many as the client read)
        read_up_to = getattr(stream, "_total_write_done_index", None)
        if read_up_to is None:  # a tornado without the counter: no watch, rather than guesses
            return
        if look:
            self.unread = None
            if self.gone or self._finished or stream.closed() or not stream.writing():
                return  # all sent, or nothing left to cancel: the next flush looks again
            if read_up_to == self.read_up_to:
                self._unread_too_long()
                return
        self.read_up_to = read_up_to
        self.unread = asyncio.get_running_loop().call_later(self.listener.write_timeout,
                                                            self._watch_reads, True)

    def _unread_too_long(self) -> None:
        # Otherwise its reply would decode on to max_tokens, held in memory and in the batch.
        _log.warning("Request %s: its client read nothing for %g s; cancelled, and its "
                     "connection closed.", self.handle.id if self.handle else self.request.path,
                     self.listener.write_timeout)
        self._client_gone()
        self.request.connection.close()

    def _client_gone(self) -> None:
        self.gone = True
        if self.unread is not None:
            self.unread.cancel()
            self.unread = None
        if self.handle is not None:
            self.handle.cancel()
        for handle in self.several:
            handle.cancel()
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(None)

    def _fail_with(self, error: EngineError) -> None:
        if self.gone:
            return
        self.set_status(http_status(error))
        self.finish(error_object(error))
