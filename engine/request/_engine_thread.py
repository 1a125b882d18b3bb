"""The engine thread: loads the model and does all MLX work, for the engine's whole life.

MLX streams belong to the thread that made them, so one thread loads the model and evaluates
it (DESIGN.md principle 3); other threads only put jobs on ``inbox``, read their event queues
and set cancel flags. If the thread dies, every waiting request gets an ``Error`` at once and
``alive`` turns False; ``stop`` joins it cleanly so interpreter exit never hangs or aborts.
The OS thread outlives the engine: the next engine's life runs on it (``_Worker`` says why).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
import traceback
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any, Callable, Iterator

import mlx.core as mx

from .._config import EngineConfig
from .._errors import EngineError, ModelStoreError
from .._events import Error
from .._upstream import quiet_length_warning
from ..models._info import ModelInfo, describe_model
from ._attention import few_rows_composed, forget_mask
from ._prompt_cache import PromptCache
from ._job import Job, Outbox, reader_pace
from ._scheduler import Scheduler

__all__ = ["EngineThread", "FinishedTrace"]

log = logging.getLogger(__name__)
_holding = threading.local()
"""Per thread: the engine threads whose ``together()`` block the thread is inside."""

_TRACES_KEPT = 16
_VOCAB_PROBE = "The quick brown fox, 1234 résumé <think> 日本"


@dataclass(frozen=True, slots=True)
class FinishedTrace:
    """What ``Engine.trace`` needs to replay a finished request's delta stream."""

    deltas: tuple[str, ...]
    family: Any
    tools: list | None
    starts_in_reasoning: bool | None
    token_ids: tuple[int, ...] = ()
    """The generated tokens the deltas were decoded from."""


class _Call:
    """Run ``fn`` on the engine thread and hand back its result (or exception)."""

    __slots__ = ("fn", "result", "done")

    def __init__(self, fn: Callable[[], Any]):
        self.fn = fn
        self.result: Any = None
        self.done = threading.Event()


class _Crash(Exception):
    """Raised on the engine thread on purpose (``crash``), to exercise the failure path."""


def _resolve(spec: str | None, config: EngineConfig) -> Path:
    from ..models._store import resolve_model

    return Path(resolve_model(spec, dtype=config.dtype, progress=config.progress))


