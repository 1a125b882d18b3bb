"""Admission: validate an OpenAI-style body into a frozen ``GenerationRequest``.

Every option ``mlx_lm.server`` reads from a body is here with the same default; its range is
the one mlx-lm's samplers and logits processors enforce (or OpenAI's, where that is
narrower), checked here so a bad value is refused before scheduling rather than failing
inside a batched step next to other requests. A refusal is an ``EngineRequestError``
carrying an OpenAI error object that names the offending ``param``. docs/openai-fields.md
lists what is honoured, refused and ignored.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .._config import EngineConfig
from .._errors import EngineError, EngineRequestError, json_failure
from ._constrained import json_schema_for

__all__ = [
    "SamplingOptions",
    "PenaltyOptions",
    "GenerationRequest",
    "ModelLimits",
    "admit",
    "check_template_args",
    "CHAT_ROLES",
    "GREEDY_BELOW",
    "MAX_DEPTH",
]

CHAT_ROLES = ("system", "developer", "user", "assistant", "tool")
_REASONING_FIELDS = ("reasoning", "reasoning_content")

MAX_DEPTH = 64
"""Deepest nesting of objects and lists a body may have (json.loads alone takes ~990, far
past what copying and rendering survive); real tool schemas stay under 20."""
GREEDY_BELOW = 1e-5
"""Temperatures below this decode greedily: sampling divides logits by the temperature, and
a denormal one overflows them to inf (noise, not a sharper distribution)."""
_INT32 = 2**31 - 1  # mlx slices and shapes take 32-bit integers
_MAX_STOPS = 4  # OpenAI's limit
_MAX_STOP_CHARS = 512  # the stop-string guard compares every prefix per token
_MAX_TOP_LOGPROBS = 20  # OpenAI's limit
_MAX_DRAFT_TOKENS = 128
_BIAS_KEY = re.compile(r"-?[0-9]{1,20}")
# Arguments the engine itself passes to apply_chat_template: a request may set variables the
# template reads, not these (nor replace the template).
_ENGINE_TEMPLATE_ARGS = frozenset({
    "chat_template", "conversation", "messages", "tools", "documents",
    "add_generation_prompt", "continue_final_message", "tokenize", "padding", "truncation",
    "max_length", "return_tensors", "return_dict", "return_assistant_tokens_mask",
    "tokenizer_kwargs",
})

_CONSTRAINED_DECODING = ("guided_json", "guided_regex", "guided_choice", "guided_grammar",
                         "structured_outputs", "grammar", "json_schema")
"""Other servers' fields for constrained decoding (vLLM's, llama.cpp's): ignored, they would
return unconstrained text to a caller that counts on its shape, so they are refused (the one
form decoded to is OpenAI's ``response_format``)."""
_TOP_LEVEL_TEMPLATE_ARGS = frozenset({"add_generation_prompt", "continue_final_message"})
"""Of those, the ones a request sets as fields of its own (vLLM's)."""


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """What admission checks against the loaded model (None: not known, not checked)."""

    vocab_size: int | None = None
    """Width of the model's logits: token ids in ``logit_bias`` and ``top_k`` stay below it."""
    context_length: int | None = None
    """The model's context window in tokens: ``max_tokens`` stays within it."""


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
    prompt: str | tuple[int, ...]
    """Completion prompt: text, or token ids as OpenAI allows (empty for chat)."""
    tools: tuple[dict, ...] | None
    """Tools offered to the model (None without tools, or with ``tool_choice: "none"``)."""
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
    thinking_token_budget: int | None = None
    """Reasoning tokens after which the end-of-reasoning marker is forced; None: no limit."""
    continue_final_message: bool = False
    """The last message is the start of an assistant reply: the prompt ends inside it and the
    reply goes on from there (vLLM's field, a "prefill"); its text is not repeated."""
    add_generation_prompt: bool = True
    """Whether the prompt ends with the template's header for a new assistant turn."""
    response_format: str | None = None
    """The JSON schema the answer is decoded to fit (canonical JSON text; ``{"type":
    "object"}`` for ``json_object``), None for free text."""
    forced_call: tuple[str, ...] | None = None
    """The tools one of which the reply is decoded to call (``tool_choice`` "required": every
    tool offered; a named function: that one), None when the model decides."""
    parallel_tool_calls: bool = True
    """False: the reply ends with its first tool call (OpenAI's ``parallel_tool_calls``)."""

    @property
    def template_kwargs(self) -> dict[str, Any]:
        return dict(self.chat_template_kwargs)


def _fail(message: str, param: str | None, code: str | None = None):
    raise EngineRequestError(message, param=param, code=code)


def _shown(value) -> str:
    """A value as an error message shows it: short, ASCII, never a lone surrogate."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- the body as a whole -------------------------------------------------------------------------
def _safe_key(key) -> str:
    return str(key).encode("utf-8", "backslashreplace").decode("utf-8")


def _check_tree(body: Mapping) -> None:
    """Bound the nesting depth and refuse lone surrogates, anywhere in the body.

    Iterative, so a body nested past Python's recursion limit is refused, not a RecursionError.
    A lone surrogate (``"\\ud800"``) is a str but not text: tokenizers raise TypeError on it.
    """
    stack = [(body, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                where = path or "body"
                _fail(f"'{where}' is not valid Unicode text (it holds a lone surrogate such as "
                      "\\ud800); send UTF-8 text.", where)
            continue
        if isinstance(value, Mapping):
            items = value.items()
        elif isinstance(value, (list, tuple)):
            items = ((f"[{i}]", v) for i, v in enumerate(value))
        else:
            continue
        if depth >= MAX_DEPTH:
            top = re.split(r"[.\[]", path, maxsplit=1)[0] if path else ""
            _fail(f"'{top or 'body'}' is nested more than {MAX_DEPTH} levels deep; flatten it.",
                  top or None)
        for key, child in items:
            if isinstance(value, Mapping):
                if isinstance(key, str):
                    try:
                        key.encode("utf-8")
                    except UnicodeEncodeError:
                        where = f"{path}.{_safe_key(key)}" if path else _safe_key(key)
                        _fail(f"The key '{where}' is not valid Unicode text (it holds a lone "
                              "surrogate); send UTF-8 text.", where)
                child_path = f"{path}.{key}" if path else str(key)
            else:
                child_path = f"{path}{key}"
            stack.append((child, child_path, depth + 1))


# -- numbers and flags -------------------------------------------------------------------------------
def _number(body, name, default, *, integer=False, lo=None, hi=None, allow=(), why=""):
    """Read a numeric option, checking its type, finiteness and range."""
    value = body.get(name, default)
    if value is None:
        value = default
    if not isinstance(value, bool) and isinstance(value, int) and value in allow:
        return value
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "an integer" if integer else "a number"
        _fail(f"'{name}' must be {kind}, got {_shown(value)}.", name)
    if isinstance(value, float) and not math.isfinite(value):
        _fail(f"'{name}' must be a finite number, got {value}.", name)
    if lo is not None and value < lo:
        _fail(f"'{name}' must be at least {lo}, got {_shown(value)}.", name)
    if hi is not None and value > hi:
        _fail(f"'{name}' must be at most {hi}{why}, got {_shown(value)}.", name)
    return value if integer else float(value)


def _flag(body, name, default=False) -> bool:
    value = body.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        _fail(f"'{name}' must be true or false.", name)
    return value


def _sampling(body, d, limits: ModelLimits) -> SamplingOptions:
    temperature = _number(body, "temperature", d("temperature"), lo=0, hi=2)
    vocab = limits.vocab_size
    return SamplingOptions(
        temperature=0.0 if temperature < GREEDY_BELOW else temperature,
        top_p=_number(body, "top_p", d("top_p"), lo=0, hi=1),
        # mlx-lm's top-k needs 0 < k < vocabulary (0 turns it off).
        top_k=_number(body, "top_k", d("top_k"), integer=True, lo=0,
                      hi=vocab - 1 if vocab else _INT32,
                      why=" (the vocabulary size minus one)" if vocab else ""),
        min_p=_number(body, "min_p", d("min_p"), lo=0, hi=1),
        xtc_probability=_number(body, "xtc_probability", d("xtc_probability"), lo=0, hi=1),
        xtc_threshold=_number(body, "xtc_threshold", d("xtc_threshold"), lo=0, hi=0.5),
    )


def _penalties(body, d, limits: ModelLimits) -> PenaltyOptions:
    def context(name):
        return _number(body, name, d(name), integer=True, lo=0, hi=_INT32)

    repetition = _number(body, "repetition_penalty", d("repetition_penalty"), lo=0, hi=100)
    if 0 < repetition < 0.01:
        # It divides logits by the penalty: a tiny one overflows them to inf, and the
        # log-probabilities to NaN.
        _fail(f"'repetition_penalty' must be 0 (off) or at least 0.01, got {repetition}.",
              "repetition_penalty")
    return PenaltyOptions(
        logit_bias=_logit_bias(body, limits.vocab_size),
        repetition_penalty=repetition,
        repetition_context_size=context("repetition_context_size"),
        # OpenAI's range for both.
        presence_penalty=_number(body, "presence_penalty", d("presence_penalty"), lo=-2, hi=2),
        presence_context_size=context("presence_context_size"),
        frequency_penalty=_number(body, "frequency_penalty", d("frequency_penalty"), lo=-2, hi=2),
        frequency_context_size=context("frequency_context_size"),
    )


def _logit_bias(body, vocab_size: int | None) -> tuple[tuple[int, float], ...] | None:
    bias = body.get("logit_bias")
    if bias is None:
        return None
    if not isinstance(bias, Mapping):
        _fail("'logit_bias' must be an object mapping token ids to biases.", "logit_bias")
    out, outside, unread = [], [], []
    for key, value in bias.items():
        # An out-of-range id writes outside the logits (a crash, not an error): check each.
        if isinstance(key, bool) or not (
                isinstance(key, int) or isinstance(key, str) and _BIAS_KEY.fullmatch(key)):
            unread.append(key)
            continue
        token = int(key)
        if token < 0 or (vocab_size is not None and token >= vocab_size):
            outside.append(key)
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                isinstance(value, int) or math.isfinite(value)) or not -100 <= value <= 100:
            _fail(f"'logit_bias' values must be numbers between -100 and 100, got "
                  f"{_shown(value)} for token {token}.", "logit_bias")
        out.append((token, float(value)))
    # Every one named, so that one answer says all that must change.
    if unread:
        _fail(f"'logit_bias' keys must be integer token ids, got {_listed(unread)}.",
              "logit_bias")
    if outside:
        _fail(f"'logit_bias' token id{'s' if len(outside) > 1 else ''} {_listed(outside)} "
              f"{'are' if len(outside) > 1 else 'is'} {_out_of_vocabulary(vocab_size)}",
              "logit_bias")
    return tuple(out) or None


def _listed(keys: list) -> str:
    """``keys`` as an error message names them, the first ten."""
    return ", ".join(_shown(k) for k in keys[:10]) + (", ..." if len(keys) > 10 else "")


def _out_of_vocabulary(vocab_size: int | None) -> str:
    """The end of a sentence about a token id past the model's vocabulary (worded so that
    vLLM's tests, which match "out of vocabulary" and the size, read it)."""
    if vocab_size is None:
        return "out of vocabulary (ids run from 0 to the vocabulary size less one)."
    return (f"out of vocabulary (ids run from 0 to {vocab_size - 1}; the vocabulary size is "
            f"{vocab_size}).")


def _stop(body) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        _fail("'stop' must be a string or a list of strings.", "stop")
    if len(stop) > _MAX_STOPS:
        _fail(f"'stop' may hold at most {_MAX_STOPS} strings, got {len(stop)}.", "stop")
    stop = [s for s in stop if s]  # "" stops nothing (clients send it as their default)
    if any(len(s) > _MAX_STOP_CHARS for s in stop):
        _fail(f"'stop' strings may be at most {_MAX_STOP_CHARS} characters long.", "stop")
    return tuple(stop)


def _max_tokens(body, config: EngineConfig, limits: ModelLimits) -> int:
    context = limits.context_length

    def read(name: str) -> int:
        return _number(body, name, config.sampling_default("max_tokens"), integer=True, lo=1,
                       hi=context or _INT32, why=" (the model's context)" if context else "")

    if body.get("max_completion_tokens") is None:
        return read("max_tokens")
    # It wins, but a max_tokens beside it is checked too: one of "x" was silently ignored, a
    # typo the caller never heard of.
    if body.get("max_tokens") is not None:
        read("max_tokens")
    return read("max_completion_tokens")


def _logprobs(body, kind: str, config: EngineConfig, limits: ModelLimits) -> tuple[bool, int]:
    most = _MAX_TOP_LOGPROBS
    if limits.vocab_size:
        most = min(most, limits.vocab_size)
    logprobs = body.get("logprobs", False)
    if kind == "completion" and isinstance(logprobs, int) and not isinstance(logprobs, bool):
        # Legacy completions take the number of alternatives in ``logprobs`` itself.
        if not 0 <= logprobs <= most:
            _fail(f"'logprobs' must be between 0 and {most}.", "logprobs")
        return True, logprobs
    logprobs = _flag(body, "logprobs")
    top = _number(body, "top_logprobs", config.sampling_default("top_logprobs"),
                  integer=True, lo=0, hi=most, allow=(-1,))
    asked = body.get("top_logprobs")
    if kind == "chat" and body.get("logprobs") is False and isinstance(asked, int) and asked > 0:
        # (Left out, 'logprobs' follows 'top_logprobs', as mlx_lm.server reads it; set false
        # beside it, a chat body contradicts itself, and OpenAI and vLLM refuse it too. A
        # legacy completion has no 'top_logprobs' in OpenAI's API: there it is mlx_lm.server's
        # field, served as that server serves it.)
        _fail("'top_logprobs' needs 'logprobs' true; it is false here.", "top_logprobs")
    return logprobs or top > 0, max(top, 0)


def _stream_options(body, stream: bool) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, Mapping):
        _fail("'stream_options' must be an object.", "stream_options")
    if not stream:  # as OpenAI and vLLM answer it
        _fail("'stream_options' is only allowed when 'stream' is true.", "stream_options")
    include = options.get("include_usage", False)
    if include is not None and not isinstance(include, bool):
        _fail("'stream_options.include_usage' must be true or false.",
              "stream_options.include_usage")
    return stream and bool(include)


