"""The single-stream fast path: one request alone on the engine, decoded as ``generate_step`` does.

mlx-lm's ``BatchGenerator`` pays for batching even at batch size one (a batch KV cache with
per-row offsets and an attention mask built every step); alone, a request decodes as fast as
``mlx_lm.stream_generate`` through the loop it uses (``generate_step``'s: the next step is
queued with ``async_eval`` before the current token is read), with its first token out one
step sooner (``_decode`` says why). When a second request arrives, the scheduler moves this
one onto the batch (``detach``) without losing a token.

With a draft model every request takes this path, one at a time (as in mlx_lm.server), on
mlx-lm's ``speculative_generate_step``; its KV cache is the model's layers followed by the
draft's, which the prompt cache stores and trims as one list.

The prompt is read here, in the first ``next()``, in ``generate_step``'s own chunks (all but
the last token; ``_read_prompt`` says why), then the last token and the reply (``_decode``).
With ``fused_first_token`` (``EngineConfig``'s) the last chunk ends with the last token and its
pass gives the first token: one forward pass fewer before the answer (a follow-up turn's new
part and its first token in one pass instead of two), at the cost of ``generate_step``'s bits:
the last token then goes through the matrix kernels with its chunk, not the vector ones alone.
A cancel takes effect between prefill chunks: each evaluated chunk is reported to a progress
callback, which raises ``Cancelled`` when the job's flag is set (or ``Preempted`` when another
request waits), and ``step`` raises ``Cancelled`` too when a cancel came while a token was
computed, so no token reaches the reply after a cancel.
"""

from __future__ import annotations

from collections import deque

import mlx.core as mx
from mlx_lm.generate import speculative_generate_step
from mlx_lm.models.cache import trim_prompt_cache

from .._events import PrefillProgress
from ._job import Job

__all__ = ["Cancelled", "Preempted", "SingleStream"]

FUSED_MAX_ROWS = 256
"""The longest last pass ``fused_first_token`` fuses: the model computes logits for every row
of it (a 150k-token vocabulary in float32: 150 MB at 256 rows), and on a CPU rows past this
cost more than the pass they save. A longer last chunk (a long cold prompt on a GPU, whose
chunks are 2,048 tokens) is read as mlx-lm reads it; a follow-up's new part fits."""


class Cancelled(Exception):
    """The job's cancel flag was seen mid-step; what the cache holds is still consistent."""


class Preempted(Exception):
    """Another request arrived while the prompt was read: stopped between prefill chunks so
    the scheduler can move this one onto the batch, which interleaves both (``detach``)."""


