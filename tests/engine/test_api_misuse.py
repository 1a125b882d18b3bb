"""A user's mistake with the engine's Python API fails that call or that request in one sentence
and leaves the engine serving: a callback that raises, a reply read where it can never come
(inside ``on_event`` or ``together()``), an interrupt during a whole-reply call, engine options
no request could use, an Engine dropped without ``close()``."""

from __future__ import annotations

import ctypes
import gc
import threading
import time

import pytest

from mlx_notebook.engine import Engine, EngineError, Finished

pytestmark = pytest.mark.model

SUM = {"messages": [{"role": "user", "content": "What is 17 + 25?"}], "max_tokens": 40}


def _answers(engine) -> str:
    return engine.chat_completions(SUM)["choices"][0]["message"]["content"]


def test_a_callback_that_raises_fails_only_its_request(tiny_engine):
    expected = _answers(tiny_engine)
    with pytest.raises(EngineError, match="on_event must be a function that takes one event, not str"):
        tiny_engine.submit(SUM, on_event="print")

    def broken(event):
        raise ValueError("my bug")

    tiny_engine.submit(SUM, on_event=broken)
    deadline = time.time() + 30
    while tiny_engine.active_requests and time.time() < deadline:
        time.sleep(0.05)
    assert tiny_engine.active_requests == 0 and tiny_engine.healthy
    assert _answers(tiny_engine) == expected


@pytest.mark.parametrize("raised", [SystemExit(2), KeyboardInterrupt(), GeneratorExit()])
def test_a_callback_that_exits_fails_only_its_request_and_still_hears_the_end(tiny_engine, raised):
    expected = _answers(tiny_engine)
    seen, ended = [], threading.Event()

    def exits(event):
        seen.append(type(event).__name__)
        if isinstance(event, Finished):
            ended.set()
        else:
            raise raised

    handle = tiny_engine.submit(SUM, on_event=exits)
    assert ended.wait(30)
    assert seen[-1] == "Finished" and handle.done and "done" in repr(handle)
    assert tiny_engine.healthy and tiny_engine.active_requests == 0
    assert _answers(tiny_engine) == expected


def _endless(engine, **extra) -> dict:
    """A reply that runs to its max_tokens (the end of text banned)."""
    return {"messages": [{"role": "user", "content": "Tell me a long story."}],
            "max_tokens": 2000, "logit_bias": {str(i): -100 for i in engine.tokenizer.eos_token_ids},
            **extra}


def _served_within(engine, seconds: float) -> bool:
    deadline = time.time() + seconds
    while engine.active_requests and time.time() < deadline:
        time.sleep(0.02)
    return engine.active_requests == 0


@pytest.mark.parametrize("drop", ["stream", "handle", "prompts", "events"])
def test_a_reply_nobody_can_read_any_more_is_cancelled(smollm2_engine, drop):
    tiny_engine = smollm2_engine  # (a token takes ~20 ms: 2,000 of them take most of a minute)
    if drop == "stream":  # made and dropped unstarted (a cell that failed right after)
        tiny_engine.chat_completions(_endless(tiny_engine, stream=True))
    elif drop == "handle":
        tiny_engine.submit(_endless(tiny_engine))
    elif drop == "prompts":
        tiny_engine.completions({**_endless(tiny_engine), "messages": None,
                                 "prompt": ["Once", "upon", "a time"], "stream": True})
    else:
        for _ in tiny_engine.submit(_endless(tiny_engine)).events():
            break
    gc.collect()
    assert _served_within(tiny_engine, 3)


