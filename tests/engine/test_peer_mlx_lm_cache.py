"""mlx-lm's own prompt-cache checks, ported: what a request reuses, as ``cached_tokens`` says.

Ported from ml-explore/mlx-lm's tests (their test → what ours asserts):
- ``test_server.py`` ``TestLRUPromptCache.test_caching`` → an empty cache reuses nothing; a
  prompt that goes on from a cached one reuses all of it, and the longer entry filed after it
  replaces it; a prompt that parts from an entry midway reuses the shared part and is filed
  beside it. Through the engine, with the tiny reasoner and prompts of token ids.
- ``test_lru`` → an exact replay reuses all but its last token; a one-token prompt reuses
  nothing; a prompt sharing an entry's first tokens reuses those; past the entry limit the
  oldest entry goes, and a snapshot of the ``user`` kind outlives ``assistant`` entries. Both
  through an engine of two entries and on ``PromptCache`` itself.
- ``test_lru_bytes`` → on ``PromptCache``: past the byte budget the oldest entries go, and a
  trim to fewer bytes takes the next oldest; each miss then says it was evicted.
- ``test_insert_trimmable_cache_removes_immediate_prefix`` → the follow-up case above (and
  ``test_prompt_cache_policy.py`` on the class).
- ``TestPromptTrie.test_search_finds_shortest_longer_sequence`` → of two longer entries the
  shorter one is copied (its hit is counted).
- ``test_prompt_cache.py`` ``test_cache_with_generate`` → a reply continued from the cache in
  two requests gives the tokens and logprobs of one request; ``test_trim_cache_with_generate``
  → a replay after a longer reply is trimmed back and gives the same reply;
  ``test_cache_copying`` → decoding into a reused copy leaves the entry as it was;
  ``test_trim_cache`` (rotating part) → within its window a rotating cache is trimmed like any
  other, past it only a whole entry that is a prefix of the prompt is reused, and the miss
  says why.

Through the engine, each request's reuse is also the one ``Engine.inspect`` foretold for it.

Differences asserted as ours: mlx-lm files a cache for an empty token list (their
``test_insert_empty_tokens_does_not_self_destruct``); ours files nothing for it (a prompt has
at least one token, so no lookup could use it).

Not ported: saving and loading caches to files and ``to_quantized`` (the engine keeps caches
in memory only and has no KV quantization option); attention masks, ``CacheList``,
``BatchKVCache`` / ``BatchRotatingKVCache`` internals and merges (mlx-lm's batching, which
``test_peer_mlx_lm_generate.py`` checks by comparing batched replies with single ones);
``TestPromptTrie``'s tie between two equally long entries (which one is copied shows only in
the per-entry hit count, and either gives the same reused tokens);
``test_fetch_empty_tokens_after_root_eviction`` (no empty entries here).
"""

from __future__ import annotations

import mlx.core as mx
import pytest
from mlx_lm.models.cache import KVCache

from mlx_notebook.engine import Engine
from mlx_notebook.engine.request._prompt_cache import PromptCache
from test_peer_mlx_lm_generate import _collect  # (its event reader, shared)

ATOL = 1e-4  # logprobs read after a cached prefix differ from a one-pass read by rounding

P = list(range(40, 64))
"""A 24-token prompt of the tiny reasoner's ids: greedy, it answers without its end token."""


def _run(engine, prompt: list[int], n: int = 4):
    """(reply ids, logprobs, Started) of a greedy completion of token ids; what ``inspect``
    foretold of its reuse is checked against what it reused."""
    body = {"prompt": prompt, "max_tokens": n, "temperature": 0, "logprobs": 1}
    foretold = engine.inspect(body, kind="completion").cache.cached_tokens
    ids, logprobs, _, started = _collect(engine.submit(body, kind="completion"))
    assert started.cached_tokens == foretold
    return ids, logprobs, started


def _entries(engine) -> list[tuple[int, ...]]:
    return sorted(e.tokens for e in engine.cache_info().prompts)


def _reason(engine) -> str | None:
    return engine.cache_info().lookups[-1].miss_reason


def _cold(engine, prompt, n=4):
    engine.clear_prompt_cache()
    return _run(engine, prompt, n)


