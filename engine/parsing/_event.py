"""What the stream filter emits: one event per piece of a reply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Event", "EventKind", "merge_events"]

EventKind = Literal["reasoning", "content", "tool_call", "problem"]


@dataclass(frozen=True, slots=True)
class Event:
    """One piece of a parsed reply.

    ``reasoning``/``content``: ``text`` is the text. ``tool_call``: ``text`` is the raw markup
    (markers included), ``name`` and ``arguments`` the parsed call, ``id`` the model's own call
    id when its format has one. ``problem``: ``text`` is the raw markup that did not parse and
    ``message`` says why; it is never dropped.
    """

    kind: EventKind
    text: str
    name: str | None = None
    arguments: dict[str, Any] | None = None
    id: str | None = None
    message: str = ""


def merge_events(events: list[Event]) -> list[Event]:
    """Join adjacent reasoning (or content) events: the form chunkings are compared in."""
    merged: list[Event] = []
    run: list[str] = []  # the texts of the run that merged[-1] stands for, joined once at its end

    def close_run() -> None:
        if len(run) > 1:  # one join per run: adding piece by piece is quadratic in its length
            merged[-1] = Event(merged[-1].kind, "".join(run))
        run.clear()

    for event in events:
        if merged and event.kind in ("reasoning", "content") and merged[-1].kind == event.kind:
            run.append(event.text)
            continue
        if event.kind in ("reasoning", "content") and not event.text:
            continue
        close_run()
        if event.kind in ("reasoning", "content"):
            run.append(event.text)
        merged.append(event)
    close_run()
    return merged
