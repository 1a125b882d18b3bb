"""The one feed-and-merge helper: a StreamFilter fed deltas, its events merged as a buffered
parse merges them, so a streamed result compares with ``parse_output`` directly."""

from __future__ import annotations

from collections.abc import Iterable

from mlx_notebook.engine.parsing import Event, StreamFilter, merge_events


def streamed(stream_filter: StreamFilter, deltas: Iterable[str]) -> list[Event]:
    """Feed every delta, finish, and merge adjacent events of one kind."""
    events: list[Event] = []
    for delta in deltas:
        events += stream_filter.feed(delta)
    return merge_events(events + stream_filter.finish())


def pieces(text: str, sizes: list[int]) -> list[str]:
    """``text`` cut into pieces of the given sizes, cycled."""
    out, pos, i = [], 0, 0
    while pos < len(text):
        out.append(text[pos:pos + sizes[i % len(sizes)]])
        pos, i = pos + sizes[i % len(sizes)], i + 1
    return out
