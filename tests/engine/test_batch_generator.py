"""The engine's ``BatchGenerator`` is mlx-lm's, with fewer waits on the device when requests
leave a batch (``engine/_upstream.py``): its KV caches come out of a filter exactly as mlx-lm's
per-layer filter leaves them, and a batch run through it gives mlx-lm's own tokens and caches,
with prompts of different lengths and cached prefixes (so a split trims shared padding),
replies finishing at different steps, and one removed mid-reply.
"""

from __future__ import annotations

import copy

import mlx.core as mx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlx_lm.generate import BatchGenerator
from mlx_lm.models.cache import BatchKVCache, BatchRotatingKVCache, KVCache

from mlx_notebook.engine._upstream import _filter_kv_caches, batch_generator


def _layer(pads: list[int], length: int, seed: int) -> BatchKVCache:
    """A batch KV cache of ``len(pads)`` rows: ``length`` positions, the first ``pads[i]`` of
    row i padding, filled with distinct values so that any misplaced row or column shows."""
    cache = BatchKVCache(pads)
    if length:  # else empty, as a prompt batch's caches are before its first prefill call
        keys = mx.random.normal((len(pads), 2, length, 4), key=mx.random.key(seed))
        cache.update_and_fetch(keys, keys * 2)
    mx.eval(cache.offset, cache.left_padding)
    return cache


def _state(cache: BatchKVCache) -> list:
    arrays = [] if cache.keys is None else [cache.keys.tolist(), cache.values.tolist()]
    return arrays + [cache.offset.tolist(), cache.left_padding.tolist(), cache._idx]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), rows=st.integers(1, 6), length=st.integers(0, 9),
       layers=st.integers(1, 3))
def test_the_one_wait_filter_leaves_every_layer_as_mlx_lm_s_own_filter_does(
        data, rows, length, layers):
    pads = data.draw(st.lists(st.integers(0, length), min_size=rows, max_size=rows))
    keep = sorted(data.draw(st.sets(st.integers(0, rows - 1), min_size=1)))
    ours = [_layer(pads, length, seed) for seed in range(layers)]
    theirs = copy.deepcopy(ours)
    _filter_kv_caches(ours, keep)
    for c in theirs:
        c.filter(keep)
    assert [_state(c) for c in ours] == [_state(c) for c in theirs]


def test_caches_other_than_batch_kv_caches_are_filtered_by_their_own_method():
    rotating = BatchRotatingKVCache(max_size=8, left_padding=[2, 0, 1])
    keys = mx.arange(3 * 5 * 2, dtype=mx.float32).reshape(3, 1, 5, 2)
    rotating.update_and_fetch(keys, keys)
    theirs = copy.deepcopy(rotating)
    _filter_kv_caches([rotating], [0, 2])
    theirs.filter([0, 2])
    assert rotating.keys.tolist() == theirs.keys.tolist()
    assert rotating.left_padding.tolist() == theirs.left_padding.tolist()


def _prefix_cache(model, tokens: list[int]) -> list:
    cache = [KVCache() for _ in model.layers]
    model(mx.array(tokens)[None], cache=cache)
    mx.eval([c.state for c in cache])
    return cache


def _run(generator: BatchGenerator, model, prompts, max_tokens, cached, remove_at):
    """Every uid's tokens and its finished cache's keys, through ``generator``."""
    caches = [_prefix_cache(model, p[:n]) if n else None for p, n in zip(prompts, cached)]
    uids = generator.insert([p[n:] for p, n in zip(prompts, cached)], max_tokens=max_tokens,
                            caches=caches, all_tokens=[p[:n] for p, n in zip(prompts, cached)])
    tokens = {uid: [] for uid in uids}
    finished = {}
    steps = 0
    while len(finished) < len(uids):
        _, responses = generator.next()
        steps += 1
        for r in responses:
            tokens[r.uid].append(r.token)
            if r.finish_reason is not None:
                finished[r.uid] = [c.keys.tolist() for c in r.prompt_cache]
        if steps == remove_at:
            gone = uids[1]
            kept = generator.remove([gone], return_prompt_caches=True)
            finished[gone] = [c.keys.tolist() for c in kept[gone][0]]
        assert steps < 200
    generator.close()
    return [tokens[u] for u in uids], [finished[u] for u in uids]


_WORDS = "the keeper logged every ship that passed the lighthouse at dawn and dusk "

# (words repeated per prompt, cached prefix lengths, max_tokens, step to remove the second at)
SCENARIOS = [
    # Different lengths, some after a cached prefix (a split then trims shared padding), replies
    # of different lengths (they leave the batch at different steps), the second removed
    # mid-reply; prefill batches of 4 in 16-token chunks (several prefill calls each).
    pytest.param([1, 2, 3, 1, 2, 2], [0, 12, 0, 20, 4, 10], [9, 30, 3, 14, 5, 22], 6,
                 id="mixed"),
    # One prompt read after two different prefixes: both leave their prefill batch at once,
    # each padded on the left, so the whole batch splits and the padding they share is trimmed.
    pytest.param([2, 2], [4, 10], [7, 7], None, id="whole split"),
]


@pytest.mark.model
@pytest.mark.parametrize("repeats, cached, max_tokens, remove_at", SCENARIOS)
def test_a_batch_through_the_engine_s_generator_gives_mlx_lm_s_own_tokens_and_caches(
        tiny_reasoner_path, repeats, cached, max_tokens, remove_at):
    from mlx_lm import load

    model, tokenizer = load(str(tiny_reasoner_path))
    prompts = [tokenizer.encode(f"Story {n}: " + _WORDS * n) for n in repeats]
    options = dict(completion_batch_size=8, prefill_batch_size=4, prefill_step_size=16)
    theirs = _run(BatchGenerator(model, **options), model, prompts, max_tokens, cached,
                  remove_at)
    ours = _run(batch_generator(model, **options), model, prompts, max_tokens, cached,
                remove_at)
    lengths = [len(t) for t in ours[0]]
    assert lengths == [len(ours[0][1]) if i == 1 and remove_at else n
                       for i, n in enumerate(max_tokens)]
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
