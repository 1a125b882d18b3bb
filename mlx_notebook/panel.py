"""What the kernel's engine is doing, for JupyterLab's engine panel and ``%mlx status --json``.

The panel talks to the kernel through one comm target, ``mlx_notebook.panel``
(``COMM_TARGET``), registered when the extension loads. The front end opens a comm to it and
reads snapshots; every message either way is a JSON object with a ``kind``:

- kernel → front end: ``{"kind": "snapshot", "snapshot": SNAPSHOT}``, sent when the comm
  opens, in answer to ``refresh``, after ``clear_cache`` and ``stop``, and while a turn
  streams, at most every ``PUSH_SECONDS`` (the panel never polls; it asks for a ``refresh``
  when the kernel goes idle).
- front end → kernel: ``{"kind": "refresh"}``, ``{"kind": "stop", "id": ID}`` (one live
  request, by the ``id`` the snapshot lists), ``{"kind": "stop_all"}``,
  ``{"kind": "clear_cache"}``. They are handled on the kernel subshell the front end sends
  them on, so Stop reaches a kernel whose cell is busy streaming.

``SNAPSHOT`` (``EnginePanel.snapshot()``, also what ``%mlx status --json`` prints)::

    {"version": 1,
     "engine": null | {"model": {name, model_type, path, dtype, parameters, memory_bytes,
                                 context_length},
                       "health": {alive, error}, "active_requests": int,
                       "memory": {active_bytes, peak_bytes},
                       "cache": {entries, tokens, bytes, budget_bytes,
                                 prompts: [{tokens, bytes, kind, hits, age_seconds, session}],
                                 lookups: [{request_id, prompt_tokens, cached_tokens,
                                            miss_reason}]}},
     "live": [{id, request_id, kind, session, model, tokens, tokens_per_second, seconds,
               prompt_tokens, cached_tokens}],
     "recent": [{id, request_id, kind, session, model, prompt_tokens, cached_tokens,
                 completion_tokens, time_to_first_token, seconds, finish_reason, error,
                 finished_at}]}

A prompt's ``session`` is the session of the recent request whose prompt and reply are as
long as the entry and which ended closest to when the entry was filed (the engine files a
finished request's tokens as it ends), else null. ``finished_at`` is ``time.time()``.

``%mlx panel`` asks the front end to open the panel through a second target the front end
registers, ``mlx_notebook.panel.open`` (``OPEN_TARGET``).
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

__all__ = ["COMM_TARGET", "OPEN_TARGET", "PUSH_SECONDS", "SNAPSHOT_VERSION", "EnginePanel", "TrackedView"]

COMM_TARGET = "mlx_notebook.panel"
OPEN_TARGET = "mlx_notebook.panel.open"
SNAPSHOT_VERSION = 1
PUSH_SECONDS = 0.25
"""Shortest gap between two snapshots pushed while a turn streams (the live widget sends up
to 20 messages a second; the panel needs far fewer)."""
RECENT_KEPT = 16
_FILING_SECONDS = 5.0  # a request's cache entry is filed within this long of its end


@dataclass
class _Live:
    """One request a cell is streaming; ``stop`` is the runner's own Stop."""

    id: str
    kind: str
    turn: Any
    started: float
    tokens: int = 0
    first_token_at: float | None = None
    stop: Callable[[], None] | None = None


class TrackedView:
    """A ``runner.View`` that reports the turn to the panel and forwards to the real view
    (or to none, with ``--no-stream``)."""

    def __init__(self, panel: "EnginePanel", live: _Live, inner: Any) -> None:
        self._panel, self._live, self._inner = panel, live, inner

    def display(self) -> None:
        if self._inner is not None:
            self._inner.display()
        self._panel.push()

    def handle(self, event: Any) -> None:
        if self._inner is not None:
            self._inner.handle(event)
        self._panel.count(self._live, event)

    def tool_result(self, call_id: str, result: Any = None, error: str | None = None) -> None:
        if self._inner is not None:
            self._inner.tool_result(call_id, result, error)

    def on_stop(self, callback: Callable[[], None]) -> None:
        self._live.stop = callback
        if self._inner is not None:
            self._inner.on_stop(callback)

    def offer_tools(self, names: list[str], unsupported: bool) -> None:
        if self._inner is not None:
            self._inner.offer_tools(names, unsupported)

    def finish(self, turn: Any) -> None:
        if self._inner is not None:
            self._inner.finish(turn)