def test_a_reply_read_where_it_cannot_come_is_refused_instead_of_hanging(tiny_engine):
    seen, refusals, done = [], [], threading.Event()
    first = tiny_engine.submit(SUM)
    list(first.events())

    def on_event(event):
        if isinstance(event, Finished):
            seen.append(tiny_engine.trace(first.id))  # a read of state: answered
            try:
                tiny_engine.chat_completions(SUM)
            except EngineError as exc:
                refusals.append(str(exc))
            done.set()

    tiny_engine.submit(SUM, on_event=on_event)
    assert done.wait(30) and seen and refusals == [
        "A reply cannot be read inside on_event: the callback runs on the engine thread, which "
        "makes the reply; read it from another thread."]
    before = tiny_engine.submit(SUM)
    deadline = time.time() + 10
    while not before._job.out.started and time.time() < deadline:
        time.sleep(0.01)
    with tiny_engine.together():
        # Taken in before the block, it is not held: it is read here.
        assert [e for e in before.events() if isinstance(e, Finished)]
        handle = tiny_engine.submit(SUM)
        with pytest.raises(EngineError) as caught:
            next(handle.events())
    assert str(caught.value) == ("A reply cannot be read inside engine.together(): its requests "
                                 "start when the block ends; read them after it.")
    assert [e for e in handle.events() if isinstance(e, Finished)]
    assert tiny_engine.healthy


def test_an_interrupt_during_a_whole_reply_call_cancels_the_request(tiny_engine):
    main = threading.get_ident()
    ends = {str(i): -100 for i in tiny_engine.tokenizer.eos_token_ids}  # it runs its length
    body = {**SUM, "max_tokens": 2000, "temperature": 1.0, "seed": 3, "logit_bias": ends,
            "messages": [{"role": "user", "content": "Tell me a long story."}]}

    def interrupt():
        time.sleep(0.3)
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(main), ctypes.py_object(KeyboardInterrupt))

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        tiny_engine.chat_completions(body)
        time.sleep(5)  # the reply came first: let the interrupt land here, and fail below
        pytest.fail("the reply ended before the interrupt")
    deadline = time.time() + 0.5  # a cancel acts within a step; the reply had 2,000 to go
    while tiny_engine.active_requests and time.time() < deadline:
        time.sleep(0.02)
    assert tiny_engine.active_requests == 0


@pytest.mark.parametrize("args, message", [
    ({"add_generation_prompt": False}, "'chat_template_args.add_generation_prompt' is not "
                                       "allowed: the engine sets it per request."),
    ({1: 2}, "'chat_template_args' keys must be template variable names, got 1."),
    ("enable_thinking", "chat_template_args must be a dict of option names and values, not str."),
])
def test_engine_wide_template_arguments_are_checked_as_a_requests_are(tiny_reasoner_path, args, message):
    with pytest.raises(EngineError) as caught:
        Engine(str(tiny_reasoner_path), progress=False, chat_template_args=args)
    assert str(caught.value) == message


def test_an_engine_dropped_without_close_frees_its_thread_once_its_requests_are_served(tiny_reasoner_path):
    engine = Engine(str(tiny_reasoner_path), progress=False)
    chunks = engine.chat_completions({**SUM, "stream": True})
    thread = engine._thread._thread
    del engine
    gc.collect()
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1]
    assert finish in ("stop", "length")  # served whole, though its Engine was dropped
    thread.join(10)
    assert not thread.is_alive()


def test_trace_takes_a_handle_or_its_id_and_the_filter_takes_only_text(tiny_engine):
    from mlx_notebook.engine.parsing import StreamFilter

    with tiny_engine.together():  # held until the block ends: surely still running
        handle = tiny_engine.submit(SUM)
        with pytest.raises(EngineError, match=r"^Request 'chatcmpl-.*' is still running: its "
                                              r"trace is filed when it finishes\.$"):
            tiny_engine.trace(handle)
    list(handle.events())
    assert tiny_engine.trace(handle).rows == tiny_engine.trace(handle.id).rows
    assert handle.id not in tiny_engine._thread.running_ids
    with pytest.raises(EngineError, match=r"trace\(\) takes a request id .*, not list"):
        tiny_engine.trace([1])
    with pytest.raises(TypeError, match=r"StreamFilter.feed\(\) takes text \(str\), not NoneType"):
        StreamFilter("qwen3").feed(None)
    with pytest.raises(EngineError, match="The request body must be a JSON object"):
        tiny_engine.inspect(None)


