"""Requests that arrive while another decodes are held a moment and join the batch together
(as batch_generate's prompts do): each still gets its own reply, and one cancelled while it
waits to join ends cancelled without a token."""

from __future__ import annotations

import random
import threading
import time

import pytest

from mlx_notebook.engine import ContentDelta, Finished, ReasoningDelta, Started
from mlx_notebook.engine.request._scheduler import _CPU_REFEED_TOKENS

pytestmark = pytest.mark.model


def _text(events) -> str:
    return "".join(e.text for e in events if isinstance(e, (ContentDelta, ReasoningDelta)))


def _expected(scripts, name: str) -> str:
    return scripts[name]["reply"].replace("<think>", "").replace("</think>", "")


def test_requests_joining_a_running_reply_each_get_their_own_reply_and_a_cancel_while_held(
        tiny_engine, script_body, scripts, engine_thread_held):
    first = tiny_engine.submit(script_body("long_story", max_tokens=120))
    events = first.events()
    assert isinstance(next(events), Started)
    names = ["reason_then_answer", "system_prompt", "thinking_disabled"]
    with engine_thread_held(tiny_engine):  # they reach the engine together, mid-reply
        late = [tiny_engine.submit(script_body(name, max_tokens=120)) for name in names]
        cancelled = tiny_engine.submit(script_body("reason_then_answer", max_tokens=120))
        tiny_engine._thread.call_soon(cancelled.cancel)  # runs while it is held to join
    for name, handle in zip(names, late):
        got = list(handle.events())
        assert isinstance(got[-1], Finished), name
        assert _expected(scripts, name).startswith(_text(got)) and len(_text(got)) > 5, name
    got = list(cancelled.events())
    assert got[-1] == Finished("cancelled") and _text(got) == ""
    rest = list(events)
    assert isinstance(rest[-1], Finished)
    assert tiny_engine.active_requests == 0


def test_a_request_waits_for_others_still_being_prepared_and_then_all_start_together(
        tiny_engine, script_body, scripts, engine_thread_held):
    names = ["reason_then_answer", "system_prompt"]
    with tiny_engine._thread.preparing():  # another caller is rendering its request
        with engine_thread_held(tiny_engine):  # both reach the engine thread in one go
            first = tiny_engine.submit(script_body(names[0], max_tokens=120))
            held, asked = [], threading.Event()  # asked right after it took the request in
            tiny_engine._thread.call_soon(
                lambda: (held.append(first._job.out.empty()), asked.set()))
        assert asked.wait(30)  # the other caller is still preparing its request
        second = tiny_engine.submit(script_body(names[1], max_tokens=120))
    for name, handle in zip(names, (first, second)):
        got = list(handle.events())
        assert isinstance(got[0], Started) and isinstance(got[-1], Finished), name
        assert _expected(scripts, name).startswith(_text(got)) and len(_text(got)) > 5, name
    assert held == [True]  # nothing had started while the other was being prepared
    alone = tiny_engine.submit(script_body(names[0], max_tokens=4))  # nobody preparing: at once
    assert isinstance(next(alone.events()), Started)
    list(alone.events())


def test_callers_submitting_at_once_to_an_idle_engine_start_together_not_the_first_alone(
        tiny_engine, monkeypatch):
    # Released together, N callers reach the engine one by one (each renders its chat holding
    # the GIL), and the first often came before the others had run at all: it started alone on
    # the single stream and was moved onto the batch when they came (1 round in 5 or 6 at N=4
    # and N=8 here). The engine thread now lets the waiting callers run once before it starts a
    # lone request, and they say they are preparing theirs.
    from mlx_notebook.engine.request import _scheduler

    alone = []
    single_stream = _scheduler.SingleStream
    monkeypatch.setattr(_scheduler, "SingleStream",
                        lambda *a, **k: (alone.append(1), single_stream(*a, **k))[1])
    for _ in range(8):
        barrier = threading.Barrier(9)
        endings = []

        def caller(i: int) -> None:
            barrier.wait()
            handle = tiny_engine.submit({"messages": [
                {"role": "user", "content": f"Tell me a long story, number {i}."}],
                "max_tokens": 6})
            endings.append(list(handle.events())[-1])

        threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        tiny_engine.clear_prompt_cache()  # on the engine thread, which then waits for news
        barrier.wait()
        for t in threads:
            t.join()
        assert endings == [Finished("length")] * 8
    assert alone == []


