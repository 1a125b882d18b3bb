"""Rendering: turn an admitted request into prompt text, token ids and cache segments.

Follows ``mlx_lm.server``'s ``_tokenize`` so that the same body gives the same tokens (the
parity harness checks it): chat template via the tokenizer wrapper, its role-mapping
fallback for tokenizers without a template, and the same segmentation (system prompt, the
conversation, a short thinking tail) that decides where prompt-cache snapshots are taken.
Models that ship a Python encoder instead of a Jinja template (DeepSeek-V4) render through it:
``prompt_encoders.encoder_for(model_type)`` picks the module by the model's type.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from .._upstream import role_mapping_prompt
from ._admission import GenerationRequest
from ._prompt_encoders import encoder_for
from ._text_encoder import TextEncoder
from .._errors import EngineError, EngineRequestError

__all__ = ["Segment", "RenderedPrompt", "render", "check_chat_template"]

# Tokens after the last <think> that still count as the "thinking tail" segment; the same
# window mlx_lm.server uses so both cut their prompt-cache snapshots at the same place.
_THINKING_TAIL_WINDOW = 11


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of prompt tokens ``[start, end)``; the cache snapshots each segment's end."""

    kind: str
    """``system``, ``user`` (the conversation) or ``assistant`` (the generation prefix)."""
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    text: str
    """The prompt exactly as the model reads it (special tokens included)."""
    tokens: tuple[int, ...]
    segments: tuple[Segment, ...]
    tools_rendered: bool | None = None
    """Whether the request's tools reached the prompt: None without tools, False when the
    chat template ignores them (the model never sees them and may invent an answer)."""


def _role_mapping_prompt(messages, role_mapping) -> str:
    # mlx_lm.server's convert_chat, for tokenizers without a chat template.
    return role_mapping_prompt([dict(m) for m in messages], role_mapping)


def _template_messages(request: GenerationRequest) -> list[dict]:
    # OpenAI's "developer" role is a system prompt to every open chat template.
    return [
        {**m, "role": "system"} if m["role"] == "developer" else dict(m)
        for m in request.messages
    ]


def _chat_text(request: GenerationRequest, tokenizer, model_type: str) -> str:
    messages = _template_messages(request)
    kwargs = request.template_kwargs
    encoder = encoder_for(model_type)
    if encoder is not None:  # a model that ships a Python encoder instead of a Jinja template
        _refuse_continuation(request, "this model's prompt encoder")
        return encoder.encode_messages(
            messages,
            tools=list(request.tools) if request.tools else None,
            thinking=bool(kwargs.get("enable_thinking", kwargs.get("thinking", True))),
            reasoning_effort=kwargs.get("reasoning_effort"),
        )
    # passed only when set: a template function of mlx-lm's own may not take it
    extra = {"continue_final_message": True} if request.continue_final_message else {}

    def apply(messages):
        return tokenizer.apply_chat_template(
            messages,
            tools=list(request.tools) if request.tools else None,
            add_generation_prompt=request.add_generation_prompt,
            tokenize=False,
            **extra,
            **kwargs,
        )

    try:
        return apply(messages)
    except EngineRequestError:
        raise
    except Exception as e:  # jinja raises on templates' own checks (roles, alternation)
        if (split := _one_call_per_turn(messages)) is not messages:
            try:  # a template that renders one call per turn (Meta's Llama 3 raises on two)
                return apply(split)
            except Exception:  # noqa: BLE001 -- not why it refused: its own message says why
                pass
        raise EngineRequestError(
            f"The chat template rejected these messages: {e}", param="messages"
        ) from e


def _refuse_continuation(request: GenerationRequest, what: str) -> None:
    for name, value in (("continue_final_message", True), ("add_generation_prompt", False)):
        if getattr(request, name) == value:
            raise EngineRequestError(
                f"'{name}': {str(value).lower()} needs a chat template; {what} cannot do it.",
                param=name)


def _one_call_per_turn(messages: list[dict]) -> list[dict]:
    """``messages`` with each assistant turn of several tool calls written as consecutive
    turns of one call, each followed by its result, or ``messages`` itself when no turn has
    several. A result goes with the call its ``tool_call_id`` names; those naming no call pair
    with the calls left in order, and a result no call takes follows the last of them."""
    if not any(len(m.get("tool_calls") or ()) > 1 for m in messages):
        return messages
    known = {call.get("id") for m in messages for call in m.get("tool_calls") or ()
             if isinstance(call, dict) and call.get("id")}
    out: list[dict] = []
    i = 0
    while i < len(messages):
        message, i = messages[i], i + 1
        calls = message.get("tool_calls") or []
        if message["role"] != "assistant" or len(calls) < 2:
            out.append(message)
            continue
        results = []
        while i < len(messages) and messages[i]["role"] == "tool":
            results.append(messages[i])
            i += 1
        paired: list[dict | None] = []
        for call in calls:  # by id first, each result used once
            call_id = call.get("id") if isinstance(call, dict) else None
            match = next((r for r in results if call_id and r.get("tool_call_id") == call_id),
                         None)
            if match is not None:
                results.remove(match)
            paired.append(match)
        strays = [r for r in results if r.get("tool_call_id") not in known]
        for k, result in enumerate(paired):  # then results naming no call, in order
            if result is None and strays:
                paired[k] = strays.pop(0)
                results.remove(paired[k])
        reasoning = {key: "" for key in ("reasoning", "reasoning_content") if key in message}
        for k, (call, result) in enumerate(zip(calls, paired)):
            turn = {**message, "tool_calls": [call]}
            if k:  # the turn's text and thought once, with its first call
                turn.update(content="", **reasoning)
            out.append(turn)
            if result is not None:
                out.append(result)
        out += results
    return out


