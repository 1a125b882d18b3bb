"""The single-stream fast path: one request alone on the engine, decoded by ``generate_step``.

mlx-lm's ``BatchGenerator`` pays for batching even at batch size one (a batch KV cache with
per-row offsets and an attention mask built every step); alone, a request decodes as fast as
``mlx_lm.stream_generate`` through the very loop it uses (``generate_step``: the next step
is queued with ``async_eval`` before the current token is read). When a second request
arrives, the scheduler moves this one onto the batch (``detach``) without losing a token.
"""

from __future__ import annotations

import mlx.core as mx
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import trim_prompt_cache

from .events import PrefillProgress

__all__ = ["SingleStream"]


class SingleStream:
    """One request's prefill and decode (engine thread only)."""

    def __init__(self, model, stream, active, *, cache, tokens: list[int], cached: int,
                 sampler, processors, stop_sequences, prefill_step_size: int):
        self.active = active
        self.request = active.job.request
        self.cache = cache
        self.tokens = list(tokens)
        """Tokens whose keys and values are (or are being put) in ``cache``."""
        self.generated = 0
        self._matcher = stop_sequences.matcher()
        out = active.job.out

        def progress(done: int, total: int) -> None:
            out.put(PrefillProgress(done + cached, total + cached))

        self._steps = generate_step(
            mx.array(tokens[cached:]), model, stream,
            max_tokens=self.request.max_tokens, sampler=sampler,
            logits_processors=processors or None, prompt_cache=cache,
            prefill_step_size=prefill_step_size, prompt_progress_callback=progress,
        )

    def step(self) -> tuple[int, object, str | None]:
        """Decode one token: (token, logprobs, finish reason or None)."""
        token, logprobs = next(self._steps)
        # generate_step has already queued this token's own forward pass, so the cache holds
        # it too (as in BatchGenerator, whose finished sequences include their last token).
        self.tokens.append(token)
        self.generated += 1
        finish = None
        if self.generated >= self.request.max_tokens:
            finish = "length"
        if self._matcher.advance(token):
            finish = "stop"
        return token, logprobs, finish

    def close(self) -> None:
        self._steps.close()

    def detach(self) -> tuple[list, list[int], int]:
        """Stop here and return (cache, tokens in it, last token) to continue on the batch.

        The last token is taken back out of the cache so the batch feeds it again and
        samples what follows it; the step queued for it is dropped.
        """
        self.close()
        last = self.tokens[-1]
        trim_prompt_cache(self.cache, 1)
        return self.cache, self.tokens[:-1], last
