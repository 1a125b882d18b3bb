"""``ChunkReader``: a remote server's OpenAI chunks in, the engine's typed events out.

A pure step per chunk (no IO), so the notebook's turn and widgets read a remote reply exactly
as they read a local one. Reasoning comes from the server's ``reasoning`` or
``reasoning_content`` field when it sends one; raw text with markers is split here by the one
``StreamFilter`` (DESIGN.md principle 2). Streamed tool calls arrive as fragments (a name,
then pieces of the arguments) and become one ``ToolCall`` each when the reply ends.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from .._events import (
    ContentDelta, EngineEvent, Finished, ParseProblem, ReasoningDelta, TokenLogprobs, ToolCall,
    UnreadToolCall, Usage,
)
from .._errors import json_failure
from ..parsing import StreamFilter, get_family

__all__ = ["ChunkReader", "ServerUsage", "UnexpectedShape"]

_REASONING_FIELDS = ("reasoning", "reasoning_content")


class UnexpectedShape(ValueError):
    """A chunk no OpenAI-compatible server sends; the message says what was wrong with it."""


@dataclass(slots=True)
class _CallPieces:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ServerUsage:
    """What the server's usage object said; ``cached_tokens`` is None when it said nothing."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None


class ChunkReader:
    """Feed ``read(chunk)`` every parsed ``data:`` object of one reply, then ``finish()``."""

    def __init__(self, family: str, *, kind: str = "chat", tools: list | None = None,
                 starts_in_reasoning: bool | None = None):
        """``starts_in_reasoning``: False when the reply cannot begin inside reasoning (thinking
        was turned off, or the server splits reasoning itself); None leaves it to the family."""
        self._family = get_family(family)
        self._tools = tools
        self.kind = kind
        self._filter = self._new_filter(starts_in_reasoning)
        self._fed = False
        self.server_splits_reasoning = False
        """The server sent a reasoning field: its content is then content, never reasoning
        (a template that opens reasoning in the prompt would otherwise make all of it so)."""
        self._calls: dict[int, _CallPieces] = {}
        self._last_call: int | None = None
        self._parsed_calls = 0
        self.generated = 0
        """Chunks that carried any part of the reply (text, reasoning or a tool call's piece)."""
        self.request_id: str | None = None
        self.finish_reason: str | None = None
        self.usage: ServerUsage | None = None
        self.completion_deltas = 0
        """Chunks that carried generated text: the completion-token count when the server
        sends no usage (one token per chunk, as OpenAI-compatible servers stream)."""

    def _new_filter(self, starts_in_reasoning: bool | None) -> StreamFilter:
        if not self._family.starts_in_reasoning:
            starts_in_reasoning = False
        return StreamFilter(self._family, tools=self._tools, starts_in_reasoning=starts_in_reasoning)

    def read(self, chunk: dict[str, Any]) -> list[EngineEvent]:
        self.request_id = self.request_id or chunk.get("id")
        if chunk.get("usage"):
            self.usage = _server_usage(chunk["usage"]) or self.usage
        out: list[EngineEvent] = []
        choices = chunk.get("choices") or []
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise UnexpectedShape(f"its choices are {json.dumps(choices)[:40]}, not a list of "
                                  "objects")
        for choice in choices:
            if (choice.get("index") or 0) not in (0, "0"):  # (null or "0": a sloppy server's 0)
                continue
            out += self._logprobs(choice.get("logprobs"))
            delta = choice.get("delta") or choice.get("message") or {}
            if self.kind == "completion":
                delta = {"content": choice.get("text")}
            out += self._delta(delta)
            if choice.get("finish_reason"):
                reason = choice["finish_reason"]
                self.finish_reason = reason if isinstance(reason, str) else "stop"
        return out

    def _delta(self, delta: dict[str, Any]) -> list[EngineEvent]:
        out: list[EngineEvent] = []
        # One field only: a server in transition between the two names may fill both.
        reasoning = next((delta[name] for name in _REASONING_FIELDS
                          if isinstance(delta.get(name), str) and delta[name]), None) \
            or _thinking(delta.get("content"))
        if reasoning:
            if not self.server_splits_reasoning:
                self.server_splits_reasoning = True
                if self._filter.starts_in_reasoning:  # flush what it holds, then start anew
                    out += self._split(self._filter.finish()) if self._fed else []
                    self._filter = self._new_filter(False)
            self.completion_deltas += 1
            out.append(ReasoningDelta(reasoning))
        text = _text(delta.get("content"))
        if text:
            self.completion_deltas += 1
            if self.kind == "completion":
                out.append(ContentDelta(text))
            else:
                self._fed = True
                out += self._split(self._filter.feed(text))
        pieces = delta.get("tool_calls") or []
        for piece in pieces if isinstance(pieces, list) else []:
            if isinstance(piece, dict):
                self._call_piece(piece)
        if reasoning or text or pieces:
            self.generated += 1
        return out

    def _call_piece(self, piece: dict[str, Any]) -> None:
        """Fold one streamed fragment of a tool call into its call, by index; a fragment with
        no index goes on the call before it unless it brings an id of its own."""
        function = piece.get("function") if isinstance(piece.get("function"), dict) else {}
        index = piece.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            last = self._calls.get(self._last_call) if self._last_call is not None else None
            fresh = (last is None or (piece.get("id") and last.id and piece["id"] != last.id)
                     or (function.get("name") and last.name))  # a second name: a second call
            index = (max(self._calls) + 1 if self._calls else 0) if fresh else self._last_call
        self._last_call = index
        call = self._calls.setdefault(index, _CallPieces())
        call.id = str(piece.get("id") or call.id)
        call.name = str(function.get("name") or call.name)
        arguments = function.get("arguments")
        if arguments is not None and arguments != "":
            # A server that sends the arguments as an object (Ollama's way) sends them whole.
            call.arguments.append(arguments if isinstance(arguments, str) else json.dumps(arguments))

    def _split(self, events) -> list[EngineEvent]:
        out: list[EngineEvent] = []
        for e in events:
            if e.kind == "reasoning":
                out.append(ReasoningDelta(e.text))
            elif e.kind == "content":
                out.append(ContentDelta(e.text))
            elif e.kind == "tool_call":
                out.append(ToolCall(self._parsed_calls, e.id or _call_id(), e.name or "",
                                    dict(e.arguments or {}), e.text))
                self._parsed_calls += 1
            else:
                out.append(ParseProblem(e.text, e.message))
        return out

    def _logprobs(self, logprobs: dict | None) -> list[EngineEvent]:
        """The token log-probabilities a server sent, in OpenAI's shapes or mlx_lm.server's
        (``{"id", "logprob"}``, with ``token`` only beside ``top_logprobs``); an entry
        without a number is left out rather than failing the reply."""
        if not isinstance(logprobs, dict):
            return []
        out = []
        if self.kind == "completion":
            tokens = _listed(logprobs.get("tokens"))
            values = _listed(logprobs.get("token_logprobs"))
            tops = _listed(logprobs.get("top_logprobs")) or [{}] * len(tokens)
            for token, value, top in zip(tokens, values, tops):
                alternatives = top.items() if isinstance(top, dict) else ()
                out.append(_token_logprobs(-1, token, value, alternatives))
        else:
            for item in _listed(logprobs.get("content")):
                if isinstance(item, dict):
                    alternatives = [(t.get("token", ""), t.get("logprob"))
                                    for t in _listed(item.get("top_logprobs")) if isinstance(t, dict)]
                    out.append(_token_logprobs(item.get("id"), item.get("token", ""),
                                               item.get("logprob"), alternatives))
        return [e for e in out if e is not None]

    def finish(self, *, cancelled: bool = False) -> list[EngineEvent]:
        """What the filter still held, the tool calls the server streamed, and ``Finished``
        (``Usage`` is the caller's: it knows the timings)."""
        out = self._split(self._filter.finish()) if self.kind == "chat" else []
        sent = self._parsed_calls  # the reply's tool calls so far, an API client's tool_calls
        for _, call in sorted(self._calls.items()):
            raw = "".join(call.arguments)
            if not call.name:
                # No function to name: a problem to show, not a call a client could run or
                # answer (a tool_calls entry naming "" only fails there, later and obscurely).
                out.append(ParseProblem(raw, "the server sent a tool call with no function name",
                                        in_reply=False))
                continue
            call_id = call.id or _call_id()
            try:
                arguments = json.loads(raw) if raw.strip() else {}
            except (ValueError, RecursionError) as exc:
                # Not run here, but an API client gets it as the server sent it (its own loop
                # decides what a cut call means).
                out.append(ParseProblem(raw, f"the server sent tool call {call.name!r} with "
                                             f"arguments that are not JSON ({json_failure(exc)})",
                                        in_reply=False,
                                        call=UnreadToolCall(sent, call_id, call.name)))
            else:
                if not isinstance(arguments, dict):
                    arguments = {"value": arguments}
                out.append(ToolCall(sent, call_id, call.name, arguments, raw))
            sent += 1
        reason = "cancelled" if cancelled else (self.finish_reason or "stop")
        if reason == "stop" and sent:
            reason = "tool_calls"
        elif reason == "tool_calls" and not sent:
            reason = "stop"  # (a client told "tool_calls" looks for calls: there are none)
        out.append(Finished(reason))
        return out

    def usage_event(self, *, prompt_tokens_hint: int, seconds_to_first: float,
                    seconds_total: float) -> Usage:
        """The reply's ``Usage``: the server's counts when it sent them, else counted here."""
        u = self.usage
        completion = u.completion_tokens if u else self.completion_deltas
        prompt = u.prompt_tokens if u else prompt_tokens_hint
        decode_seconds = seconds_total - seconds_to_first
        return Usage(
            prompt_tokens=prompt,
            cached_tokens=(u.cached_tokens or 0) if u else 0,
            completion_tokens=completion,
            time_to_first_token=seconds_to_first,
            prefill_tokens_per_second=prompt / seconds_to_first if prompt and seconds_to_first > 0
            else None,
            # A reply that came in one piece has no decode time to divide by.
            decode_tokens_per_second=(max(completion - 1, 0) / decode_seconds
                                      if decode_seconds > 1e-3 else None),
            peak_memory=None,
        )


