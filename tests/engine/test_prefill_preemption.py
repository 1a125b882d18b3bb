"""A long prompt read alone does not hold up a short request that arrives meanwhile.

Alone, a request prefills on the single-stream fast path; when another job arrives, it stops
between prefill chunks and moves onto the batch, which reads the rest of its prompt beside
the newcomer's. Real SmolLM2 (float32, 64-token chunks of a few tenths of a second here): the
assertions look at the order of events, not at seconds.
"""

from __future__ import annotations

import pytest

from mlx_notebook.engine import ContentDelta, Finished, PrefillProgress

pytestmark = pytest.mark.model

_SEA = ("The sea was calm that morning, and the fishermen of the little harbour town pulled "
        "their boats onto the shingle, mended their nets and argued about the weather. ")


def _long_body(max_tokens: int = 8) -> dict:
    text = " ".join(f"{_SEA}Day {i}: the talk turned to the nets." for i in range(12))
    return {"messages": [{"role": "user", "content": f"Summarise this story.\n\n{text}"}],
            "max_tokens": max_tokens}


def _queued(handle) -> list:
    # What the engine thread has already written for ``handle``, without waiting for more.
    events = [*handle._pending, *handle._job.out.take(0)]
    handle._pending.clear()
    return events


def test_a_short_request_arriving_during_a_long_prefill_is_answered_before_it_ends(smollm2_engine):
    engine = smollm2_engine
    engine.clear_prompt_cache()
    body = _long_body()
    solo = engine.chat_completions(body)["choices"][0]["message"]["content"]
    engine.clear_prompt_cache()
    long = engine.submit(body)
    first = next(e for e in long.events() if isinstance(e, PrefillProgress))
    assert first.processed < first.total
    short = engine.submit({"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 1})
    short_events = list(short.events())
    assert isinstance(short_events[-1], Finished) and short_events[-1].reason == "length"
    # When the short answer was complete, the long prompt was still being read.
    so_far = _queued(long)
    progress = [e for e in so_far if isinstance(e, PrefillProgress)]
    assert progress and all(p.processed < p.total for p in progress)
    assert not any(isinstance(e, ContentDelta) for e in so_far)
    # And the long reply, finished on the batch, is the one it gives alone.
    rest = so_far + list(long.events())
    assert "".join(e.text for e in rest if isinstance(e, ContentDelta)) == solo
    # Its progress, read on across the move, counts on: one total, never going back.
    steps = [first, *(e for e in rest if isinstance(e, PrefillProgress))]
    assert len({p.total for p in steps}) == 1
    assert all(a.processed <= b.processed for a, b in zip(steps, steps[1:]))
    assert engine.active_requests == 0
