"""Cancelling while the prompt is read: at most one prefill chunk late, never a token after.

Real SmolLM2 (float32): its 64-token prefill chunks take a few tenths of a second here, so the
reader reacts to the first progress event while the engine is still inside the first chunk.
The assertions count events, not seconds.
"""

from __future__ import annotations

import pytest

from mlx_notebook.engine import (
    ContentDelta, Engine, Finished, PrefillProgress, ReasoningDelta, Started, Usage,
)

pytestmark = pytest.mark.model

_SEA = ("The sea was calm that morning, and the fishermen of the little harbour town pulled "
        "their boats onto the shingle, mended their nets and argued about the weather. ")


def _long_body(topic: str = "the harbour", max_tokens: int = 8) -> dict:
    text = " ".join(f"{_SEA}Day {i}: the talk turned to {topic}." for i in range(12))
    return {"messages": [{"role": "user", "content": f"Summarise this story.\n\n{text}"}],
            "max_tokens": max_tokens}


def _cancel_at_first_progress(handle) -> tuple[list, list]:
    """All events, and those read after ``cancel()`` ran at the first PrefillProgress."""
    events, cancelled_at = [], None
    for event in handle.events():
        events.append(event)
        if cancelled_at is None and isinstance(event, PrefillProgress):
            handle.cancel()
            cancelled_at = len(events)
    assert cancelled_at is not None, "no prefill progress was reported"
    return events, events[cancelled_at:]


def _assert_stopped_while_reading(events: list, after_cancel: list) -> None:
    started = next(e for e in events if isinstance(e, Started))
    assert started.prompt_tokens >= 400
    assert isinstance(events[-1], Finished) and events[-1].reason == "cancelled"
    usage = events[-2]
    assert isinstance(usage, Usage) and usage.completion_tokens == 0
    assert not any(isinstance(e, (ContentDelta, ReasoningDelta)) for e in events)
    # At most the chunk being computed when cancel() ran: no further progress reported.
    assert sum(isinstance(e, PrefillProgress) for e in after_cancel) <= 1
    progress = [e for e in events if isinstance(e, PrefillProgress)]
    assert progress[-1].processed < progress[-1].total


def _greedy(engine, body) -> tuple[str, int]:
    r = engine.chat_completions(body)
    return r["choices"][0]["message"]["content"], r["usage"]["prompt_tokens_details"][
        "cached_tokens"]


def test_cancel_while_the_prompt_is_read_stops_within_a_chunk_on_the_single_stream(
        smollm2_engine):
    body = _long_body()
    smollm2_engine.clear_prompt_cache()
    events, after = _cancel_at_first_progress(smollm2_engine.submit(body))
    _assert_stopped_while_reading(events, after)
    assert smollm2_engine.active_requests == 0
    # What the cancelled prefill computed is reused, and the answer is the cold one.
    warm, cached = _greedy(smollm2_engine, body)
    assert cached > 0
    smollm2_engine.clear_prompt_cache()
    assert warm == _greedy(smollm2_engine, body)[0]


def _submit_together(engine, bodies, held) -> list:
    """Submit ``bodies`` while the engine thread is held, so one pass schedules them all."""
    with held(engine):
        return [engine.submit(b) for b in bodies]


def test_cancel_while_the_prompt_is_read_stops_within_a_chunk_on_the_batch(smollm2_engine, engine_thread_held):
    smollm2_engine.clear_prompt_cache()
    stopped_body, other_body = _long_body("the harbour"), _long_body("the lighthouse")
    stopped, other = _submit_together(smollm2_engine, [stopped_body, other_body], engine_thread_held)
    events, after = _cancel_at_first_progress(stopped)
    _assert_stopped_while_reading(events, after)
    text = "".join(e.text for e in other.events() if isinstance(e, ContentDelta))
    # The request left in the batch is untouched, and the stopped one resumes exactly.
    warm_stopped, _ = _greedy(smollm2_engine, stopped_body)
    smollm2_engine.clear_prompt_cache()
    assert text == _greedy(smollm2_engine, other_body)[0]
    smollm2_engine.clear_prompt_cache()
    assert warm_stopped == _greedy(smollm2_engine, stopped_body)[0]
    assert smollm2_engine.active_requests == 0


@pytest.fixture(scope="module")
def drafting_smollm2_engine(smollm2_path):
    """SmolLM2 drafting for itself: the speculative path with a real prefill cost."""
    engine = Engine(str(smollm2_path), draft_model=str(smollm2_path), progress=False)
    yield engine
    engine.close()


def test_cancel_while_the_prompt_is_read_stops_within_a_chunk_with_a_draft_model(
        drafting_smollm2_engine):
    engine, body = drafting_smollm2_engine, _long_body()
    events, after = _cancel_at_first_progress(engine.submit(body))
    _assert_stopped_while_reading(events, after)
    warm, cached = _greedy(engine, body)
    assert cached > 0
    engine.clear_prompt_cache()
    assert warm == _greedy(engine, body)[0]


def test_the_prefill_chunk_is_the_users_to_choose(tiny_reasoner_path):
    with Engine(str(tiny_reasoner_path), progress=False, prefill_step_size=16) as engine:
        assert engine.config.prefill_step_size == 16
        handle = engine.submit(_long_body(max_tokens=1))
        steps = [e.processed for e in handle.events() if isinstance(e, PrefillProgress)]
    assert len(steps) >= 3 and steps[1] - steps[0] == 16  # one report per 16-token chunk
