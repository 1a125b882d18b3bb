"""The scheduler: continuous batching of admitted requests on the engine thread.

A request alone on the engine runs on the single-stream fast path (``SingleStream``, mlx-lm's
``generate_step``); as soon as a second one arrives it moves onto the batch. With a draft
model, requests take turns on the speculative single stream instead (mlx-lm cannot batch
speculative decoding; neither does mlx_lm.server), the others waiting in arrival order.
mlx-lm's ``BatchGenerator`` does the batched prefill and decode; this class feeds it jobs,
takes prompt-cache snapshots where mlx_lm.server takes them (end of the system prompt and
of the conversation, and the whole sequence when a reply ends), applies cancellations
between decode steps, and hands each generated token to its request's ``ReplyStream``.
Engine-thread only: nothing here is touched from another thread except a job's cancel flag.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass

import mlx.core as mx
from mlx.utils import tree_flatten
from mlx_lm.generate import BatchGenerator, make_stop_sequences
from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache
from mlx_lm.sample_utils import make_logits_processors, make_sampler

from .._config import EngineConfig
from .._upstream import batch_generator
from ._admission import GenerationRequest
from .._errors import EngineError
from .._events import Error, PrefillProgress
from ._job import Job
from ._prompt_cache import PromptCache
from ._reply_stream import ReplyStream
from ._seeded_sampler import SeededSampler
from ._constrained import constraint_for
from ._think_budget import think_budget_for
from ._single_stream import Cancelled, Preempted, SingleStream

__all__ = ["Scheduler", "default_prefill_step_size"]

log = logging.getLogger(__name__)

_GREEDY = make_sampler(0.0)  # shared so an all-greedy batch samples in one call


def _keeping_random_key(sampler):
    """``sampler``, made unable to leave mlx's global random key broken when it raises.

    mlx-lm compiles its sampling steps (``apply_top_k``, ``categorical_sampling``...) with
    ``inputs=mx.random.state, outputs=mx.random.state``: while one is traced, the global key
    holds a tracer, and an exception raised mid-trace (mlx-lm's own ``top_k`` check, say)
    leaves it there. Every later sampled request in the process then failed with "[eval]
    Attempting to eval an array without a primitive", beside whatever ran with it. After a
    failed call the key is put back, bit for bit, as it was before it; a call that returns
    changes nothing.
    """
    if sampler is _GREEDY:  # mx.argmax: nothing compiled, cannot fail
        return sampler

    def keeping(logprobs):
        key = mx.random.state[0]
        try:
            return sampler(logprobs)
        except BaseException:
            _restore_random_key(key)
            raise
    return keeping


def _restore_random_key(key: mx.array) -> None:
    """Make ``key`` mlx's global random key again (``mx.random.state`` takes no assignment:
    ``seed(s)`` sets the key ``[s >> 32, s & 0xFFFFFFFF]``, so ``s`` is rebuilt from it)."""
    high, low = key.tolist()
    mx.random.seed((high << 32) | low)


# Prefill chunks on a CPU, measured with SmolLM2 on 2 shared cores: float32 with OpenBLAS
# reads 200-220 tok/s in 64-token chunks of 0.2-0.3 s (2048: 215-250); 4-bit weights on the
# reference BLAS cost about the same per token in any chunk size (4: 8.8 tok/s, 0.44 s a
# chunk; 8: 9.6, 0.85 s; 128: 9.8), so their chunks stay tiny. A GPU keeps mlx-lm's 2048.
_CPU_FLOAT32_PREFILL_STEP = 64
_CPU_SLOW_PREFILL_STEP = 4
_GPU_PREFILL_STEP = 2048

# A prefill batch holds ``prefill_concurrency`` prompts, as mlx-lm's does, and more of them
# when they are short: as many as keep one chunk within ``prefill_concurrency`` ×
# ``prefill_step_size`` tokens, the largest chunk mlx-lm's batch reads, so neither its memory
# nor the wait it puts on decoding (and on a cancel) grows. Each prefill batch costs a call
# that the batch's decode waits for and a merge into the decode batch: 32 chat prompts of ~46
# tokens arriving together are read as one prefill batch, not batch_generate's four (see
# ``_prefill_capacity``). Short prompts are what a burst of notebook cells or chat clients sends.

# Requests that come while others are running are held a moment and join the batch together,
# as batch_generate's prompts do: each join costs a prefill call that waits for the decode
# step in flight, a merge of the batch's KV caches and, on a GPU, kernels for a new batch
# shape. Measured on an H200 (1B bf16, 32 clients submitting at once): joined as they came,
# 7 prefill calls took 0.34 s against batch_generate's 4 in 0.04 s. Held until this quiet gap
# after the last arrival, at most the longer wait after the first; whole prefill batches
# start at once, and only the remainder waits. While other callers are still rendering and
# tokenizing theirs (N clients submitting at once arrive one by one, each render holding the
# GIL), the first waits for them, up to the third. Admitting whatever had arrived once a full
# prefill batch was there split 32 clients into waves (23, then 9: 7 prefill calls, not 4).
# Nor do they join while prompts are about to move on to decoding: mlx-lm refills its prefill
# batch before those leave it, so 7 of them left a slot for one newcomer, prefilled alone, and
# every batch after went 7, then 1 (H200, 1B bf16, N=32: 7 prefill calls, 0.74x of
# batch_generate; aligned, 4 calls and 0.96x). Requests an idle engine finds queued together
# wait for the same quiet gap: a caller released with them whose thread had not run yet came
# a prefill later, and the merged batch's rows then differ in length, which on CUDA costs a
# masked attention every step (H200, 1B bf16, N=4: 7.6 ms steps against 5.1; held, 8.29
# against batch_generate's 8.26 and one prefill call).
_ARRIVAL_QUIET_S = 0.004
_ARRIVAL_MAX_WAIT_S = 0.02
_PREPARING_MAX_WAIT_S = 0.05
# A reply moved off the single stream beside arrivals may feed its last tokens again in a row
# of their prefill batch, padded to their prompts (``Scheduler._move_single_with``): it saves
# two forward passes of one row (the first step after a split and a step of it alone) and
# costs that row's padded tokens. On a GPU a prefill of short prompts is launch-bound and the
# row all but free; on a CPU it costs its tokens: SmolLM2 float32 reads ~200 tok/s and takes
# ~55 ms a step here, so the row pays for itself up to about 20 tokens.
_CPU_REFEED_TOKENS = 16
# What the engine thread does after a lone request's token holds the GIL: the decode loop
# frees the prefill's buffers after the first (mx.clear_cache, as mlx-lm's generate_step does;
# 12 ms for SmolLM2 on a CPU), and a reply that ends there is filed in the prompt cache (a
# trie node per token). A reader woken by the token's text then waited for the interpreter's
# switch interval: a one-token reply's text reached its reader 2.4-4.4 ms after it was ready
# (SmolLM2, this CPU), which is the first-token time of a prefill benchmark. The engine thread
# waits up to this long for a woken reader to take its events first (~0.03 ms when it does).
_HAND_OVER_S = 0.002
# Callers released at once reach the engine one by one, each rendering its chat holding the
# GIL, and the first used to come before the others had run at all: it started alone and was
# moved onto the batch when they came (1 burst in 5-10 at N=4 and N=8, on this CPU and on the
# H200's host: 2 of 8 rounds at N=4). Before a request starts alone the engine thread sleeps
# this long, so that callers waiting for the GIL take it and say they are preparing theirs;
# a lone request pays it once, before its first token.
_BURST_YIELD_S = 0.0002


def default_prefill_step_size(model) -> int:
    """Prompt tokens per prefill chunk for ``model`` on the default device.

    A cancel takes effect between chunks, so a chunk must stay well under a second.
    """
    if mx.default_device() == mx.gpu:
        return _GPU_PREFILL_STEP
    dtypes = {v.dtype for _, v in tree_flatten(model.parameters())}
    return _CPU_FLOAT32_PREFILL_STEP if dtypes <= {mx.float32} else _CPU_SLOW_PREFILL_STEP


class _Guard:
    """One request's sampler and logits processors, made unable to raise into mlx-lm's step.

    mlx-lm's batched step calls every row's sampler and processors in one go: an exception
    from one request's would leave the whole batch half-stepped. Guarded, a failing call is
    recorded here and answered with a harmless stand-in (its logits unchanged, the argmax
    token), so the step completes for everyone; the scheduler then fails that one request.
    """

    __slots__ = ("error",)

    def __init__(self):
        self.error: Exception | None = None

    def sampler(self, sampler):
        if sampler is _GREEDY:  # cannot fail; shared so an all-greedy batch samples once
            return sampler

        sampler = _keeping_random_key(sampler)

        def guarded(logprobs):
            if self.error is None:
                try:
                    return sampler(logprobs)
                except Exception as e:
                    self.error = e
            return mx.argmax(logprobs, axis=-1)
        return guarded

    def processors(self, processors):
        return [self._processor(p) for p in processors]

    def _processor(self, processor):
        def guarded(tokens, logits):
            if self.error is None:
                try:
                    return processor(tokens, logits)
                except Exception as e:
                    self.error = e
            return logits
        return guarded


@dataclass(slots=True)
class _Active:
    job: Job
    reply: ReplyStream
    snapshot_kinds: list[str]
    """Segment kinds still to snapshot, last first (popped as segments complete)."""
    guard: _Guard | None = None
    """Catches this request's sampler/processor failures inside the batched step."""
    offset: int = 0
    """Prompt tokens already in its cache when the batch took it: its progress counts them,
    as the single stream's does (so a prompt moved off the single stream never goes back)."""
    prompt_left: int | None = None
    """Prompt tokens the batch has still to read; None once it decodes."""
    reads: int = 0
    """Prefill calls mlx-lm's batch makes for it before it decodes (``_prefill_reads``)."""
    sampler: object = None
    """Its sampler, kept when it moves from the single stream (a seeded one holds its key)."""