@dataclass
class EnginePanel:
    """The kernel side of the engine panel for one ``MlxMagics``: live and recent requests,
    the open comms, and the snapshot built from the engine's own records."""

    engine: Callable[[], Any]
    """Returns the loaded engine or None (the magics replace it on ``%load_model``)."""
    clock: Callable[[], float] = time.monotonic
    live: dict[str, _Live] = field(default_factory=dict)
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_KEPT))
    comms: list = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _last_push: float = float("-inf")
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- requests ---------------------------------------------------------------------------
    def track(self, turn: Any, view: Any, *, kind: str = "chat") -> TrackedView:
        """Wrap ``view`` so the turn shows as live until ``done(...)``."""
        live = _Live(id=f"live-{next(self._ids)}", kind=kind, turn=turn, started=self.clock())
        with self._lock:
            self.live[live.id] = live
        return TrackedView(self, live, view)

    @contextmanager
    def tracking(self, turn: Any, view: Any, *, kind: str = "chat") -> Iterator[TrackedView]:
        """``track`` for the length of a ``with`` block, however the turn ends."""
        tracked = self.track(turn, view, kind=kind)
        try:
            yield tracked
        finally:
            self.done(tracked)

    def done(self, view: TrackedView) -> None:
        """The turn ended (finished, stopped or failed): it moves to the recent requests."""
        live = view._live
        with self._lock:
            self.live.pop(live.id, None)
            self.recent.appendleft(self._recent_row(live))
        self.push(force=True)

    def count(self, live: _Live, event: Any) -> None:
        """Fold one engine event into the live row; push a snapshot if one is due."""
        name = type(event).__name__
        if name in ("ContentDelta", "ReasoningDelta"):
            live.tokens += 1
            if live.first_token_at is None:
                live.first_token_at = self.clock()
        elif name == "Usage":
            live.tokens = event.completion_tokens
        self.push()

    def stop(self, request_id: str | None = None) -> int:
        """Press Stop on one live request (by its ``id``) or on all; returns how many."""
        with self._lock:
            targets = [live for live in self.live.values() if request_id in (None, live.id)]
        for live in targets:
            if live.stop is not None:
                live.stop()
        return len(targets)

    # -- the snapshot -----------------------------------------------------------------------
    def snapshot(self) -> dict:
        """Everything the panel shows, as JSON-ready data (see the module docstring)."""
        with self._lock:
            live = [self._live_row(item) for item in self.live.values()]
            recent = list(self.recent)
        return {"version": SNAPSHOT_VERSION, "engine": _engine_state(self.engine(), recent),
                "live": live, "recent": recent}

    def _live_row(self, live: _Live) -> dict:
        now = self.clock()
        turn = live.turn
        decoding = now - live.first_token_at if live.first_token_at is not None else 0.0
        return {
            "id": live.id, "request_id": _request_id(turn), "kind": live.kind,
            "session": turn.session, "model": turn.model, "tokens": live.tokens,
            "tokens_per_second": round(live.tokens / decoding, 1) if decoding > 0 else None,
            "seconds": round(now - live.started, 3),
            "prompt_tokens": turn.usage.prompt_tokens, "cached_tokens": turn.usage.cached_tokens,
        }

    def _recent_row(self, live: _Live) -> dict:
        turn = live.turn
        return {
            "id": live.id, "request_id": _request_id(turn), "kind": live.kind,
            "session": turn.session, "model": turn.model,
            "prompt_tokens": turn.usage.prompt_tokens, "cached_tokens": turn.usage.cached_tokens,
            "completion_tokens": turn.usage.completion_tokens,
            "time_to_first_token": turn.timings.time_to_first_token,
            "seconds": round(self.clock() - live.started, 3),
            "finish_reason": "stopped" if turn.interrupted else turn.finish_reason,
            "error": turn.error, "finished_at": round(time.time(), 3),
        }

    # -- the comm ---------------------------------------------------------------------------
    def register(self) -> None:
        """Answer the front end's comms on ``COMM_TARGET`` (inside a kernel only)."""
        from comm import get_comm_manager

        get_comm_manager().register_target(COMM_TARGET, self._open)

    def _open(self, comm: Any, open_msg: dict) -> None:
        from ._upstream import keep_front_end_subshell

        # Every panel message only reads state or sets flags: each may run on the front
        # end's subshell while the main shell streams a turn.
        keep_front_end_subshell(comm, lambda content: True)
        comm.on_msg(lambda msg: self._receive(comm, msg))
        comm.on_close(lambda msg: self._forget(comm))
        with self._lock:
            self.comms.append(comm)
        self._send(comm)

    def _forget(self, comm: Any) -> None:
        with self._lock:
            if comm in self.comms:
                self.comms.remove(comm)

    def _receive(self, comm: Any, msg: dict) -> None:
        data = (msg.get("content") or {}).get("data")
        data = data if isinstance(data, dict) else {}  # another front end's message: ignored
        kind = data.get("kind")
        if kind == "stop":
            self.stop(str(data.get("id")))
        elif kind == "stop_all":
            self.stop()
        elif kind == "clear_cache" and (engine := self.engine()) is not None:
            from mlx_notebook.engine import EngineError  # loaded with the engine already

            try:
                engine.clear_prompt_cache()
            except EngineError:  # a remote server's cache is out of reach: nothing to clear
                pass
        self._send(comm)

    def _send(self, comm: Any) -> None:
        try:
            comm.send({"kind": "snapshot", "snapshot": self.snapshot()})
        except Exception:  # a comm closed under us (the page reloaded): it is forgotten
            self._forget(comm)

    def push(self, force: bool = False) -> None:
        """Send a snapshot to every open panel, at most every ``PUSH_SECONDS`` unless forced."""
        now = self.clock()
        if not self.comms or (not force and now - self._last_push < PUSH_SECONDS):
            return
        self._last_push = now
        for comm in list(self.comms):
            self._send(comm)

    def open_in_front_end(self) -> None:
        """Ask JupyterLab to open the panel (its extension registers ``OPEN_TARGET``)."""
        from comm import create_comm

        create_comm(target_name=OPEN_TARGET, data={"kind": "open"}).close()


