"""``Engine.submit(on_event=...)``: the events a reader would get, pushed as they are made."""

from __future__ import annotations

import threading

import pytest

from mlx_notebook.engine import Finished

pytestmark = pytest.mark.model


def test_pushed_events_are_the_events_a_reader_gets_and_the_request_retires_before_the_last(
        tiny_engine, script_body):
    body = script_body("reason_then_answer")
    read = list(tiny_engine.submit(body).events())
    pushed, done, active_at_end = [], threading.Event(), []

    def on_event(event):
        pushed.append(event)
        if isinstance(event, Finished):
            active_at_end.append(tiny_engine.active_requests)
            done.set()

    handle = tiny_engine.submit(body, on_event=on_event)
    assert done.wait(60)
    strip = lambda events: [e for e in events  # noqa: E731
                            if type(e).__name__ not in ("Started", "Usage", "PrefillProgress")]
    assert strip(pushed) == strip(read)
    assert active_at_end == [0]
    with pytest.raises(RuntimeError, match="on_event"):
        next(handle.events())
