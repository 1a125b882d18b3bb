"""``RemoteEngine``: any OpenAI-compatible server behind the same surface as ``Engine``.

``%%chat``, sessions, the tool loop, the live card and the footer drive ``submit(body, kind)``
and read the handle's typed events; here those events come from a server over HTTP
(``mlx_lm.server``, vllm-mlx, vLLM, llama.cpp's server, our own listener) instead of the
engine thread. Bodies are checked by the same admission as a local request (so a bad
parameter fails here, with the same sentence) and sent as they are, streaming. httpx is the
client (already in every Jupyter install). Each reply is read on its own thread into a queue,
so Stop ends the events at once, whatever the socket is doing; the reader then closes the
connection, which tells the server to stop generating. What only a local engine can do
(tokenizing, the prompt-cache lookup, the parse trace) raises one sentence saying so.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import queue
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx

from .._config import EngineConfig
from .._errors import EngineDeadError, EngineError, EngineRequestError
from .._events import EngineEvent, Error, Started
from ..models._info import ModelInfo
from ..parsing import get_family
from ..parsing._families import ALIASES
from ..request._admission import DEFAULT_MODEL_ALIAS, GenerationRequest, admit
from ..request._handle import read_to_its_end
from ..request._respond import complete, respond
from ..request._job import check_on_event
from ..request._prompt_cache import CacheInfo
from ._chunk_reader import ChunkReader, UnexpectedShape

__all__ = ["RemoteEngine", "RemoteHandle", "guess_family"]

_log = logging.getLogger("mlx_notebook.engine")
_END = object()
_DONE = object()  # the server said the reply is over ([DONE])
_POLL_SECONDS = 0.05  # how often a reader waiting on the server re-checks Stop
# After a finish reason the server still owes the usage chunk and [DONE], sent at once by every
# server we know; one that holds the connection open longer has sent the whole reply.
_AFTER_FINISH_SECONDS = 3.0
_SSE_FIELD = re.compile(r"(event|id|retry)(:|$)")  # the fields an event may carry beside data
_NOT_JSON = (ValueError, RecursionError)  # (a hostile "[[[[..." fails json.loads with the latter)


def guess_family(model: str) -> str | None:
    """The parser family a model name suggests (``Qwen3-8B`` -> ``qwen3``), or None."""
    name = re.sub(r"[^a-z0-9]+", "_", PurePosixPath(model).name.lower())
    compact = name.replace("_", "")
    from ..parsing import family_names

    candidates = sorted({*family_names(), *ALIASES}, key=len, reverse=True)
    for candidate in candidates:
        if candidate != "plain" and (candidate in name or candidate.replace("_", "") in compact):
            return ALIASES.get(candidate, candidate)
    return None


@dataclass(frozen=True, slots=True)
class RemotePrompt:
    """What the runner reads off a handle's prompt; a remote server renders its own."""

    tools_rendered: bool | None = None
    """Unknown: the server's template is not visible from here."""


