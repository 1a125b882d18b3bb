"""Engine settings: one typed, frozen ``EngineConfig`` built at the edge (the ``Engine`` call).

Nothing below the ``Engine`` constructor sees keyword soup or argparse: the engine thread,
admission and the scheduler read this one object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

__all__ = ["EngineConfig", "SAMPLING_DEFAULTS", "DEFAULT_PROMPT_CACHE_BYTES", "SWITCH_HELP"]

# mlx_lm.server's defaults (its argparse defaults and the body defaults in do_POST), kept in
# one place so admission, inspect() and the docs agree. A user's ``default_sampling``
# overrides them per engine; a request body overrides both.
SAMPLING_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "temperature": 0.0,
        "top_p": 1.0,
        "top_k": 0,
        "min_p": 0.0,
        "xtc_probability": 0.0,
        "xtc_threshold": 0.1,
        "repetition_penalty": 0.0,
        "repetition_context_size": 20,
        "presence_penalty": 0.0,
        "presence_context_size": 20,
        "frequency_penalty": 0.0,
        "frequency_context_size": 20,
        "max_tokens": 512,
        "num_draft_tokens": 3,
        "top_logprobs": -1,
    }
)

# A notebook shares memory with everything else the user runs: keep the prompt cache to
# 1 GiB unless told otherwise (mlx_lm.server's default is unbounded bytes, 10 entries).
DEFAULT_PROMPT_CACHE_BYTES = 1 << 30


SWITCH_HELP = MappingProxyType({
    "fused_first_token": (
        "Read a prompt's last token and the first reply token in one forward pass instead of "
        "mlx-lm's two: a follow-up turn answers a pass sooner, but greedy replies are no "
        "longer mlx_lm.server's bit for bit and may part from them at a near-tie. Off by "
        "default."),
    "cudnn_for_few_rows": (
        "On an NVIDIA GPU, let passes shorter than a prefill chunk (a follow-up, a short "
        "prompt) take cuDNN's attention as mlx-lm does: replies are mlx_lm.server's bit for "
        "bit, but each new prompt length waits 40-70 ms for a cuDNN plan. Off by default; "
        "nothing changes off CUDA."),
})
"""The fields that are True or False (None: False), with the one help text the command line
and ``%load_model`` both show for their flags."""
_SWITCHES = tuple(SWITCH_HELP)


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Everything an engine needs to load a model and serve it, checked once when built.

    ``None`` for an option that has a default means "the default", so a front end can pass
    what its user left unset as it is (``%load_model`` flags, CLI arguments) without
    filtering. Raises ``EngineError`` naming the fix for a bad combination or value.
    """

    model_spec: str | None = None
    """Model store spec or mlx-lm model directory; None means the store's default."""
    dtype: str = "auto"
    """``auto`` (float32 for a small model on a CPU, else the model's own), ``keep``,
    ``float32`` or ``bfloat16``: the store imports GGUF files in it, the loader casts others."""
    progress: bool = True
    """Show download/import progress bars while resolving the model."""
    adapter_path: str | None = None
    draft_model: str | None = None
    """A second model directory for speculative decoding (served one request at a time)."""
    chat_template: str | None = None
    """A Jinja chat template that replaces the tokenizer's."""
    chat_template_args: Mapping[str, Any] = field(default_factory=dict)
    """Default ``chat_template_kwargs`` for every chat request (a request's own win)."""
    default_sampling: Mapping[str, Any] = field(default_factory=dict)
    """Body options (``temperature``, ``max_tokens``, ...) used when a request omits them."""
    prompt_cache_bytes: int = DEFAULT_PROMPT_CACHE_BYTES
    """Byte budget of the prompt cache, including KV caches of requests being decoded."""
    prompt_cache_entries: int = 10
    """Most KV caches kept at once (mlx_lm.server's ``--prompt-cache-size``)."""
    max_kv_size: int | None = None
    """Use a rotating (sliding-window) KV cache of this many tokens."""
    decode_concurrency: int = 32
    """Most requests decoded together in one batch."""
    prefill_concurrency: int = 8
    """Prompts prefilled together in one batch (mlx_lm.server's ``--prompt-concurrency``).
    Shorter prompts than a chunk fill it further, up to ``decode_concurrency``, while its chunk
    stays within ``prefill_concurrency`` × ``prefill_step_size`` tokens."""
    prefill_step_size: int | None = None
    """Prompt tokens per prefill chunk; a cancel takes effect between chunks. None: chosen
    for the device (``Scheduler``): mlx-lm's 2048 on a GPU, small chunks on a CPU so Stop
    acts within a fraction of a second."""
    fused_first_token: bool = False
    """Read the prompt's last token with the rest of its last chunk, in one forward pass that
    also gives the first reply token, where mlx-lm reads it in a pass of its own (a last chunk
    of at most 256 tokens: the pass computes logits for each). A request alone then answers
    one forward pass sooner: a follow-up turn, whose new part is short,
    in one pass instead of two (a GPU running a small model is bound by each pass's kernel
    launches). Off by default, because the numbers are then not mlx-lm's bit for bit: the
    last token's pass uses the kernels for several rows (as a cached prefix's chunks already
    differ from a cold prompt's), so at a near-tie a greedy reply may differ from
    mlx_lm.server's. Requests in a batch and with a draft model read prompts as mlx-lm does."""
    cudnn_for_few_rows: bool = False
    """On mlx's CUDA backend, let a forward pass of fewer rows than a prefill chunk (a
    follow-up's new part, a short prompt, a prompt's last chunk) take cuDNN's attention, as
    mlx chooses. cuDNN builds a plan for each new shape (40-70 ms of host time on an H100's
    host), and a real conversation's passes are new shapes, so by default such a pass
    computes its attention with float32 scores instead, from matmuls and a softmax with no
    plan (``request/_attention.py``): its logits are then not mlx-lm's bit for bit, and at a
    near-tie a greedy reply may differ from mlx_lm.server's on the GPU. No effect off CUDA."""
    reasoning_field: str = "reasoning"
    """Message key for reasoning text in responses: ``reasoning`` or ``reasoning_content``."""

    def __post_init__(self) -> None:
        # Frozen: normalize through object.__setattr__, once, here.
        def set_(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name in ("model_spec", "adapter_path", "draft_model"):
            value = getattr(self, name)
            value = None if value is None else str(value)
            # A blank one is none (a blank model_spec the default model, named as such).
            set_(name, None if value is not None and not value.strip() else value)
        set_("dtype", "auto" if self.dtype is None else self.dtype)
        for name in _SWITCHES:
            if getattr(self, name) is None:
                set_(name, False)
        for name in ("chat_template_args", "default_sampling"):
            value = getattr(self, name) or {}
            if not isinstance(value, Mapping):
                from ._errors import EngineError

                raise EngineError(f"{name} must be a dict of option names and values, not "
                                  f"{type(value).__name__}.")
            set_(name, dict(value))
        budget = self.prompt_cache_bytes
        if isinstance(budget, float) and budget.is_integer():  # 2e9
            budget = int(budget)
        set_("prompt_cache_bytes", DEFAULT_PROMPT_CACHE_BYTES if budget is None else budget)
        _check(self)

    def sampling_default(self, name: str) -> Any:
        """The engine-wide default for body option ``name``."""
        if name in self.default_sampling:
            return self.default_sampling[name]
        return SAMPLING_DEFAULTS.get(name)


MIN_KV_SIZE = 8
"""The smallest rotating KV cache: mlx-lm's keeps the first 4 tokens, and a window not much
larger than them leaves the model nothing to read."""
MAX_KV_SIZE = 2**30


def _check_template_text(template: str) -> None:
    """A chat template given by the user compiles; refused here, before a loaded model is
    given up for it, in words about the user's template rather than the model's."""
    from ._errors import EngineError

    if not isinstance(template, str) or not template.strip():
        raise EngineError("The chat template given is empty: give a Jinja template, or leave it "
                          "out to use the model's own.")
    from jinja2 import TemplateSyntaxError
    # transformers' own compiler: its templates may use {% break %} and {% generation %}.
    from transformers.utils.chat_template_utils import _compile_jinja_template

    try:
        _compile_jinja_template(template)
    except TemplateSyntaxError as exc:
        raise EngineError(f"The chat template given has a syntax error on line {exc.lineno} "
                          f"({exc.message}); fix it.") from None


def _check(config: EngineConfig) -> None:
    from .models._dtype_policy import DTYPES
    from ._errors import EngineError

    if config.draft_model is not None and config.max_kv_size is not None:
        raise EngineError(
            "draft_model cannot be combined with max_kv_size: speculative decoding cuts "
            "rejected draft tokens back out of the KV cache, which a rotating cache cannot do."
        )
    # Named things exist before anything loads (or a loaded model is given up for them).
    from .models._store import check_model_spec

    check_model_spec(config.model_spec)
    if config.draft_model is not None:
        check_model_spec(config.draft_model)
    adapter = config.adapter_path and Path(config.adapter_path).expanduser()
    if adapter and not (adapter / "adapter_config.json").is_file():
        raise EngineError(f"No adapter at {config.adapter_path}: give the directory mlx_lm.lora "
                          "wrote, with adapter_config.json and the adapter weights.")
    if config.reasoning_field not in ("reasoning", "reasoning_content"):
        raise EngineError("reasoning_field must be 'reasoning' or 'reasoning_content'.")
    for name in _SWITCHES:
        if not isinstance(getattr(config, name), bool):
            raise EngineError(f"{name} must be True or False, not {getattr(config, name)!r}.")
    if config.dtype not in DTYPES:
        raise EngineError(f"Unknown dtype {config.dtype!r}: use one of {', '.join(DTYPES)}.")
    for name, least in (("prefill_step_size", 1), ("max_kv_size", MIN_KV_SIZE),
                        ("decode_concurrency", 1), ("prefill_concurrency", 1),
                        ("prompt_cache_entries", 1), ("prompt_cache_bytes", 0)):
        value = getattr(config, name)
        if value is None and name in ("prefill_step_size", "max_kv_size"):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise EngineError(f"{name} must be a whole number of at least {least}, not {value!r}.")
    if config.max_kv_size is not None and config.max_kv_size > MAX_KV_SIZE:
        # mlx's attention offsets are 32-bit: past 2**31 every step fails, and just below it
        # the rotating cache's positions wrap and the model answers garbage.
        raise EngineError(f"max_kv_size must be at most {MAX_KV_SIZE:,} tokens, not "
                          f"{config.max_kv_size:,}.")
    if config.chat_template is not None:
        _check_template_text(config.chat_template)
    unknown = set(config.default_sampling) - set(SAMPLING_DEFAULTS)
    if unknown:
        raise EngineError(
            f"Unknown default_sampling option(s) {', '.join(sorted(unknown))}; use "
            f"{', '.join(SAMPLING_DEFAULTS)}."
        )
    # The defaults' values, as a request body's are checked (the model's own limits once it
    # has loaded, in Engine): here, before a front end gives up a loaded model for this one.
    from .request._admission import admit

    admit({"prompt": ""}, kind="completion", config=config)
