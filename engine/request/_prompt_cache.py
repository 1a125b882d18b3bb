"""The prompt cache: a byte-bounded LRU of KV caches keyed by token prefix, that explains itself.

Storage and policy are mlx-lm's ``LRUPromptCache`` (a token trie; trimmable caches are cut
back to a shared prefix, shorter entries are extended), so reuse matches ``mlx_lm.server``
token for token. What it does not do, and this module adds: say *why* a lookup missed (where
the prompt diverged from the nearest entry, an eviction, a changed template argument), keep
the last lookups for the notebook, and publish a thread-safe summary.

Lookups and inserts run on the engine thread; ``describe`` (for ``Engine.inspect``) and
``info`` may run on any thread, so the trie is guarded by a lock.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from mlx_lm.models.cache import LRUPromptCache, can_trim_prompt_cache, trim_prompt_cache

__all__ = ["CacheLookup", "CacheEntry", "CacheInfo", "PromptCache"]

_MODEL_KEY = "model"  # one engine serves one model; the trie still wants a key
_EVICTIONS_REMEMBERED = 32
_LOOKUPS_REMEMBERED = 16


@dataclass(frozen=True, slots=True)
class CacheLookup:
    """What the prompt cache had for one prompt."""

    request_id: str
    prompt_tokens: int
    cached_tokens: int
    """Prompt tokens whose KV cache is reused (the first ``cached_tokens`` of the prompt)."""
    miss_reason: str | None
    """Why more was not reused, in one sentence; None when everything reusable was reused."""
    diverged_at: int | None = None
    """Index of the first prompt token that differs from the nearest entry, if any."""


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One cached prompt prefix: the KV cache after ``tokens``."""

    tokens: tuple[int, ...]
    bytes: int
    kind: str
    """mlx-lm's cache type: ``system``, ``user`` (a snapshot at a segment boundary) or
    ``assistant`` (a finished request's prompt and reply)."""
    hits: int
    """Lookups that reused (part of) this entry since it was filed."""
    created: float
    """When it was filed (``time.time()`` seconds)."""
    last_used: float | None
    """When a lookup last reused it; None if none has."""


@dataclass(frozen=True, slots=True)
class CacheInfo:
    entries: int
    tokens: int
    """Tokens covered by all entries together."""
    bytes: int
    budget_bytes: int
    lookups: tuple[CacheLookup, ...]
    """The most recent lookups, oldest first."""
    prompts: tuple[CacheEntry, ...] = ()
    """Every entry, in eviction order within each kind (``%mlx cache --tree`` draws them)."""