class RemoteEngine:
    """Talk to an OpenAI-compatible server as if it were the in-process engine.

    >>> engine = RemoteEngine("http://127.0.0.1:8080/v1", api_key="...")   # doctest: +SKIP
    """

    def __init__(self, url: str, *, api_key: str | None = None, model: str | None = None,
                 family: str | None = None, timeout: float | None = None):
        """Connect, check the key and pick the model (``model``, or the one the server
        lists); raises ``EngineError`` with one sentence when any of that fails. ``timeout``:
        seconds to wait for an answer or the next part of a reply (None: 120)."""
        timeout = 120.0 if timeout is None else timeout
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
            raise TypeError(f"timeout must be a number of seconds, not {timeout!r}")
        if not 0 < timeout < math.inf:
            raise ValueError(f"timeout must be a number of seconds above 0, not {timeout!r}")
        timeout = float(timeout)  # (a numpy number is not one the socket takes)
        self.url, params = _api_root(url)
        key = _header_key(api_key) if api_key else ""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._timeout = timeout
        # Redirects are followed (a proxy's http -> https); httpx drops the key on a redirect
        # to another host.
        self._client = httpx.Client(base_url=self.url, headers=headers, params=params,
                                    auth=_url_login(url), follow_redirects=True,
                                    timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)))
        self.server_splits_reasoning = False
        """A reply has come with a reasoning field: later replies' content is content from
        their first token, whatever the family's template does with the prompt."""
        self._closed = False
        self._open: set[RemoteHandle] = set()
        self._lock = threading.Lock()
        self.config = EngineConfig()
        self.cached_tokens_reported: bool | None = None
        """Whether the last finished reply's usage said how many prompt tokens the server's
        cache served (None before any reply): when not, a footer's 0 means "not reported"."""
        try:
            self.model = self._pick_model(model)
            self.family, self.family_source = self._pick_family(family, self.model)
        except BaseException:
            self._client.close()
            raise
        fam = get_family(self.family)
        self._model_info = ModelInfo(
            name=PurePosixPath(self.model).name or self.model, path=self.url, model_type="remote",
            parameters=None, quantization="remote", memory_bytes=None,
            context_length=None, thinking=bool(fam.think), tool_calling=bool(fam.tools),
            dtype="", dtype_reason="")

    # -- connecting ------------------------------------------------------------------------------
    def _pick_model(self, model: str | None) -> str:
        response = self._call("GET", "/models")
        if response.history and response.status_code == 200:
            # Moved (a proxy's http -> https, a new path): later requests go to the new place
            # at once; a POST redirected by 301 or 302 would come back as a GET without a body.
            self.url, _ = _api_root(str(response.url.copy_with(query=None)))
            self._client.base_url = self.url
        if response.status_code in (401, 403):
            raise _http_error(self.url, response, "/models")
        try:
            data = response.json().get("data") or []
        except (*_NOT_JSON, AttributeError):
            data = None
        listed = ([m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)
                   and m["id"]] if isinstance(data, list) else None)
        if response.status_code != 200 or listed is None:
            # No model list (mlx_lm.server's fails without a Hugging Face cache): the server
            # still serves. "default_model" is what mlx_lm.server and our listener call the
            # model they loaded; another server says so at the first request.
            return model or DEFAULT_MODEL_ALIAS
        if model is None:
            if len(listed) == 1:
                return listed[0]
            raise EngineError(
                f"The server at {self.url} serves {', '.join(listed)}; pick one with --model."
                if listed else f"The server at {self.url} lists no models; name one with --model.")
        if listed and model not in listed and model != DEFAULT_MODEL_ALIAS:
            raise EngineError(f"The server at {self.url} has no model '{model}' (HTTP 404); it "
                              f"serves {', '.join(listed)}.")
        return model

    @staticmethod
    def _pick_family(family: str | None, model: str) -> tuple[str, str]:
        if family is not None:
            try:
                return get_family(family).name, "given"
            except ValueError as exc:
                raise EngineError(str(exc).strip("'\"")) from None
        guessed = guess_family(model)
        if guessed is not None:
            return guessed, "guessed from the model name"
        return "qwen3", "a default: the model name names no family; pass --family"

    def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise _transport_error(self.url, exc, self._timeout) from None

    def summary(self) -> str:
        """One line for ``%load_model --remote``: what is served, where, how replies are split."""
        return (f"Connected to {self.model} at {self.url} (remote; reasoning and tool calls "
                f"from the server's fields, else split here as {self.family}, "
                f"{self.family_source}).")

    # -- what front ends read ----------------------------------------------------------------------
    @property
    def model_info(self) -> ModelInfo:
        return self._model_info

    @property
    def healthy(self) -> bool:
        return not self._closed

    @property
    def active_requests(self) -> int:
        with self._lock:
            return sum(1 for h in self._open if not h.done)

    @property
    def tokenizer(self):
        raise EngineError(f"The model at {self.url} tokenizes on the server; the token view "
                          "and rendering need a local model (%load_model without --remote).")

    def inspect(self, body: Mapping[str, Any], *, kind: str | None = None):
        raise EngineError(f"Inspect's tokenize and cache-lookup stages run on the server at "
                          f"{self.url}, out of reach; load the model locally to inspect them.")

    def trace(self, request_id: str):
        raise EngineError(f"Parse traces are kept by a local engine; the model at {self.url} "
                          "is remote (replay its text with %mlx trace TEXT --family F).")

    def cache_info(self) -> CacheInfo:
        """Empty: a remote server's prompt cache is its own (replies report cached tokens)."""
        return CacheInfo(entries=0, tokens=0, bytes=0, budget_bytes=0, lookups=())

    def clear_prompt_cache(self) -> None:
        raise EngineError(f"The prompt cache of the server at {self.url} is out of reach "
                          "from here.")

    # -- the request path ------------------------------------------------------------------------
    def admit(self, body: Mapping[str, Any], *, kind: str = "chat") -> GenerationRequest:
        """Check ``body`` as ``submit`` does (the server may still refuse what only it knows,
        such as its model's context), without sending it."""
        # (Only the model this engine was connected to is sent: another name would be
        # answered by it and labelled with the name asked for, so it is refused, as locally.)
        # (A tool call whose arguments are not JSON goes on as sent: it may be the server's own
        # call, cut by its max_tokens and passed on by this engine, in a client's history.)
        return admit(body, kind=kind, config=self.config, accepted_models=frozenset({self.model}),
                     tool_arguments_as_sent=True)

    def submit(self, body: Mapping[str, Any], *, kind: str = "chat",
               on_event: Callable[[EngineEvent], None] | None = None) -> "RemoteHandle":
        """Check ``body`` as a local request is checked, send it streaming, and return its
        handle once the server has accepted it (an HTTP error raises here, one sentence).

        With ``on_event``, a thread passes it each event, as ``Engine.submit`` does."""
        if self._closed:
            raise EngineDeadError(f"The connection to {self.url} was closed; run "
                                  "%load_model --remote again.")
        request = self.admit(body, kind=kind)
        check_on_event(on_event)
        send = {**body, "model": self.model, "stream": True,
                "stream_options": {"include_usage": True}}
        path = "/chat/completions" if kind == "chat" else "/completions"
        started = time.perf_counter()
        try:
            response = self._client.send(self._client.build_request("POST", path, json=send),
                                         stream=True)
        except httpx.HTTPError as exc:
            raise _transport_error(self.url, exc, self._timeout) from None
        try:
            if response.status_code != 200:
                response.read()
                raise _http_error(self.url, response, path)
            whole = _whole_reply(self.url, response, path)  # a server that did not stream
        except BaseException as exc:
            response.close()  # or the server generates the reply for nobody
            if isinstance(exc, httpx.HTTPError):  # the body was cut off
                raise _transport_error(self.url, exc, self._timeout) from None
            raise
        thinking = request.template_kwargs.get("enable_thinking")
        reader = ChunkReader(self.family, kind=kind, tools=body.get("tools"),
                             starts_in_reasoning=False if thinking is False
                             or self.server_splits_reasoning else None)
        handle = RemoteHandle(self, response, request, reader, started, whole=whole)
        with self._lock:
            self._open = {h for h in self._open if not h.done} | {handle}
        if on_event is not None:
            threading.Thread(target=_deliver, args=(handle, on_event),
                             name="mlx-notebook-remote-events", daemon=True).start()
        return handle

    def chat_completions(self, body: Mapping[str, Any]) -> dict | Iterator[dict]:
        """``/v1/chat/completions`` through the server, shaped by the engine's own builders."""
        return respond(self, body, "chat")

    def completions(self, body: Mapping[str, Any]) -> dict | Iterator[dict]:
        """``/v1/completions`` through the server; a list of prompts is one request each."""
        return complete(self, body)

    # -- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every open reply and close the connections."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            handles = list(self._open)
        for handle in handles:
            handle.cancel()
        self._client.close()

    def __enter__(self) -> "RemoteEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RemoteEngine {self.model} at {self.url}, {self.active_requests} active>"