# -- messages, tools, prompt ---------------------------------------------------------------------
def _text_content(content, where: str) -> str:
    """Flatten OpenAI content parts to text (images are not served by this engine)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        _fail(f"'{where}.content' must be a string or a list of text parts.", f"{where}.content")
    parts = []
    for j, part in enumerate(content):
        # The message names the part by index and type ("here" alone left a client with an
        # image among ten parts guessing); param stays the content, as before.
        at = f"{where}.content[{j}]"
        if not isinstance(part, Mapping) or part.get("type") != "text":
            kind = (f"its type is {_shown(part.get('type'))}" if isinstance(part, Mapping)
                    else "it is not an object")
            _fail(f"'{at}' is not a text part ({kind}); this server reads only text parts "
                  "({\"type\": \"text\", \"text\": ...}).", f"{where}.content")
        if not isinstance(part.get("text"), str):
            _fail(f"'{at}' is a text part without a 'text' string.", f"{where}.content")
        parts.append(part["text"])
    return "".join(parts)


def _tool_calls(calls, where: str, arguments_as_sent: bool = False) -> list[dict]:
    if not isinstance(calls, list):
        _fail(f"'{where}.tool_calls' must be a list.", f"{where}.tool_calls")
    out = []
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, Mapping) else None
        at = f"{where}.tool_calls[{j}].function"
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            _fail(f"'{at}' must be an object with a 'name' string.", at)
        if call.get("id") is not None and not isinstance(call["id"], str):
            _fail(f"'{where}.tool_calls[{j}].id' must be a string.", f"{where}.tool_calls[{j}].id")
        args = fn.get("arguments", {})
        if isinstance(args, str):
            # Chat templates iterate over arguments, so they get a dict (as mlx_lm.server).
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError) as exc:
                if arguments_as_sent:  # (a remote server's own call, cut or broken, sent back)
                    out.append(copy.deepcopy(dict(call)))
                    continue
                _fail(f"'{at}.arguments' is not valid JSON ({json_failure(exc)}).",
                      f"{at}.arguments")
            if isinstance(args, Mapping):
                _check_tree({f"{at}.arguments": args})
        if not isinstance(args, Mapping):
            _fail(f"'{at}.arguments' must be a JSON object.", f"{at}.arguments")
        call = copy.deepcopy(dict(call))
        call["function"] = {**fn, "arguments": dict(args)}
        out.append(call)
    return out


def _message(message, i: int, arguments_as_sent: bool = False) -> dict:
    where = f"messages[{i}]"
    if not isinstance(message, Mapping):
        _fail(f"'{where}' must be an object with 'role' and 'content'.", where)
    role = message.get("role")
    if role not in CHAT_ROLES:
        _fail(f"'{where}.role' must be one of {', '.join(CHAT_ROLES)}; got {_shown(role)}.",
              f"{where}.role")
    out = copy.deepcopy(dict(message))
    out["content"] = _text_content(message.get("content"), where)
    if message.get("content") is None and role != "assistant":
        _fail(f"'{where}.content' is required for a {role} message.", f"{where}.content")
    if message.get("name") is not None and not isinstance(message["name"], str):
        _fail(f"'{where}.name' must be a string.", f"{where}.name")
    # A tool message may leave out the id of the call it answers, as mlx_lm.server and many
    # templates allow (results then pair with the calls in order when rendered).
    if role == "tool" and message.get("tool_call_id") is not None and not isinstance(
            message["tool_call_id"], str):
        _fail(f"'{where}.tool_call_id' must be a string: the id of the call it answers.",
              f"{where}.tool_call_id")
    if "tool_calls" in message and message["tool_calls"] is not None:
        out["tool_calls"] = _tool_calls(message["tool_calls"], where, arguments_as_sent)
    # Accept reasoning under either name; templates (Qwen3, DeepSeek) read reasoning_content.
    for name in _REASONING_FIELDS:
        if message.get(name) is not None and not isinstance(message[name], str):
            _fail(f"'{where}.{name}' must be a string.", f"{where}.{name}")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        out["reasoning_content"] = out["reasoning"] = reasoning
    return out


def _messages(body, arguments_as_sent: bool = False) -> tuple[dict, ...]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        _fail("'messages' must be a non-empty list of messages.", "messages")
    return tuple(_message(m, i, arguments_as_sent) for i, m in enumerate(messages))


def _tools(body) -> tuple[dict, ...] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        _fail("'tools' must be a list of function tools.", "tools")
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
            _fail(f"'tools[{i}]' must be a function tool.", f"tools[{i}]")
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
            _fail(f"'tools[{i}].function' needs a 'name' string.", f"tools[{i}].function")
        if fn.get("description") is not None and not isinstance(fn["description"], str):
            _fail(f"'tools[{i}].function.description' must be a string.",
                  f"tools[{i}].function.description")
        params = fn.get("parameters")
        if params is not None and not isinstance(params, Mapping):
            _fail(
                f"'tools[{i}].function.parameters' must be a JSON schema object.",
                f"tools[{i}].function.parameters",
            )
        kind = params.get("type", "object") if params is not None else "object"
        if kind != "object" and not (isinstance(kind, list) and "object" in kind):
            # A call's arguments are an object (OpenAI refuses such a schema too): a forced
            # call decoded to it came back as its markup, not a call.
            _fail(f"'tools[{i}].function.parameters' (of {_shown(fn['name'])}) must describe an "
                  f"object, the call's arguments; its type is {_shown(kind)}.",
                  f"tools[{i}].function.parameters")
    return tuple(copy.deepcopy(t) for t in tools) or None


def _tool_choice(body, tools: tuple[dict, ...] | None) -> tuple[dict, ...] | None:
    """Apply ``tool_choice``: "auto", "required" and a named function offer the tools (the
    last two force a call: ``_forced_call``), "none" renders none."""
    choice = body.get("tool_choice")
    if choice is None or choice == "auto":
        return tools
    if choice == "none":
        return None
    if isinstance(choice, str):
        if choice == "required":
            if not tools:
                _fail("'tool_choice' \"required\" needs 'tools' for the call.", "tool_choice")
            return tools
        _fail(f"'tool_choice' must be \"none\", \"auto\" or \"required\", got {_shown(choice)}.",
              "tool_choice")
    if not isinstance(choice, Mapping):
        _fail("'tool_choice' must be a string or an object naming a function.", "tool_choice")
    if choice.get("type") == "allowed_tools":
        _allowed_tools(choice, tools)
        return tools
    fn = choice.get("function")
    if choice.get("type") != "function" or not isinstance(fn, Mapping) or not isinstance(
            fn.get("name"), str):
        _fail("'tool_choice' as an object must be {\"type\": \"function\", \"function\": "
              "{\"name\": ...}}.", "tool_choice")
    if not any(t["function"]["name"] == fn["name"] for t in tools or ()):
        _fail(f"'tool_choice' names the function {_shown(fn['name'])}, which is not in "
              "'tools'.", "tool_choice")
    return tools


def _allowed_tools(choice: Mapping, tools: tuple[dict, ...] | None) -> tuple[str | None, tuple]:
    """OpenAI's ``{"type": "allowed_tools", "allowed_tools": {"mode", "tools"}}``, checked:
    (its mode, the names it allows). "required" forces a call of one of them; "auto" offers
    every tool, as "auto" does (the prompt stays the one of the whole list)."""
    spec = choice.get("allowed_tools")
    mode = spec.get("mode", "auto") if isinstance(spec, Mapping) else None
    listed = spec.get("tools") if isinstance(spec, Mapping) else None
    if mode not in ("auto", "required") or not isinstance(listed, list) or not listed:
        _fail("'tool_choice' allowed_tools must be {\"type\": \"allowed_tools\", "
              "\"allowed_tools\": {\"mode\": \"auto\" or \"required\", \"tools\": "
              "[{\"type\": \"function\", \"function\": {\"name\": ...}}, ...]}}.",
              "tool_choice.allowed_tools")
    offered = {t["function"]["name"] for t in tools or ()}
    names = []
    for i, tool in enumerate(listed):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        name = fn.get("name") if isinstance(fn, Mapping) else None
        at = f"tool_choice.allowed_tools.tools[{i}]"
        if not isinstance(name, str):
            _fail(f"'{at}' must be {{\"type\": \"function\", \"function\": {{\"name\": "
                  "...}}.", at)
        if name not in offered:
            _fail(f"'{at}' names the function {_shown(name)}, which is not in 'tools'.", at)
        names.append(name)
    return mode, tuple(dict.fromkeys(names))


def _forced_call(body, tools: tuple[dict, ...] | None) -> tuple[str, ...] | None:
    """The tools one of which the reply must call (checked by ``_tool_choice`` already)."""
    choice = body.get("tool_choice")
    if choice == "required":
        return tuple(t["function"]["name"] for t in tools)
    if isinstance(choice, Mapping) and choice.get("type") == "allowed_tools":
        mode, names = _allowed_tools(choice, tools)
        return names if mode == "required" else None
    if isinstance(choice, Mapping):
        return (choice["function"]["name"],)
    return None


def _prompt(body, vocab_size: int | None) -> str | tuple[int, ...]:
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(type(p) is int for p in prompt):
        # OpenAI's token-id prompt: read as given, never re-tokenized (a branch from a token
        # of an earlier reply resumes from exactly the tokens the model produced).
        bad = next((p for p in prompt if p < 0 or (vocab_size is not None and p >= vocab_size)), None)
        if bad is not None:
            _fail(f"'prompt' holds the token id {bad}, {_out_of_vocabulary(vocab_size)}", "prompt")
        return tuple(prompt)
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if isinstance(prompt, list) and prompt and all(isinstance(p, (str, list)) for p in prompt):
        bad = next((i for i, p in enumerate(prompt) if isinstance(p, list) and not (
            p and all(type(t) is int for t in p))), None)
        if bad is not None:
            _fail(f"'prompt[{bad}]' must be a non-empty list of token ids.", f"prompt[{bad}]")
        if len({type(p) for p in prompt}) > 1:
            _fail("'prompt' mixes strings and token-id lists; send one kind.", "prompt")
        _fail("'prompt' as a list of several prompts is served by Engine.completions (one "
              "choice each), not by a single request.", "prompt")
    if not isinstance(prompt, str):
        _fail("'prompt' must be a string, a list of strings, a list of token ids or a list of "
              "token-id lists.", "prompt")
    return prompt


def check_template_args(kwargs: Any, name: str = "chat_template_kwargs") -> None:
    """Template arguments a request (``chat_template_kwargs``) or the engine
    (``chat_template_args``) may set: variable names, none the engine sets itself."""
    if kwargs is not None and not isinstance(kwargs, Mapping):
        _fail(f"'{name}' must be an object.", name)
    for key in kwargs or ():
        if not isinstance(key, str) or not key.isidentifier():
            _fail(f"'{name}' keys must be template variable names, got {_shown(key)}.", name)
        if key in _ENGINE_TEMPLATE_ARGS:
            what = ("the model's chat template cannot be replaced per request (pass "
                    "chat_template to Engine)" if key == "chat_template"
                    else f"send '{key}' at the top level of the body"
                    if key in _TOP_LEVEL_TEMPLATE_ARGS and name == "chat_template_kwargs"
                    else "the engine sets it" + (" per request" if name != "chat_template_kwargs"
                                                 else ""))
            _fail(f"'{name}.{key}' is not allowed: {what}.", f"{name}.{key}")


def _template_kwargs(body, config: EngineConfig) -> tuple[tuple[str, Any], ...]:
    kwargs = body.get("chat_template_kwargs")
    check_template_args(kwargs)
    merged = {**config.chat_template_args, **(kwargs or {})}
    return tuple(sorted(merged.items()))


# -- fields this engine cannot honour ----------------------------------------------------------
def _refuse_unsupported(body) -> None:
    """Refuse options that, silently ignored, would return something the caller did not ask for."""
    n = body.get("n", 1)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
        _fail(f"'n' must be an integer, got {_shown(n)}.", "n")
    if n not in (None, 1):
        _fail("Only 'n': 1 is supported; send separate requests for more choices.", "n")
    best_of = body.get("best_of")
    if best_of is not None and (isinstance(best_of, bool) or best_of != 1):
        _fail("Only 'best_of': 1 is supported.", "best_of")
    if body.get("echo") not in (None, False):
        _fail("'echo' is not supported; prepend the prompt yourself.", "echo")
    if body.get("suffix") not in (None, ""):
        _fail("'suffix' (fill-in-the-middle) is not supported.", "suffix")
    for name in _CONSTRAINED_DECODING:
        if body.get(name) is not None:
            _fail(f"'{name}' (another server's constrained decoding) is not supported; for "
                  "JSON send 'response_format': {\"type\": \"json_schema\", \"json_schema\": "
                  "{\"schema\": ...}} (other grammars are not decoded to).", name)
    for legacy in ("functions", "function_call"):
        if body.get(legacy) is not None:
            _fail(f"'{legacy}' is the deprecated form; send 'tools' and 'tool_choice'.", legacy)
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        _fail("'parallel_tool_calls' must be true or false.", "parallel_tool_calls")


def _response_format(body, kind: str) -> str | None:
    fmt = body.get("response_format")
    if kind != "chat" and fmt is not None and not (
            isinstance(fmt, Mapping) and fmt.get("type") == "text"):
        _fail("'response_format' is for chat requests; a completion is free text.",
              "response_format")
    return json_schema_for(fmt) if kind == "chat" else None


DEFAULT_MODEL_ALIAS = "default_model"
"""What a request without ``model`` is answered as, and a name every server accepts for the
one it serves (``mlx_lm.server``'s convention)."""


def _model(body, accepted_models) -> str:
    model = body.get("model")
    if model is None:
        return DEFAULT_MODEL_ALIAS
    if not isinstance(model, str):
        _fail("'model' must be a string.", "model")
    if accepted_models is not None and model not in accepted_models and model != DEFAULT_MODEL_ALIAS:
        # Suggest the name /v1/models lists, not the directory it was loaded from.
        known = sorted((m for m in accepted_models if m), key=lambda m: ("/" in m, len(m), m))[:1]
        model = model if len(model) <= 200 else f"{model[:200]}…"  # not a 200 kB name echoed
        _fail(
            f"The model '{model}' is not loaded in this engine; use {known[0]!r} or omit 'model'."
            if known else f"The model '{model}' is not loaded in this engine.",
            "model",
            "model_not_found",
        )
    return model


def _continuation(body, kind: str, messages: tuple[dict, ...]) -> tuple[bool, bool]:
    """(continue_final_message, add_generation_prompt), as vLLM reads them; checked."""
    given = body.get("add_generation_prompt") is not None
    continue_final = _flag(body, "continue_final_message")
    add_prompt = _flag(body, "add_generation_prompt", not continue_final)
    if kind != "chat":
        for name in ("continue_final_message", "add_generation_prompt"):
            if body.get(name) is not None:
                _fail(f"'{name}' applies to chat requests only.", name)
        return False, True
    if continue_final:
        if add_prompt:
            _fail("'continue_final_message' and 'add_generation_prompt' cannot both be true: "
                  "the reply either goes on from the last message or starts a new turn.",
                  "add_generation_prompt" if given else "continue_final_message")
        last = messages[-1]
        if last["role"] != "assistant" or not last["content"]:
            _fail("'continue_final_message' needs the last message to be an assistant message "
                  "with the text to go on from.", "messages")
    return continue_final, add_prompt


def _thinking_token_budget(body, kind: str) -> int | None:
    if body.get("thinking_token_budget") is None:
        return None
    if kind != "chat":
        _fail("'thinking_token_budget' applies to chat requests only.", "thinking_token_budget")
    return _number(body, "thinking_token_budget", None, integer=True, lo=0, hi=2**31 - 1)


def _seed(body) -> int | None:
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        _fail("'seed' must be an integer.", "seed")
    if seed is not None and not 0 <= seed < 2**64:  # mx.random.seed takes an unsigned 64-bit
        _fail("'seed' must be between 0 and 2**64 - 1.", "seed")
    return seed


def _reasoning_field(body, config: EngineConfig) -> str:
    # null is the engine's default, as for every other field (clients that serialize a
    # whole settings object send their unset fields as null).
    field = body.get("reasoning_field")
    if field is None:
        return config.reasoning_field
    if not isinstance(field, str) or field not in _REASONING_FIELDS:
        _fail(f"'reasoning_field' must be 'reasoning' or 'reasoning_content', got "
              f"{_shown(field)}.", "reasoning_field")
    return field


def _role_mapping(body) -> dict | None:
    role_mapping = body.get("role_mapping")
    if role_mapping is None:
        return None
    if not isinstance(role_mapping, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in role_mapping.items()):
        _fail("'role_mapping' must be an object of strings.", "role_mapping")
    return dict(role_mapping) or None


def admit(
    body: Any,
    *,
    kind: str,
    config: EngineConfig,
    accepted_models: frozenset[str] | None = None,
    limits: ModelLimits = ModelLimits(),
    tool_arguments_as_sent: bool = False,
) -> GenerationRequest:
    """Validate ``body`` (a chat-completions or completions dict) into a request.

    ``limits`` are the loaded model's (vocabulary, context); without them the token-id and
    length checks fall back to what MLX itself can represent. ``tool_arguments_as_sent``: a
    history's tool call whose arguments are not JSON is passed on as it is, for a remote
    server to judge (the body is forwarded, and it may be the server's own cut call sent back);
    a local model's chat template needs them as an object, so it is refused otherwise.
    """
    if kind not in ("chat", "completion"):
        raise EngineError(f"kind must be 'chat' or 'completion', not {kind!r}.")
    if not isinstance(body, Mapping):
        _fail("The request body must be a JSON object.", None)
    _check_tree(body)
    _refuse_unsupported(body)
    if body.get("adapters") not in (None, config.adapter_path):
        _fail("Per-request adapters are not supported; pass adapter_path to Engine.", "adapters")
    stream = _flag(body, "stream")
    logprobs, top_logprobs = _logprobs(body, kind, config, limits)
    reasoning_field = _reasoning_field(body, config)
    d = config.sampling_default
    messages = _messages(body, tool_arguments_as_sent) if kind == "chat" else ()
    continue_final, add_prompt = _continuation(body, kind, messages)
    tools = _tool_choice(body, _tools(body)) if kind == "chat" else None
    return GenerationRequest(
        kind=kind,
        model=_model(body, accepted_models),
        messages=messages,
        prompt=_prompt(body, limits.vocab_size) if kind == "completion" else "",
        tools=tools,
        role_mapping=_role_mapping(body),
        chat_template_kwargs=_template_kwargs(body, config) if kind == "chat" else (),
        sampling=_sampling(body, d, limits),
        penalties=_penalties(body, d, limits),
        stop=_stop(body),
        max_tokens=_max_tokens(body, config, limits),
        logprobs=logprobs,
        top_logprobs=top_logprobs,
        seed=_seed(body),
        num_draft_tokens=_number(body, "num_draft_tokens", d("num_draft_tokens"), integer=True,
                                 lo=0, hi=_MAX_DRAFT_TOKENS),
        stream=stream,
        include_usage=_stream_options(body, stream),
        reasoning_field=reasoning_field,
        thinking_token_budget=_thinking_token_budget(body, kind),
        continue_final_message=continue_final,
        add_generation_prompt=add_prompt,
        response_format=_response_format(body, kind),
        forced_call=_forced_call(body, tools) if kind == "chat" else None,
        parallel_tool_calls=body.get("parallel_tool_calls") is not False,
    )
