"""``Listener``: an OpenAI-compatible HTTP listener on an in-process ``Engine``.

Built on tornado, which every Jupyter kernel already has (ipykernel and jupyter_server
depend on it): an established HTTP/1.1 server with SSE-friendly flushing and no new
dependency. It runs on its own thread with its own asyncio loop, never the kernel's, so a
busy or blocked kernel loop (a running ``%%chat`` cell) never stalls HTTP clients and the
clients never stall the notebook. The listener is one more client of the engine: requests go
through ``Engine.submit`` and the engine's own response builders, and are batched with the
notebook's. Safe by default: loopback, a bearer token (generated unless given), a body limit.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import secrets
import socket
import threading
import time
from typing import Any

from tornado import httputil
from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop
from tornado.iostream import StreamClosedError
from tornado.netutil import bind_sockets
from tornado.web import Application

from .._errors import EngineError
from ._completions import CompletionsHandler
from ._deliveries import Deliveries, ServedRequest
from ._info_handlers import HealthHandler, ModelsHandler, NotFoundHandler
from ._request_head import HeadChecked, error_body, explain_refusals

__all__ = ["Listener", "DEFAULT_PORT", "MAX_BODY_BYTES", "bind"]

DEFAULT_PORT = 8080
"""``mlx_lm.server``'s default port."""
MAX_BODY_BYTES = 8 * 1024 * 1024
"""Largest request body accepted (413 above it)."""
_log = logging.getLogger("mlx_notebook.engine.serving")
BODY_TIMEOUT_S = 120.0
"""Seconds a request's body may take to come whole (``Listener.body_timeout``)."""
WRITE_TIMEOUT_S = 60.0
"""Seconds a streaming client may leave its reply unread (``Listener.write_timeout``)."""
_BACKSTOP_S = 5.0  # (tornado's own timeout, after the handlers' answer, closes without one)
_READ_HEADER_BYTES = 256 * 1024  # read this far past MAX_HEADER_BYTES to answer 431, not close
_HEADER_TIMEOUT_S = 30.0
# A connection that has not sent a whole request head by then (an idle keep-alive, a
# slow-loris) is closed; tornado's default is an hour. One that speaks TLS is answered at once
# (_CappedServer).
_BACKLOG = 1024
# Connections the kernel queues before accepting: mlx_lm.server's standard-library server
# listens with a backlog of 5 and resets clients beyond it under a burst.


def bind(host: str, port: int) -> list:
    """The listening sockets for ``host:port``; what stands in the way, as one sentence."""
    try:
        return bind_sockets(port, host, backlog=_BACKLOG)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
            raise EngineError(f"Cannot listen on {host} ({reason}): give --host an address of "
                              "this machine, e.g. 127.0.0.1.") from None
        raise EngineError(f"Cannot listen on {host}:{port} ({reason}); pick another port with "
                          "--port.") from None


