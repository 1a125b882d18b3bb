"""A rendered request on its way to the engine thread: what both sides of the queue share.

The caller's ``RequestHandle`` reads ``out`` and sets ``cancel``; the engine thread's
scheduler, single stream and reply stream read the request and write ``out``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from .._errors import EngineError
from .._events import ContentDelta, Error, Finished, PrefillProgress, ReasoningDelta
from ._admission import GenerationRequest
from ._rendering import RenderedPrompt

__all__ = ["Job", "Outbox", "PACE_SECONDS", "TEXT_EVENTS", "check_on_event", "reader_pace",
           "urgent"]

# A reader woken by one event then collects what comes in the next this-many seconds in one
# go, instead of waking once per token. Every wake-up takes the GIL from the engine thread,
# whose next step (Python building the graph) is the bottleneck on a GPU: measured on an H200
# (1B bf16, 32 requests each read by its own thread), 32 wake-ups a step cost 8% of the
# throughput. A reply's first text and its end still wake the reader at once (``urgent``), so
# neither the first token nor the end waits; 20 ms is below what a reader of the text can see.
PACE_SECONDS = 0.02
# Many readers at that pace still wake often: 32 requests at a 20 ms pace are 1,600 wake-ups a
# second, each a GIL hand-off the engine thread waits out. Readers of a busy engine slow down
# together so that all of them wake at most this often (below 10 readers: PACE_SECONDS), but
# each still sees its text grow ten times a second (beyond 50 readers, more wake-ups).
READER_WAKEUPS_PER_S = 500
SLOWEST_PACE_SECONDS = 0.1
_log = logging.getLogger("mlx_notebook.engine")


TEXT_EVENTS = (ContentDelta, ReasoningDelta)


def check_on_event(on_event: Callable[[object], None] | None) -> None:
    """Refuse an ``on_event`` that cannot be called, at submit rather than at its first event."""
    if on_event is not None and not callable(on_event):
        raise EngineError(f"on_event must be a function that takes one event, not "
                          f"{type(on_event).__name__}.")


def reader_pace(readers: int) -> float:
    """The pace of each of ``readers`` paced readers (``READER_WAKEUPS_PER_S``)."""
    return min(SLOWEST_PACE_SECONDS, max(PACE_SECONDS, readers / READER_WAKEUPS_PER_S))


def urgent(event, text_seen: bool) -> bool:
    """Whether ``event`` must reach a paced reader at once: the end of the reply, its first
    text (``text_seen``: a text delta came before it), or the prompt's last progress, sent as
    the first token is computed (a progress bar then ends with the prefill, and a first token
    with no text of its own, a piece of a character, is seen when it comes)."""
    kind = type(event)
    return (kind is Finished or kind is Error or (not text_seen and kind in TEXT_EVENTS)
            or (kind is PrefillProgress and event.processed == event.total))


class Outbox:
    """A request's event queue, written by the engine thread, read by one caller.

    It retires the request before its last event can be read, so a caller that has read
    ``Finished`` or ``Error`` already sees it gone from ``Engine.active_requests``, whichever
    thread wrote the event. Reads are paced: ``pace`` s, or what ``pace()`` says at each take
    (the engine's ``reader_pace``). With ``deliver``, events are handed to that callable
    instead of queued (``Engine.submit(on_event=...)``).
    """

    def __init__(self, on_close: Callable[[], None],
                 deliver: Callable[[object], None] | None = None,
                 pace: float | Callable[[], float] = PACE_SECONDS):
        self._on_close = on_close
        self._closed = False
        self._lock = threading.Lock()
        self.deliver = deliver
        self._events: deque = deque()
        self._ready = threading.Condition(threading.Lock())
        self._pace = pace if callable(pace) else (lambda: pace)
        self._paced_since: float | None = None
        """When the reader last took events while they kept coming (None: it waits for one)."""
        self._text_seen = False
        self._urgent = False
        self._waiting = False
        """Whether the reader waits on ``_ready`` (a notify without a waiter costs the engine
        thread a Python-level call per event for nothing)."""
        self.started = False
        """Whether any event has come: the scheduler has taken the request in."""
        self._deliver_failed = False
        self.cancel: threading.Event | None = None
        """The job's cancel flag (``Job`` sets it): a failing ``deliver`` cancels the request."""
        self._taken = threading.Event()
        """Clear from a ``put`` that woke the reader until the reader has taken the events."""
        self._taken.set()

    def put(self, event) -> None:
        self.started = True
        kind = type(event)
        if kind is Finished or kind is Error:
            with self._lock:
                closing, self._closed = not self._closed, True
            if closing:
                self._on_close()
        if self.deliver is not None:
            # After a failure the last event still goes: the callback learns its request ended.
            if not self._deliver_failed or kind is Finished or kind is Error:
                try:
                    self.deliver(event)
                # The caller's callback, even its sys.exit() or a CancelledError: its request
                # fails, never the engine thread (no interrupt of the user's lands on it).
                except BaseException:  # noqa: BLE001
                    _log.exception("on_event raised; its request is cancelled")
                    self._deliver_failed = True
                    if self.cancel is not None:
                        self.cancel.set()
            return
        # No lock for the event itself: this is per token per request on the engine thread,
        # and a deque's append is atomic. The reader marks itself waiting before it looks at
        # the queue and the flags; this looks at its mark after the append and the flags, so
        # either the reader sees the event or this sees the reader waiting and wakes it (the
        # lock, held by the reader until it waits, makes the wake-up come after the wait).
        self._events.append(event)
        if not self._urgent and urgent(event, self._text_seen):
            self._urgent = True
        if not self._text_seen and kind in TEXT_EVENTS:
            self._text_seen = True
        if self._waiting and (self._urgent or self._paced_since is None):
            with self._ready:
                if self._waiting:
                    self._taken.clear()
                    self._ready.notify()

    @property
    def closed(self) -> bool:
        """Whether the request's last event (Finished or Error) has been put."""
        return self._closed

    def hand_over(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for a reader that ``put`` woke to take its events.

        A woken reader still needs the GIL, and the engine thread's next Python work (building
        a forward pass, filing the prompt in the cache) keeps it for up to the interpreter's
        switch interval (5 ms); waiting here lets the reader in at once. Returns at once when
        ``put`` woke no one.
        """
        self._taken.wait(timeout)

    def empty(self) -> bool:
        """Whether no event waits to be read (handed to ``deliver``: always)."""
        return not self._events

    def take(self, timeout: float) -> list:
        """Every event queued, waiting up to ``timeout`` s for one; [] if none came.

        ``timeout=0`` returns what has come without waiting at all, not even the pace.
        """
        try:
            with self._ready:
                if self._paced_since is not None and timeout > 0:
                    # Wait out the pace unless an urgent event comes; then take whatever came.
                    remaining = self._paced_since + self._pace() - time.perf_counter()
                    if remaining > 0:
                        self._wait(remaining, lambda: self._urgent)
                    if not self._events:  # nothing came within the pace: wait for one again
                        self._paced_since = None
                if timeout > 0:
                    self._wait(timeout, lambda: self._events)
                # Cleared before the events are taken: an urgent event put meanwhile sets it
                # again and is not paced, whichever take reads it.
                self._urgent = False
                pop, events = self._events.popleft, []
                for _ in range(len(self._events)):  # put may append meanwhile: those stay
                    events.append(pop())
                self._paced_since = time.perf_counter() if events else None
                return events
        finally:  # even when interrupted waiting (a notebook's KeyboardInterrupt)
            self._taken.set()

    def _wait(self, timeout: float, done: Callable[[], object]) -> None:
        """Wait on ``_ready`` (held) up to ``timeout`` s unless ``done()``, marked as waiting
        for ``put`` before ``done`` is looked at (``put`` looks the other way round)."""
        self._waiting = True
        try:
            if not done():
                self._ready.wait(timeout)
        finally:
            self._waiting = False


@dataclass(frozen=True, slots=True)
class Job:
    """One request between its caller and the engine thread."""

    request_id: str
    request: GenerationRequest
    prompt: RenderedPrompt
    out: Outbox
    """Where the request's events go; the caller's handle reads it."""
    cancel: threading.Event = field(default_factory=threading.Event)
    queued: float = field(default_factory=time.perf_counter)
    """When the caller queued it (``time.perf_counter()``): the engine thread may be inside a
    step and see it only later."""

    def __post_init__(self) -> None:
        self.out.cancel = self.cancel