# -- TestLRUPromptCache.test_caching, through the engine ------------------------------------------
@pytest.mark.model
def test_extending_and_parting_prompts_reuse_what_they_share(tiny_engine):
    engine = tiny_engine
    engine.clear_prompt_cache()
    first, _, started = _run(engine, P)
    assert started.cached_tokens == 0 and "empty" in _reason(engine)
    assert _entries(engine) == [tuple(P + first)]  # the prompt and its reply

    # The whole entry is a prefix of the next prompt: all of it is reused, and the entry that
    # request files (its prompt and reply) replaces it.
    longer = P + first + [20] * 5
    reply, logprobs, started = _run(engine, longer)
    assert started.cached_tokens == len(P + first)
    assert _entries(engine) == [tuple(longer + reply)]

    # A prompt that parts from the entry at token 26 reuses 26, and is filed beside it.
    parted = longer[:26] + [40] * 8
    parted_reply, parted_logprobs, started = _run(engine, parted)
    assert started.cached_tokens == 26
    assert "at token 26 of 34" in _reason(engine)
    assert len(_entries(engine)) == 2

    # test_cache_copying: the reused copy was decoded into; the entry it came from was not.
    again, again_logprobs, started = _run(engine, longer)
    assert started.cached_tokens == len(longer) - 1
    assert again == reply and again_logprobs == pytest.approx(logprobs, abs=ATOL)

    # Reuse never changes a greedy reply (nor, beyond rounding, its logprobs).
    for prompt, ids, lps in ((longer, reply, logprobs), (parted, parted_reply, parted_logprobs)):
        cold_ids, cold_lps, started = _cold(engine, prompt)
        assert started.cached_tokens == 0
        assert cold_ids == ids and cold_lps == pytest.approx(lps, abs=ATOL)


# -- test_prompt_cache.py: test_cache_with_generate, test_trim_cache_with_generate ----------------
@pytest.mark.model
def test_a_reply_continued_from_the_cache_is_the_one_long_reply(tiny_engine):
    engine = tiny_engine
    whole, whole_lps, _ = _cold(engine, P, n=8)
    engine.clear_prompt_cache()
    head, head_lps, _ = _run(engine, P, n=3)
    # The three tokens read back as prompt: the entry is that prompt exactly, reused but for
    # the last token, which is read again to give the next one.
    tail, tail_lps, started = _run(engine, P + head, n=5)
    assert started.cached_tokens == len(P) + 2
    assert head + tail == whole
    assert head_lps + tail_lps == pytest.approx(whole_lps, abs=ATOL)
    # Back to the prompt alone: the longer entry is trimmed to it, and gives the same reply.
    replay, replay_lps, started = _run(engine, P, n=8)
    assert started.cached_tokens == len(P) - 1
    assert replay == whole and replay_lps == pytest.approx(whole_lps, abs=ATOL)


# -- TestLRUPromptCache.test_lru, through an engine of two entries --------------------------------
@pytest.mark.model
def test_two_entries_exact_hits_shared_starts_and_the_oldest_evicted(tiny_reasoner_path):
    a, b, c = P[:8], [70, 71, 72, 73, 74, 75], [80, 81, 82, 83, 84]
    with Engine(str(tiny_reasoner_path), progress=False, prompt_cache_entries=2) as engine:
        reply_a, _, _ = _run(engine, a)
        _run(engine, b)
        # An exact replay re-reads its last token: the model needs it for the first reply token.
        again, _, started = _run(engine, a)
        assert started.cached_tokens == len(a) - 1 and again == reply_a
        assert _reason(engine) is None
        # Sharing an entry's first token only: that one token is reused.
        _, _, started = _run(engine, [b[0], 99, 98])
        assert started.cached_tokens == 1
        # One token: nothing to reuse, and nothing more could have been.
        _, _, started = _run(engine, a[:1])
        assert started.cached_tokens == 0 and _reason(engine) is None
        assert len(_entries(engine)) == 2
        # A third prompt of its own: the least recently filed entry goes.
        engine.clear_prompt_cache()
        for prompt in (a, b, c):
            _run(engine, prompt)
        _, _, started = _run(engine, a)
        assert started.cached_tokens == 0 and "evicted" in _reason(engine)
        _, _, started = _run(engine, c)
        assert started.cached_tokens == len(c) - 1


# -- TestLRUPromptCache on PromptCache itself (no model: KV caches of n tokens) -------------------
def _kv(n: int) -> list:
    cache = KVCache()
    cache.update_and_fetch(mx.zeros((1, 1, n, 2)), mx.zeros((1, 1, n, 2)))
    return [cache]


