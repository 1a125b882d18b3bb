"""Typed events a request emits for user interfaces (widgets, magics, traces).

Every event crosses from the engine thread to a caller's thread, so each is a frozen, slotted
dataclass; OpenAI JSON is built from them at the edge (``responses``), never passed around.
A request's stream is: ``Started``, zero or more ``PrefillProgress``, then deltas
(``ReasoningDelta``, ``ContentDelta``, ``ToolCall``, ``ParseProblem``, ``TokenLogprobs`` when
logprobs were asked for), then ``Usage`` and ``Finished`` -- or ``Error`` at any point, which
ends the stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

__all__ = [
    "Started",
    "PrefillProgress",
    "ReasoningDelta",
    "ContentDelta",
    "ToolCall",
    "ParseProblem",
    "UnreadToolCall",
    "TokenLogprobs",
    "Usage",
    "Finished",
    "Error",
    "EngineEvent",
]


@dataclass(frozen=True, slots=True)
class Started:
    """The request was admitted and scheduled."""

    request_id: str
    prompt_tokens: int
    cached_tokens: int
    """Prompt tokens served from the prompt cache (not recomputed)."""


@dataclass(frozen=True, slots=True)
class PrefillProgress:
    """Prompt processing progress; ``processed`` counts prompt tokens done out of ``total``."""

    processed: int
    total: int


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ContentDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One complete tool call the model emitted."""

    index: int
    """Position among this reply's tool calls, from 0."""
    id: str
    name: str
    arguments: dict[str, Any]
    text: str
    """The raw markup the call was parsed from."""


@dataclass(frozen=True, slots=True)
class UnreadToolCall:
    """A tool call a remote server sent whose arguments are not JSON (the ``ParseProblem``'s
    ``text`` holds them as sent). An API client gets it as the server sent it, as a proxy
    passes on what it cannot read; the notebook shows it as a problem and never runs it."""

    index: int
    """Position among this reply's tool calls, from 0 (as ``ToolCall.index``)."""
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ParseProblem:
    """Output that looked like markup but did not parse; the raw text is kept, never lost."""

    text: str
    message: str
    in_reply: bool = True
    """Whether ``text`` is part of the reply's content, where the model wrote it (the engine's
    own problems, sent to clients as content); False for a remote server's tool-call field that
    did not read, which was never content."""
    call: UnreadToolCall | None = None
    """The tool call whose arguments ``text`` is, when a remote server sent them (``in_reply``
    is then False); None for markup and for a call with no function name."""


@dataclass(frozen=True, slots=True)
class TokenLogprobs:
    """One generated token with its log-probability and the top alternatives."""

    token_id: int
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    """(token text, logprob) pairs, most likely first."""
    from_draft: bool | None = None
    """With a draft model: True when the draft proposed this token and the model kept it."""
    raw: bytes | None = None
    """The token's own UTF-8 bytes where its text cannot show them: a piece of a character
    (an emoji's first two bytes), whose ``token`` reads U+FFFD. None: ``token`` encoded."""
    top_raw: tuple[bytes | None, ...] = ()
    """``raw`` of each alternative in ``top``, where it has one (empty: none has)."""
    ends_reply: bool = False
    """The model's end-of-sequence token, which ends the reply and shows no text. The token
    view shows it; OpenAI-style chat logprobs leave it out, so that their tokens spell the
    reply (mlx_lm.server lists it)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts and timings; times in seconds, rates in tokens per second, memory in bytes.

    A remote server's reply (``RemoteEngine``) has None for what cannot be seen from here:
    the server's memory, a prefill speed when it reports no prompt size, a decode speed when
    the reply came in one piece."""

    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    time_to_first_token: float
    prefill_tokens_per_second: float | None
    decode_tokens_per_second: float | None
    peak_memory: int | None
    """MLX's peak memory (bytes, model weights included) since the engine last went from idle
    to busy: this request's own peak when it ran alone; with concurrent requests, the peak of
    everything the engine ran since the first of them started."""
    accepted_draft_tokens: int | None = None
    """Completion tokens the draft model proposed and the model accepted; None without one."""
    reasoning_tokens: int | None = None
    """Completion tokens inside reasoning (markers excluded); counted only for a request with
    a ``thinking_token_budget`` whose reply reasoned, None otherwise."""


@dataclass(frozen=True, slots=True)
class Finished:
    """The request ended; ``reason`` is ``stop``, ``length``, ``tool_calls`` or ``cancelled``."""

    reason: str


@dataclass(frozen=True, slots=True)
class Error:
    """The request failed; ``type`` follows OpenAI's error types."""

    message: str
    type: str = "server_error"


EngineEvent = Union[
    Started, PrefillProgress, ReasoningDelta, ContentDelta, ToolCall, ParseProblem,
    TokenLogprobs, Usage, Finished, Error,
]
