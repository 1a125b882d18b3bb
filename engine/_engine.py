"""``Engine``: the in-process OpenAI-style server engine every front end is a client of.

One request path (DESIGN.md principle 1): admit → render → tokenize run on the caller's
thread (so bad input raises right there), then the job crosses to the engine thread for
prompt-cache lookup, batching, decoding, detokenizing and the StreamFilter; OpenAI JSON is
built from the events on the caller's side.
"""

from __future__ import annotations

import atexit
from contextlib import contextmanager
import uuid
import warnings
import weakref
from dataclasses import replace
from typing import Any, Callable, Iterator, Mapping

import mlx.core as mx

from ._config import EngineConfig
from .request._admission import GenerationRequest, ModelLimits, admit, check_template_args
from .request._engine_thread import EngineThread
from .models._dtype_policy import DtypeChoice, accelerator, apply_dtype, choose_dtype
from ._errors import EngineDeadError, EngineError, EngineRequestError
from .request._inspection import Inspection, request_options
from .models._info import ModelInfo, WeightsSummary, describe_weights
from .request._prompt_cache import CacheInfo
from .request._rendering import RenderedPrompt, check_chat_template, render
from .request._text_encoder import TextEncoder
from ._events import EngineEvent
from .request._handle import RequestHandle
from .request._job import Job, check_on_event
from .request._constrained import tool_call_grammar, warm_up
from .request._think_budget import think_budget_for
from .request._respond import complete, respond

__all__ = ["Engine"]

# Engine threads not closed, stopped before the interpreter exits. Weak: a running thread
# holds its EngineThread itself, and a dropped Engine's thread, once it has stopped on its
# own (``release``), leaves the set with its tokenizer.
_live_threads: weakref.WeakSet[EngineThread] = weakref.WeakSet()
_engines_ran = False  # MLX ran off the main thread: settle it at exit


@atexit.register
def _stop_live_engine_threads() -> None:
    # The engine thread is a daemon, so interpreter shutdown does not wait for it; stopping
    # and joining it here lets it release MLX state on its own thread before the process
    # tears down (an MLX thread killed mid-evaluation aborts the process).
    threads = list(_live_threads)
    for thread in threads:
        thread.stop()
        _live_threads.discard(thread)
    if _engines_ran:  # a dropped Engine's thread stopped on its own, unsettled
        _settle_mlx_on_this_thread()