def _cached(cache: PromptCache, tokens: list[int]) -> int:
    return cache.fetch(tokens)[1]


def test_user_snapshots_outlive_assistant_entries():
    cache = PromptCache(max_bytes=1 << 30, max_entries=2)
    for tokens in ([1, 2], [2, 3], [3, 4]):
        cache.insert(tokens, _kv(2))
    assert _cached(cache, [1, 2]) == 0
    assert "evicted" in cache.describe([1, 2]).miss_reason
    assert _cached(cache, [2, 3]) == 1 and _cached(cache, [3, 4]) == 1
    cache.insert([4, 5], _kv(2), kind="user")  # evicts an assistant entry, the oldest
    assert _cached(cache, [2, 3]) == 0
    assert _cached(cache, [3, 4]) == 1 and _cached(cache, [4, 5]) == 1
    cache.insert([5, 6], _kv(2))
    cache.insert([6, 7], _kv(2))  # assistant entries go first while they are as many
    assert _cached(cache, [5, 6]) == 0
    assert _cached(cache, [6, 7]) == 1 and _cached(cache, [4, 5]) == 1
    assert sorted((e.tokens, e.kind) for e in cache.info().prompts) == [
        ((4, 5), "user"), ((6, 7), "assistant")]


def test_the_byte_budget_evicts_the_oldest_and_a_trim_the_next():
    one = sum(c.nbytes for c in _kv(2))  # a KVCache holds 256-token steps: all entries equal
    cache = PromptCache(max_bytes=one * 3 + one // 2, max_entries=100)
    for tokens in ([1, 2], [3, 4], [4, 5], [6, 7]):
        cache.insert(tokens, _kv(2))
    info = cache.info()
    assert (info.entries, info.bytes) == (3, one * 3)
    cache.trim_to(one * 2 + one // 3)
    info = cache.info()
    assert (info.entries, info.bytes) == (2, one * 2)
    for gone in ([1, 2], [3, 4]):
        lookup = cache.describe(gone)
        assert lookup.cached_tokens == 0 and "evicted" in lookup.miss_reason
    assert _cached(cache, [4, 5]) == 1 and _cached(cache, [6, 7]) == 1


def test_of_two_longer_entries_the_shorter_is_copied():
    cache = PromptCache(max_bytes=1 << 30)
    cache.insert([1, 2, 3, 4], _kv(4))
    cache.insert([1, 5, 6], _kv(3))
    copy, cached, _ = cache.fetch([1, 7])
    assert cached == 1 and copy[0].offset == 1
    hits = {e.tokens: e.hits for e in cache.info().prompts}
    assert hits == {(1, 2, 3, 4): 0, (1, 5, 6): 1}


def test_an_empty_token_list_is_not_filed():
    # (mlx-lm files it as a root entry; no prompt here has zero tokens to look it up with)
    cache = PromptCache(max_bytes=1 << 30)
    cache.insert([], _kv(1))
    assert cache.info().entries == 0


# -- test_trim_cache's rotating caches, through an engine with max_kv_size ------------------------
@pytest.mark.model
def test_a_rotating_cache_is_trimmed_only_within_its_window(tiny_reasoner_path):
    with Engine(str(tiny_reasoner_path), progress=False, max_kv_size=16) as engine:
        short = P[:10]  # prompt and reply fit the 16-token window: trimmable
        _run(engine, short)
        _, _, started = _run(engine, short[:6] + [80] * 4)
        assert started.cached_tokens == 6
        engine.clear_prompt_cache()
        first, _, _ = _run(engine, P)  # 28 tokens: the window rotated
        parted, _, started = _run(engine, P[:20] + [80] * 4)
        assert started.cached_tokens == 0
        assert "cannot be trimmed" in _reason(engine)
        # A prompt that holds a whole entry still reuses all of it.
        _, _, started = _run(engine, P + first + [81] * 3)
        assert started.cached_tokens == len(P + first)
        # (the prompt's own end was kept apart for this: a replay reuses all but its last)
        again, _, started = _run(engine, P)
        assert started.cached_tokens == len(P) - 1 and again == first
        engine.clear_prompt_cache()
        assert _run(engine, P[:20] + [80] * 4)[0] == parted