class Listener:
    """Serve ``engine`` over HTTP until ``stop()``; ``engine`` may be replaced while serving.

    >>> listener = Listener(engine, port=0).start()      # doctest: +SKIP
    >>> listener.url, listener.token                     # doctest: +SKIP
    """

    def __init__(self, engine: Any, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 token: str | None = None, max_body_bytes: int = MAX_BODY_BYTES,
                 allowed_origins: str | tuple[str, ...] | list[str] = ()):
        """``token=None`` generates one (``token_generated`` is then True); ``token=""``
        serves without one, which only a loopback host allows. ``allowed_origins``: the web
        pages (``https://host:port``, or ``*`` for any; a list or one comma-separated string)
        whose scripts may call the listener from a browser (CORS); none by default, unlike ``mlx_lm.server``'s ``*``: a page the
        user happens to visit must not drive the kernel's model."""
        for name, value in (("host", host), ("token", token)):
            if value is not None and not isinstance(value, str):
                raise EngineError(f"The {name} must be text, not {type(value).__name__}.")
        if not host or not host.strip():  # '' would bind every interface, silently
            raise EngineError("Give the address to listen on: 127.0.0.1 (this machine only) or "
                              "0.0.0.0 (every interface, with a token).")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise EngineError(f"The port must be a number from 0 to 65535 (0 picks a free one), "
                              f"not {port!r}.")
        if token and not (token.isascii() and token.isprintable() and " " not in token):
            # An HTTP header cannot carry it: no client could ever send it.
            raise EngineError("The token must be printable ASCII without spaces, as an HTTP "
                              "header carries it.")
        if token == "" and not _is_loopback(host):
            raise EngineError(f"Serving on {host} without a token would let anyone on the "
                              "network use the model; give a token or serve on 127.0.0.1.")
        self.engine = engine
        self.host = host
        self.port = port
        self.token_generated = token is None
        self.token = _new_token() if token is None else token
        self.max_body_bytes = max_body_bytes
        self.body_timeout = BODY_TIMEOUT_S
        """Seconds a request's body may take to come whole before it is answered 408 (set
        before ``start``)."""
        self.write_timeout = WRITE_TIMEOUT_S
        """Seconds a client may leave its reply unread, the connection's buffers full,
        before its request is cancelled and its connection closed: a client that stopped
        reading would otherwise hold its place in the batch until ``max_tokens``."""
        self.allowed_origins = _origins(allowed_origins)
        self.created = int(time.time())
        self._served: dict[str, tuple[ServedRequest, Any]] = {}  # id -> (record, handle)
        self._served_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: HTTPServer | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "Listener":
        """Bind (errors such as a port in use raise here) and serve on a new thread."""
        if self._thread is not None:
            raise EngineError("This listener is already serving; stop it first.")
        sockets = bind(self.host, self.port)
        self.port = sockets[0].getsockname()[1]
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(sockets, ready),
                                        name="mlx-notebook-listener", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def _serve(self, sockets: list[socket.socket], ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self.deliveries = Deliveries(loop)
        # A client that stops sending its body mid-way is answered 408 by the completion
        # handlers after body_timeout; tornado drops one on another endpoint a little later.
        server = _CappedServer(self._application(), max_body_size=self.max_body_bytes,
                               body_timeout=self.body_timeout + _BACKSTOP_S,
                               max_header_size=_READ_HEADER_BYTES,
                               idle_connection_timeout=_HEADER_TIMEOUT_S)
        server.add_sockets(sockets)
        self._server = server
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            server.stop()
            loop.run_until_complete(server.close_all_connections())
            loop.close()

    def _application(self) -> Application:
        me = {"listener": self}
        return Application([
            # each also without /v1 (a client whose base URL lacks it) and with a trailing /
            (r"(?:/v1)?/chat/completions/?", CompletionsHandler, {**me, "kind": "chat"}),
            (r"(?:/v1)?/completions/?", CompletionsHandler, {**me, "kind": "completion"}),
            (r"(?:/v1)?/responses/?", CompletionsHandler, {**me, "kind": "responses"}),
            (r"(?:/v1)?/models(?:/(.+?))?/?", ModelsHandler, me),
            (r"/health/?", HealthHandler, me),
        ], default_handler_class=NotFoundHandler, default_handler_args=me,
            log_function=_log_request, allowed_origins=self.allowed_origins)

    def stop(self) -> None:
        """Cancel what is being served, close the connections and join the thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        with self._served_lock:
            handles = [handle for _, handle in self._served.values()]
        for handle in handles:  # cancel is thread-safe; the engine frees their slots now
            handle.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        self._thread = self._loop = None

    def __enter__(self) -> "Listener":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def __repr__(self) -> str:
        state = "serving" if self.running else "stopped"
        return f"<Listener {self.url} {state}, {len(self._served)} requests>"

    # -- what is being served ------------------------------------------------------------------
    def served(self) -> tuple[ServedRequest, ...]:
        """The requests being served now, oldest first."""
        with self._served_lock:
            return tuple(record for record, _ in self._served.values())

    def track(self, record: ServedRequest, handle: Any) -> None:
        with self._served_lock:
            self._served[record.request_id] = (record, handle)

    def untrack(self, record: ServedRequest) -> None:
        with self._served_lock:
            self._served.pop(record.request_id, None)

class _CappedServer(HTTPServer):
    """An HTTP server that closes a new connection at once when half of the process's file
    descriptors are already this server's connections, and answers TLS at once.

    Past the process's limit (256 by default on macOS) every accept fails; tornado then logs a
    traceback per loop turn and spins at full CPU until connections close. Refusing early keeps
    descriptors for the kernel itself and the loop quiet.

    A client given an https:// URL for this plain-HTTP port sends a TLS handshake, which holds
    no line end: tornado would wait for a request head until the header timeout (30 s), and
    the OpenAI SDK then retries twice before it says "Connection error". Answered in plain
    HTTP at once, the client fails at once, with the error that names the mix-up (curl,
    OpenSSL: "wrong version number").
    """

    def initialize(self, *args, **kwargs) -> None:  # tornado's constructor
        super().initialize(*args, **kwargs)
        self._opening: set = set()
        """Connections whose first byte is awaited (not yet tornado's ``_connections``)."""

    async def handle_stream(self, stream, address) -> None:
        if self.connections >= _connection_cap():
            stream.close()
            return
        self._opening.add(stream)
        try:
            first = await _first_byte(stream.socket, _HEADER_TIMEOUT_S)
        finally:
            self._opening.discard(stream)
        if first is None:  # closed, or silent until the header timeout
            stream.close()
        elif first == _TLS_HANDSHAKE:
            _log.info("A client at %s spoke TLS (an https:// URL) to this plain-HTTP listener.",
                      address[0] if address else "?")
            await _refuse_tls(stream)
        else:
            explain_refusals(stream)
            super().handle_stream(stream, address)

    def start_request(self, server_conn, request_conn) -> httputil.HTTPMessageDelegate:
        return HeadChecked(super().start_request(server_conn, request_conn), request_conn)

    @property
    def connections(self) -> int:
        """Open client connections, served or awaiting their first byte."""
        return len(self._connections) + len(self._opening)

    async def close_all_connections(self) -> None:
        for stream in list(self._opening):
            stream.close()
        await super().close_all_connections()


_TLS_HANDSHAKE = b"\x16"  # a TLS record's first byte: content type 22, handshake


async def _first_byte(sock: socket.socket, timeout: float) -> bytes | None:
    """The first byte a new connection sends, left unread for tornado (b"" when unknown);
    None when it closes or sends nothing within ``timeout`` seconds."""
    loop = IOLoop.current()
    readable: asyncio.Future = asyncio.get_running_loop().create_future()
    loop.add_handler(sock.fileno(), lambda fd, events: readable.done()
                     or readable.set_result(None), IOLoop.READ)
    try:
        await asyncio.wait_for(readable, timeout)
    except asyncio.TimeoutError:
        return None
    finally:
        loop.remove_handler(sock.fileno())
    try:
        return sock.recv(1, socket.MSG_PEEK) or None
    except BlockingIOError:  # woken with nothing to read after all: tornado waits on
        return b""
    except OSError:  # reset: nothing to serve
        return None


async def _refuse_tls(stream) -> None:
    body = error_body("This listener speaks plain HTTP, not TLS: use an http:// URL, not "
                       "https://.")
    try:
        # Read the handshake first: closing a socket with unread bytes resets the connection,
        # and the client may then see the reset instead of this answer.
        await asyncio.wait_for(stream.read_bytes(65536, partial=True), 1.0)
        await stream.write(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                           % (len(body), body))
    except (asyncio.TimeoutError, StreamClosedError):
        pass
    finally:
        stream.close()


def _connection_cap() -> int:
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # no resource module (Windows)
        return 512
    return 512 if soft == resource.RLIM_INFINITY else max(32, soft // 2)


def _log_request(handler) -> None:
    # tornado's own access log warns on every 4xx, which a notebook would show in whatever
    # cell runs next; requests are logged at debug level instead.
    request = handler.request
    _log.debug("%d %s %s (%s) %.1f ms", handler.get_status(), request.method, request.uri,
               request.remote_ip, 1000 * request.request_time())


def _new_token() -> str:
    """A bearer token that does not begin with '-': pasted after ``--api-key`` or ``--token``
    on a command line, such a token reads as an option (``token_urlsafe`` draws one in 64)."""
    while True:
        token = secrets.token_urlsafe(24)
        if not token.startswith("-"):
            return token


def _origins(given: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The allowed origins, as a browser's ``Origin`` header spells them."""
    if isinstance(given, str):
        given = given.split(",")
    if not isinstance(given, (list, tuple)) or not all(isinstance(o, str) for o in given):
        raise EngineError("allowed_origins must be web origins: a list of texts, or one "
                          "comma-separated text.")
    origins = []
    for text in (o.strip() for o in given if o.strip()):
        # A browser sends scheme://host[:port] and nothing else: anything other would never
        # match, and the page the user meant would be refused without a word.
        origin = text.removesuffix("/")
        scheme, _, rest = origin.partition("://")
        if origin != "*" and (scheme not in ("http", "https") or not rest or "/" in rest
                              or any(c.isspace() for c in rest)):
            raise EngineError(f"{text!r} is not a web origin: give scheme://host[:port], "
                              "e.g. http://localhost:3000, or * for any page.")
        origins.append(origin)
    return tuple(origins)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