class RemoteHandle:
    """A reply streaming from the server: ``events()`` once, ``cancel()`` from any thread."""

    def __init__(self, engine: RemoteEngine, response: httpx.Response,
                 request: GenerationRequest, reader: ChunkReader, started: float,
                 whole: dict | None = None):
        """``whole``: the reply, when the server sent it whole instead of streaming it."""
        self.id = f"remote-{uuid.uuid4()}"
        self.request = request
        self.prompt = RemotePrompt()
        self._engine = engine
        self._url = engine.url
        self._reader = reader
        self._started = started
        self._cancel = threading.Event()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._done = False
        self._started_sent = False
        self._response = response
        self._reading = threading.Lock()
        self._reader_running = whole is None
        if whole is not None:
            for item in (whole, _DONE, _END):
                self._queue.put(item)
        else:
            threading.Thread(target=self._read, args=(response,), name="mlx-notebook-remote",
                             daemon=True).start()

    @property
    def done(self) -> bool:
        # (Cancelled and its connection closed, it is over, read to its end or not: a stream
        # dropped half-way is nobody's to read.)
        return self._done or (self._cancel.is_set() and not self._reader_running)

    def cancel(self) -> None:
        self._cancel.set()
        # The reader closes the connection once the server sends something; a server sending
        # nothing (still reading a long prompt, say) would keep generating for minutes. Shutting
        # the socket down here wakes the reader's blocked read and tells the server at once.
        with self._reading:  # never a socket the reader has handed back to the pool
            if not self._reader_running:
                return
            stream = self._response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            try:
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed
                pass

    def _read(self, response: httpx.Response) -> None:
        """On its own thread: the server's events' data onto the queue, then ``_DONE`` when
        the server said the reply is over, and ``_END``."""
        lines: list[str] = []  # the data lines of an event whose first line was not whole
        stray: list[str] = []  # lines of no SSE field: a body that is no event stream at all
        sent = False
        try:
            for line in response.iter_lines():
                if self._cancel.is_set():
                    return
                line = line.removeprefix("\ufeff")  # a byte-order mark the SSE spec skips
                if line.startswith("error:"):  # llama.cpp's own way to say a reply failed
                    self._queue.put(Error(_error_sentence(self._url, _json_or_text(line[6:])),
                                          "server_error"))
                    return
                if not line.startswith("data:"):
                    if not line.strip() and lines:  # an event's end: its data must be whole
                        self._queue.put(_event_data("\n".join(lines)))
                        lines, sent = [], True
                    if line.strip() and not (line.startswith(":") or _SSE_FIELD.match(line)) \
                            and not sent and len(stray) < 1000:
                        stray.append(line)
                    continue
                data = line[5:].removeprefix(" ")
                if data.strip() == "[DONE]" and not lines:
                    self._queue.put(_DONE)
                    return
                if lines:
                    # Read once the event ends: parsing each longer prefix of an event sent
                    # over thousands of lines (pretty-printed JSON) took minutes.
                    lines.append(data)
                    continue
                if not data.strip():
                    continue  # an empty event: a keep-alive
                try:
                    item = json.loads(data)  # (at once: most servers send one line per event)
                except _NOT_JSON:
                    lines.append(data)  # the event's data goes on in the next data: line
                    continue
                if not isinstance(item, dict):
                    raise json.JSONDecodeError("not a JSON object", data, 0)
                self._queue.put(item)
                sent = True
            if lines:
                self._queue.put(_event_data("\n".join(lines)))
                sent = True
            if stray and not sent:
                said = _not_a_stream(self._url, "\n".join(stray))
                self._queue.put(said)
                if type(said) is not Error:
                    self._queue.put(_DONE)
        except (httpx.HTTPError, json.JSONDecodeError) as exc:
            if not self._cancel.is_set():
                self._queue.put(Error(_broken_stream(self._url, exc), "server_error"))
        except Exception:  # a Stop closed the stream under the reader
            if not self._cancel.is_set():
                raise
        finally:
            with self._reading:
                self._reader_running = False
                response.close()  # after a Stop this is what tells the server to stop
            self._queue.put(_END)

    def events(self) -> Iterator[EngineEvent]:
        """``Started``, the reply's deltas and tool calls, ``Usage`` and ``Finished`` (or
        ``Error``), as a local request's handle yields them."""
        if self._done:
            raise read_to_its_end(self.id)
        reader, first = self._reader, None
        if not self._started_sent:  # an iterator dropped half-way is taken up, not restarted
            self._started_sent = True
            yield Started(self.id, prompt_tokens=0, cached_tokens=0)
        cancelled = ended = False
        last_item = time.perf_counter()
        while True:
            try:
                item = self._queue.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if self._cancel.is_set():
                    cancelled = True
                    break
                if reader.finish_reason and \
                        time.perf_counter() - last_item > _AFTER_FINISH_SECONDS:
                    ended = True
                    self.cancel()  # closes the connection the server left open
                    break
                continue
            last_item = time.perf_counter()
            if item is _DONE:
                ended = True
                continue
            if item is _END:
                cancelled = self._cancel.is_set()
                break
            if type(item) is Error:
                if reader.finish_reason:  # after the whole reply: a read timeout, a reset
                    ended = True
                    break
                self._done = True
                yield item
                return
            if item.get("error"):  # an error object sent mid-stream
                self._done = True
                self.cancel()  # a server may keep the connection open after it
                yield Error(_error_sentence(self._url, item["error"]), "server_error")
                return
            generated = reader.generated
            try:
                events = reader.read(item)
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                self._done = True
                self.cancel()
                what = exc if type(exc) is UnexpectedShape else f"{type(exc).__name__}: {exc}"
                yield Error(f"The server at {self._url} sent a chunk of a shape no OpenAI API "
                            f"sends ({what}); the reply is partial.", "server_error")
                return
            if first is None and reader.generated > generated:
                first = time.perf_counter()
            yield from events
        if not (cancelled or ended or reader.finish_reason):
            # The stream ended without [DONE] or a finish reason: the server went away mid-reply
            # (mlx_lm.server's HTTP/1.0 stream ends as its socket closes, crash or not).
            self._done = True
            yield Error(f"The server at {self._url} closed the connection before the reply "
                        "ended; the reply is partial.", "server_error")
            return
        now = time.perf_counter()
        tail = reader.finish(cancelled=cancelled)
        usage = reader.usage_event(prompt_tokens_hint=0,
                                   seconds_to_first=(first or now) - self._started,
                                   seconds_total=now - self._started)
        self._done = True
        if self._reader.usage is not None:
            self._engine.cached_tokens_reported = self.cached_tokens_reported
        if reader.server_splits_reasoning:
            self._engine.server_splits_reasoning = True
        yield from tail[:-1]
        yield usage
        yield tail[-1]

    @property
    def cached_tokens_reported(self) -> bool:
        """The server's usage said how many prompt tokens its cache served."""
        usage = self._reader.usage
        return usage is not None and usage.cached_tokens is not None

    def __repr__(self) -> str:
        state = "done" if self._done else ("cancelled" if self._cancel.is_set() else "running")
        return f"<RemoteHandle {self.id} {self.request.kind} {state}>"