def _prefill_reads(segments: list[list[int]], step: int) -> int:
    """Prefill calls mlx-lm's batch makes for a prompt given as ``segments`` before it decodes.

    Each call reads one chunk of at most ``step`` tokens of a prompt's current segment; the
    prompt's last token is left to the first decode step (``BatchGenerator.insert_segments``).
    """
    lengths = [len(s) for s in segments if s]
    if lengths:
        lengths[-1] -= 1
    return sum(-(-n // step) for n in lengths)


class Scheduler:
    """Feeds jobs to a ``BatchGenerator`` and routes its output (see module docstring)."""

    def __init__(self, model, tokenizer, config: EngineConfig, cache: PromptCache,
                 on_done, *, draft_model=None):
        self.tokenizer = tokenizer
        self.config = config
        self.cache = cache
        self.on_done = on_done
        """Called with (job, reply) when a request leaves the batch (for traces)."""
        self.model = model
        self.draft_model = draft_model
        self.waiting: deque[Job] = deque()
        """Jobs queued behind the speculative single stream (draft model only)."""
        self.stream = mx.default_stream(mx.default_device())
        self.single: SingleStream | None = None
        self._single_active: _Active | None = None
        """The single stream's job and reply (None when no request runs alone)."""
        # The fast path hands a request over to the batch by trimming its cache, so it is
        # only taken when the model's caches can be trimmed (not rotating/sliding-window).
        self._single_ok = config.max_kv_size is None and can_trim_prompt_cache(
            make_prompt_cache(model))
        self.prefill_step_size = (config.prefill_step_size
                                  or default_prefill_step_size(model))
        self._refeed_tokens = (self.prefill_step_size if mx.default_device() == mx.gpu
                               else _CPU_REFEED_TOKENS)
        """The longest prompts of arrivals a moved reply feeds its last tokens again beside."""
        self.batch = self._new_batch()
        self.active: dict[int, _Active] = {}
        self.arrivals: list[Job] = []
        """Jobs held to join the batch together (see _ARRIVAL_QUIET_S)."""
        self._arrival_times = (0.0, 0.0)  # (first, last) arrival held
        self.others_waiting = lambda: False
        """Set by the engine thread: whether a job or a call waits in its inbox. A prompt
        being read alone then moves onto the batch between chunks, so a short request
        arriving behind a long prompt is not held up for the whole prefill."""
        self.jobs_waiting = lambda: False
        """Set by the engine thread: whether another request waits in its inbox (a request
        alone takes the single-stream path)."""
        self.held_together = lambda: False
        """Set by the engine thread: whether an ``Engine.together()`` block is open."""
        self._unstepped = False
        """Whether a request joined the batch since its last step (one arriving now joins too)."""
        self.others_preparing = lambda: False
        """Set by the engine thread: whether a caller is rendering a request it will submit.
        Requests are then held to start together (see _PREPARING_MAX_WAIT_S)."""
        self._stop_sequences: dict[tuple[str, ...], object] = {}
        self._xtc_special = tokenizer.encode("\n") + list(tokenizer.eos_token_ids)

    def _new_batch(self) -> BatchGenerator:
        return batch_generator(
            self.model,
            completion_batch_size=self.config.decode_concurrency,
            prefill_batch_size=self.config.prefill_concurrency,
            prefill_step_size=self.prefill_step_size,
            max_kv_size=self.config.max_kv_size,
            # Not mlx-lm's thread-local generation_stream: using a thread-local stream
            # from a non-main thread intermittently aborts the process at exit
            # ("terminate called without an active exception", measured here).
            stream=self.stream,
        )

    def _prefill_capacity(self, longest: int) -> int:
        """How many prompts one prefill batch takes when the longest has ``longest`` tokens
        left to read: ``prefill_concurrency`` whatever their length, and beyond that as many
        as keep its chunk (every row padded to the longest) within ``prefill_concurrency`` ×
        ``prefill_step_size`` tokens, at most ``decode_concurrency``."""
        least = self.config.prefill_concurrency
        budget = least * self.prefill_step_size
        fit = budget // max(1, min(longest, self.prefill_step_size))
        return max(least, min(fit, self.config.decode_concurrency))

    def _prefill_rows(self, lengths) -> int:
        """How many of the prompts with ``lengths`` tokens left (in queue order) the next
        prefill batch takes."""
        rows = longest = 0
        for n in lengths:
            longest = max(longest, n)
            if rows + 1 > self._prefill_capacity(longest):
                break
            rows += 1
        return max(rows, self.config.prefill_concurrency)

    def _fit_prefill_batch(self) -> None:
        """Size mlx-lm's next prefill batch for the prompts it holds and has queued."""
        left = [a.prompt_left for a in self.active.values() if a.prompt_left is not None]
        if left:
            self.batch.prefill_batch_size = self._prefill_rows(left)

    @property
    def idle(self) -> bool:
        return not self.active and self.single is None and not self.waiting and not self.arrivals

    @property
    def running(self) -> int:
        return (len(self.active) + (self.single is not None) + len(self.waiting)
                + len(self.arrivals))

    def hold_seconds(self) -> float | None:
        """How long the engine thread may wait for news before ``step`` has work: None
        while something computes, else until the held arrivals are due."""
        if self.active or self.single is not None or self.waiting or not self.arrivals:
            return None
        return max(0.0, self._arrivals_due() - time.perf_counter())

    def _arrivals_due(self) -> float:
        """When the held arrivals start (``time.perf_counter()``), as things stand now."""
        first, last = self._arrival_times
        now = time.perf_counter()
        if self.held_together():  # Engine.together(): until its block ends
            return now + _ARRIVAL_QUIET_S
        if self.others_preparing():  # the engine thread is woken when they are done
            return min(now + _ARRIVAL_QUIET_S, first + _PREPARING_MAX_WAIT_S)
        if not self.active and self.single is None and len(self.arrivals) < 2:
            return 0.0  # held only for the callers that were still preparing theirs: due
        return min(last + _ARRIVAL_QUIET_S, first + _ARRIVAL_MAX_WAIT_S)

    # -- admission onto the batch ----------------------------------------------------------
    def _sampler(self, request: GenerationRequest):
        s = request.sampling
        if s.greedy and s.xtc_probability == 0:
            return _GREEDY
        if request.seed is not None and s.temperature > 0:
            return SeededSampler(
                request.seed, s.temperature, top_p=s.top_p, top_k=s.top_k, min_p=s.min_p,
                xtc_probability=s.xtc_probability, xtc_threshold=s.xtc_threshold,
                xtc_special_tokens=self._xtc_special)
        return make_sampler(
            s.temperature, top_p=s.top_p, top_k=s.top_k, min_p=s.min_p,
            xtc_probability=s.xtc_probability, xtc_threshold=s.xtc_threshold,
            xtc_special_tokens=self._xtc_special,
        )

    def _processors(self, request: GenerationRequest, prompt=None):
        p = request.penalties
        processors = make_logits_processors(
            dict(p.logit_bias) if p.logit_bias else None,
            p.repetition_penalty, p.repetition_context_size,
            p.presence_penalty, p.presence_context_size,
            p.frequency_penalty, p.frequency_context_size,
        )
        budget = think_budget_for(self.tokenizer, request, prompt) if prompt is not None else None
        grammar = constraint_for(self.tokenizer, request, prompt)
        return processors + [p for p in (budget, grammar) if p is not None]

    def _stops(self, stop: tuple[str, ...]):
        seqs = self._stop_sequences.get(stop)
        if seqs is None:
            if len(self._stop_sequences) > 64:
                self._stop_sequences.clear()
            seqs = self._stop_sequences[stop] = make_stop_sequences(self.tokenizer, list(stop))
        return seqs

    def _fast_path_ok(self, request: GenerationRequest, alone: bool) -> bool:
        p = request.penalties
        return (alone and self._single_ok and self.idle and p.repetition_penalty == 0
                and p.presence_penalty == 0 and p.frequency_penalty == 0
                # The think budget and the grammar (JSON, a forced call) count tokens from
                # their context: one processor must see the whole reply, and the single
                # stream may hand a request to the batch.
                and request.thinking_token_budget is None and request.response_format is None
                and request.forced_call is None)

    def add(self, job: Job) -> None:
        """Look up the prompt cache and start ``job``: alone on the fast path, or batched.

        A job with no other queued behind it (``jobs_waiting``) may take the single-stream
        path. With a draft model, a job arriving while another decodes waits for its turn.
        """
        if self.idle:
            # Each reply reports the peak since the engine last went busy (Usage.peak_memory),
            # not the process's lifetime peak, which an earlier, larger model would keep.
            mx.reset_peak_memory()
        if self.draft_model is not None and (self.single is not None or self.waiting):
            self.waiting.append(job)
            return
        if (self._unstepped and self.active and self.draft_model is None and self.single is None
                and not self.arrivals and not self.others_preparing()):
            # the batch has not stepped since its last request joined: prefilled with it
            self._start(job, alone=False)
            return
        if self.draft_model is None and (not self.idle or self.others_preparing()
                                         or self.jobs_waiting()):
            # joins a running batch, or waits for the requests being prepared or queued behind
            # it to start with it (a burst: held until it goes quiet, _arrivals_due)
            self._hold(job)
            return
        if self.draft_model is None:  # nothing queued behind it (held above otherwise)
            # perhaps the first of a burst: the others may not have run yet (_BURST_YIELD_S)
            time.sleep(_BURST_YIELD_S)
            if self.others_preparing():
                self._hold(job)
                return
        # Asked after the preparing check: a caller queues its job before it stops preparing.
        self._start(job, alone=not self.jobs_waiting())

    def _hold(self, job: Job) -> None:
        """Hold ``job`` among the arrivals that join the batch together (``_arrivals_due``).

        Timed from when each was queued: the engine thread sees them only after the step it
        was in, and the gap that says a burst is over has passed by then or not.
        """
        first, last = self._arrival_times if self.arrivals else (job.queued, job.queued)
        self._arrival_times = (min(first, job.queued), max(last, job.queued))
        self.arrivals.append(job)

    def _admit_arrivals(self) -> None:
        if any(a.prompt_left is not None and a.prompt_left <= self.prefill_step_size
               for a in self.active.values()):
            return  # they join after the prompts that are about to decode (see above)
        n = len(self.arrivals)
        size = self._prefill_capacity(max(len(job.prompt.tokens) for job in self.arrivals))
        if time.perf_counter() < self._arrivals_due():
            n -= n % size  # whole prefill batches go now
            if n == 0:
                return
        if self.single is not None:
            # It takes along only the arrivals beyond whole prefill batches (7 of 31 long
            # prompts, all of 31 short ones), which fill one batch with it; the whole batches
            # start once those decode (the check above). With no such remainder it goes alone,
            # a step ahead.
            n = len(self.arrivals) % size
            if n == 0:
                self._move_single_to_batch()
            else:
                self._move_single_with(self.arrivals[:n])
                self.arrivals = self.arrivals[n:]
                return
        jobs, self.arrivals = self.arrivals[:n], self.arrivals[n:]
        # One request held for nothing (the others were inspected or refused) runs alone.
        alone = len(jobs) == 1 and not self.active and self.single is None
        for job in jobs:
            self._start_waiting(job, alone=alone)

    def _move_single_with(self, jobs: list[Job]) -> None:
        """Start ``jobs`` on the batch and move the reply running alone into their prefill batch,
        so that all of them start decoding at the same step.

        Moved with one token to feed, a reply leaves a prefill batch for decoding before the
        others have read their prompts: mlx-lm then splits the batch twice (each split and
        the first step after it cost 15-20 ms on an H200 for a 1B model, mostly one
        device sync per layer before ``batch_generator`` made it one) and decodes it alone in
        between. Moved with as many tokens
        as its companions have prefill calls to make, fed one a call (their keys and values
        are computed again, in a row padded to the companions' prompts), it leaves with them.
        Beside longer prompts (``_refeed_tokens``: a chunk on a GPU, a few tokens on a CPU,
        where the padded row costs real compute) it moves with one token, as before.
        """
        single, a = self.single, self._single_active
        before = set(self.active)
        # Out of the way while they start, or _start would move it ahead of them.
        self.single = self._single_active = None
        for job in jobs:
            self._start_waiting(job, alone=False)
        self.single, self._single_active = single, a
        companions = [c for uid, c in self.active.items() if uid not in before]
        reads = 0
        if companions and all(c.prompt_left <= self._refeed_tokens for c in companions):
            reads = max(c.reads for c in companions)
        self._move_single_to_batch(reads)

    def _start(self, job: Job, alone: bool) -> None:
        request, prompt = job.request, job.prompt
        reply = ReplyStream(job.request_id, request, prompt, self.tokenizer, job.out)
        if job.cancel.is_set():
            reply.start(0)
            reply.finish("cancelled")
            self.on_done(job, reply)  # its trace: nothing generated, rather than no trace
            return
        tokens = list(prompt.tokens)
        cache, cached, _ = self.cache.fetch(
            tokens, template_args=request.chat_template_kwargs, request_id=job.request_id)
        segments, kinds = [], []
        for seg in prompt.segments:
            if seg.end > cached:
                segments.append(tokens[max(seg.start, cached):seg.end])
                kinds.append(seg.kind)
        reply.start(cached)
        sampler = self._sampler(request)
        draft = self.draft_model
        if draft is not None or self._fast_path_ok(request, alone):
            if cache is None:
                cache = make_prompt_cache(self.model)
                if draft is not None:
                    cache += make_prompt_cache(draft)
            self._single_active = _Active(job, reply, [], sampler=sampler)
            self.single = SingleStream(
                self.model, self.stream, job, cache=cache, tokens=tokens,
                cached=cached, sampler=_keeping_random_key(sampler),
                processors=self._processors(request, prompt), stop_sequences=self._stops(request.stop),
                prefill_step_size=self.prefill_step_size,
                draft_model=draft, num_draft_tokens=request.num_draft_tokens,
                # With a draft model requests take turns: nothing to interleave with.
                preempt=self.others_waiting if draft is None else None,
                fused_first_token=self.config.fused_first_token,
                prefill_ahead=mx.default_device() == mx.gpu,
            )
            return
        if self.single is not None:
            self._move_single_to_batch()
        guard = _Guard()
        (uid,) = self.batch.insert_segments(
            segments=[segments],
            max_tokens=[request.max_tokens],
            caches=[cache],
            all_tokens=[tokens[:cached]],
            samplers=[guard.sampler(sampler)],
            logits_processors=[guard.processors(self._processors(request, prompt))],
            stop_sequences=[self._stops(request.stop)],
        )
        del cache
        self._unstepped = True
        self.active[uid] = _Active(job, reply, kinds[::-1], guard, cached,
                                   prompt_left=len(tokens) - cached,
                                   reads=_prefill_reads(segments, self.prefill_step_size),
                                   sampler=sampler)
        # Before its first chunk, as the single stream says it: the reused prefix is read.
        job.out.put(PrefillProgress(cached, len(tokens)))
        # Room for the KV caches being decoded comes out of the prompt cache's budget.
        self.cache.trim_to(self.config.prompt_cache_bytes - self.batch.prompt_cache_nbytes)

    def _move_single_to_batch(self, reads: int = 0) -> None:
        """Move the reply running alone onto the batch; with ``reads``, it feeds its last
        ``reads + 1`` tokens again, one per prefill call (``_move_single_with``)."""
        single, self.single = self.single, None
        a, self._single_active = self._single_active, None
        # A reply whose prompt is not read yet feeds the rest of it, as one segment.
        refeed = reads + 1 if single.generated else 1
        cache, tokens, rest = single.detach(refeed=refeed)
        a.guard = _Guard()
        a.offset = len(tokens)
        a.prompt_left = len(rest)
        segments = [[t] for t in rest] if refeed > 1 and len(rest) == refeed else [rest]
        if isinstance(a.sampler, SeededSampler):  # the token it sampled ahead was dropped
            a.sampler.rewind(single.generated)
        (uid,) = self.batch.insert_segments(
            segments=[segments],
            max_tokens=[single.request.max_tokens - single.generated],
            caches=[cache],
            all_tokens=[tokens],
            samplers=[a.guard.sampler(a.sampler)],
            logits_processors=[a.guard.processors(self._processors(single.request))],
            stop_sequences=[self._stops(single.request.stop)],
        )
        self.active[uid] = a

    def _step_single(self) -> None:
        single, a = self.single, self._single_active
        try:
            if a.job.cancel.is_set():
                reason = "cancelled"
            else:
                try:
                    token, logprobs, reason = single.step()
                except Cancelled:  # seen between prefill chunks or as the token came
                    reason = "cancelled"
                except Preempted:  # the batch reads the rest of the prompt beside the newcomer
                    self._move_single_to_batch()
                    return
                else:
                    if a.reply.on_token(token, logprobs, reason,
                                        from_draft=single.last_from_draft) and reason in (
                            None, "length"):
                        reason = "stop"  # a stop string ended it, on the last token or not
                    a.job.out.hand_over(_HAND_OVER_S)
            if reason is None:
                return
            single.close()
            tokens, cache = single.finished_cache()
            self.cache.insert(tokens, cache, kind="assistant",
                              template_args=a.job.request.chat_template_kwargs)
            self.single = self._single_active = None
            a.reply.finish(reason, accepted_draft_tokens=single.accepted_draft_tokens)
        except Exception as e:  # one request's failure must not take the engine down
            log.exception("request %s failed", a.job.request_id)
            self.single = self._single_active = None
            a.reply.fail(f"Generation failed: {e}")
        self.on_done(a.job, a.reply)

    # -- one step ----------------------------------------------------------------------------
    def step(self) -> None:
        """One prefill chunk and/or one decode step for everything running."""
        if self.waiting:
            self._next_waiting()
        if self.arrivals:
            self._admit_arrivals()
        if self.single is not None:
            self._step_single()
            return
        self._apply_cancellations()
        if not self.active:
            return
        self._unstepped = False
        self._fit_prefill_batch()
        try:
            prompt_responses, gen_responses = self.batch.next()
        except Exception as e:  # not attributable to one request: fail the batch, not the engine
            log.exception("a batched step failed")
            self._reset_batch(f"Generation failed in a batched step ({type(e).__name__}: {e}); "
                              "the engine is still running, send the request again.")
            return
        for uid, a in list(self.active.items()):
            if a.guard is not None and a.guard.error is not None:
                e = a.guard.error
                log.error("request %s failed in a batched step: %r", a.job.request_id, e)
                # (An EngineError is already a sentence for the user: the grammar's dead end.)
                self._remove(uid, None, error=str(e) if isinstance(e, EngineError) else
                             f"Generation failed for this request ({type(e).__name__}: {e}).")
        snapshot = []
        for r in prompt_responses:
            a = self.active.get(r.uid)
            if a is None:
                continue
            done, total = r.progress
            a.prompt_left = None if r.end_of_prompt else total - done
            if a.job.cancel.is_set() or a.reply.completion_tokens:
                # ends at the next step, like the single stream: no news after it; or a reply
                # moved onto the batch feeding back its own tokens: its prompt was read
                continue
            a.job.out.put(PrefillProgress(done + a.offset, total + a.offset))
            if r.end_of_segment and not r.end_of_prompt and a.snapshot_kinds:
                snapshot.append(r.uid)
        if snapshot:
            for uid, (cache, tokens) in self.batch.extract_cache(snapshot).items():
                a = self.active[uid]
                self.cache.insert(tokens[:], cache, kind=a.snapshot_kinds.pop(),
                                  template_args=a.job.request.chat_template_kwargs)
        for r in gen_responses:
            a = self.active.get(r.uid)
            if a is None:
                continue
            if a.job.cancel.is_set():  # came while this token was computed: not shown
                self._remove(r.uid, "cancelled")
                continue
            try:
                stopped = a.reply.on_token(r.token, r.logprobs, r.finish_reason)
                if r.finish_reason is not None:
                    self.cache.insert(r.all_tokens[:], r.prompt_cache, kind="assistant",
                                      template_args=a.job.request.chat_template_kwargs)
                    self._done(r.uid, "stop" if stopped else r.finish_reason)
                elif stopped:
                    self._remove(r.uid, "stop")
            except Exception as e:  # one request's failure must not take the batch down
                log.exception("request %s failed", a.job.request_id)
                self._remove(r.uid, None, error=f"Generation failed: {e}")

    def _next_waiting(self) -> None:
        # Cancelled waiting jobs finish now, not when their turn comes.
        for job in [j for j in self.waiting if j.cancel.is_set()]:
            self.waiting.remove(job)
            self._start_waiting(job)
        if self.single is None and self.waiting:
            self._start_waiting(self.waiting.popleft())

    def _start_waiting(self, job: Job, alone: bool = True) -> None:
        try:
            self._start(job, alone=alone)
        except Exception as e:  # a bad job fails alone, as when it arrives (EngineThread._handle)
            log.exception("could not schedule %s", job.request_id)
            job.out.put(Error(f"Could not schedule the request: {e}"))

    def _apply_cancellations(self) -> None:
        for uid, a in list(self.active.items()):
            if a.job.cancel.is_set():
                self._remove(uid, "cancelled")

    def _remove(self, uid: int, reason: str | None, error: str | None = None) -> None:
        """Take ``uid`` off the batch mid-flight, keeping the KV cache it computed."""
        a = self.active.get(uid)
        caches = self.batch.remove([uid], return_prompt_caches=True)
        if uid in caches and error is None:
            cache, tokens = caches[uid]
            if tokens:
                self.cache.insert(tokens[:], cache, kind="assistant",
                                  template_args=a.job.request.chat_template_kwargs)
        if error is not None:
            a.reply.fail(error)
            self.active.pop(uid, None)
            self.on_done(a.job, a.reply)
        else:
            self._done(uid, reason)

    def _done(self, uid: int, reason: str) -> None:
        a = self.active.pop(uid)
        try:
            a.reply.finish(reason)
        except Exception as e:  # its filter failed at the end: the client gets an Error
            log.exception("request %s failed as it finished", a.job.request_id)
            a.reply.fail(f"Generation failed: {e}")
        self.on_done(a.job, a.reply)

    def _reset_batch(self, message: str) -> None:
        """Fail every batched request and start a fresh batch (its state is unknown now)."""
        for a in self.active.values():
            a.reply.fail(message)
            self.on_done(a.job, a.reply)
        self.active.clear()
        try:
            self.batch.close()
        except Exception:  # the old batch is dropped either way
            log.debug("closing the failed batch failed", exc_info=True)
        self.batch = self._new_batch()

    # -- shutdown ----------------------------------------------------------------------------
    def fail_all(self, message: str, type: str = "server_error") -> None:
        if self.single is not None:
            self._single_active.reply.fail(message, type)
            self.single = self._single_active = None
        for a in self.active.values():
            a.reply.fail(message, type)
        self.active.clear()
        while self.waiting:
            self.waiting.popleft().out.put(Error(message, type))
        jobs, self.arrivals = self.arrivals, []
        for job in jobs:
            job.out.put(Error(message, type))

    def close(self) -> None:
        self.batch.close()
