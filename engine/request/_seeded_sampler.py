"""A seeded request's sampler: mlx-lm's ``make_sampler`` chain, drawing from its own key.

mlx-lm samples from mlx's one global random key, and ``mx.random.seed`` resets it for the
whole process: two seeded requests decoding in one batch would each draw the other's numbers,
and a seed would give another reply whenever another request happened to run beside it
(measured: two seeded replies of 40 tokens, submitted together, matched neither alone, three
times of three). mlx_lm.server therefore never batches a seeded request. Here each seeded
request keeps its own key and splits it exactly as mlx's global key sequence does
(``split`` → new key, subkey per draw; XTC's coin first, then the token), so its reply is the
one ``mx.random.seed(seed)`` gives it alone, batched or not.
"""

from __future__ import annotations

import mlx.core as mx
from mlx_lm.sample_utils import apply_min_p, apply_top_k, apply_top_p, apply_xtc

__all__ = ["SeededSampler"]


class SeededSampler:
    """Samples as ``make_sampler(temperature, top_p, min_p, top_k, xtc...)`` does after
    ``mx.random.seed(seed)``, from a key no other request touches (engine thread only)."""

    def __init__(self, seed: int, temperature: float, *, top_p: float = 0.0,
                 min_p: float = 0.0, top_k: int = 0, xtc_probability: float = 0.0,
                 xtc_threshold: float = 0.1, xtc_special_tokens: list[int] = ()):
        self._keys = [mx.random.key(seed)]
        """The key after each of the last few calls (the current one last): ``rewind`` goes
        back to one of them."""
        self._calls = 0
        self._scale = 1.0 / temperature
        self._top_p, self._min_p, self._top_k = top_p, min_p, top_k
        self._xtc = (xtc_probability, xtc_threshold, list(xtc_special_tokens))

    def _draw(self) -> mx.array:
        self._keys[-1], subkey = mx.random.split(self._keys[-1])
        return subkey

    def __call__(self, logprobs: mx.array) -> mx.array:
        self._calls += 1
        self._keys = [*self._keys[-_KEPT:], self._keys[-1]]
        # make_sampler's order: top-p, min-p, XTC, top-k, then the categorical draw.
        if 0 < self._top_p < 1.0:
            logprobs = apply_top_p(logprobs, self._top_p)
        if self._min_p != 0.0:
            logprobs = apply_min_p(logprobs, self._min_p, 1)
        probability, threshold, special = self._xtc
        if probability > 0.0:
            coin = mx.random.uniform(0, 1, key=self._draw())
            # apply_xtc tosses its coin on the global key: certain to cut here, ours decides.
            logprobs = mx.where(coin > probability, logprobs,
                                apply_xtc(logprobs, 1.0, threshold, special))
        if self._top_k > 0:
            logprobs = apply_top_k(logprobs, self._top_k)
        return mx.random.categorical(logprobs * self._scale, key=self._draw())

    def rewind(self, calls: int) -> None:
        """Go back to the key after the first ``calls`` calls: a token sampled ahead and then
        dropped (a reply moved from the single stream onto the batch) is drawn again."""
        back = self._calls - calls
        if not 0 <= back < len(self._keys):
            raise ValueError(f"cannot rewind {back} calls: {len(self._keys) - 1} are kept")
        if back:
            del self._keys[-back:]
        self._calls = calls


_KEPT = 4
"""Keys kept for ``rewind``: a move drops at most the one step the single stream queued."""