def test_a_parser_that_fails_at_the_end_fails_the_request_instead_of_hanging_it(
        tiny_engine, monkeypatch):
    from mlx_notebook.engine.parsing import StreamFilter

    def broken(self):
        raise RuntimeError("parser bug")

    monkeypatch.setattr(StreamFilter, "finish", broken)
    done = []

    def alone():  # the single-stream path
        done.append(list(tiny_engine.submit(SUM).events()))

    def together():  # the batch path
        with tiny_engine.together():
            handles = [tiny_engine.submit(SUM), tiny_engine.submit(SUM)]
        done.extend(list(h.events()) for h in handles)

    for run in (alone, together):
        worker = threading.Thread(target=run)
        worker.start()
        worker.join(30)
        assert not worker.is_alive(), f"a request never ended ({run.__name__})"
    assert len(done) == 3
    for events in done:
        assert type(events[-1]).__name__ == "Error" and "parser bug" in events[-1].message


def test_close_inside_on_event_stops_the_engine_and_leaves_its_thread_to_be_joined_at_exit(
        tiny_reasoner_path):
    """The thread cannot join itself: it stays among those joined at exit (an interpreter
    exiting under a running MLX thread aborts the process)."""
    from mlx_notebook.engine._engine import _live_threads

    engine = Engine(str(tiny_reasoner_path), progress=False)
    seen = []

    def on_event(event):
        if not seen:
            engine.close()
            seen.append(engine._thread in _live_threads)

    engine.submit(SUM, on_event=on_event)
    engine._thread._thread.join(10)  # it stops once the callback returns
    assert seen == [True] and not engine._thread._thread.is_alive()
    assert not engine.healthy and repr(engine).endswith("closed, 0 active>")


def test_close_while_a_callback_blocks_says_so_and_keeps_the_thread_for_exit(tiny_reasoner_path):
    from mlx_notebook.engine._engine import _live_threads

    engine = Engine(str(tiny_reasoner_path), progress=False)
    entered, release = threading.Event(), threading.Event()

    def on_event(event):
        entered.set()
        release.wait(30)

    engine.submit(SUM, on_event=on_event)
    assert entered.wait(10)
    with pytest.warns(RuntimeWarning, match=r"^The engine thread is still in an on_event "
                                            r"callback 0.5 s after close\(\); it stops once "
                                            r"the callback returns\.$"):
        engine.close(timeout=0.5)
    assert engine._thread in _live_threads and not engine.healthy
    release.set()
    engine._thread._thread.join(10)
    assert not engine._thread._thread.is_alive()


def test_a_request_cancelled_before_it_started_has_an_empty_trace_not_a_missing_one(tiny_engine):
    with tiny_engine.together():
        handle = tiny_engine.submit(SUM)
        handle.cancel()
    assert [type(e).__name__ for e in handle.events()] == ["Started", "Usage", "Finished"]
    trace = tiny_engine.trace(handle)  # said "only the last 16 finished requests are kept"
    assert (trace.events, trace.buffered.content) == ((), "")
    with pytest.raises(EngineError) as missing:
        tiny_engine.trace("chatcmpl-nothing")
    assert str(missing.value) == ("No trace for request 'chatcmpl-nothing': it is not among "
                                  "the last 16 finished requests, the only ones kept.")


@pytest.mark.parametrize("kind", ["chat ", "Chat", None, 3])
def test_an_unknown_kind_is_an_engine_error_in_one_sentence(tiny_engine, kind):
    with pytest.raises(EngineError) as caught:
        tiny_engine.submit(SUM, kind=kind)
    assert str(caught.value) == f"kind must be 'chat' or 'completion', not {kind!r}."


def test_a_reply_read_to_its_end_is_not_read_again_as_an_empty_one(tiny_engine):
    handle = tiny_engine.submit(SUM)
    events = handle.events()
    first = [next(events), next(events)]  # an iterator dropped half-way is taken up
    rest = list(handle.events())
    assert type(first[0]).__name__ == "Started" and type(rest[-1]) is Finished
    with pytest.raises(EngineError) as caught:
        list(handle.events())
    assert str(caught.value) == (
        f"The reply of request {handle.id!r} was read to its end already; keep the events the "
        "first read gave (events = list(handle.events())) to go over them again.")
