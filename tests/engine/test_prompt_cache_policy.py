"""The prompt cache reuses exactly what mlx-lm's ``LRUPromptCache`` would (mlx_lm.server's
policy), although it finds the entry by comparing arrays instead of walking the trie."""

from __future__ import annotations

import mlx.core as mx
import pytest
from hypothesis import given, settings, strategies as st
from mlx.utils import tree_flatten
from mlx_lm.models.cache import (
    ArraysCache, CacheList, ChunkedKVCache, KVCache, LRUPromptCache, QuantizedKVCache,
    RotatingKVCache, can_trim_prompt_cache,
)

from mlx_notebook.engine.request._prompt_cache import PromptCache

# A small alphabet and short prompts, so that prompts often share prefixes and contain each other.
_prompts = st.lists(st.integers(0, 2), min_size=1, max_size=7)


def _cache(n: int, rotating: bool = False):
    c = RotatingKVCache(max_size=4, keep=0) if rotating else KVCache()
    if n:
        c.update_and_fetch(mx.zeros((1, 1, n, 2)), mx.zeros((1, 1, n, 2)))
    return [c]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_prompts, st.booleans()), max_size=6), st.lists(_prompts, min_size=1, max_size=4),
       st.booleans())
def test_each_lookup_reuses_what_mlx_lm_would(inserts, lookups, rotating):
    ours, theirs = PromptCache(max_bytes=1 << 30), LRUPromptCache(max_size=10, max_bytes=1 << 30)
    for tokens, as_user in inserts:
        kind = "user" if as_user else "assistant"
        ours.insert(tokens, _cache(len(tokens), rotating), kind=kind)
        theirs.insert_cache("model", list(tokens), _cache(len(tokens), rotating), cache_type=kind)
    assert sorted(e.tokens for e in ours.info().prompts) == sorted(
        tuple(t) for lru in theirs._lru._lrus.values() for _, t in lru)
    for tokens in lookups:
        expected_cache, rest = theirs.fetch_nearest_cache("model", list(tokens))
        expected = len(tokens) - len(rest) if expected_cache is not None else 0
        if expected >= len(tokens):  # an exact hit leaves the last token to compute
            expected = len(tokens) - 1 if can_trim_prompt_cache(expected_cache) else 0
        described = ours.describe(tokens)
        cache, cached, lookup = ours.fetch(tokens)
        assert cached == expected == described.cached_tokens == lookup.cached_tokens
        assert (cache is None) == (cached == 0)
        if cache is not None:
            assert cache[0].offset == cached or rotating
        assert (lookup.miss_reason is None) == (cached >= len(tokens) - 1)


def test_a_prefix_of_a_new_entry_is_superseded_but_an_entry_too_big_for_the_budget_is_evicted():
    one_step = sum(c.nbytes for c in _cache(3))  # a KVCache grows in steps of 256 tokens
    cache = PromptCache(max_bytes=one_step * 3 // 2)
    cache.insert([1, 2], _cache(2))
    cache.insert([1, 2, 3], _cache(3))  # supersedes [1, 2]
    assert [e.tokens for e in cache.info().prompts] == [(1, 2, 3)]
    assert cache.describe([9, 9, 9]).miss_reason.startswith("No cached prompt shares a prefix")
    big = [5] * 300
    cache.insert(big, _cache(300))  # two steps: alone bigger than the budget
    assert cache.info().entries == 0
    assert cache.describe(big + [1, 1]).miss_reason.startswith(
        "An entry sharing 300 tokens with this prompt was evicted")


def _filled(kind: str):
    """One layer's cache of ``kind`` holding 5 tokens of random keys and values."""
    keys, values = mx.random.normal((2, 1, 5, 64)), mx.random.normal((2, 1, 5, 64))
    if kind == "arrays":
        c = ArraysCache(2)
        c[0], c[1] = keys, values
        return c
    if kind == "list":
        return CacheList(_filled("kv"), _filled("arrays"))
    c = {"kv": KVCache, "quantized": lambda: QuantizedKVCache(group_size=32, bits=4),
         "rotating": lambda: RotatingKVCache(max_size=6, keep=1),
         "chunked": lambda: ChunkedKVCache(chunk_size=8)}[kind]()
    c.update_and_fetch(keys, values)
    return c


def _state(cache) -> list:
    """Every array and number the cache holds, evaluated, to compare by value."""
    arrays = [a for c in cache for _, a in tree_flatten(c.state)]
    mx.eval([a for a in arrays if isinstance(a, mx.array)])
    return [a.tolist() if isinstance(a, mx.array) else a for a in arrays]


@pytest.mark.parametrize("kind", ["kv", "quantized", "rotating", "chunked", "arrays", "list"])
def test_a_fetched_copy_is_private_whatever_the_cache_type(kind):
    prompt = PromptCache(max_bytes=1 << 30)
    stored = [_filled(kind), _filled(kind)]
    before = _state(stored)
    prompt.insert([1, 2, 3, 4, 5], stored)
    copy_a, cached, _ = prompt.fetch([1, 2, 3, 4, 5, 6, 7])
    assert cached == 5 and _state(copy_a) == before
    for c in copy_a:  # decode into the copy: two more tokens, rewritten state
        if kind in ("arrays", "list"):
            inner = c.caches[1] if kind == "list" else c
            inner[0] = inner[0] * 0 + 7
        if kind != "arrays":
            layer = c.caches[0] if kind == "list" else c
            layer.update_and_fetch(mx.ones((2, 1, 2, 64)), mx.ones((2, 1, 2, 64)))
    assert _state(copy_a) != before
    copy_b, cached, _ = prompt.fetch([1, 2, 3, 4, 5, 6, 7])
    assert cached == 5 and _state(copy_b) == before and _state(stored) == before