def _server_usage(usage: Any) -> ServerUsage | None:
    """The server's usage; None when its counts are not numbers (the reply is still whole, and
    its counts are then made here)."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    prompt = _count(usage.get("prompt_tokens") or 0)
    completion = _count(usage.get("completion_tokens") or 0)
    if prompt is None or completion is None:
        return None
    return ServerUsage(prompt, completion, None if cached is None else _count(cached))


def _count(value: Any) -> int | None:
    """A token count a server sent (a number, or a number as text); None for anything else."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 2**63:
        return None
    return int(value)


def _text(content: Any) -> str:
    """A delta's text: a string, or content parts (``[{"type": "text", "text": ...}]``, as
    Mistral's API sends); raises ``UnexpectedShape`` for a number or an object."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "".join(part.get("text") for part in content if isinstance(part, dict)
                       and part.get("type") == "text" and isinstance(part.get("text"), str))
    kind = ("an object" if isinstance(content, dict) else
            "true or false" if isinstance(content, bool) else "a number")
    raise UnexpectedShape(f"its content is {kind} ({json.dumps(content)[:40]}), not text")


def _thinking(content: Any) -> str:
    """The reasoning in a delta's content parts: Mistral's reasoning models stream it as
    ``{"type": "thinking", "thinking": [{"type": "text", "text": ...}]}`` beside the text."""
    if not isinstance(content, list):
        return ""
    parts = [part.get("thinking") for part in content
             if isinstance(part, dict) and part.get("type") == "thinking"]
    return "".join(p if isinstance(p, str) else _text(p) if isinstance(p, list) else ""
                   for p in parts)


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else []


def _token_logprobs(token_id: Any, token: Any, logprob: Any, alternatives) -> TokenLogprobs | None:
    if _logprob(logprob) is None:
        return None
    top = tuple((str(t), _logprob(v)) for t, v in alternatives if _logprob(v) is not None)
    return TokenLogprobs(token_id if type(token_id) is int else -1, str(token), _logprob(logprob), top)


def _logprob(value: Any) -> float | None:
    """A log-probability a server sent, as a float; None for anything else (null, text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
