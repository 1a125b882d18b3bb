"""A rendered request on its way to the engine thread: what both sides of the queue share.

The caller's ``RequestHandle`` reads ``out`` and sets ``cancel``; the engine thread's
scheduler, single stream and reply stream read the request and write ``out``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from queue import SimpleQueue

from ._admission import GenerationRequest
from ._rendering import RenderedPrompt

__all__ = ["Job"]


@dataclass(frozen=True, slots=True)
class Job:
    """One request between its caller and the engine thread."""

    request_id: str
    request: GenerationRequest
    prompt: RenderedPrompt
    out: SimpleQueue
    """Where the request's events go; the caller's handle reads it."""
    cancel: threading.Event = field(default_factory=threading.Event)
