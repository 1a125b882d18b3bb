"""``Deliveries``: the engine's events to the listener's IO loop, every request's in one wake-up.

A completion handler's ``on_event`` hands each event to the IO loop through the listener's
one ``Deliveries``: what every request produced since the loop last looked reaches it in one
wake-up (paced: at most one per ``PACE_SECONDS``, but at once for a reply's first text or its
end), a request's deltas from one wake-up joined into one chunk (``merge_deltas``). No thread
per request: with 64 clients streaming, a pump thread each (blocking on its events, waking
the loop per token) cost the engine a fifth of its throughput in GIL hand-offs.
``ServedRequest`` is what the listener records of each request while it serves it.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .._events import TokenLogprobs
from ..request._job import PACE_SECONDS, TEXT_EVENTS, urgent

if TYPE_CHECKING:
    from ._completions import CompletionsHandler

__all__ = ["ServedRequest", "Deliveries", "merge_deltas"]
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