def test_requests_queued_together_wait_for_the_burst_to_go_quiet_and_share_one_prefill(
        tiny_engine, engine_thread_held, monkeypatch):
    # Two requests the engine thread finds queued together are a burst: the ones released
    # with them may not have run yet (their threads waiting for the GIL), so the two are held
    # until the burst goes quiet, and a third submitted just after joins their prefill call.
    # They used to start at once, the straggler read in a second prefill call and merged into
    # a batch whose rows then differ in length (on CUDA a masked attention every step).
    from mlx_lm.generate import PromptProcessingBatch

    from mlx_notebook.engine.request import _scheduler

    monkeypatch.setattr(_scheduler, "_ARRIVAL_QUIET_S", 0.5)  # room for a slow machine
    monkeypatch.setattr(_scheduler, "_ARRIVAL_MAX_WAIT_S", 2.0)
    calls = []
    prompt = PromptProcessingBatch.prompt

    def counted(self, tokens):
        if tokens:
            calls.append(len(tokens))
        return prompt(self, tokens)

    monkeypatch.setattr(PromptProcessingBatch, "prompt", counted)
    body = lambda i: {"messages": [{"role": "user", "content": f"Tell me a story, number {i}."}],  # noqa: E731
                      "max_tokens": 3}
    tiny_engine.clear_prompt_cache()
    with engine_thread_held(tiny_engine):
        handles = [tiny_engine.submit(body(0)), tiny_engine.submit(body(1))]
    time.sleep(0.05)  # the straggler: long after the engine thread took the two in
    handles.append(tiny_engine.submit(body(2)))
    endings = [list(h.events())[-1] for h in handles]
    assert endings == [Finished("length")] * 3
    assert calls == [3]


def test_a_request_alone_keeps_the_single_stream_when_only_a_wake_up_queues_behind_it(
        tiny_engine, script_body, scripts, engine_thread_held):
    # The last caller done preparing queues a wake-up after its job; that is not a second
    # request, so the job still runs alone on the single-stream fast path.
    with engine_thread_held(tiny_engine):
        handle = tiny_engine.submit(script_body("reason_then_answer", max_tokens=120))
        alone = []
        tiny_engine._thread.call_soon(
            lambda: alone.append(tiny_engine._thread.scheduler.single is not None))
    got = list(handle.events())
    assert _expected(scripts, "reason_then_answer").startswith(_text(got)) and len(_text(got)) > 5
    assert alone == [True]


def _completion(i: int, long: bool) -> dict:
    """A completion body of 11 tiny-reasoner tokens, or 72: past one 64-token chunk on a CPU."""
    words = " red green blue" * 5 if long else ""
    return {"prompt": f"Name {i} colours:{words}", "max_tokens": 6}


def _prefill_calls(monkeypatch) -> list[list[int]]:
    """Each prefill call mlx-lm's batch makes from now on: the tokens of each row it reads."""
    from mlx_lm.generate import PromptProcessingBatch

    calls = []
    prompt = PromptProcessingBatch.prompt
    monkeypatch.setattr(PromptProcessingBatch, "prompt",
                        lambda self, tokens: (calls.append([len(t) for t in tokens])
                                              if tokens else None, prompt(self, tokens))[1])
    return calls


def _sizes(calls: list[list[int]]) -> list[int]:
    """The number of prompts in each prefill call."""
    return [len(rows) for rows in calls]


