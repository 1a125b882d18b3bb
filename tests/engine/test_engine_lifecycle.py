"""Concurrency, cancellation, engine-thread failure and clean interpreter exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from mlx_notebook.engine import (
    ContentDelta, Engine, EngineDeadError, Error, Finished, ReasoningDelta, Started, Usage,
)

pytestmark = pytest.mark.model


def test_concurrent_requests_are_batched_and_each_gets_its_own_reply(tiny_engine, script_body,
                                                                     scripts):
    names = ["reason_then_answer", "system_prompt", "thinking_disabled", "long_story"]
    results, events = {}, {}
    barrier = threading.Barrier(len(names))

    def run(name):
        barrier.wait()
        handle = tiny_engine.submit(script_body(name, max_tokens=120))
        events[name] = [(time.perf_counter(), e) for e in handle.events()]

    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for name in names:
        text = "".join(e.text for _, e in events[name]
                       if isinstance(e, (ContentDelta, ReasoningDelta)))
        expected = scripts[name]["reply"].replace("<think>", "").replace("</think>", "")
        assert expected.startswith(text) and len(text) > 5, name
    # Batched: every request was decoding before the first one finished.
    first_finish = min(t for ev in events.values() for t, e in ev if isinstance(e, Finished))
    first_tokens = [next(t for t, e in ev if isinstance(e, (ContentDelta, ReasoningDelta)))
                    for ev in events.values()]
    assert max(first_tokens) < first_finish
    assert tiny_engine.active_requests == 0


def test_cancel_stops_within_a_decode_step_and_the_next_request_works(tiny_engine, script_body,
                                                                      scripts):
    handle = tiny_engine.submit(script_body("long_story", max_tokens=200))
    seen_after_cancel = 0
    cancelled = False
    events = []
    for e in handle.events():
        events.append(e)
        if cancelled and isinstance(e, (ContentDelta, ReasoningDelta)):
            seen_after_cancel += 1
        if not cancelled and sum(isinstance(x, ReasoningDelta) for x in events) == 5:
            handle.cancel()
            cancelled = True
    usage, finished = events[-2:]
    assert isinstance(finished, Finished) and finished.reason == "cancelled"
    assert isinstance(usage, Usage) and usage.completion_tokens < 20
    # Tokens already decoded when cancel() ran may still arrive; at most a step or two.
    assert seen_after_cancel <= 3
    assert tiny_engine.active_requests == 0
    r = tiny_engine.chat_completions(script_body("reason_then_answer"))
    assert r["choices"][0]["message"]["content"] == "\n\n17 + 25 = 42."


def test_abandoning_a_stream_cancels_it(tiny_engine, script_body):
    stream = tiny_engine.chat_completions(script_body("long_story", stream=True))
    for i, _ in enumerate(stream):
        if i == 3:
            break
    stream.close()
    deadline = time.time() + 10
    while tiny_engine.active_requests and time.time() < deadline:
        time.sleep(0.02)
    assert tiny_engine.active_requests == 0


def test_engine_thread_death_fails_every_waiter_at_once(tiny_reasoner_path, script_body):
    engine = Engine(str(tiny_reasoner_path), progress=False)
    try:
        handles = [engine.submit(script_body("long_story", max_tokens=200)) for _ in range(3)]
        first = handles[0].events()
        assert isinstance(next(first), Started)
        engine._crash_engine_thread("simulated MLX failure")
        t0 = time.perf_counter()
        ends = [list(h.events())[-1] if h is not handles[0] else list(first)[-1]
                for h in handles]
        assert time.perf_counter() - t0 < 5
        assert all(isinstance(e, Error) and "simulated MLX failure" in e.message for e in ends)
        assert not engine.healthy
        with pytest.raises(EngineDeadError):
            engine.chat_completions(script_body("thinking_disabled"))
    finally:
        engine.close()
    with Engine(str(tiny_reasoner_path), progress=False) as fresh:
        r = fresh.chat_completions(script_body("thinking_disabled"))
        assert r["choices"][0]["message"]["content"] == "Bonjour !"


_EXIT_SCRIPT = textwrap.dedent("""
    import sys
    from mlx_notebook.engine import Engine
    engine = Engine(sys.argv[1], progress=False)
    handle = engine.submit({"messages": [{"role": "user", "content": "What is 17 + 25?"}],
                            "max_tokens": 300})
    for i, e in enumerate(handle.events()):
        if i == 5:
            break  # exit with the request still decoding and the engine never closed
    if sys.argv[2] == "drop":
        del engine, handle  # the caller lost its reference; the thread still runs
    print("exiting")
""")


@pytest.mark.parametrize("how", ["keep", "drop"])
def test_interpreter_exit_with_a_live_engine_is_clean(tiny_reasoner_path, how):
    done = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, str(tiny_reasoner_path), how],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exiting" in done.stdout
    assert "terminate called" not in done.stderr


def test_a_request_joining_mid_reply_moves_the_first_onto_the_batch_without_a_seam(
        tiny_engine, script_body, scripts):
    first = tiny_engine.submit(script_body("long_story", max_tokens=120))
    events = first.events()
    texts = []
    for e in events:
        if isinstance(e, (ContentDelta, ReasoningDelta)):
            texts.append(e.text)
            if len(texts) == 10:
                break
    second = tiny_engine.chat_completions(script_body("reason_then_answer"))
    texts += [e.text for e in events if isinstance(e, (ContentDelta, ReasoningDelta))]
    story = scripts["long_story"]["reply"].replace("<think>", "").replace("</think>", "")
    assert story.startswith("".join(texts)) and len("".join(texts)) > 150
    assert second["choices"][0]["message"]["content"] == "\n\n17 + 25 = 42."
