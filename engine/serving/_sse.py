"""Server-sent events: how a streamed reply's chunks are framed on the wire."""

from __future__ import annotations

import json

__all__ = ["EVENT_STREAM", "sse", "typed_sse"]

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