def _request_id(turn: Any) -> str | None:
    rounds = getattr(turn, "rounds", None) or []
    return rounds[-1].request_id if rounds else None


def _prompt_row(entry: Any, recent: list[dict], now: float) -> dict:
    length = len(entry.tokens)
    # A finished request files its prompt and reply (the last token's KV may not be computed)
    # as it ends: the owner is the request of that length that ended closest to the filing.
    owners = [row for row in recent
              if length - row["prompt_tokens"] - row["completion_tokens"] in (-1, 0)
              and abs(row["finished_at"] - entry.created) < _FILING_SECONDS]
    owner = min(owners, key=lambda row: abs(row["finished_at"] - entry.created), default=None)
    return {"tokens": length, "bytes": entry.bytes, "kind": entry.kind, "hits": entry.hits,
            "age_seconds": round(now - entry.created, 1),
            "session": owner["session"] if owner else None}


def _engine_state(engine: Any, recent: list[dict]) -> dict | None:
    if engine is None:
        return None
    import mlx.core as mx

    info, cache, now = engine.model_info, engine.cache_info(), time.time()
    alive = bool(engine.healthy)
    error = None if alive else next((row["error"] for row in recent if row["error"]),
                                    "The engine thread has stopped; run %load_model again.")
    return {
        "model": {
            "name": str(info.name), "model_type": info.model_type, "path": str(info.path),
            "dtype": str(info.dtype) if info.dtype else None, "parameters": info.parameters,
            "memory_bytes": info.memory_bytes, "context_length": info.context_length,
        },
        "health": {"alive": alive, "error": error},
        "active_requests": engine.active_requests,
        "memory": {"active_bytes": mx.get_active_memory(), "peak_bytes": mx.get_peak_memory()},
        "cache": {
            "entries": cache.entries, "tokens": cache.tokens, "bytes": cache.bytes,
            "budget_bytes": cache.budget_bytes,
            "prompts": [_prompt_row(entry, recent, now) for entry in getattr(cache, "prompts", ())],
            "lookups": [{"request_id": lookup.request_id, "prompt_tokens": lookup.prompt_tokens,
                         "cached_tokens": lookup.cached_tokens, "miss_reason": lookup.miss_reason}
                        for lookup in reversed(cache.lookups)],
        },
    }
