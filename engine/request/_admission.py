"""Admission: validate an OpenAI-style body into a frozen ``GenerationRequest``.

Every option ``mlx_lm.server`` reads from a body is here with the same default and range;
where the server answers a bad value with a bare string, we raise ``EngineRequestError``
carrying an OpenAI error object that names the offending ``param``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Mapping

from .._config import EngineConfig
from .._errors import EngineRequestError

__all__ = [
    "SamplingOptions",
    "PenaltyOptions",
    "GenerationRequest",
    "admit",
    "CHAT_ROLES",
]

CHAT_ROLES = ("system", "developer", "user", "assistant", "tool")
_REASONING_FIELDS = ("reasoning", "reasoning_content")


@dataclass(frozen=True, slots=True)
class SamplingOptions:
    """How the next token is drawn (mlx_lm.sample_utils.make_sampler's arguments)."""

    temperature: float
    top_p: float
    top_k: int
    min_p: float
    xtc_probability: float
    xtc_threshold: float

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True, slots=True)
class PenaltyOptions:
    """Logits processors (mlx_lm.sample_utils.make_logits_processors's arguments)."""

    logit_bias: tuple[tuple[int, float], ...] | None
    repetition_penalty: float
    repetition_context_size: int
    presence_penalty: float
    presence_context_size: int
    frequency_penalty: float
    frequency_context_size: int


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One admitted request: every option resolved, defaults filled in."""

    kind: str
    """``chat`` or ``completion``."""
    model: str
    """The model name the caller asked for, echoed in responses."""
    messages: tuple[dict, ...]
    """Chat messages normalised for the chat template (empty for completions)."""
    prompt: str
    """Completion prompt text (empty for chat)."""
    tools: tuple[dict, ...] | None
    role_mapping: dict | None
    chat_template_kwargs: tuple[tuple[str, Any], ...]
    """Engine defaults merged with the request's own, as sorted (key, value) pairs."""
    sampling: SamplingOptions
    penalties: PenaltyOptions
    stop: tuple[str, ...]
    max_tokens: int
    logprobs: bool
    top_logprobs: int
    """Alternatives to report per token; 0 when none (the server's -1 means none too)."""
    seed: int | None
    num_draft_tokens: int
    stream: bool
    include_usage: bool
    reasoning_field: str

    @property
    def template_kwargs(self) -> dict[str, Any]:
        return dict(self.chat_template_kwargs)


def _fail(message: str, param: str | None, code: str | None = None):
    raise EngineRequestError(message, param=param, code=code)


def _number(body, name, default, *, integer=False, lo=None, hi=None, allow=()):
    """Read a numeric option, checking its type and range as mlx_lm.server does."""
    value = body.get(name, default)
    if value is None:
        value = default
    if value in allow and not isinstance(value, bool):
        return value
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "an integer" if integer else "a number"
        _fail(f"'{name}' must be {kind}, got {json.dumps(value)[:40]}.", name)
    if lo is not None and value < lo:
        _fail(f"'{name}' must be at least {lo}, got {value}.", name)
    if hi is not None and value > hi:
        _fail(f"'{name}' must be at most {hi}, got {value}.", name)
    return value


def _flag(body, name, default=False) -> bool:
    value = body.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        _fail(f"'{name}' must be true or false.", name)
    return value


def _logit_bias(body) -> tuple[tuple[int, float], ...] | None:
    bias = body.get("logit_bias")
    if bias is None:
        return None
    if not isinstance(bias, Mapping):
        _fail("'logit_bias' must be an object mapping token ids to biases.", "logit_bias")
    try:
        return tuple((int(k), float(v)) for k, v in bias.items())
    except (TypeError, ValueError):
        _fail("'logit_bias' must map integer token ids to numbers.", "logit_bias")


def _stop(body) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        _fail("'stop' must be a string or a list of non-empty strings.", "stop")
    return tuple(stop)


