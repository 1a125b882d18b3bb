"""Attention over a few rows without a cuDNN plan for each new shape (mlx's CUDA backend).

mlx-cuda 0.32 runs a bf16/f16 attention over more than one query row through cuDNN, whose
execution plan it builds for the exact shapes of the queries and keys and keeps in an LRU
(``MLX_CUDA_SDPA_CACHE_SIZE``). A build cost 40-70 ms of host time on two H100s' hosts
(2026-12-07), where the whole forward pass of a 1B model over 33 rows costs 4.5 ms with the
plan cached. A benchmark that repeats one prompt meets cached plans; a real conversation never
does: a follow-up's new part, and the last chunk of any prompt, ends at a key length never
seen before, so every request paid one build before its first token.

On the engine's thread, a pass of more than one row and fewer than a prefill chunk's
(a follow-up, a short prompt, a prompt's last chunk) computes its attention with float32
scores, from matmuls and a softmax, and builds no plan, while its score matrix stays under
512 MiB. Full chunks keep cuDNN: their shapes recur (a prompt read from its start ends its
chunks at multiples of the chunk size), so their plans do. A decode step (one row) is
untouched. ``EngineConfig.cudnn_for_few_rows`` keeps mlx's choice.

Each kernel of such a pass costs host time to encode, which a pass of a few rows does not
hide, so a causal pass (every pass of mlx-lm's models but a padded batch's) takes six kernels
a layer (``_causal``) where mlx's own float32 composition over cast inputs takes twelve: on
an H100 (2026-12-08) all 30 layers' attention of a 30-row pass over 8,000 keys took 3.5-3.6 ms
against 5.2-7.1 (best of ten; medians 3.8-4.4 against 6.8-7.9), and through the engine
follow-ups came 0.5-6.6 ms sooner in seven of eight comparisons (docs/gpu-measurements.md).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import mlx.core as mx

__all__ = ["few_rows_composed", "forget_mask", "installed"]

_rows = threading.local()
"""``below``: on an engine's thread, the row count under which attention is composed."""
_cudnn_attention = None
"""``mx.fast.scaled_dot_product_attention`` as mlx defines it, once ours wraps it."""
_HALF = (mx.bfloat16, mx.float16)
_SCORES_BYTES = 512 * 2**20
"""The largest float32 score matrix composed; past it (a long last chunk after a long
history) cuDNN's plan costs less than the memory."""


def _attention(q, k, v, *args, **kwargs):
    below = getattr(_rows, "below", 0)
    rows = q.shape[-2]
    if (below and 1 < rows < below and q.dtype in _HALF
            and q.size // q.shape[-1] * k.shape[-2] * 4 <= _SCORES_BYTES):
        if (not args and kwargs.get("mask") == "causal" and kwargs.get("sinks") is None
                and set(kwargs) <= {"scale", "mask", "sinks"}):  # (mlx-lm passes sinks=None)
            return _causal(q, k, v, kwargs["scale"])
        out = _cudnn_attention(q.astype(mx.float32), k.astype(mx.float32),
                               v.astype(mx.float32), *args, **kwargs)
        return out.astype(q.dtype)
    return _cudnn_attention(q, k, v, *args, **kwargs)


def _causal(q, k, v, scale: float):
    """Causal attention with float32 scores in as few kernels as mlx allows: the scale and the
    mask folded into one ``addmm``, the softmax in float32, its weights rounded to q's dtype
    for the product with v, as a flash kernel rounds them. Six kernels a layer, where mlx's
    own float32 composition over cast inputs takes twelve (each one's encoding costs host time
    on CUDA, which a pass of a few rows does not hide)."""
    batch, heads, rows, dim = q.shape
    kv_heads, keys = k.shape[1], k.shape[2]
    group = heads // kv_heads
    # a kv head's query heads stacked as rows of one matrix (their order in mlx-lm's models),
    # so both products are plain batched ones: no operand broadcast to the group
    qs = q.astype(mx.float32).reshape(batch, kv_heads, group * rows, dim)
    scores = mx.addmm(_causal_mask(rows, keys, group), qs,
                      k.astype(mx.float32).swapaxes(-1, -2), alpha=scale)
    weights = mx.softmax(scores, axis=-1).astype(q.dtype)
    return (weights @ v).reshape(batch, heads, rows, -1)


_MASK_KEPT_BYTES = 64 * 2**20
"""The largest mask a thread keeps for the next layer and pass while its engine works (an idle
engine keeps none: ``forget_mask``); past it each layer builds its own (a long last chunk
after a long history: rare, and its matmuls dwarf the mask)."""


def _causal_mask(rows: int, keys: int, group: int) -> mx.array:
    """0 where a query row (the last ``rows`` of ``keys`` positions) sees a key, else the
    lowest float32, for ``group`` heads' rows stacked: added to the scores. Built once a
    pass, shared by its layers, and kept for a next pass of the same shape."""
    kept = getattr(_rows, "mask", None)
    if kept is not None and kept[0] == (rows, keys, group):
        return kept[1]
    seen = mx.arange(keys)[None] <= mx.arange(keys - rows, keys)[:, None]
    mask = mx.where(seen, mx.array(0, mx.float32), mx.array(mx.finfo(mx.float32).min, mx.float32))
    if group > 1:
        mask = mx.tile(mask, (group, 1))
    _rows.mask = ((rows, keys, group), mask) if mask.nbytes <= _MASK_KEPT_BYTES else None
    return mask


def forget_mask() -> None:
    """Let go of this thread's kept mask (an idle engine holds no device memory for one)."""
    _rows.mask = None


def installed() -> bool:
    """Whether mlx's attention is wrapped in this process."""
    return _cudnn_attention is not None


def _install() -> None:
    global _cudnn_attention
    if _cudnn_attention is None:
        _cudnn_attention = mx.fast.scaled_dot_product_attention
        # mlx-lm's models look it up at each call (``mx.fast.scaled_dot_product_attention``
        # in models/base.py), so wrapping the attribute reaches every model; off the engine's
        # threads the wrapper only calls through.
        mx.fast.scaled_dot_product_attention = _attention


def _on_cuda() -> bool:
    cuda = getattr(mx, "cuda", None)  # (not in every mlx build: Metal's GPU is a gpu too)
    return mx.default_device() == mx.gpu and cuda is not None and cuda.is_available()


@contextlib.contextmanager
def few_rows_composed(chunk_rows: int, *, force: bool = False) -> Iterator[bool]:
    """On this thread, passes of 2 to ``chunk_rows - 1`` rows compose their attention; yields
    whether they do (only on CUDA, where cuDNN plans are built, unless ``force``; never for
    ``chunk_rows`` 0)."""
    if not chunk_rows or not (force or _on_cuda()):
        yield False
        return
    _install()
    _rows.below = chunk_rows
    try:
        yield True
    finally:
        _rows.below = 0
        forget_mask()