@contextmanager
def _load_errors(what: str, path: Path, adapter: str | None = None) -> Iterator[None]:
    """What mlx-lm or transformers raise for a broken model (a tensor of the wrong shape, a
    tokenizer that cannot be read) as one ``ModelStoreError`` sentence naming the model."""
    try:
        yield
    except (EngineError, KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:
        reason = " ".join(str(exc).split())
        reason = type(exc).__name__ + (f": {reason[:300]}{'…' * (len(reason) > 300)}" if reason else "")
        adapted = f" with the adapter at {adapter}" if adapter else ""
        remedy = ("this mlx-lm cannot run that architecture: upgrade mlx-lm"
                  if "not supported" in str(exc) else "fix or re-download it")
        if remedy.startswith("fix") and _in_model_store(path):  # built here: nothing to fix by hand
            remedy = (f"it was built into the model store: remove it (mlx-notebook models "
                      f"--remove {path.name}) and load it again to rebuild it")
        raise ModelStoreError(f"Cannot load {what} at {path}{adapted} ({reason.rstrip('.')}); "
                              f"{remedy}.") from exc


def _in_model_store(path: Path) -> bool:
    from ..models._store import cache_dir

    return Path(path).resolve().parent == (cache_dir() / "models").resolve()


def _load_draft(config: EngineConfig, model, tokenizer):
    """The draft model for speculative decoding, checked against the model it drafts for."""
    from mlx_lm import load
    from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache

    if not can_trim_prompt_cache(make_prompt_cache(model)):
        raise EngineError(
            "draft_model needs a model whose KV cache can be trimmed (speculative decoding "
            "cuts rejected draft tokens back out); this model's cache cannot be."
        )
    draft_path = _resolve(config.draft_model, config)
    with _load_errors("the draft model", draft_path):
        draft, draft_tokenizer = load(str(draft_path))
    if not can_trim_prompt_cache(make_prompt_cache(draft)):
        raise EngineError(
            f"The draft model {config.draft_model} has a KV cache that cannot be trimmed; "
            "speculative decoding needs one that can."
        )
    # Token ids cross from the draft to the model as they are: the vocabularies must agree.
    ours, theirs = tokenizer.vocab_size, draft_tokenizer.vocab_size
    if ours != theirs or tokenizer.encode(_VOCAB_PROBE) != draft_tokenizer.encode(_VOCAB_PROBE):
        raise EngineError(
            f"The draft model {config.draft_model} has a different tokenizer ({theirs} tokens, "
            f"the model has {ours}); speculative decoding needs a draft model with the same "
            "vocabulary, e.g. a smaller or more quantized model of the same family."
        )
    return draft


def _refuse_nan(model, path: Path) -> None:
    """Refuse weights holding NaN: such a model loads and answers every request with
    end-of-text (or garbage), never an error. One pass over the float weights, a tensor at a
    time (its temporary is the tensor's size in bytes at most)."""
    from mlx.utils import tree_flatten

    for name, weight in tree_flatten(model.parameters()):
        if mx.issubdtype(weight.dtype, mx.floating) and mx.isnan(weight).any().item():
            raise ModelStoreError(f"The weights at {path} hold NaN ({name} is the first): the "
                                  "model cannot compute a reply; re-convert or re-download it.")


_WAKE = object()
"""Queued when the last caller preparing a request is done: held requests may start."""


class _Worker(threading.Thread):
    """An OS thread that runs engine threads' lives one after another (``_Life``).

    mlx gives every thread that evaluates a default stream of its own and keeps it after the
    thread ends (on a CPU with a worker OS thread; on CUDA with a command encoder and its
    graph cache): a new OS thread per engine left one more behind at every ``%load_model``,
    and an OS thread that ends while the interpreter exits can abort the process ("terminate
    called without an active exception", as its thread-local streams are destroyed under
    mlx's teardown). A worker whose engine stopped waits for the next engine instead, so a
    process holds as many as it ever had engines alive at once, and none of them ends.
    """

    def __init__(self):
        super().__init__(name=_IDLE_NAME, daemon=True)
        self.lives: SimpleQueue = SimpleQueue()

    def run(self) -> None:
        while True:
            self.lives.get()()


_ENGINE_NAME, _IDLE_NAME = "mlx-notebook-engine", "mlx-notebook-engine-idle"
_idle_workers: list[_Worker] = []
_idle_lock = threading.Lock()


class _Life:
    """One engine thread's run on a ``_Worker``: started, joined and asked after as a
    ``threading.Thread`` is."""

    def __init__(self, target: Callable[[], None]):
        self._target = target
        self._done = threading.Event()
        self.worker: _Worker | None = None

    @property
    def ident(self) -> int | None:
        return self.worker.ident if self.worker is not None else None

    def start(self) -> None:
        with _idle_lock:
            worker = _idle_workers.pop() if _idle_workers else None
        if worker is None or not worker.is_alive():  # (a forked child has none of them)
            worker = _Worker()
            worker.start()
        self.worker = worker
        worker.name = _ENGINE_NAME
        worker.lives.put(self._run)

    def _run(self) -> None:
        try:
            self._target()
        except BaseException:  # (the worker must live on to serve the next engine)
            log.exception("engine thread failed")
        finally:
            self.worker.name = _IDLE_NAME
            with _idle_lock:  # before done: a caller that joined may start the next engine
                _idle_workers.append(self.worker)
            self._done.set()

    def join(self, timeout: float | None = None) -> None:
        if self.worker is not None:
            self._done.wait(timeout)

    def is_alive(self) -> bool:
        return self.worker is not None and not self._done.is_set()

    def is_current(self) -> bool:
        """Whether the calling thread is this life's, while it runs."""
        return self.worker is threading.current_thread() and not self._done.is_set()


class EngineThread:
    """Owns the model, the prompt cache and the scheduler (see module docstring)."""

    def __init__(self, config: EngineConfig):
        self.config = config
        self.inbox: SimpleQueue = SimpleQueue()
        self.model_info: ModelInfo | None = None
        self.tokenizer = None
        self.draft_model = None
        self.cache = PromptCache(max_bytes=config.prompt_cache_bytes,
                                 max_entries=config.prompt_cache_entries)
        self.alive = False
        self.death: str | None = None
        self._preparing = 0
        """Callers between the start of ``Engine.submit`` and their job's arrival."""
        self._together = 0
        """Open ``Engine.together()`` blocks: their requests are held until the block ends."""
        self._wakes = 0
        """``_WAKE`` messages in the inbox: news, but nobody waiting (``_others_waiting``)."""
        self._jobs_queued = 0
        """Jobs in the inbox: a request is alone when no other is queued behind it."""
        self.scheduler: Scheduler | None = None
        """The engine thread's scheduler: read it only on that thread (``call``)."""
        self._open_lock = threading.Lock()
        self.traces: OrderedDict[str, FinishedTrace] = OrderedDict()
        self.running_ids: set[str] = set()
        """Requests submitted whose last event is not yet written (their traces to come)."""
        self._stopping = False
        self._released = False  # its Engine is gone: stop once nothing is left to serve
        self._ready = threading.Event()
        self._load_error: BaseException | None = None
        self._thread = _Life(self._main)

    # -- caller side -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the thread and block until the model is loaded (or raise its load error)."""
        self._thread.start()
        self._ready.wait()
        if self._load_error is not None:
            self._thread.join()
            raise self._load_error

    @property
    def active(self) -> int:
        """Requests submitted whose last event (Finished or Error) is not yet written."""
        return len(self.running_ids) if self.alive else 0

    def outbox(self, request_id: str, deliver: Callable[[Any], None] | None = None) -> Outbox:
        """The event queue for job ``request_id`` (or its ``deliver`` callable); the request
        counts as running until its last event."""
        with self._open_lock:
            self.running_ids.add(request_id)
        return Outbox(lambda: self._close_one(request_id), deliver,
                      pace=lambda: reader_pace(len(self.running_ids)))

    @contextmanager
    def preparing(self, *, until_done: bool = False):
        """Around a caller's render of a request it will submit: the scheduler holds the
        requests that arrive meanwhile (at most 50 ms), so that they start together. With
        ``until_done`` (``Engine.together``) it holds them until the block ends."""
        with self._open_lock:
            self._preparing += 1
            self._together += until_done
        holding = _holding.__dict__.setdefault("engines", [])
        holding += [self] if until_done else []
        try:
            yield
        finally:
            if until_done:
                holding.remove(self)
            with self._open_lock:
                self._preparing -= 1
                self._together -= until_done
                last = self._preparing == 0
                self._wakes += last
            if last:  # the held requests may start now: wake the thread to look
                self.inbox.put(_WAKE)

    def _close_one(self, request_id: str) -> None:
        with self._open_lock:
            self.running_ids.discard(request_id)

    def submit(self, job: Job) -> None:
        with self._open_lock:
            self._jobs_queued += 1
        self.inbox.put(job)
        if not self.alive:  # died between the caller's check and the put: fail it now
            job.out.put(Error(self.dead_message, "server_error"))

    def call(self, fn: Callable[[], Any], timeout: float | None = None) -> Any:
        """Run ``fn`` on the engine thread (between decode steps) and return its result."""
        if self.on_engine_thread():  # an on_event callback: waiting on itself would hang
            return fn()
        call = _Call(fn)
        self.inbox.put(call)
        while not call.done.wait(0.1 if timeout is None else timeout):
            if not self.alive:
                raise EngineError(self.dead_message)
            if timeout is not None:
                raise EngineError("The engine thread did not answer in time.")
        if isinstance(call.result, BaseException):
            raise call.result
        return call.result

    def on_engine_thread(self) -> bool:
        return self._thread.is_current()

    def blocking_read_refusal(self, started: bool) -> str | None:
        """Why the calling thread must not wait for a reply, or None: the engine thread (an
        ``on_event`` callback) would wait on itself; a thread inside this engine's
        ``together()`` would wait on its own block for a request not ``started`` (the block
        holds every request that had not started when it opened)."""
        if self.on_engine_thread():
            return ("A reply cannot be read inside on_event: the callback runs on the engine "
                    "thread, which makes the reply; read it from another thread.")
        if not started and self in getattr(_holding, "engines", ()):
            return ("A reply cannot be read inside engine.together(): its requests start when "
                    "the block ends; read them after it.")
        return None

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Queue ``fn`` to run on the engine thread after what is queued now; do not wait."""
        self.inbox.put(_Call(fn))

    def crash(self, message: str = "engine thread crashed on purpose") -> None:
        """Make the engine thread fail as if MLX raised (used by tests of the failure path)."""
        self.inbox.put(_Crash(message))

    def release(self) -> None:
        """Stop once the requests already made are served (their handles may outlive the
        Engine object), freeing the model; for an Engine dropped without ``close()``."""
        self._released = True
        self.inbox.put(None)  # wake an idle thread to look

    def stop(self, timeout: float = 30.0) -> bool:
        """Cancel everything, stop the thread and join it. False when it is still running:
        asked from the thread itself (an on_event callback), or a callback holds it past
        ``timeout`` seconds; it stops once the callback returns."""
        self._stopping = True
        self.inbox.put(None)  # wake a thread blocked on an empty inbox
        if self._thread.ident is None:
            return True
        if self._thread.is_current():
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def dead_message(self) -> str:
        """Why requests cannot run: the thread died (and of what), or the engine was closed."""
        if self.death:
            return f"The engine thread stopped ({self.death}); start a new Engine."
        return "The engine is closed; start a new Engine."

    # -- engine thread -------------------------------------------------------------------------
    def _main(self) -> None:
        try:
            self._load()
        except BaseException as e:  # surfaced in start() on the caller's thread
            # The traceback's frames hold the loaded weights (a draft refused after the
            # model loaded, mlx-lm's load failing at the tokenizer): drop their locals, along
            # the chain of causes, or a kept exception keeps the model alive.
            seen: set[int] = set()
            link: BaseException | None = e
            while link is not None and id(link) not in seen:
                seen.add(id(link))
                traceback.clear_frames(link.__traceback__)
                link = link.__cause__ or link.__context__
            self._load_error = e
            self._ready.set()
            return
        self.alive = True
        self._ready.set()
        scheduler = None
        try:
            scheduler = self.scheduler = Scheduler(
                self.model, self.tokenizer, self.config, self.cache, self._on_done,
                draft_model=self.draft_model)
            scheduler.others_waiting = self._others_waiting
            scheduler.jobs_waiting = lambda: self._jobs_queued > 0
            scheduler.others_preparing = lambda: self._preparing > 0
            scheduler.held_together = lambda: self._together > 0
            with few_rows_composed(0 if self.config.cudnn_for_few_rows
                                   else scheduler.prefill_step_size):
                self._loop(scheduler)
        except BaseException as e:
            self.death = f"{type(e).__name__}: {e}"
            log.exception("engine thread died")
        finally:
            self.alive = False
            self.scheduler = None  # it holds the model: freed in _shutdown
            self._shutdown(scheduler)

    def _load(self) -> None:
        from mlx_lm import load

        path = _resolve(self.config.model_spec, self.config)
        tokenizer_config = {}
        if self.config.chat_template:
            tokenizer_config["chat_template"] = self.config.chat_template
        with _load_errors("the model", path, self.config.adapter_path):
            model, tokenizer, model_config = load(
                str(path), tokenizer_config=tokenizer_config,
                adapter_path=self.config.adapter_path, return_config=True,
            )
        _refuse_nan(model, path)
        self.draft_model = (None if self.config.draft_model is None
                            else _load_draft(self.config, model, tokenizer))
        quiet_length_warning(tokenizer)
        self.model = model
        self.tokenizer = tokenizer
        self.model_info = describe_model(model, tokenizer, model_config, path,
                                         self.config.model_spec, self.config.draft_model)

    def _loop(self, scheduler: Scheduler) -> None:
        inbox = self.inbox
        while not self._stopping and not (self._released and scheduler.idle and inbox.empty()
                                          and not self.running_ids):
            hold = 0.1 if scheduler.idle else scheduler.hold_seconds()
            if hold is not None:  # nothing to compute yet: wait for news, not in a spin
                try:
                    self._handle(inbox.get(timeout=hold), scheduler)
                except Empty:
                    if scheduler.idle:
                        forget_mask()
                        continue
            while not inbox.empty():
                self._handle(inbox.get_nowait(), scheduler)
            if not scheduler.idle:
                scheduler.step()

    def _others_waiting(self) -> bool:
        """Whether a job or a call waits in the inbox (a wake-up alone does not count)."""
        return self.inbox.qsize() > self._wakes

    def _handle(self, message, scheduler: Scheduler) -> None:
        if message is _WAKE:
            with self._open_lock:
                self._wakes -= 1
            return
        if isinstance(message, Job):
            with self._open_lock:
                self._jobs_queued -= 1
            try:
                scheduler.add(message)
            except Exception as e:  # a bad job fails alone
                log.exception("could not schedule %s", message.request_id)
                message.out.put(Error(f"Could not schedule the request: {e}"))
        elif isinstance(message, _Call):
            try:
                message.result = message.fn()
            except BaseException as e:
                message.result = e
            message.done.set()
        elif isinstance(message, _Crash):
            raise message

    def _on_done(self, job: Job, reply) -> None:
        f = reply.filter
        self.traces[job.request_id] = FinishedTrace(
            tuple(reply.deltas),
            f.family if f is not None else None,
            list(job.request.tools) if job.request.tools else None,
            f.starts_in_reasoning if f is not None else None,
            tuple(reply.token_ids),
        )
        while len(self.traces) > _TRACES_KEPT:
            self.traces.popitem(last=False)

    def _shutdown(self, scheduler: Scheduler | None) -> None:
        message = self.dead_message
        if scheduler is not None:
            scheduler.fail_all(message)
        # Anything queued after the last look gets its error too: nobody waits forever.
        while True:
            try:
                item = self.inbox.get_nowait()
            except Empty:
                break
            if isinstance(item, Job):
                item.out.put(Error(message, "server_error"))
            elif isinstance(item, _Call):
                item.result = EngineError(message)
                item.done.set()
        try:
            if scheduler is not None:
                scheduler.close()
            self.cache.clear()
            self.model = self.draft_model = None
            gc.collect()
            mx.synchronize()
            mx.clear_cache()
        except Exception:  # shutting down: nothing left to tell
            log.debug("engine shutdown cleanup failed", exc_info=True)
        time.sleep(0)