# A prefill batch holds prefill_concurrency (8) prompts as long as a chunk (64 tokens on a
# CPU), and up to decode_concurrency (32) short ones: 32 of 11 tokens keep its chunk within
# the 8 x 64 tokens of 8 long ones.
BATCH = [pytest.param(True, 8, id="long prompts, 8 a batch"),
         pytest.param(False, 32, id="short prompts, 32 a batch")]


@pytest.mark.parametrize("long, size", BATCH)
def test_whole_prefill_batches_start_while_others_prepare_and_the_remainder_waits_for_them(
        tiny_engine, engine_thread_held, monkeypatch, long, size):
    # 32 clients submitting at once reach the engine in waves; admitting a wave whole split
    # them into ragged prefill batches. Full batches go at once, the rest wait for the others.
    config = tiny_engine.config
    assert (config.prefill_concurrency, config.decode_concurrency) == (8, 32)
    tiny_engine.clear_prompt_cache()  # a prompt found whole in the cache needs no prefill
    calls = _prefill_calls(monkeypatch)
    with tiny_engine._thread.preparing():  # another caller is rendering its request
        with engine_thread_held(tiny_engine):
            handles = [tiny_engine.submit(_completion(i, long), kind="completion")
                       for i in range(size + 2)]
            started, asked = [], threading.Event()
            tiny_engine._thread.call_soon(lambda: (tiny_engine._thread.scheduler.step(),
                                                   started.append([not h._job.out.empty()
                                                                   for h in handles]),
                                                   asked.set()))
        assert asked.wait(30)
        last = tiny_engine.submit(_completion(size + 2, long), kind="completion")
    assert started == [[True] * size + [False, False]]
    for handle in handles + [last]:
        got = list(handle.events())
        assert isinstance(got[0], Started) and got[-1] == Finished("length") and _text(got)
    assert _sizes(calls)[0] == size  # read together, in one prefill call


def test_requests_queued_while_the_engine_thread_was_busy_join_at_its_next_step(
        tiny_engine, script_body, scripts, engine_thread_held, monkeypatch):
    # The quiet gap that says a burst is over runs from when each request was queued: when
    # the engine thread was inside a step meanwhile, it may be over by the time the thread
    # looks, and the reply decoding alone moves onto the batch with no more steps alone.
    from mlx_notebook.engine.request._scheduler import _ARRIVAL_QUIET_S, Scheduler

    moved_at = []
    move = Scheduler._move_single_to_batch
    monkeypatch.setattr(Scheduler, "_move_single_to_batch",
                        lambda self, *a: (moved_at.append(self.single.generated),
                                          move(self, *a))[1])
    first = tiny_engine.submit(script_body("long_story", max_tokens=200))
    events = first.events()
    for event in events:  # decoding alone, on the single stream
        if isinstance(event, (ContentDelta, ReasoningDelta)):
            break
    names = ["reason_then_answer", "system_prompt"]
    seen_at = []
    with engine_thread_held(tiny_engine):  # busy, as inside a long step
        late = [tiny_engine.submit(script_body(name, max_tokens=8)) for name in names]
        tiny_engine._thread.call_soon(  # runs once the thread has taken both in
            lambda: seen_at.append(tiny_engine._thread.scheduler.single.generated))
        time.sleep(3 * _ARRIVAL_QUIET_S)
    for name, handle in zip(names, late):
        got = list(handle.events())
        assert _expected(scripts, name).startswith(_text(got)) and len(_text(got)) > 2, name
    assert isinstance(list(events)[-1], Finished)
    assert moved_at == seen_at  # not a token alone between taking them in and the move


