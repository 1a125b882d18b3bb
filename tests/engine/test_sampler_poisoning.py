"""A sampler that raises fails its own request, never every sampled request after it.

mlx-lm compiles its sampling steps (``apply_top_k``, ``categorical_sampling``...) with
``inputs=mx.random.state, outputs=mx.random.state``: while one is traced, mlx's global random
key holds a tracer, and an exception raised mid-trace left it there. Every later request that
sampled (temperature > 0, no seed) then failed with "[eval] Attempting to eval an array without
a primitive", and a batched step took its greedy neighbours down with it. Seen as the slow
hostile-body search failing on a plain ``temperature: 1.0`` body after
test_hostile_bodies.py's failing-sampler test had run in the same process.

The sampler here fails as a real one can: the model's logits width could not be read (no
``vocab_size``), so admission cannot bound ``top_k`` and mlx-lm's own check refuses it.
"""

from __future__ import annotations

import mlx.core as mx
import pytest

from mlx_notebook.engine import Engine, EngineRequestError
from mlx_notebook.engine.request._responses import collect

pytestmark = pytest.mark.model

TOP_K_ERROR = "`top_k` has to be an integer in the (0, 400) interval, but is 400."


@pytest.fixture(scope="module")
def engine(tiny_reasoner_path):
    """The tiny reasoner, its logits width unknown to admission (top_k is not bounded)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Engine, "_logits_width", lambda self: None)
        engine = Engine(str(tiny_reasoner_path), progress=False, prefill_step_size=64)
    assert engine._limits.vocab_size is None
    yield engine
    engine._thread.call(_heal_random_key)  # a regression here must not fail later modules
    engine.close()


def _heal_random_key() -> None:
    try:
        mx.eval(mx.random.state[0])
    except RuntimeError:
        mx.random.seed(0)


def _sampled(engine, body, **extra):
    return engine.submit({**body, "max_tokens": 8, "temperature": 1.0, **extra})


def _served(handle):
    reply = collect(handle.events())
    assert reply.usage.completion_tokens > 0 and (reply.content or reply.reasoning)
    return reply


@pytest.mark.parametrize("seed", [None, 7], ids=["unseeded", "seeded"])
def test_a_sampler_failing_alone_leaves_the_next_sampled_request_served(
        engine, script_body, seed):
    body = script_body("reason_then_answer")
    with pytest.raises(EngineRequestError) as caught:
        collect(_sampled(engine, body, top_k=400, seed=seed).events())
    assert caught.value.message == f"Generation failed: {TOP_K_ERROR}"
    _served(_sampled(engine, body))
    assert engine.healthy and engine.active_requests == 0


def test_a_sampler_failing_in_the_batch_leaves_later_sampled_batches_served(
        engine, script_body):
    body = script_body("reason_then_answer")
    neighbour_body = {**body, "max_tokens": 12}
    alone = collect(engine.submit(neighbour_body).events())
    with engine.together():  # one batch: the greedy neighbour and the failing sampler
        neighbour, bad = engine.submit(neighbour_body), _sampled(engine, body, top_k=400)
    with pytest.raises(EngineRequestError) as caught:
        collect(bad.events())
    assert caught.value.message == f"Generation failed for this request (ValueError: {TOP_K_ERROR})."
    assert collect(neighbour.events()).content == alone.content
    with engine.together():  # the next batch samples at temperature 1.0 beside it again
        neighbour, sampled = engine.submit(neighbour_body), _sampled(engine, body)
    _served(sampled)
    assert collect(neighbour.events()).content == alone.content
    assert engine.healthy and engine.active_requests == 0
