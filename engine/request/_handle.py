"""A caller's handle on one submitted request: its events, its cancel flag, its state."""

from __future__ import annotations

import weakref
from collections import deque
from typing import Iterator

from ._admission import GenerationRequest
from .._errors import EngineError
from .._events import EngineEvent, Error, Finished
from ._rendering import RenderedPrompt
from ._job import Job

__all__ = ["RequestHandle"]

# How often a blocked reader re-checks that the engine thread is still alive. Events arrive
# without waiting for it; it only bounds how long a reader could wait on a dead thread.
_LIVENESS_POLL_SECONDS = 0.5


class RequestHandle:
    """Read ``events()`` once, from one thread; ``cancel()`` from any thread."""

    def __init__(self, job: Job, engine_thread):
        self._job = job
        self._thread = engine_thread
        self._done = False
        self._pending: deque = deque()
        """Events taken from the queue but not yet yielded (they come in batches): an
        ``events()`` iterator dropped half-way loses none of them."""
        if getattr(job.out, "deliver", None) is None:
            # A reply nobody can read any more (the handle, or a stream never started, was
            # dropped) would hold its slot to max_tokens: it is cancelled instead.
            weakref.finalize(self, _cancel_unread, job)

    @property
    def id(self) -> str:
        return self._job.request_id

    @property
    def request(self) -> GenerationRequest:
        """The admitted request: every option with its default filled in."""
        return self._job.request

    @property
    def prompt(self) -> RenderedPrompt:
        return self._job.prompt

    @property
    def done(self) -> bool:
        """True once ``events()`` has delivered Finished or Error (or, for a request
        submitted with ``on_event``, once that callback was handed one)."""
        return self._done or self._job.out.deliver is not None and self._job.out.closed

    def cancel(self) -> None:
        """Stop generating, at most one prefill chunk late; no token reaches the reply after."""
        self._job.cancel.set()

    def events(self) -> Iterator[EngineEvent]:
        """Typed events up to and including ``Finished`` or ``Error``, once: an iterator
        dropped half-way is taken up where it stopped, a reply read to its end is not read
        again (EngineError)."""
        if getattr(self._job.out, "deliver", None) is not None:
            raise RuntimeError("This request's events go to the on_event given to submit().")
        if self._done:
            raise read_to_its_end(self.id)
        refusal = self._thread.blocking_read_refusal(self._job.out.started)
        if refusal:
            raise EngineError(refusal)
        take, pending = self._job.out.take, self._pending
        while not self._done:
            if not pending:
                pending.extend(take(_LIVENESS_POLL_SECONDS))
                if not pending:
                    if not self._thread.alive:
                        self._done = True
                        yield Error(self._thread.dead_message, "server_error")
                    continue
            event = pending.popleft()
            if type(event) is Finished or type(event) is Error:
                self._done = True
            yield event

    def __repr__(self) -> str:
        state = "done" if self.done else ("cancelled" if self._job.cancel.is_set() else "running")
        return f"<RequestHandle {self.id} {self._job.request.kind} {state}>"


def read_to_its_end(request_id: str) -> EngineError:
    """A reply's events asked for again after its last: an empty read would look like a reply
    that said nothing (and a remote one would wait for ever)."""
    return EngineError(f"The reply of request {request_id!r} was read to its end already; keep "
                       "the events the first read gave (events = list(handle.events())) to go "
                       "over them again.")


def _cancel_unread(job: Job) -> None:
    if not job.out.closed:
        job.cancel.set()
