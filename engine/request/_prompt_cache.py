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

import numpy as np
from mlx_lm.models.cache import LRUPromptCache, can_trim_prompt_cache, trim_prompt_cache

from .._upstream import copy_prompt_cache

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


def _common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading tokens ``a`` and ``b`` share (compared in C: prompts run to 100k)."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


@dataclass(slots=True)
class _Kept:
    """What this module keeps beside one mlx-lm entry (keyed by the id of its token list)."""

    tokens: list
    """The list mlx-lm holds as the entry's key (kept so its id stays unique)."""
    array: np.ndarray
    entry: Any
    """mlx-lm's ``CacheEntry`` (the KV cache, bytes, kind)."""
    template_args: Any
    filed: float
    hits: int = 0
    last_used: float | None = None


@dataclass(slots=True)
class _Plan:
    """Which entry a lookup copies and how much of the prompt that reuses."""

    source: _Kept | None
    cached: int
    trim: int = 0
    """Tokens to cut off the copy's end (the source runs past the reused prefix)."""
    nearest: _Kept | None = None
    """The entry sharing the longest prefix with the prompt, and how long: ``shared``."""
    shared: int = 0


class PromptCache:
    """Byte-bounded LRU of KV caches keyed by token prefix (see module docstring)."""

    def __init__(self, *, max_bytes: int, max_entries: int = 10):
        self.max_bytes = max_bytes
        self._lru = LRUPromptCache(max_size=max_entries, max_bytes=max_bytes)
        self._lock = threading.Lock()
        self._kept: dict[int, _Kept] = {}
        self._evicted: deque[np.ndarray] = deque(maxlen=_EVICTIONS_REMEMBERED)
        self._lookups: deque[CacheLookup] = deque(maxlen=_LOOKUPS_REMEMBERED)

    # -- lookups -----------------------------------------------------------------------
    def _held(self) -> list[list]:
        """The token lists mlx-lm holds as keys, in its eviction order."""
        return [t for lru in self._lru._lru._lrus.values() for _, t in lru]

    def _plan(self, prompt: np.ndarray) -> _Plan:
        """What mlx-lm's ``fetch_nearest_cache`` would copy for ``prompt``, found with one
        comparison per entry instead of its token-by-token trie walk (and without copying).

        Its rules: an exact entry; else the entry that shares the most tokens when that beats
        every shorter entry that is a prefix of the prompt and its cache can be trimmed back
        (the shortest such entry); else the longest entry that is a prefix of the prompt.
        """
        n = len(prompt)
        nearest, shared = None, 0
        shorter, longer = None, None
        shares = []
        for key in self._held():
            kept = self._kept[id(key)]
            p = _common_prefix(kept.array, prompt)
            shares.append((kept, p))
            if p > shared:
                nearest, shared = kept, p
            if p == len(key) == n:
                return _Plan(kept, n, 0, kept, n)
            if p == len(key) >= 2 and (shorter is None or p > len(shorter.tokens)):
                shorter = kept  # a prefix of the prompt (mlx-lm's trie skips 1-token ones)
        short = len(shorter.tokens) if shorter is not None else 0
        if shared > short:
            for kept, p in shares:
                if p == shared and len(kept.tokens) >= shared and (
                        longer is None or len(kept.tokens) < len(longer.tokens)):
                    longer = kept
        if longer is not None and can_trim_prompt_cache(longer.entry.prompt_cache):
            cached = min(n - 1, shared)
            return _Plan(longer, cached, len(longer.tokens) - cached, nearest, shared)
        if shorter is not None:
            return _Plan(shorter, short, 0, nearest, shared)
        return _Plan(None, 0, 0, nearest, shared)

    def _explain(self, prompt: np.ndarray, cached: int, plan: _Plan,
                 template_args) -> tuple[str | None, int | None]:
        """Why only ``cached`` of the prompt can be reused (called under the lock)."""
        n = len(prompt)
        if cached >= n - 1 and n > 0:
            return None, None
        if self.max_bytes <= 0:
            return "The prompt cache is off (its byte budget is 0).", None
        if not self._kept and not self._evicted:
            return "The prompt cache is empty (first request).", None
        best_key, best = plan.nearest, plan.shared
        evicted = max((_common_prefix(k, prompt) for k in self._evicted), default=0)
        if evicted > max(cached, best):
            return (
                f"An entry sharing {evicted} tokens with this prompt was evicted to stay "
                f"within the cache budget ({self.max_bytes} bytes, "
                f"{self._lru.max_size} entries).",
                None,
            )
        if best_key is None or best <= 0:
            return "No cached prompt shares a prefix with this one (diverged at token 0).", 0
        if best > cached and best < len(best_key.tokens):
            why = (
                f"The nearest entry shares {best} tokens, but its KV cache cannot be trimmed "
                "back to them (rotating/sliding-window cache); only whole entries that are "
                "a prefix of the prompt can be reused."
            )
            return why, best
        old = best_key.template_args
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

    def describe(self, tokens, *, template_args=None, request_id: str = "") -> CacheLookup:
        """What ``fetch`` would reuse for ``tokens``, without touching the cache."""
        prompt = np.asarray(tokens, dtype=np.int64)
        with self._lock:
            plan = self._plan(prompt)
            cached = plan.cached
            if plan.source is not None and cached >= len(prompt):  # as fetch trims an exact hit
                cached = cached - 1 if can_trim_prompt_cache(plan.source.entry.prompt_cache) else 0
            reason, at = self._explain(prompt, cached, plan, template_args)
        return CacheLookup(request_id, len(prompt), cached, reason, at)

    def fetch(self, tokens, *, template_args=None, request_id: str = ""):
        """A private copy of the nearest KV cache: ``(cache or None, cached_tokens, lookup)``.

        At least the last prompt token is always left to compute (the model needs it to
        produce the first output token), so an exact hit is trimmed back by one.
        """
        prompt = np.asarray(tokens, dtype=np.int64)
        with self._lock:
            plan = self._plan(prompt)
            cache, cached, trim = None, plan.cached, plan.trim
            if plan.source is not None:
                if cached >= len(prompt):
                    if can_trim_prompt_cache(plan.source.entry.prompt_cache):
                        cached, trim = cached - 1, 1
                    else:
                        cached = 0
                if cached:
                    cache = copy_prompt_cache(plan.source.entry.prompt_cache)
                    if trim:
                        trim_prompt_cache(cache, trim)
            reason, at = self._explain(prompt, cached, plan, template_args)
            lookup = CacheLookup(request_id, len(prompt), cached, reason, at)
            self._lookups.append(lookup)
            if cached:
                plan.source.hits += 1
                plan.source.last_used = time.time()
        return cache, cached, lookup

    # -- inserts -----------------------------------------------------------------------
    def insert(self, tokens, cache, *, kind: str = "assistant", template_args=None) -> None:
        """Keep ``cache`` (the KV state after ``tokens``); evicts least-recently-used entries."""
        tokens = list(tokens)
        if not tokens:
            return
        with self._lock:
            self._lru.insert_cache(_MODEL_KEY, tokens, cache, cache_type=kind)
            if any(t is tokens for t in self._held()):  # not evicted at once for its size
                self._kept[id(tokens)] = _Kept(
                    tokens, np.asarray(tokens, dtype=np.int64),
                    self._lru._trie.get(_MODEL_KEY, tokens), template_args, time.time())
            self._forget_gone(superseded_by=tokens)

    def trim_to(self, n_bytes: int) -> None:
        """Evict until the entries fit in ``n_bytes`` (room for requests being decoded)."""
        with self._lock:
            if self._lru.nbytes > n_bytes:
                self._lru.trim_to(n_bytes=n_bytes)
                self._forget_gone()

    def _forget_gone(self, superseded_by: list | None = None) -> None:
        """Drop what mlx-lm no longer holds; remember evictions (a prefix of a new entry is
        superseded by it, not evicted)."""
        held = {id(t) for t in self._held()}
        for key_id in [k for k in self._kept if k not in held]:
            gone = self._kept.pop(key_id)
            if superseded_by is None or gone.tokens != superseded_by[:len(gone.tokens)]:
                self._evicted.append(gone.array)
        if superseded_by is not None and id(superseded_by) not in held:
            self._evicted.append(np.asarray(superseded_by, dtype=np.int64))

    def clear(self) -> None:
        """Forget every entry, and what was evicted: a miss after this says the cache is empty."""
        with self._lock:
            self._lru.trim_to(n_sequences=0)
            self._kept.clear()
            self._evicted.clear()

    # -- reporting ---------------------------------------------------------------------
    def info(self) -> CacheInfo:
        with self._lock:
            kept = [self._kept[id(key)] for key in self._held()]
            return CacheInfo(
                entries=len(kept),
                tokens=sum(len(k.tokens) for k in kept),
                bytes=self._lru.nbytes,
                budget_bytes=self.max_bytes,
                lookups=tuple(self._lookups),
                prompts=tuple(CacheEntry(tuple(k.tokens), k.entry.nbytes, k.entry.cache_type,
                                         k.hits, k.filed, k.last_used) for k in kept),
            )
