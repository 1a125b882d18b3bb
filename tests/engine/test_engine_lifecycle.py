"""Concurrency, cancellation, engine-thread failure and clean interpreter exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from mlx_notebook.engine import (
    ContentDelta, Engine, EngineDeadError, Error, Finished, ReasoningDelta, Started,
    TokenLogprobs, Usage,
)

pytestmark = pytest.mark.model


def test_concurrent_requests_are_batched_and_each_gets_its_own_reply(
        tiny_engine, script_body, scripts, engine_thread_held):
    names = ["reason_then_answer", "system_prompt", "thinking_disabled", "long_story"]
    events = {name: [] for name in names}
    submitted = threading.Semaphore(0)
    finished = {name: threading.Event() for name in names}

    def run(name):
        # Each event is stamped as the engine makes it, not when a busy consumer reads it.
        def on_event(event):
            events[name].append((time.perf_counter(), event))
            if isinstance(event, (Finished, Error)):
                finished[name].set()

        tiny_engine.submit(script_body(name, max_tokens=120), on_event=on_event)
        submitted.release()
        finished[name].wait(120)

    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    # Submitted from four threads while the engine thread is held, so that all four are
    # there when it looks (threads started at once still reach submit() milliseconds apart).
    with engine_thread_held(tiny_engine):
        for t in threads:
            t.start()
        for _ in names:
            assert submitted.acquire(timeout=60)
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


def test_cancel_stops_within_a_decode_step_and_the_next_request_works(
        smollm2_engine, tiny_engine, script_body):
    # SmolLM2 decodes at ~10 tokens/s here, so the reader keeps up with the engine even on a
    # loaded machine and "tokens seen when cancel() ran" is what had been generated.
    handle = smollm2_engine.submit({
        "messages": [{"role": "user", "content": "Write a long story about the sea."}],
        "max_tokens": 200, "logprobs": True})
    events, seen, at_cancel = [], 0, None
    for e in handle.events():
        events.append(e)
        seen += isinstance(e, TokenLogprobs)  # exactly one per generated token
        if at_cancel is None and seen == 5:
            handle.cancel()
            at_cancel = seen
    usage, finished = events[-2:]
    assert isinstance(finished, Finished) and finished.reason == "cancelled"
    # The step already queued when cancel() came may still land: at most one or two more.
    assert isinstance(usage, Usage) and at_cancel <= usage.completion_tokens <= at_cancel + 2
    assert smollm2_engine.active_requests == 0
    r = smollm2_engine.chat_completions({"messages": [{"role": "user", "content": "Hi"}],
                                         "max_tokens": 2})
    assert r["usage"]["completion_tokens"] == 2
    r = tiny_engine.chat_completions(script_body("reason_then_answer"))
    assert r["choices"][0]["message"]["content"] == "\n\n17 + 25 = 42."


def _cancelled_after_scheduling_before_prefill(engine, body, held) -> list:
    """Submit ``body`` and cancel it on the engine thread right after it is scheduled."""
    with held(engine):  # the job and its cancel queue up behind the hold, in this order
        handle = engine.submit(body)
        engine._thread.call_soon(handle.cancel)
    return list(handle.events())  # scheduled and cancelled in one pass, before any step runs


@pytest.mark.parametrize("engine_fixture", ["tiny_engine", "drafting_tiny_engine"])
def test_a_request_cancelled_before_its_prefill_leaves_no_false_cache_entry(
        engine_fixture, request, script_body, engine_thread_held):
    engine = request.getfixturevalue(engine_fixture)
    first = script_body("reason_then_answer")
    engine.clear_prompt_cache()
    reply = engine.chat_completions(first)["choices"][0]["message"]
    follow = {**first, "messages": [*first["messages"], reply,
                                    {"role": "user", "content": "Double it."}]}
    events = _cancelled_after_scheduling_before_prefill(engine, follow, engine_thread_held)
    assert isinstance(events[-1], Finished) and events[-1].reason == "cancelled"
    started = events[0]
    # Only what the first turn computed can be reused: the cancelled prefill added nothing.
    r = engine.chat_completions(follow)
    assert r["usage"]["prompt_tokens_details"]["cached_tokens"] == started.cached_tokens
    engine.clear_prompt_cache()
    assert r["choices"][0]["message"] == engine.chat_completions(follow)["choices"][0]["message"]


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
    draft = sys.argv[1] if sys.argv[2] == "draft" else None
    engine = Engine(sys.argv[1], draft_model=draft, progress=False)
    handle = engine.submit({"messages": [{"role": "user", "content": "What is 17 + 25?"}],
                            "max_tokens": 300})
    for i, e in enumerate(handle.events()):
        if i == 5:
            break  # exit with the request still decoding and the engine never closed
    if sys.argv[2] == "drop":
        del engine, handle  # the caller lost its reference; the thread still runs
    print("exiting")
""")