class SingleStream:
    """One request's prefill and decode (engine thread only)."""

    def __init__(self, model, stream, job: Job, *, cache, tokens: list[int], cached: int,
                 sampler, processors, stop_sequences, prefill_step_size: int,
                 draft_model=None, num_draft_tokens: int = 0, preempt=None,
                 fused_first_token: bool = False, prefill_ahead: bool = False):
        self.job = job
        self.request = job.request
        self.cache = cache
        self.tokens = list(tokens)
        """Prompt and generated tokens so far."""
        self.generated = 0
        self._cached = cached
        self._matcher = stop_sequences.matcher()
        self._model_layers = len(model.layers)
        self._speculative = draft_model is not None
        self.accepted_draft_tokens = 0 if self._speculative else None
        self.last_from_draft: bool | None = None
        """Whether the token ``step`` returned last came from the draft (None without one)."""
        """Generated tokens the draft proposed and the model kept; None without a draft."""
        self._draft_model = draft_model
        self._stream = stream
        out, cancel = job.out, job.cancel

        def progress(done: int, total: int) -> None:
            # Called before the first chunk, after each evaluated chunk, and once the whole
            # prompt is read: the cache then holds (or has queued) exactly the tokens counted,
            # so stopping here leaves it consistent.
            if cancel.is_set():
                raise Cancelled
            out.put(PrefillProgress(done + cached, total + cached))
            if preempt is not None and done < total and preempt():
                raise Preempted

        rest = tokens[cached:]
        # mlx-lm reads all but the last token, then the last token alone; fused, the last
        # chunk ends with it and its pass gives the first token (one pass fewer).
        split = len(rest) - 1
        if fused_first_token and draft_model is None:
            fused = split // prefill_step_size * prefill_step_size
            if len(rest) - fused <= FUSED_MAX_ROWS:
                split = fused
        head, last = rest[:split], mx.array(rest[split:])
        to_read = len(rest)

        def steps():  # the body runs in the first next(), on the engine thread
            if not self._speculative:
                _read_prompt(head, to_read, [model], [cache], stream, prefill_step_size, progress,
                             ahead=prefill_ahead)
                yield from _decode(last, model, cache, stream, max_tokens=self.request.max_tokens,
                                   sampler=sampler, processors=processors,
                                   on_first=lambda: progress(to_read, to_read),
                                   fill_on_close=lambda: not self._detaching)
                return
            main, draft = cache[: self._model_layers], cache[self._model_layers:]
            _read_prompt(head, to_read, [model, draft_model], [main, draft], stream,
                         prefill_step_size, progress, ahead=prefill_ahead)
            progress(to_read, to_read)
            yield from speculative_generate_step(
                last, model, draft_model, stream, prompt_cache=cache,
                num_draft_tokens=num_draft_tokens, max_tokens=self.request.max_tokens,
                sampler=sampler, logits_processors=processors or None)

        self._detaching = False  # detach() closes the decode loop to go on in the batch
        self._steps = steps()

    def step(self) -> tuple[int, object, str | None]:
        """Decode one token: (token, logprobs, finish reason or None).

        Raises ``Cancelled`` when the job was cancelled before the token was ready (during
        the prefill, at most one chunk late): the token is then not part of the reply.
        """
        if self._speculative:
            token, logprobs, from_draft = next(self._steps)
        else:
            token, logprobs = next(self._steps)
        if self.job.cancel.is_set():
            raise Cancelled
        if self._speculative:
            self.accepted_draft_tokens += from_draft
            self.last_from_draft = bool(from_draft)
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

    def finished_cache(self) -> tuple[list[int], list]:
        """After ``close``: (tokens whose keys and values are in the cache, the cache).

        The cache's offset says how many tokens it really holds, whatever ended the request.
        The decode loop has already queued the last token's own forward pass, so its cache
        holds every token (as in BatchGenerator, whose finished sequences include their last
        token); a prefill cancelled between chunks holds the chunks done; a cancel after
        the first token was computed holds that token, which the reply never got, so it is
        cut. The speculative loop's model cache lacks the last token when the model itself
        produced it, and its draft cache lags further (by a token after fully accepted drafts,
        by the whole reply with ``num_draft_tokens`` 0): the model's part is filed as it
        stands, and the draft is fed what it lacks (a small model's one cheap step) so a
        follow-up turn reuses the whole reply.
        """
        main = self.cache[: self._model_layers]
        held = min(main[0].offset, len(self.tokens))
        trim_prompt_cache(main, main[0].offset - held)
        if not self._speculative:
            return self.tokens[:held], self.cache
        draft = self.cache[self._model_layers:]
        behind = held - draft[0].offset
        if behind < 0:
            trim_prompt_cache(draft, -behind)
        elif behind > 0:
            with mx.stream(self._stream):
                self._draft_model(mx.array(self.tokens[held - behind:held])[None], cache=draft)
                mx.eval([c.state for c in draft])
        return self.tokens[:held], self.cache

    def detach(self, refeed: int = 1) -> tuple[list, list[int], list[int]]:
        """Stop here and return (cache, tokens in it, tokens to feed) to go on in the batch.

        After a token, the last ``refeed`` tokens are taken back out of the cache so the batch
        feeds them again and samples what follows the last (the step queued for it is dropped,
        and after the first token, which is read before that step is queued, none is built);
        before the first step, the cache holds only the reused prefix and the batch prefills
        the rest.
        """
        self._detaching = True
        self.close()
        held = max(0, min(self.cache[0].offset, len(self.tokens) - refeed))
        trim_prompt_cache(self.cache, self.cache[0].offset - held)
        return self.cache, self.tokens[:held], self.tokens[held:]