def _text_content(content, where: str) -> str:
    """Flatten OpenAI content parts to text (images are not served by this engine)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        _fail(f"'{where}.content' must be a string or a list of text parts.", where)
    parts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") != "text":
            _fail(f"'{where}.content' may only hold text parts here.", f"{where}.content")
        if not isinstance(part.get("text"), str):
            _fail(f"'{where}.content' text parts need a 'text' string.", f"{where}.content")
        parts.append(part["text"])
    return "".join(parts)


def _tool_calls(calls, where: str) -> list[dict]:
    if not isinstance(calls, list):
        _fail(f"'{where}.tool_calls' must be a list.", f"{where}.tool_calls")
    out = []
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, Mapping) else None
        at = f"{where}.tool_calls[{j}].function"
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            _fail(f"'{at}' must be an object with a 'name' string.", at)
        args = fn.get("arguments", {})
        if isinstance(args, str):
            # Chat templates iterate over arguments, so they get a dict (as mlx_lm.server).
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                _fail(f"'{at}.arguments' is not valid JSON.", f"{at}.arguments")
        if not isinstance(args, Mapping):
            _fail(f"'{at}.arguments' must be a JSON object.", f"{at}.arguments")
        call = copy.deepcopy(dict(call))
        call["function"] = {**fn, "arguments": dict(args)}
        out.append(call)
    return out


def _message(message, i: int) -> dict:
    where = f"messages[{i}]"
    if not isinstance(message, Mapping):
        _fail(f"'{where}' must be an object with 'role' and 'content'.", where)
    role = message.get("role")
    if role not in CHAT_ROLES:
        _fail(
            f"'{where}.role' must be one of {', '.join(CHAT_ROLES)}; got {role!r}.",
            f"{where}.role",
        )
    out = copy.deepcopy(dict(message))
    out["content"] = _text_content(message.get("content"), where)
    if message.get("content") is None and role != "assistant":
        _fail(f"'{where}.content' is required for a {role} message.", f"{where}.content")
    if "tool_calls" in message and message["tool_calls"] is not None:
        out["tool_calls"] = _tool_calls(message["tool_calls"], where)
    # Accept reasoning under either name; templates (Qwen3, DeepSeek) read reasoning_content.
    for name in _REASONING_FIELDS:
        if message.get(name) is not None and not isinstance(message[name], str):
            _fail(f"'{where}.{name}' must be a string.", f"{where}.{name}")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        out["reasoning_content"] = out["reasoning"] = reasoning
    return out


def _messages(body) -> tuple[dict, ...]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        _fail("'messages' must be a non-empty list of messages.", "messages")
    return tuple(_message(m, i) for i, m in enumerate(messages))


def _tools(body) -> tuple[dict, ...] | None:
    tools = body.get("tools")
    if not tools:
        return None
    if not isinstance(tools, list):
        _fail("'tools' must be a list of function tools.", "tools")
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
            _fail(f"'tools[{i}]' must be a function tool.", f"tools[{i}]")
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            _fail(f"'tools[{i}].function' needs a 'name' string.", f"tools[{i}].function")
        params = fn.get("parameters")
        if params is not None and not isinstance(params, Mapping):
            _fail(
                f"'tools[{i}].function.parameters' must be a JSON schema object.",
                f"tools[{i}].function.parameters",
            )
    return tuple(copy.deepcopy(t) for t in tools)


def _prompt(body) -> str:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        _fail("'prompt' must be a string.", "prompt")
    return prompt


def _max_tokens(body, config: EngineConfig) -> int:
    name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    return _number(body, name, config.sampling_default("max_tokens"), integer=True, lo=1)


def _logprobs(body, kind: str, config: EngineConfig) -> tuple[bool, int]:
    logprobs = body.get("logprobs", False)
    if kind == "completion" and isinstance(logprobs, int) and not isinstance(logprobs, bool):
        # Legacy completions take the number of alternatives in ``logprobs`` itself.
        if not 0 <= logprobs <= 10:
            _fail("'logprobs' must be between 0 and 10.", "logprobs")
        return True, logprobs
    logprobs = _flag(body, "logprobs")
    top = _number(body, "top_logprobs", config.sampling_default("top_logprobs"),
                  integer=True, lo=0, hi=11, allow=(-1,))
    return logprobs or top > 0, max(top, 0)


def _template_kwargs(body, config: EngineConfig) -> tuple[tuple[str, Any], ...]:
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        _fail("'chat_template_kwargs' must be an object.", "chat_template_kwargs")
    merged = {**config.chat_template_args, **(kwargs or {})}
    return tuple(sorted(merged.items()))


def _stream_options(body, stream: bool) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, Mapping):
        _fail("'stream_options' must be an object.", "stream_options")
    return stream and bool(options.get("include_usage", False))


def _model(body, accepted_models) -> str:
    model = body.get("model")
    if model is None:
        return "default_model"
    if not isinstance(model, str):
        _fail("'model' must be a string.", "model")
    if accepted_models is not None and model not in accepted_models and model != "default_model":
        known = sorted(m for m in accepted_models if m)[:1]
        _fail(
            f"The model '{model}' is not loaded in this engine; use {known[0]!r} or omit 'model'."
            if known else f"The model '{model}' is not loaded in this engine.",
            "model",
            "model_not_found",
        )
    return model


def admit(
    body: Any,
    *,
    kind: str,
    config: EngineConfig,
    accepted_models: frozenset[str] | None = None,
) -> GenerationRequest:
    """Validate ``body`` (a chat-completions or completions dict) into a request."""
    if kind not in ("chat", "completion"):
        raise ValueError(f"kind must be 'chat' or 'completion', not {kind!r}")
    if not isinstance(body, Mapping):
        _fail("The request body must be a JSON object.", None)
    n = body.get("n", 1)
    if n != 1:
        _fail("Only 'n': 1 is supported; send separate requests for more choices.", "n")
    if body.get("adapters") not in (None, config.adapter_path):
        _fail("Per-request adapters are not supported; pass adapter_path to Engine.", "adapters")
    stream = _flag(body, "stream")
    logprobs, top_logprobs = _logprobs(body, kind, config)
    reasoning_field = body.get("reasoning_field", config.reasoning_field)
    if reasoning_field not in _REASONING_FIELDS:
        _fail("'reasoning_field' must be 'reasoning' or 'reasoning_content'.", "reasoning_field")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        _fail("'seed' must be an integer.", "seed")
    if seed is not None and not 0 <= seed < 2**64:  # mx.random.seed takes an unsigned 64-bit
        _fail("'seed' must be between 0 and 2**64 - 1.", "seed")
    role_mapping = body.get("role_mapping")
    if role_mapping is not None and not isinstance(role_mapping, Mapping):
        _fail("'role_mapping' must be an object.", "role_mapping")
    d = config.sampling_default
    return GenerationRequest(
        kind=kind,
        model=_model(body, accepted_models),
        messages=_messages(body) if kind == "chat" else (),
        prompt=_prompt(body) if kind == "completion" else "",
        tools=_tools(body) if kind == "chat" else None,
        role_mapping=dict(role_mapping) if role_mapping else None,
        chat_template_kwargs=_template_kwargs(body, config) if kind == "chat" else (),
        sampling=SamplingOptions(
            temperature=_number(body, "temperature", d("temperature"), lo=0),
            top_p=_number(body, "top_p", d("top_p"), lo=0, hi=1),
            top_k=_number(body, "top_k", d("top_k"), integer=True, lo=0),
            min_p=_number(body, "min_p", d("min_p"), lo=0, hi=1),
            xtc_probability=_number(body, "xtc_probability", d("xtc_probability"), lo=0, hi=1),
            xtc_threshold=_number(body, "xtc_threshold", d("xtc_threshold"), lo=0, hi=1),
        ),
        penalties=PenaltyOptions(
            logit_bias=_logit_bias(body),
            repetition_penalty=_number(body, "repetition_penalty", d("repetition_penalty"), lo=0),
            repetition_context_size=_number(
                body, "repetition_context_size", d("repetition_context_size"), integer=True, lo=0),
            presence_penalty=_number(body, "presence_penalty", d("presence_penalty")),
            presence_context_size=_number(
                body, "presence_context_size", d("presence_context_size"), integer=True, lo=0),
            frequency_penalty=_number(body, "frequency_penalty", d("frequency_penalty")),
            frequency_context_size=_number(
                body, "frequency_context_size", d("frequency_context_size"), integer=True, lo=0),
        ),
        stop=_stop(body),
        max_tokens=_max_tokens(body, config),
        logprobs=logprobs,
        top_logprobs=top_logprobs,
        seed=seed,
        num_draft_tokens=_number(body, "num_draft_tokens", d("num_draft_tokens"), integer=True, lo=0),
        stream=stream,
        include_usage=_stream_options(body, stream),
        reasoning_field=reasoning_field,
    )