def _deliver(handle: "RemoteHandle", on_event: Callable[[EngineEvent], None]) -> None:
    """Pass each event to the caller's callback; one that raises cancels its request only."""
    events = handle.events()
    for event in events:
        try:
            on_event(event)
        except Exception:
            _log.exception("on_event raised; its request is cancelled")
            handle.cancel()
            for _ in events:  # to the end, so the handle counts as done
                pass
            return


# -- errors as one sentence -------------------------------------------------------------------
def _api_root(url: str) -> tuple[str, list[tuple[str, str]]]:
    """The API's root URL and the query parameters every request carries (an Azure-style
    ``?api-version=``). ``/v1`` is added to a bare host only: a server whose API lives under
    another path (Gemini's ``/v1beta/openai``) is given with it."""
    if not isinstance(url, str):
        raise EngineError(f"The server's URL must be text, like http://127.0.0.1:8080/v1, not "
                          f"{type(url).__name__}.")
    text = url.strip()
    try:
        parts = urlsplit(text)
        parts.port  # (a port that is no number, or past 65535, fails only when read)
    except ValueError as exc:
        raise EngineError(f"'{text}' is not a URL ({exc}); give one like "
                          "http://127.0.0.1:8080/v1.") from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EngineError(f"'{text}' is not an http(s) URL; give one like http://127.0.0.1:8080/v1.")
    path = parts.path.rstrip("/")
    for suffix in ("/chat/completions", "/completions", "/models"):
        path = path.removesuffix(suffix)
    # A user:password@ goes to the server as a login (``_url_login``), never into the root
    # every message and the notebook's summary show.
    host = parts.netloc.rpartition("@")[2]
    root = f"{parts.scheme}://{host}{path or '/v1'}"
    return root, parse_qsl(parts.query, keep_blank_values=True)