@pytest.mark.parametrize("how", ["keep", "drop", "draft"])
def test_interpreter_exit_with_a_live_engine_is_clean(tiny_reasoner_path, how):
    done = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, str(tiny_reasoner_path), how],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exiting" in done.stdout
    assert "terminate called" not in done.stderr


_INTERRUPTED_LOAD_SCRIPT = textwrap.dedent("""
    import _thread, sys, threading, time
    from mlx_notebook.engine import Engine
    from mlx_notebook.engine.request._engine_thread import EngineThread
    load = EngineThread._load
    def slow_load(self):  # a big model: the interrupt comes while it loads
        time.sleep(0.6)
        load(self)
    EngineThread._load = slow_load
    threading.Timer(0.2, _thread.interrupt_main).start()
    try:
        Engine(sys.argv[1], progress=False)
    except KeyboardInterrupt:
        print("interrupted")
    print("engine threads left:", sum(t.name == "mlx-notebook-engine" and t.is_alive()
                                      for t in threading.enumerate()))
""")


def test_an_interrupt_while_the_model_loads_stops_its_thread_and_exit_is_clean(tiny_reasoner_path):
    done = subprocess.run([sys.executable, "-c", _INTERRUPTED_LOAD_SCRIPT, str(tiny_reasoner_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "interrupted\nengine threads left: 0" in done.stdout
    assert "terminate called" not in done.stderr


_ENGINES_IN_TURN_SCRIPT = textwrap.dedent("""
    import os, sys, threading
    from mlx_notebook.engine import Engine
    body = {"messages": [{"role": "user", "content": "What is 17 + 25?"}], "max_tokens": 80,
            "temperature": 0}
    def os_threads():
        return len(os.listdir("/proc/self/task"))
    counts = []
    for _ in range(4):  # %load_model, again and again
        with Engine(sys.argv[1], progress=False) as engine:
            engine.chat_completions(body)
        counts.append(os_threads())
    with Engine(sys.argv[1], progress=False) as a, Engine(sys.argv[1], progress=False) as b:
        seen = {}
        def ask(name, engine):
            seen[name] = engine.chat_completions(body)["choices"][0]["message"]["content"]
        both = [threading.Thread(target=ask, args=pair) for pair in (("a", a), ("b", b))]
        for t in both: t.start()
        for t in both: t.join()
        print("two at once:", seen["a"] == seen["b"] != "", a._thread._thread.ident != b._thread._thread.ident)
    print("os threads:", counts)
    print("engine threads running:", sum(t.name == "mlx-notebook-engine" for t in threading.enumerate()))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/task")
def test_engines_loaded_one_after_another_leave_no_os_thread_behind_and_exit_is_clean(
        tiny_reasoner_path):
    done = subprocess.run([sys.executable, "-c", _ENGINES_IN_TURN_SCRIPT, str(tiny_reasoner_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate called" not in done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    counts = eval(lines["os threads"])
    # mlx keeps a stream (a worker OS thread on a CPU) per thread that evaluated: each engine
    # on a new thread left one more behind
    assert counts == [counts[0]] * 4, counts
    assert lines["two at once"] == "True True"  # two engines alive: two threads, each its reply
    assert lines["engine threads running"] == "0"



@pytest.mark.parametrize("chosen, seen", [(None, "0"), ("1", "1")])
def test_importing_the_engine_turns_off_mlxs_cache_thrashing_raise_unless_the_user_chose(
        chosen, seen):
    # On CUDA, mlx raises mid-evaluation once its kernel caches have missed twice their size
    # over the process's life: after hours of distinct prompt lengths every request would fail
    env = {k: v for k, v in os.environ.items()
           if k != "MLX_ENABLE_CACHE_THRASHING_CHECK"}
    if chosen is not None:
        env["MLX_ENABLE_CACHE_THRASHING_CHECK"] = chosen
    code = "import os, mlx_notebook.engine; print(os.environ['MLX_ENABLE_CACHE_THRASHING_CHECK'])"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == seen

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


_SWITCH_SCRIPT = textwrap.dedent("""
    import sys
    from mlx_notebook.engine import Engine, Usage
    body = {"messages": [{"role": "user", "content": "What is 17 + 25?"}], "max_tokens": 8}
    for path in sys.argv[1:]:
        with Engine(path, progress=False) as engine:
            events = engine.submit(body).events()
            print(next(e for e in events if isinstance(e, Usage)).peak_memory)
""")


def test_a_reply_reports_its_own_peak_memory_not_an_earlier_models(smollm2_path,
                                                                   tiny_reasoner_path):
    # A kernel that switched models: the second engine's replies must not show the first's peak.
    done = subprocess.run(
        [sys.executable, "-c", _SWITCH_SCRIPT, str(smollm2_path), str(tiny_reasoner_path)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    smollm2_peak, tiny_peak = map(int, done.stdout.split())
    assert smollm2_peak > 100 << 20  # SmolLM2's float32 weights alone are ~540 MB
    assert 0 < tiny_peak < smollm2_peak / 10


def test_an_engine_takes_a_config_checked_once_where_none_means_the_default(tiny_reasoner_path):
    from mlx_notebook.engine import EngineConfig, EngineError
    from mlx_notebook.engine._config import DEFAULT_PROMPT_CACHE_BYTES

    config = EngineConfig(model_spec=tiny_reasoner_path, progress=False, dtype=None,
                          prompt_cache_bytes=None, default_sampling=None, draft_model=None)
    assert (config.model_spec, config.dtype, config.prompt_cache_bytes, config.default_sampling) == (
        str(tiny_reasoner_path), "auto", DEFAULT_PROMPT_CACHE_BYTES, {})
    with Engine(config=config) as engine:
        assert engine.config is config
        assert engine.chat_completions({"messages": [{"role": "user", "content": "hi"}],
                                        "max_tokens": 1})["usage"]["completion_tokens"] == 1
    with pytest.raises(EngineError, match="either config=EngineConfig"):
        Engine(str(tiny_reasoner_path), config=config)
    with pytest.raises(EngineError, match="draft_model cannot be combined with max_kv_size"):
        EngineConfig(draft_model="d", max_kv_size=64)
    with pytest.raises(EngineError, match="Engine\\(\\) got .*'dtyp'"):
        Engine(str(tiny_reasoner_path), dtyp="float32")


@pytest.mark.parametrize("option, value", [
    ("prefill_step_size", 0), ("prefill_step_size", -64), ("prefill_step_size", 2.5),
    ("max_kv_size", 0), ("decode_concurrency", 0), ("prompt_cache_bytes", -1), ("prompt_cache_entries", True),
])
def test_engine_sizes_are_checked_before_anything_loads(option, value):
    from mlx_notebook.engine import EngineConfig, EngineError

    with pytest.raises(EngineError, match=f"^{option} must be a whole number of at least"):
        EngineConfig(**{option: value})


def test_a_request_counts_as_active_until_its_last_event_and_not_after(tiny_engine, script_body):
    # The count drops before Finished reaches the reader: a caller who has its reply never
    # sees its own request still "active" (CI once saw 1 here, read just after Finished).
    for _ in range(20):
        handle = tiny_engine.submit(script_body("reason_then_answer", max_tokens=3))
        assert tiny_engine.active_requests >= 1
        *_, last = handle.events()
        assert isinstance(last, Finished)
        assert tiny_engine.active_requests == 0
