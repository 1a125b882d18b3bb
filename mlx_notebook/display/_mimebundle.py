"""The static mimebundle every finished turn carries, for saved and reopened notebooks."""

from __future__ import annotations

from ..turn import Turn
from ._turn_html import turn_html
from ._turn_record import TURN_MIME_TYPE, json_safe, turn_record
from ._turn_text import turn_markdown, turn_plain_text

__all__ = ["turn_mimebundle"]


def turn_mimebundle(
    turn: Turn,
    *,
    reasoning_tokens: int | None = None,
    reasoning_seconds: float | None = None,
    round_reasoning_stats: list[dict | None] | None = None,
) -> tuple[dict, dict]:
    """``(data, metadata)`` for ``display(data, metadata=metadata, raw=True)``.

    ``data`` holds the versioned JSON record, self-contained HTML, Markdown and
    deterministic plain text; ``metadata["mlx_notebook"]`` records model, options, seed,
    usage and timings so a saved notebook says how each answer was made (the one place it
    is built: ``Turn.metadata()`` returns it).
    """
    record = turn_record(turn, reasoning_tokens=reasoning_tokens, reasoning_seconds=reasoning_seconds,
                         round_reasoning_stats=round_reasoning_stats)
    data = {
        TURN_MIME_TYPE: record,
        "text/html": turn_html(record),
        "text/markdown": turn_markdown(record),
        "text/plain": turn_plain_text(record),
    }
    metadata = {
        "mlx_notebook": {
            "model": record["model"],
            "session": record["session"],
            "options": json_safe(turn.options),
            "seed": record["request"].get("seed"),
            "usage": record["usage"],
            "timings": record["timings"],
            "finish_reason": record["finish_reason"],
            "interrupted": record["interrupted"],
        }
    }
    return data, metadata