def _segments(request, tokenizer, tokens: list[int], kwargs: dict[str, Any], encoder) -> tuple:
    """System / conversation / thinking-tail split, as mlx_lm.server computes it."""
    n = len(tokens)
    messages = request.messages
    if messages[-1]["role"] != "user":
        return (Segment("assistant", 0, n),)
    sys_end = 0
    num_system = 0
    for m in messages:
        if m["role"] not in ("system", "developer"):
            break
        num_system += 1
    if num_system:
        head = _template_messages(request)[:num_system] + [{"role": "user", "content": ""}]
        try:
            sys_text = tokenizer.apply_chat_template(
                head, tools=list(request.tools) if request.tools else None,
                add_generation_prompt=False, tokenize=False, **kwargs,
            )
            sys_tokens = encoder.encode(sys_text, add_special_tokens=False)
        except Exception:  # a template that refuses an empty user turn: no system segment
            sys_tokens = []
        for i, (a, b) in enumerate(zip(sys_tokens, tokens)):
            if a != b:
                sys_end = i
                break
        if not 0 < sys_end < n:
            sys_end = 0
    tail_start = n
    if tokenizer.has_thinking:
        think = tokenizer.rfind_think_start(tokens, start=n - _THINKING_TAIL_WINDOW)
        if think >= 0:
            tail_start = think
    segments = []
    if sys_end:
        segments.append(Segment("system", 0, sys_end))
    if sys_end < tail_start:
        segments.append(Segment("user", sys_end, tail_start))
    if tail_start < n:
        segments.append(Segment("assistant", tail_start, n))
    return tuple(segments) or (Segment("assistant", 0, n),)


# Characters per token no real prompt reaches: a text longer than this many times the context
# cannot fit, and is refused before it holds the tokenizer lock (which other callers wait on).
CHARS_PER_TOKEN_BOUND = 32


def _encode(encoder: TextEncoder, text: str, param: str, max_chars: int | None = None,
            **kwargs) -> list[int]:
    if max_chars is not None and len(text) > max_chars:
        raise EngineRequestError(
            # (Worded as OpenAI's and vLLM's refusals are: clients such as litellm tell a
            # context overflow by the words alone.)
            f"The prompt of {len(text)} characters is longer than the model's context length "
            f"of {max_chars // CHARS_PER_TOKEN_BOUND} tokens; shorten it.", param=param,
            code="context_length_exceeded")
    try:
        return encoder.encode(text, **kwargs)
    except Exception as e:  # admission refuses what tokenizers choke on; this is a backstop
        raise EngineRequestError(f"The prompt could not be tokenized: {e}.",
                                 param=param) from e


def _completion_tokens(prompt: str, tokenizer, encoder: TextEncoder, max_chars) -> list[int]:
    tokens = _encode(encoder, prompt, "prompt", max_chars)
    if not tokens:
        # OpenAI serves an empty prompt as the start of a document: the model reads one
        # beginning-of-text token (mlx-lm cannot prefill zero tokens).
        start = tokenizer.bos_token_id
        if start is None:
            start = next(iter(tokenizer.eos_token_ids), None)
        if start is None:
            raise EngineRequestError("'prompt' is empty and this model has no start token to "
                                     "begin from; send some text.", param="prompt")
        tokens = [start]
    return tokens


