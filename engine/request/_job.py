"""A rendered request on its way to the engine thread: what both sides of the queue share.

The caller's ``RequestHandle`` reads ``out`` and sets ``cancel``; the engine thread's
scheduler, single stream and reply stream read the request and write ``out``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from queue import SimpleQueue
from typing import Callable

from .._events import Error, Finished
from ._admission import GenerationRequest
from ._rendering import RenderedPrompt

__all__ = ["Job", "Outbox"]


class Outbox(SimpleQueue):
    """A request's event queue that reports its last event before the caller can read it.

    So a caller that has read ``Finished`` or ``Error`` already sees the request retired
    (``Engine.active_requests``), whichever thread wrote the event. With ``deliver``, events
    are handed to that callable instead of queued (``Engine.submit(on_event=...)``).
    """

    def __init__(self, on_close: Callable[[], None],
                 deliver: Callable[[object], None] | None = None):
        self._on_close = on_close
        self._closed = False
        self._lock = threading.Lock()
        self.deliver = deliver

    def put(self, event, block: bool = True, timeout: float | None = None) -> None:
        if type(event) is Finished or type(event) is Error:
            with self._lock:
                closing, self._closed = not self._closed, True
            if closing:
                self._on_close()
        if self.deliver is None:
            super().put(event)
        else:
            self.deliver(event)


@dataclass(frozen=True, slots=True)
class Job:
    """One request between its caller and the engine thread."""

    request_id: str
    request: GenerationRequest
    prompt: RenderedPrompt
    out: SimpleQueue
    """Where the request's events go (an ``Outbox`` from the engine); the caller's handle reads it."""
    cancel: threading.Event = field(default_factory=threading.Event)
