"""A request's events reach its reader paced: the first after a quiet spell and the last at
once, the ones in between gathered a pace at a time, none lost or reordered, even when a
reader drops its ``events()`` iterator half-way."""

from __future__ import annotations

import threading
import time

import pytest

from mlx_notebook.engine import ContentDelta, Finished, PrefillProgress, Started
from mlx_notebook.engine._events import TokenLogprobs
from mlx_notebook.engine.request._job import Outbox


def test_events_that_come_within_the_pace_reach_the_reader_in_one_take():
    out = Outbox(lambda: None, pace=0.5)
    out.put(ContentDelta("a"))
    assert out.take(1.0) == [ContentDelta("a")]  # nothing held it: the reader was waiting
    for text in "bcd":
        out.put(ContentDelta(text))
    assert out.take(1.0) == [ContentDelta("b"), ContentDelta("c"), ContentDelta("d")]


def test_the_last_event_ends_the_pace_at_once():
    out = Outbox(lambda: None, pace=30.0)
    out.put(ContentDelta("a"))
    assert out.take(1.0) == [ContentDelta("a")]  # the reader now waits out a 30 s pace...
    threading.Timer(0.05, lambda: (out.put(ContentDelta("b")), out.put(Finished("stop")))).start()
    t0 = time.perf_counter()
    got = out.take(1.0)
    assert got == [ContentDelta("b"), Finished("stop")]
    assert time.perf_counter() - t0 < 10  # ...but the end does not wait for it


def test_the_first_text_after_other_events_ends_the_pace_at_once():
    out = Outbox(lambda: None, pace=30.0)
    out.put(PrefillProgress(0, 100))
    assert out.take(1.0) == [PrefillProgress(0, 100)]  # pacing: 30 s...
    first = TokenLogprobs(5, "Hi", -0.1)  # put before its token's text: it wakes nobody
    threading.Timer(0.05, lambda: (out.put(first), out.put(ContentDelta("Hi")))).start()
    t0 = time.perf_counter()
    got = out.take(1.0)
    assert time.perf_counter() - t0 < 10  # ...but the reply's first text does not wait
    got += out.take(0)
    assert got == [first, ContentDelta("Hi")]


def test_a_reader_that_found_nothing_within_the_pace_is_woken_by_the_next_event():
    out = Outbox(lambda: None, pace=0.01)
    out.put(ContentDelta("a"))
    assert out.take(1.0) == [ContentDelta("a")]
    assert out.take(0.05) == []  # the pace passed with nothing: it waits for one again
    threading.Timer(0.05, out.put, (ContentDelta("b"),)).start()
    assert out.take(30.0) == [ContentDelta("b")]


def test_take_with_no_timeout_returns_what_came_without_waiting():
    out = Outbox(lambda: None, pace=30.0)
    out.put(ContentDelta("a"))
    assert out.take(1.0) == [ContentDelta("a")]
    out.put(ContentDelta("b"))
    t0 = time.perf_counter()
    assert out.take(0) == [ContentDelta("b")] and time.perf_counter() - t0 < 10
    assert out.empty() and out.take(0) == []


@pytest.mark.model
def test_an_events_iterator_dropped_half_way_loses_no_event(tiny_engine, script_body):
    body = script_body("long_story", max_tokens=40)
    tiny_engine.clear_prompt_cache()
    whole = list(tiny_engine.submit(body).events())
    tiny_engine.clear_prompt_cache()
    handle = tiny_engine.submit(body)
    first = next(handle.events())  # this iterator is dropped here, with more already taken
    assert isinstance(first, Started)
    got = [first, *handle.events()]
    # The same events but for the request id in Started and the timings in Usage.
    assert got[1:-2] == whole[1:-2] and len(whole) > 10
    assert got[-1] == whole[-1] == Finished("length")