def render(request: GenerationRequest, tokenizer, *, model_type: str = "",
           encoder: TextEncoder | None = None, context_length: int | None = None) -> RenderedPrompt:
    """Render and tokenize ``request`` for ``tokenizer`` (an mlx-lm TokenizerWrapper).

    The template renders on the caller's thread without a lock (one slow render never holds
    up another caller's); only the tokenizer calls take ``encoder``'s lock (the engine's one
    ``TextEncoder``, which remembers the conversation's pieces). With ``context_length``, a
    text that cannot fit it is refused before tokenizing.
    """
    encoder = encoder or TextEncoder(tokenizer)
    limit = CHARS_PER_TOKEN_BOUND * context_length if context_length else None
    if request.kind == "completion":
        if isinstance(request.prompt, tuple):  # token ids: exactly these, no tokenizer
            return RenderedPrompt(tokenizer.decode(list(request.prompt)), request.prompt,
                                  (Segment("assistant", 0, len(request.prompt)),))
        tokens = _completion_tokens(request.prompt, tokenizer, encoder, limit)
        return RenderedPrompt(request.prompt, tuple(tokens), (Segment("assistant", 0, len(tokens)),))
    if encoder_for(model_type) is None and not tokenizer.has_chat_template:
        _refuse_continuation(request, "this model has none (its prompt is the role-mapping "
                                      "fallback)")
        text = _role_mapping_prompt(request.messages, request.role_mapping)
        tokens = _encode(encoder, text, "messages", limit)
        return RenderedPrompt(text, tuple(tokens), (Segment("assistant", 0, len(tokens)),),
                              tools_rendered=False if request.tools else None)
    text = _chat_text(request, tokenizer, model_type)
    tokens = _encode(encoder, text, "messages", limit, add_special_tokens=False)
    if not tokens:
        raise EngineRequestError("The rendered prompt is empty.", param="messages")
    segments = _segments(request, tokenizer, tokens, request.template_kwargs, encoder)
    return RenderedPrompt(text, tuple(tokens), segments, _tools_rendered(request, text, tokenizer, model_type))


def _tools_rendered(request: GenerationRequest, text: str, tokenizer, model_type: str) -> bool | None:
    """Whether the request's tools changed the prompt; None without tools.

    A template without a tools block renders the same text with and without them (SmolLM2's):
    one more render, only for tool requests, tells the caller so. A template that refuses to
    render without tools plainly uses them: the request itself already rendered, so that
    refusal never fails it.
    """
    if not request.tools:
        return None
    try:
        return text != _chat_text(replace(request, tools=None), tokenizer, model_type)
    except EngineRequestError:
        return True


def check_chat_template(tokenizer, model_type: str = "") -> None:
    """Render a one-message conversation once at load; raise ``EngineError`` if the sandbox
    refuses the model's own template (otherwise every request would fail, blamed on its
    messages). A template's own checks (``raise_exception``) are left to the requests."""
    from jinja2 import TemplateSyntaxError
    from jinja2.exceptions import SecurityError

    if encoder_for(model_type) is not None or not tokenizer.has_chat_template:
        return
    template = tokenizer.chat_template
    # A dict of named templates (default, tool_use) is transformers' own form too.
    named = template.values() if isinstance(template, dict) else [template]
    if not named or not all(isinstance(t, str) for t in named):
        raise EngineError(
            f"The model's chat template is not a Jinja template (tokenizer_config.json holds "
            f"{type(template).__name__}); pass chat_template=... to use another one.")
    try:
        with _deadline(_SAMPLE_RENDER_SECONDS):
            text = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}],
                                                 add_generation_prompt=True, tokenize=False)
    except _TemplateTooSlow:
        raise EngineError(
            f"The model's chat template cannot be used: one short message took more than "
            f"{_SAMPLE_RENDER_SECONDS:g} s to render (a loop that does not end); pass "
            f"chat_template=... to use another one.") from None
    except (SecurityError, TemplateSyntaxError) as e:
        raise EngineError(
            f"The model's chat template cannot be used: the template sandbox refused it "
            f"({type(e).__name__}: {e}); pass chat_template=... to use another one."
        ) from e
    except Exception:  # the template's own rules (roles, alternation): requests will say
        return
    if len(text) > _SAMPLE_RENDER_CHARS:
        raise EngineError(
            f"The model's chat template cannot be used: one short message renders as "
            f"{len(text):,} characters; pass chat_template=... to use another one.")


_SAMPLE_RENDER_CHARS = 1_000_000
"""Far above any real template's rendering of one short message (a few hundred characters),
far below what would exhaust memory when the tokenizer reads it."""
_SAMPLE_RENDER_SECONDS = 10.0
"""Real templates render one short message in milliseconds, traced or not."""


class _TemplateTooSlow(Exception):
    pass


@contextmanager
def _deadline(seconds: float):
    """Raise ``_TemplateTooSlow`` in this thread's Python code once ``seconds`` have passed.

    A template is compiled to Python and a Jinja loop gives no hook of its own, so a line
    tracer is the one way to stop a template that never ends (the sandbox bounds each
    ``range`` but not two nested ones). Only for the one sample render at load; the tracer
    in place before (a debugger, coverage) is put back.
    """
    end = time.monotonic() + seconds
    fired = False

    def tracer(frame, event, arg):
        nonlocal fired
        if fired:
            return None
        if time.monotonic() > end:
            fired = True  # once: the handlers it unwinds through run untraced
            raise _TemplateTooSlow
        return tracer

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(before)