def _url_login(url: str) -> httpx.BasicAuth | None:
    """The ``user:password@`` of a URL (a proxy's basic login), sent as httpx sends one."""
    parts = urlsplit(url.strip())
    if parts.username is None and parts.password is None:
        return None
    return httpx.BasicAuth(unquote(parts.username or ""), unquote(parts.password or ""))


def _header_key(api_key: str) -> str:
    """The key as an HTTP header carries it; a line break read with it from a file or an
    environment variable is dropped, and a character no header can carry is refused without
    quoting the key (it would end up in the notebook's output)."""
    key = str(api_key).strip()
    if not (key.isascii() and key.isprintable()):
        raise EngineError("The API key has a character an HTTP header cannot carry (a letter "
                          "outside ASCII or a control character); copy the key again, without "
                          "quotes or line breaks.")
    return key


def _whole_reply(url: str, response: httpx.Response, path: str) -> dict | None:
    """None for an event stream; the reply itself when the server sent JSON instead (it
    ignored ``stream``); raises for anything else, which no OpenAI-compatible API sends."""
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in ("text/event-stream", "", "text/plain", "application/x-ndjson"):
        return None
    try:
        response.read()
    finally:
        response.close()
    if content_type == "application/json":
        try:
            reply = response.json()
        except _NOT_JSON:
            reply = None
        if isinstance(reply, dict) and reply.get("error"):
            raise EngineRequestError(_error_sentence(url, reply["error"]), type="server_error")
        if isinstance(reply, dict) and isinstance(reply.get("choices"), list):
            return reply
    text = " ".join(response.text.split())[:120]
    raise EngineError(f"The server at {url} answered {path} with {content_type} ({text!r}), not "
                      "an OpenAI event stream; check the URL (a proxy or a login page?).")