def test_a_reply_running_alone_joins_the_batch_ahead_of_arrivals_so_prefill_batches_stay_whole(
        tiny_engine, script_body, scripts, engine_thread_held, monkeypatch):
    # In the arrivals' prefill batch, the reply moved off the single stream would leave for
    # decoding first, and mlx-lm would refill just its slot: prefills of 7 prompts, then 1.
    calls = _prefill_calls(monkeypatch)
    # A CPU's re-feed limit on every device (a GPU's is a whole chunk, which these prompts
    # fit: the moved reply would ride along in their batch, 9 rows).
    monkeypatch.setattr(tiny_engine._thread.scheduler, "_refeed_tokens", _CPU_REFEED_TOKENS)
    size = tiny_engine.config.prefill_concurrency
    tiny_engine.clear_prompt_cache()  # a prompt found whole in the cache needs no prefill
    first = tiny_engine.submit(script_body("long_story", max_tokens=200))
    events = first.events()
    for event in events:  # decoding alone, on the single stream
        if isinstance(event, (ContentDelta, ReasoningDelta)):
            break
    names = ["reason_then_answer", "system_prompt"] * (size // 2)
    with engine_thread_held(tiny_engine):  # they reach the engine together, mid-reply
        late = [tiny_engine.submit(script_body(name, max_tokens=8)) for name in names]
    for name, handle in zip(names, late):
        got = list(handle.events())
        assert _expected(scripts, name).startswith(_text(got)) and len(_text(got)) > 2, name
    assert isinstance(list(events)[-1], Finished)
    # all of them in the first prefill batch (then what the prompts with a system prompt have
    # left after its snapshot); chat prompts are longer than a CPU's re-feed allows, so the
    # moved reply goes with one token to feed
    assert _sizes(calls)[0] == size


def test_requests_arriving_as_prompts_finish_reading_wait_for_them_to_decode(
        tiny_engine, engine_thread_held, monkeypatch):
    # mlx-lm refills its prefill batch before the prompts done reading leave it: 8 arrivals
    # joining 7 such prompts would be read as 1, then 7, and every batch after split the same.
    from mlx_lm.generate import PromptProcessingBatch

    tiny_engine.clear_prompt_cache()
    size = tiny_engine.config.prefill_concurrency
    sizes, late = [], []
    prompt = PromptProcessingBatch.prompt

    def recorded(self, tokens):
        if tokens:
            sizes.append(len(tokens))
            if len(sizes) == 1:  # the first group is being read: the others arrive now
                late.extend(tiny_engine.submit({"prompt": f"Count to {i} slowly:",
                                                "max_tokens": 6}, kind="completion")
                            for i in range(size))
        return prompt(self, tokens)

    monkeypatch.setattr(PromptProcessingBatch, "prompt", recorded)
    with engine_thread_held(tiny_engine):
        first = [tiny_engine.submit({"prompt": f"Name {i} colours:", "max_tokens": 6},
                                    kind="completion") for i in range(size - 1)]
    for handle in first:
        got = list(handle.events())
        assert got[-1] == Finished("length") and _text(got)
    assert len(late) == size  # submitted on the engine thread while the first were read
    for handle in late:  # read too, so that none is left running for the next test
        assert isinstance(list(handle.events())[-1], Finished)
    assert sizes == [size - 1, size]


@pytest.mark.parametrize("long, size", BATCH)
def test_a_reply_running_alone_takes_along_the_arrivals_beyond_whole_prefill_batches(
        tiny_engine, engine_thread_held, monkeypatch, long, size):
    # Moved off the single stream, a reply has one token to feed and leaves the prefill batch
    # for decoding at once. 15 long arrivals: the 7 beyond a whole batch go with it and fill
    # one prefill batch beside it, and the other 8 follow whole, with no step of the moved
    # reply alone in between (going alone first, it left prefills of 8, then 7). 15 short ones
    # are no whole batch: all go with it, in one prefill call.
    assert tiny_engine.active_requests == 0  # an earlier test's reply would take the batch path
    tiny_engine.clear_prompt_cache()
    calls = _prefill_calls(monkeypatch)
    first = tiny_engine.submit({"prompt": "Tell a long story:", "max_tokens": 120},
                               kind="completion")
    events = first.events()
    for event in events:  # decoding alone, on the single stream
        if isinstance(event, ContentDelta):
            break
    assert calls == []  # the single stream read its prompt itself
    with engine_thread_held(tiny_engine):  # they reach the engine together, mid-reply
        late = [tiny_engine.submit(_completion(i, long), kind="completion") for i in range(15)]
    for handle in late:
        got = list(handle.events())
        assert got[-1] == Finished("length") and _text(got)
    rest = list(events)
    assert rest[-1] == Finished("length")
    # A long prompt takes two chunks, so the moved reply goes with one token to feed; short
    # ones are read in one call, with the moved reply's last tokens beside them.
    assert _sizes(calls) == ([7, 7, 8, 8] if long else [16])


def test_a_reply_moved_beside_short_arrivals_reads_with_them_and_all_decode_from_one_step(
        tiny_engine, script_body, scripts, engine_thread_held, monkeypatch):
    # Moved with one token to feed, a reply leaves the arrivals' prefill batch for decoding at
    # once: a step of it alone, and mlx-lm splitting the batch twice. Fed its last tokens
    # again, one per prefill call its companions make, it starts decoding with them. (These
    # 11-token prompts are within what a CPU re-feeds beside: there the padded row costs.)
    from mlx_lm.generate import GenerationBatch

    assert tiny_engine.active_requests == 0  # an earlier test's reply would take the batch path
    tiny_engine.clear_prompt_cache()
    calls = _prefill_calls(monkeypatch)
    steps = []
    step = GenerationBatch.next
    monkeypatch.setattr(GenerationBatch, "next",
                        lambda self: (steps.append(len(self.uids)), step(self))[1])
    first = tiny_engine.submit(script_body("long_story", max_tokens=60))
    events = first.events()
    got = []
    for event in events:  # decoding alone, on the single stream
        got.append(event)
        if isinstance(event, (ContentDelta, ReasoningDelta)):
            break
    with engine_thread_held(tiny_engine):  # they reach the engine together, mid-reply
        late = [tiny_engine.submit(_completion(i, False), kind="completion") for i in range(7)]
    for handle in late:
        assert list(handle.events())[-1] == Finished("length")
    got += list(events)
    assert isinstance(got[-1], Finished)
    # nothing lost or repeated at the move
    assert _expected(scripts, "long_story").startswith(_text(got)) and len(_text(got)) > 20
    # one prefill call: the arrivals' prompts, and one token of the moved reply
    assert len(calls) == 1 and len(calls[0]) == 8 and calls[0][-1] == 1
    assert steps[0] == 8  # the first decode step has all of them


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_prefill_chunk_reads_more_than_mlx_lm_s_largest_whatever_the_mix_of_lengths(
        tiny_engine, engine_thread_held, monkeypatch, seed):
    # Short prompts fill a prefill batch past 8, but a chunk (every row padded to the longest)
    # never holds more than 8 rows of a whole 64-token chunk: its memory and the wait it puts
    # on decoding and on a cancel stay what mlx-lm's own batch allows.
    rng = random.Random(seed)
    tiny_engine.clear_prompt_cache()
    chunks = _prefill_calls(monkeypatch)
    words = [rng.choice([0, 1, 3, 8, 20]) for _ in range(40)]
    with engine_thread_held(tiny_engine):
        handles = [tiny_engine.submit({"prompt": f"Name {i} colours:" + " red green blue" * w,
                                       "max_tokens": 3}, kind="completion")
                   for i, w in enumerate(words)]
    for handle in handles:
        assert list(handle.events())[-1] == Finished("length")
    assert sum(map(sum, chunks)) > 0
    for rows in chunks:
        assert len(rows) <= 8 or len(rows) * max(rows) <= 8 * 64, rows