def _read_prompt(head: list[int], total: int, models, caches, stream, step_size: int,
                 progress, ahead: bool = False) -> None:
    """Read ``head``, the prompt but its last pass's tokens (of ``total`` to read), into each
    model's cache.

    The chunks are ``generate_step``'s own (``step_size`` tokens from the start), so the
    cache, and every token after it, is the one mlx-lm computes. Each chunk but the last is
    waited for and reported (where a cancel or a preemption takes effect). The last is only
    started (``async_eval``): the device reads it while the host builds the first token's
    forward pass on top of it. ``generate_step`` would wait for that chunk, then run
    ``mx.clear_cache()`` (which frees every cached buffer holding the GIL: 0.2-6 ms on an
    H200) and only then build the next pass, all between the prompt and its first token.

    ``ahead`` (on a GPU) keeps one more chunk on the device: chunk ``i + 1`` is built and
    started before chunk ``i`` is waited for, so the device never waits for the host to build
    a chunk, and mlx's buffer cache is freed only once it holds more than the live arrays do,
    where mlx-lm frees it after every chunk (on CUDA each free waits for the device and every
    chunk then allocates its buffers anew). A cold 16k-token prompt on an H200: 134 → 96 ms
    on the 1B bf16 shape, 562 → 465 ms on the 8B. Without it (a CPU, where a chunk takes
    0.2-0.3 s and a cancel should not wait for two), each chunk is waited for at once and
    the buffer cache freed after it, as mlx-lm does.
    """
    progress(0, total)
    queued: deque = deque()  # (states, tokens read once they are computed) on the device
    with mx.stream(stream):
        for start in range(0, len(head), step_size):
            chunk = mx.array(head[start:start + step_size])[None]
            for model, cache in zip(models, caches):
                model(chunk, cache=cache)
            states = [c.state for cache in caches for c in cache]
            mx.async_eval(states)
            if start + step_size >= len(head):
                break
            queued.append((states, start + step_size))
            while len(queued) > ahead:
                done, read = queued.popleft()
                mx.eval(done)
                progress(read, total)
                if not ahead or mx.get_cache_memory() > mx.get_active_memory():
                    mx.clear_cache()


def _decode(last, model, cache, stream, *, max_tokens: int, sampler, processors, on_first,
            fill_on_close=lambda: True):
    """``generate_step``'s decode from the prompt's last token, with the first token out sooner.

    Each step is mlx-lm's (the model on one token, the logits processors over the context
    from that token on, log-softmax, the sampler), and so is the loop: step ``n + 1`` is
    queued with ``async_eval`` before token ``n`` is read, so the device always has the next
    step while the host hands a token on, and ``mx.clear_cache()`` runs every 256 tokens.
    One thing differs: mlx-lm also queues step 1 before reading the first token, so a whole
    forward pass stands between the prompt and its answer: its graph building and kernel
    launches on a GPU (2-3 ms on an H200 for a 1B model, where a step is launch-bound), the
    step itself on a CPU (there, waiting for the first token also waited for the step queued
    after it: 45-57 ms for SmolLM2 float32). Here the first token is read and handed on first,
    and so is the last one ``max_tokens`` allows, whose next step only feeds the cache (such a
    reply ends a step sooner on a CPU). The step after either is queued once its token has
    been taken, or when the generator is closed there: like mlx-lm's, the cache then holds
    every token handed out. ``fill_on_close()`` False skips that last step at close, for a
    caller that takes the token back out of the cache anyway (a move onto the batch).
    """
    context = None

    def step(y):
        nonlocal context
        with mx.stream(stream):
            logits = model(y[None], cache=cache)[:, -1, :]
            if processors:
                context = y[-1:] if context is None else mx.concat([context, y])
                for processor in processors:
                    logits = processor(context, logits)
            logprobs = logits - mx.logsumexp(logits, keepdims=True)
            return sampler(logprobs), logprobs.squeeze(0)

    def queue(y):
        out = step(y)
        mx.async_eval(*out)
        return out

    y, logprobs = step(last)
    mx.eval(y, logprobs)
    on_first()
    for n in range(max_tokens):
        read_first = n == 0 or n == max_tokens - 1  # awaited / its next step only fills the cache
        if not read_first:
            next_y, next_logprobs = queue(y)
        try:
            yield y.item(), logprobs
        except GeneratorExit:  # closed after this token
            if read_first and fill_on_close():
                queue(y)
            raise
        if read_first:
            next_y, next_logprobs = queue(y)
        if n % 256 == 0:
            mx.clear_cache()
        y, logprobs = next_y, next_logprobs