def _json_or_text(text: str) -> Any:
    try:
        value = json.loads(text)
    except _NOT_JSON:
        return text.strip()
    return value.get("error", value) if isinstance(value, dict) and "message" not in value else value


def _transport_error(url: str, exc: httpx.HTTPError, timeout: float) -> EngineError:
    if isinstance(exc, httpx.TimeoutException):
        return EngineError(f"The server at {url} did not answer within {timeout:g} s; check "
                           "that it is running and not overloaded.")
    if isinstance(exc, httpx.ConnectError):
        return EngineError(f"Cannot connect to {url} ({_reason(exc)}); check the URL and that "
                           "the server is running.")
    return EngineError(f"The connection to {url} failed ({_reason(exc)}); check the server.")


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return "connection refused" if "refused" in text.lower() else text.rstrip(".")


def _http_error(url: str, response: httpx.Response, path: str) -> EngineError:
    status = response.status_code
    try:
        body = response.json()
    except _NOT_JSON:
        body = None
    # OpenAI's {"error": {...}}, mlx_lm.server's {"error": "..."}, vLLM's older top-level
    # {"message": ...} and FastAPI's {"detail": ...}.
    error = None
    if isinstance(body, dict):
        error = body.get("error") or body.get("message") or body.get("detail")
    if isinstance(error, str):
        error = {"message": error}
    if status == 403 and isinstance(error, dict) and isinstance(error.get("message"), str):
        # Forbidden, for a reason of the server's: a model the key may not use, a host name or
        # a web page our own token-less listener refuses. A wrong key is a 401.
        return EngineError(_error_sentence(url, error, status))
    if status in (401, 403) and "authorization" not in response.request.headers:
        return EngineError(f"The server at {url} needs an API key (HTTP {status}); pass it with "
                           "--api-key.")
    if status in (401, 403):
        return EngineError(f"The server at {url} refused the API key (HTTP {status}); pass the "
                           "right one with --api-key.")
    default_type = ("server_error" if status >= 500 else
                    "rate_limit_error" if status == 429 else "invalid_request_error")
    retry = response.headers.get("retry-after")
    # (A 503 carries it too: a server still loading its model says when it will be ready.)
    later = (f" Retry after {retry} s." if status in (429, 503) and retry and retry.isdigit()
             else "")
    if not isinstance(error, dict) or not error.get("message"):
        if status == 404:
            return EngineError(f"The server at {url} has no {path} (HTTP 404); give the URL of "
                               "an OpenAI-compatible API, e.g. http://127.0.0.1:8080/v1.")
        # A proxy's page (nginx's "502 Bad Gateway") says what went wrong: quote its text.
        page = " ".join(_TAGS.sub(" ", response.text).split())[:120] if body is None else ""
        said = f" ({page!r})" if page else ""
        return EngineRequestError(f"The server at {url} answered HTTP {status} to {path}{said}."
                                  f"{later}", type=default_type)
    return EngineRequestError(
        _error_sentence(url, error, status) + later, param=error.get("param"),
        type=error.get("type") if isinstance(error.get("type"), str) else default_type,
        code=error.get("code") or ("model_not_found" if status == 404 else None))