class Engine:
    """Load a model on a dedicated thread and serve OpenAI-style requests in process.

    >>> engine = Engine("/path/to/mlx-model")           # doctest: +SKIP
    >>> engine.chat_completions({"messages": [{"role": "user", "content": "Hi"}]})
    """

    def __init__(self, model_spec: str | None = None, *, config: EngineConfig | None = None,
                 **options: Any):
        """Load ``model_spec`` with ``options`` (any ``EngineConfig`` field: ``dtype``,
        ``draft_model``, ``prompt_cache_bytes``, ``default_sampling``, ...; None means the
        default), or with a ready ``config``. Raises ``EngineError`` for a bad option
        before anything loads."""
        if config is None:
            try:
                config = EngineConfig(model_spec=model_spec, **options)
            except TypeError as exc:  # an option EngineConfig does not have
                raise EngineError(f"Engine() got {exc}; see EngineConfig for the options.") from None
        elif options or model_spec is not None:
            raise EngineError("Pass either config=EngineConfig(...) or the model and its "
                              "options, not both.")
        self.config = config
        try:  # chat_template_args as a request's chat_template_kwargs
            check_template_args(self.config.chat_template_args, "chat_template_args")
        except EngineRequestError as exc:
            raise EngineError(exc.message) from None
        global _engines_ran
        _engines_ran = True
        self._thread = EngineThread(self.config)
        self._closed = False
        _live_threads.add(self._thread)
        try:
            # Inside: an interrupt while the model loads must stop the thread once it has.
            self._thread.start()
            self._model_info = self._thread.call(self._settle_dtype)
            self._limits = ModelLimits(self._thread.call(self._logits_width),
                                       self._model_info.context_length)
            # default_sampling within the model's limits (its values were checked with the
            # config): a max_tokens past the context would fail every request that took it.
            if self.config.default_sampling:
                admit({"prompt": ""}, kind="completion", config=self.config, limits=self._limits)
            # A template the sandbox refuses is the model's problem: say so now, not as
            # every request's invalid_request_error.
            check_chat_template(self._thread.tokenizer, self._model_info.model_type)
            self._text_encoder = TextEncoder(self._thread.tokenizer)
        except BaseException:
            self._thread.stop()
            _live_threads.discard(self._thread)
            raise
        # An Engine dropped without close() (a notebook cell that makes one, run again) frees
        # its model once its requests are served, instead of holding it for the session.
        weakref.finalize(self, self._thread.release)
        info = self._model_info
        self._accepted_models = frozenset(
            m for m in (info.name, info.path, self.config.model_spec) if m
        )

    def _settle_dtype(self) -> ModelInfo:
        """On the engine thread, before any request: cast the loaded model (and its draft) to
        the dtype chosen for it, and describe it again. GGUF files were imported in it already."""
        model, info = self._thread.model, self._thread.model_info
        if self._thread.draft_model is not None:
            _apply_dtype_choice(self._thread.draft_model, self.config.dtype)
        choice, weights = _apply_dtype_choice(model, self.config.dtype)
        return replace(info, parameters=weights.parameters, quantization=weights.quantization,
                       memory_bytes=weights.memory_bytes, dtype=weights.dtype,
                       dtype_reason=choice.reason)

    def _logits_width(self) -> int | None:
        """On the engine thread: how many token ids the logits have (logit_bias, top_k bound).

        Read off the lazy graph of a one-token call: nothing is computed."""
        model = self._thread.model
        try:
            return int(model(mx.array([[0]])).shape[-1])
        except Exception:  # a model that needs more than token ids: its config says
            return getattr(getattr(model, "args", None), "vocab_size", None)

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self, timeout: float = 30.0) -> None:
        """Cancel running requests, stop the engine thread and join it (waiting up to
        ``timeout`` seconds for an ``on_event`` callback still running)."""
        if self._closed:
            return
        self._closed = True
        if self._thread.stop(timeout):
            _live_threads.discard(self._thread)
            _settle_mlx_on_this_thread()
            return
        # Still running: it stays among the threads joined at exit, or the interpreter would
        # tear MLX down under it (the process aborts).
        if not self._thread.on_engine_thread():
            warnings.warn(
                f"The engine thread is still in an on_event callback {timeout:g} s after "
                "close(); it stops once the callback returns.", RuntimeWarning, stacklevel=2)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "healthy" if self.healthy else ("closed" if self._closed else "dead")
        return f"<Engine {self.model_info.name} {state}, {self.active_requests} active>"

    # -- what front ends read ------------------------------------------------------------------
    @property
    def model_info(self) -> ModelInfo:
        return self._model_info

    @property
    def vocab_size(self) -> int | None:
        """The width of the model's logits: token ids run from 0 below it (None: unknown)."""
        return self._limits.vocab_size

    @property
    def tokenizer(self):
        """The mlx-lm TokenizerWrapper (read-only use)."""
        return self._thread.tokenizer

    @property
    def healthy(self) -> bool:
        return self._thread.alive and not self._closed

    @property
    def active_requests(self) -> int:
        return self._thread.active

    def cache_info(self) -> CacheInfo:
        return self._thread.cache.info()

    def clear_prompt_cache(self) -> None:
        """Drop every prompt-cache entry (the next request runs cold)."""
        self._thread.cache.clear()

    def trace(self, request_id: str):
        """The StreamFilter trace of a finished chat request's actual delta stream
        (``request_id``: a handle's ``id``, or the handle itself)."""
        request_id = getattr(request_id, "id", request_id)
        if not isinstance(request_id, str):
            raise EngineError(f"trace() takes a request id (a handle's id, a reply's 'id'), "
                              f"not {type(request_id).__name__}.")
        t = self._thread.traces.get(request_id)
        if t is None and self._thread.on_engine_thread():
            raise EngineError(f"The trace of {request_id!r} is filed once its on_event has "
                              "seen Finished; read it after on_event returns.")
        if t is None and self.healthy:
            # A reader that has just seen Finished may ask before the engine thread filed
            # the trace (it files it right after): one call through its inbox waits for that.
            self._thread.call(lambda: None)
            t = self._thread.traces.get(request_id)
        if t is None:  # running, or finished between the two reads: read its trace again
            running = request_id in self._thread.running_ids
            t = self._thread.traces.get(request_id)
            if t is None and running:
                raise EngineError(f"Request {request_id!r} is still running: its trace is "
                                  "filed when it finishes.")
        if t is None:
            raise EngineError(
                f"No trace for request {request_id!r}: it is not among the last 16 finished "
                "requests, the only ones kept."
            )
        if t.family is None:
            raise EngineError(f"Request {request_id!r} was a completion: it has no parse trace.")
        from .parsing import Trace

        return Trace.from_deltas(list(t.deltas), t.family, tools=t.tools,
                                 starts_in_reasoning=t.starts_in_reasoning,
                                 token_ids=t.token_ids)

    # -- the request path ----------------------------------------------------------------------
    def _check_alive(self) -> None:
        if not self.healthy:
            raise EngineDeadError(self._thread.dead_message)

    def admit(self, body: Mapping[str, Any], *, kind: str = "chat") -> GenerationRequest:
        """Check ``body`` as ``submit`` does, against this model's vocabulary and context,
        without running it; raises ``EngineRequestError`` naming what is wrong."""
        return admit(body, kind=kind, config=self.config,
                     accepted_models=self._accepted_models, limits=self._limits)

    def _prepare(self, body, kind: str) -> tuple[GenerationRequest, RenderedPrompt]:
        self._check_alive()
        request = self.admit(body, kind=kind)
        # Templates render in parallel on the callers' threads; only tokenizing takes the
        # lock (HF fast tokenizers are not safe for concurrent use).
        prompt = render(request, self.tokenizer, model_type=self.model_info.model_type,
                        encoder=self._text_encoder,
                        context_length=None if self.config.max_kv_size else self._limits.context_length)
        think_budget_for(self.tokenizer, request, prompt)  # a model without markers refuses it here
        if request.response_format is not None or request.forced_call is not None:
            param = "tool_choice" if request.forced_call is not None else "response_format"
            if self._thread.draft_model is not None:
                raise EngineRequestError(
                    f"'{param}' is not decoded with a draft model (its rejected tokens would "
                    "have to be unwound from the grammar); load the model without "
                    "--draft-model.", param=param)
            if request.forced_call is not None:
                if request.response_format is not None:
                    raise EngineRequestError(
                        "'tool_choice' forcing a call and 'response_format' JSON ask for two "
                        "shapes of one reply; send one of them.", param="tool_choice")
                tool_call_grammar(self.tokenizer, request)  # refused here, compiled once
            warm_up(self.tokenizer)  # here, not on the engine thread
        context = self.model_info.context_length
        if context and self.config.max_kv_size is None and len(prompt.tokens) >= context:
            raise EngineRequestError(
                f"The prompt of {len(prompt.tokens)} tokens is longer than the model's context "
                f"length of {context} tokens"
                # (a prompt that fills the context exactly leaves no room for a reply token)
                f"{' allows with a reply' if len(prompt.tokens) == context else ''}; shorten the "
                f"{'conversation' if kind == 'chat' else 'prompt'}.",
                param="messages" if kind == "chat" else "prompt",
                code="context_length_exceeded",
            )
        if context and self.config.max_kv_size is None:
            # The reply ends where the context does (finish_reason "length"), not past what
            # the model can attend to. mlx_lm.server decodes on; OpenAI refuses the request,
            # which would fail every turn of a long conversation asking for a long reply.
            request = replace(request, max_tokens=min(request.max_tokens,
                                                      context - len(prompt.tokens)))
        return request, prompt

    @contextmanager
    def together(self):
        """Requests submitted (from any thread) while this block runs start together, in one
        prefill batch, rather than the first alone: for replies meant to be decoded side by
        side. Each is held until the block ends."""
        with self._thread.preparing(until_done=True):
            yield

    def submit(self, body: Mapping[str, Any], *, kind: str = "chat",
               on_event: Callable[[EngineEvent], None] | None = None) -> RequestHandle:
        """Admit and schedule ``body``; read the handle's ``events()`` for the reply. Keep
        the handle: a reply whose handle is dropped unread is cancelled (nobody could read it).

        With ``on_event``, each event is passed to it instead, as it is made, on the thread
        that makes it (mostly the engine thread: it must return at once and never raise);
        the handle then only cancels. A server's IO loop takes events this way.
        """
        check_on_event(on_event)
        # Counted until the job is queued: requests submitted at once all start together.
        with self._thread.preparing():
            request, prompt = self._prepare(body, kind)
            prefix = "chatcmpl" if kind == "chat" else "cmpl"
            request_id = f"{prefix}-{uuid.uuid4()}"
            job = Job(request_id, request, prompt, self._thread.outbox(request_id, on_event))
            self._thread.submit(job)
        return RequestHandle(job, self._thread)

    def chat_completions(self, body: Mapping[str, Any]) -> dict | Iterator[dict]:
        """``/v1/chat/completions``: a dict, or an iterator of chunks when ``stream`` is true."""
        return respond(self, body, "chat")

    def completions(self, body: Mapping[str, Any]) -> dict | Iterator[dict]:
        """``/v1/completions``: a dict, or an iterator of chunks when ``stream`` is true.

        ``prompt`` may be a list of strings or of token-id lists, as OpenAI takes it: one
        choice per prompt.
        """
        return complete(self, body)

    def inspect(self, body: Mapping[str, Any], *, kind: str | None = None) -> Inspection:
        """Run admission, rendering, tokenizing and the cache lookup; generate nothing."""
        if kind is None:
            prompt_only = isinstance(body, Mapping) and "prompt" in body and "messages" not in body
            kind = "completion" if prompt_only else "chat"
        request, prompt = self._prepare(body, kind)
        lookup = self._thread.cache.describe(
            prompt.tokens, template_args=request.chat_template_kwargs)
        decode = self.tokenizer.decode
        return Inspection(
            request=request,
            options=request_options(request),
            prompt_text=prompt.text,
            token_ids=prompt.tokens,
            token_strings=tuple(decode([t]) for t in prompt.tokens),
            segments=prompt.segments,
            cache=lookup,
            tools_rendered=prompt.tools_rendered,
        )

    def _crash_engine_thread(self, message: str = "engine thread crashed on purpose") -> None:
        """Make the engine thread fail as an MLX error would (tests of the failure path)."""
        self._thread.crash(message)


def _apply_dtype_choice(model, requested: str) -> tuple[DtypeChoice, WeightsSummary]:
    weights = describe_weights(model)
    choice = choose_dtype(requested, parameters=weights.parameters, own=weights.quantization,
                          quantized=weights.quantized, device=accelerator())
    if choice.dtype == "keep":
        return choice, weights
    apply_dtype(model, choice)
    return choice, describe_weights(model)


def _settle_mlx_on_this_thread() -> None:
    # Measured here: after big MLX ops on another thread, the process intermittently aborts
    # at exit ("terminate called without an active exception") unless the closing thread
    # runs a parallel op and synchronizes once the engine thread is gone.
    a = mx.ones((512, 512))
    mx.eval(a @ a)
    mx.synchronize()
