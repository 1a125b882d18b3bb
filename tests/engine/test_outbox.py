"""A request's events reach its reader paced: the first after a quiet spell and the last at
once, the ones in between gathered a pace at a time, none lost or reordered, even when a
reader drops its ``events()`` iterator half-way; and the engine thread lets a reader it woke
take its events before it goes on holding the GIL."""

from __future__ import annotations

import threading
import time

import pytest

from mlx_notebook.engine import ContentDelta, Finished, PrefillProgress, Started
from mlx_notebook.engine._events import TokenLogprobs
from mlx_notebook.engine.request._job import PACE_SECONDS, Outbox, reader_pace, urgent


def test_events_that_come_within_the_pace_reach_the_reader_in_one_take():
    out = Outbox(lambda: None, pace=0.5)
    out.put(ContentDelta("a"))
    assert out.take(1.0) == [ContentDelta("a")]  # nothing held it: the reader was waiting
    for text in "bcd":
        out.put(ContentDelta(text))
    assert out.take(1.0) == [ContentDelta("b"), ContentDelta("c"), ContentDelta("d")]


def test_a_pace_given_as_a_function_is_asked_at_each_take():
    pace = [30.0]
    out = Outbox(lambda: None, pace=lambda: pace[0])
    out.put(ContentDelta("a"))
    assert out.take(1.0) == [ContentDelta("a")]
    out.put(ContentDelta("b"))
    assert out.take(0) == [ContentDelta("b")]  # paced: 30 s from here, as the function said
    out.put(ContentDelta("c"))
    pace[0] = 0.05  # the engine's readers became fewer
    t0 = time.perf_counter()
    assert out.take(1.0) == [ContentDelta("c")]
    assert 0.04 < time.perf_counter() - t0 < 10


def test_many_readers_of_one_engine_slow_down_together():
    assert reader_pace(1) == reader_pace(8) == PACE_SECONDS
    assert reader_pace(32) > PACE_SECONDS
    # ...so that all of them together wake no more often than ten readers at the base pace
    assert 32 / reader_pace(32) <= 10 / PACE_SECONDS
    assert reader_pace(1000) <= 0.1  # ...yet each still sees its text grow ten times a second


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


def test_the_prompt_s_last_progress_ends_the_pace_at_once():
    out = Outbox(lambda: None, pace=30.0)
    out.put(PrefillProgress(0, 100))
    assert out.take(1.0) == [PrefillProgress(0, 100)]  # pacing: 30 s...
    assert not urgent(PrefillProgress(50, 100), False)  # ...which a chunk's progress waits out
    threading.Timer(0.05, lambda: (out.put(PrefillProgress(50, 100)),
                                   out.put(PrefillProgress(100, 100)))).start()
    t0 = time.perf_counter()
    got = out.take(1.0)
    assert time.perf_counter() - t0 < 10  # ...but not the first token's (the prompt read)
    assert got == [PrefillProgress(50, 100), PrefillProgress(100, 100)]


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


def test_hand_over_waits_for_the_woken_reader_to_take_its_events():
    out = Outbox(lambda: None, pace=30.0)
    got = []
    reader = threading.Thread(target=lambda: got.extend(out.take(30.0)))
    reader.start()
    while not out._waiting:
        time.sleep(0.001)
    out.put(ContentDelta("Paris"))
    out.hand_over(30.0)
    assert out.empty()  # taken before hand_over returned
    reader.join()
    assert got == [ContentDelta("Paris")]


def test_hand_over_returns_at_once_when_no_reader_was_woken():
    out = Outbox(lambda: None, pace=30.0)
    out.put(ContentDelta("a"))  # nobody waits: it stays queued
    t0 = time.perf_counter()
    out.hand_over(30.0)
    assert time.perf_counter() - t0 < 10 and not out.empty()
    delivered = []
    out = Outbox(lambda: None, deliver=delivered.append)
    out.put(ContentDelta("b"))
    t0 = time.perf_counter()
    out.hand_over(30.0)
    assert time.perf_counter() - t0 < 10 and delivered == [ContentDelta("b")]


@pytest.mark.model
def test_a_one_token_replys_text_is_read_before_the_engine_goes_on(
        smollm2_engine, monkeypatch, engine_thread_held):
    # After such a reply's only token the engine closes its decode loop (building the step
    # that files the token in the cache) and files the prompt, holding the GIL: the woken
    # reader used to get its text 2-4 ms late, which is a prefill benchmark's first token.
    from mlx_notebook.engine.request import _scheduler
    from mlx_notebook.engine.request._single_stream import SingleStream

    monkeypatch.setattr(_scheduler, "_HAND_OVER_S", 30.0)  # the order, not the timing
    seen = []
    close = SingleStream.close

    def recording_close(self):
        seen.append(handle._job.out.empty())
        return close(self)

    monkeypatch.setattr(SingleStream, "close", recording_close)
    smollm2_engine.clear_prompt_cache()
    with engine_thread_held(smollm2_engine):  # so that ``handle`` is there before the close
        handle = smollm2_engine.submit({"prompt": "The capital of France is", "max_tokens": 1},
                                       kind="completion")
    events = list(handle.events())
    assert any(isinstance(e, ContentDelta) and e.text.strip() for e in events)
    assert events[-1] == Finished("length")
    assert seen == [True]  # the reader held the text when the engine went on


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


@pytest.mark.parametrize("pace", [0.0, 0.001])
def test_events_put_while_the_reader_takes_are_all_read_in_order_and_none_waits(pace):
    """``put`` appends without the lock; a reader taking at the same moment loses nothing,
    and a reader about to wait is still woken (a lost wake-up would cost the 5 s timeout)."""
    out = Outbox(lambda: None, pace=pace)
    got: list = []

    def read():
        while not got or type(got[-1]) is not Finished:
            got.extend(out.take(5.0))

    reader = threading.Thread(target=read)
    reader.start()
    t0 = time.perf_counter()
    for i in range(20_000):
        out.put(ContentDelta(str(i)))
        if i % 500 == 0:
            time.sleep(0.0005)  # let the reader run dry and wait for the next one
    out.put(Finished("stop"))
    reader.join(30)
    assert not reader.is_alive()
    assert [e.text for e in got[:-1]] == [str(i) for i in range(20_000)]
    assert time.perf_counter() - t0 < 4.0  # no take waited out its 5 s timeout
