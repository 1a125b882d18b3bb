"""Server-sent events: how a streamed reply's chunks are framed on the wire."""

from __future__ import annotations

import json

__all__ = ["EVENT_STREAM", "keepalive", "sse", "typed_sse"]

EVENT_STREAM = "text/event-stream; charset=utf-8"
"""SSE is UTF-8 by its spec, but a client reading by the declared charset (Python's requests:
ISO-8859-1 for any text/* that names none) turned "18 °C" into "18 Â°C"."""


def sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def typed_sse(obj: dict) -> bytes:
    """A Responses stream's event: its type also on an ``event:`` line (an error object's is
    ``error``), as OpenAI sends them."""
    kind = obj.get("type") or ("error" if "error" in obj else "message")
    return f"event: {kind}\n".encode() + sse(obj)


def keepalive(done: int, total: int) -> bytes:
    """An SSE comment (clients skip it) sent as each prompt chunk is read, worded as
    mlx_lm.server words it: without it a stream is silent for the whole prefill, and a client
    whose read timeout is shorter than a long prompt's prefill gave up on us but not on it."""
    return f": keepalive {done}/{total}\n\n".encode()