_TAGS = re.compile(r"<[^>]*>")


def _error_sentence(url: str, error: Any, status: int | None = None) -> str:
    message = error.get("message") if isinstance(error, dict) else error
    if not message and isinstance(error, dict):  # {"code": 503} or {"type": "overloaded"}
        message = error.get("type") or error.get("code")
    if message is not None and not isinstance(message, str):
        message = json.dumps(message)
    where = f"The server at {url}" + (f" (HTTP {status})" if status else "")
    return f"{where}: {str(message or 'no reason given').rstrip('.')}."


def _event_data(text: str) -> dict:
    """An event's data lines, joined, as the JSON object they must be; raises
    ``JSONDecodeError`` for anything else."""
    try:
        parsed = json.loads(text)
    except _NOT_JSON:
        raise json.JSONDecodeError("an event's data is not JSON", text, 0) from None
    if not isinstance(parsed, dict):
        raise json.JSONDecodeError("not a JSON object", text, 0)
    return parsed


def _not_a_stream(url: str, body: str) -> dict | Error:
    """What a body of no SSE events said: the reply, sent whole under another content type
    (or none); its error object; else an ``Error`` quoting its text."""
    try:
        reply = json.loads(body)
    except _NOT_JSON:
        reply = None
    if isinstance(reply, dict) and reply.get("error"):
        return Error(_error_sentence(url, reply["error"]), "server_error")
    if isinstance(reply, dict) and isinstance(reply.get("choices"), list):
        return reply
    text = " ".join(body.split())[:120]
    return Error(f"The server at {url} answered with text that is no OpenAI event stream "
                 f"({text!r}); check the URL (a proxy or a login page?).", "server_error")


def _broken_stream(url: str, exc: Exception) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"The server at {url} stopped sending mid-reply (timed out); the reply is partial."
    if isinstance(exc, json.JSONDecodeError):
        return (f"The server at {url} sent a chunk that is not a JSON object "
                f"({exc.doc[:60]!r}); the reply is partial.")
    return f"The connection to {url} broke mid-reply ({_reason(exc)}); the reply is partial."