def _common_prefix(a, b) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class PromptCache:
    """Byte-bounded LRU of KV caches keyed by token prefix (see module docstring)."""

    def __init__(self, *, max_bytes: int, max_entries: int = 10):
        self.max_bytes = max_bytes
        self._lru = LRUPromptCache(max_size=max_entries, max_bytes=max_bytes)
        self._lock = threading.Lock()
        self._evicted: deque[tuple[int, ...]] = deque(maxlen=_EVICTIONS_REMEMBERED)
        self._template_args: dict[tuple[int, ...], Any] = {}
        self._lookups: deque[CacheLookup] = deque(maxlen=_LOOKUPS_REMEMBERED)
        self._use: dict[tuple[int, ...], list] = {}
        """Per entry: [filed at, hits, last used at] (entries no longer kept are dropped in
        ``info``)."""

    # -- lookups -----------------------------------------------------------------------
    def _explain(self, tokens, cached: int, template_args) -> tuple[str | None, int | None]:
        """Why only ``cached`` of ``tokens`` can be reused (called under the lock)."""
        n = len(tokens)
        if cached >= n - 1 and n > 0:
            return None, None
        if self.max_bytes <= 0:
            return "The prompt cache is off (its byte budget is 0).", None
        keys = self._keys()
        if not keys and not self._evicted:
            return "The prompt cache is empty (first request).", None
        best_key, best = None, -1
        for key in keys:
            p = _common_prefix(key, tokens)
            if p > best:
                best_key, best = key, p
        evicted = max((_common_prefix(k, tokens) for k in self._evicted), default=0)
        if evicted > max(cached, best):
            return (
                f"An entry sharing {evicted} tokens with this prompt was evicted to stay "
                f"within the cache budget ({self.max_bytes} bytes, "
                f"{self._lru.max_size} entries).",
                None,
            )
        if best_key is None or best <= 0:
            return "No cached prompt shares a prefix with this one (diverged at token 0).", 0
        if best > cached and best < len(best_key):
            why = (
                f"The nearest entry shares {best} tokens, but its KV cache cannot be trimmed "
                "back to them (rotating/sliding-window cache); only whole entries that are "
                "a prefix of the prompt can be reused."
            )
            return why, best
        old = self._template_args.get(best_key)
        if old is not None and template_args is not None and old != template_args:
            changed = sorted(
                k for k in set(dict(old)) | set(dict(template_args))
                if dict(old).get(k) != dict(template_args).get(k)
            )
            return (
                f"The prompt diverged at token {best} of {n}; chat_template_kwargs changed "
                f"({', '.join(changed)}) since the cached request.",
                best,
            )
        return f"The prompt diverged from the nearest cached entry at token {best} of {n}.", best

    def _keys(self) -> list[tuple[int, ...]]:
        return [tuple(t) for lru in self._lru._lru._lrus.values() for _, t in lru]

    def describe(self, tokens, *, template_args=None, request_id: str = "") -> CacheLookup:
        """What ``fetch`` would reuse for ``tokens``, without touching the cache."""
        tokens = list(tokens)
        with self._lock:
            cached = self._reusable(tokens)
            reason, at = self._explain(tokens, cached, template_args)
        return CacheLookup(request_id, len(tokens), cached, reason, at)

    def _reusable(self, tokens) -> int:
        # Mirrors LRUPromptCache.fetch_nearest_cache without deep-copying any cache.
        result = self._lru._trie.search(_MODEL_KEY, tokens)
        if result.exact is not None:
            entry = self._lru._trie.get(_MODEL_KEY, result.exact)
            return len(tokens) - 1 if can_trim_prompt_cache(entry.prompt_cache) else 0
        short = len(result.shorter) if result.shorter is not None else 0
        if result.longer is not None and result.common_prefix > short:
            entry = self._lru._trie.get(_MODEL_KEY, result.longer)
            if can_trim_prompt_cache(entry.prompt_cache):
                return min(len(tokens) - 1, result.common_prefix)
        return short

    def fetch(self, tokens, *, template_args=None, request_id: str = ""):
        """A private copy of the nearest KV cache: ``(cache or None, cached_tokens, lookup)``.

        At least the last prompt token is always left to compute (the model needs it to
        produce the first output token), so an exact hit is trimmed back by one.
        """
        tokens = list(tokens)
        with self._lock:
            source = self._source(tokens)
            cache, rest = self._lru.fetch_nearest_cache(_MODEL_KEY, tokens)
            cached = len(tokens) - len(rest)
            if cache is not None and cached >= len(tokens):
                if can_trim_prompt_cache(cache):
                    trim_prompt_cache(cache, 1)
                    cached -= 1
                else:
                    cache, cached = None, 0
            if cache is None:
                cached = 0
            reason, at = self._explain(tokens, cached, template_args)
            lookup = CacheLookup(request_id, len(tokens), cached, reason, at)
            self._lookups.append(lookup)
            if cached and source in self._use:
                use = self._use[source]
                use[1] += 1
                use[2] = time.time()
        return cache, cached, lookup

    # -- inserts -----------------------------------------------------------------------
    def insert(self, tokens, cache, *, kind: str = "assistant", template_args=None) -> None:
        """Keep ``cache`` (the KV state after ``tokens``); evicts least-recently-used entries."""
        tokens = list(tokens)
        if not tokens:
            return
        with self._lock:
            before = set(self._keys())
            self._lru.insert_cache(_MODEL_KEY, tokens, cache, cache_type=kind)
            after = set(self._keys())
            key = tuple(tokens)
            self._template_args[key] = template_args
            self._use[key] = [time.time(), 0, None]
            # The new entry itself is evicted at once when it alone exceeds the budget.
            for gone in (before | {key}) - after:
                self._template_args.pop(gone, None)
                # A prefix of the new entry is superseded, not evicted.
                if gone != key[: len(gone)]:
                    self._evicted.append(gone)

    def trim_to(self, n_bytes: int) -> None:
        """Evict until the entries fit in ``n_bytes`` (room for requests being decoded)."""
        with self._lock:
            before = set(self._keys())
            self._lru.trim_to(n_bytes=n_bytes)
            for gone in before - set(self._keys()):
                self._template_args.pop(gone, None)
                self._evicted.append(gone)

    def clear(self) -> None:
        """Forget every entry, and what was evicted: a miss after this says the cache is empty."""
        with self._lock:
            self._lru.trim_to(n_sequences=0)
            self._template_args.clear()
            self._use.clear()
            self._evicted.clear()

    def _source(self, tokens) -> tuple[int, ...] | None:
        """The entry ``fetch_nearest_cache`` will copy for ``tokens`` (as ``_reusable``)."""
        result = self._lru._trie.search(_MODEL_KEY, tokens)
        if result.exact is not None:
            return tuple(result.exact)
        short = len(result.shorter) if result.shorter is not None else 0
        if result.longer is not None and result.common_prefix > short:
            return tuple(result.longer)
        return tuple(result.shorter) if result.shorter is not None else None

    # -- reporting ---------------------------------------------------------------------
    def info(self) -> CacheInfo:
        with self._lock:
            keys = self._keys()
            kept = set(keys)
            for gone in set(self._use) - kept:
                del self._use[gone]
            prompts = []
            for key in keys:
                entry = self._lru._trie.get(_MODEL_KEY, list(key))
                filed, hits, used = self._use.get(key, (0.0, 0, None))
                prompts.append(CacheEntry(key, entry.nbytes, entry.cache_type, hits, filed, used))
            return CacheInfo(
                entries=len(keys),
                tokens=sum(len(k) for k in keys),
                bytes=self._lru.nbytes,
                budget_bytes=self.max_bytes,
                lookups=tuple(self._lookups),
                prompts=tuple(prompts),
            )
