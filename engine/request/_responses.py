"""OpenAI response shapes, built at the edge from a request's typed events.

Field names, ``finish_reason`` values, tool-call objects and usage (with
``prompt_tokens_details.cached_tokens``) follow ``mlx_lm.server``. Where the server departs
from the OpenAI API we follow OpenAI: logprobs objects (``token``/``logprob``/``bytes``/
``top_logprobs`` for chat, the legacy ``tokens``/``token_logprobs`` lists for completions)
and the ``object`` of the final usage chunk (``chat.completion.chunk``/``text_completion``).
Markup that did not parse (a ``ParseProblem``: a tool call cut off by ``max_tokens``, a call
whose JSON is broken) reaches the client as content, its raw text as the model wrote it; the
server drops a call it cannot parse, so its text is lost. A remote server's tool call whose
arguments are not JSON (``ParseProblem.call``) reaches the client as the tool call it sent,
its arguments as sent: a proxy passes on what it cannot read (the notebook does not run it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator

from .. import _upstream
from ._admission import GenerationRequest
from .._errors import EngineRequestError
from .._events import (
    ContentDelta, Error, Finished, ParseProblem, ReasoningDelta, TokenLogprobs, ToolCall,
    UnreadToolCall, Usage,
)

__all__ = [
    "Collected", "collect", "chat_completion", "chat_chunks", "text_completion",
    "completion_chunks", "ChatChunks", "CompletionChunks", "text_completion_list",
    "completion_list_chunks", "system_fingerprint",
]


def system_fingerprint() -> str:
    """mlx_lm.server's fingerprint, so both report the same value."""
    return _upstream.system_fingerprint()


@dataclass(slots=True)
class Collected:
    """A whole reply gathered from its events."""

    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    unread_calls: list[ParseProblem] = field(default_factory=list)
    """A remote server's tool calls whose arguments are not JSON: sent on among the tool calls
    (by their ``call.index``), never run."""
    logprobs: list[TokenLogprobs] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str = "stop"


def _raise(event: Error):
    kind = event.type if event.type else "server_error"
    raise EngineRequestError(event.message, type=kind)


def collect(events: Iterable) -> Collected:
    """Gather a reply; an ``Error`` event raises ``EngineRequestError``."""
    out = Collected()
    content, reasoning = [], []
    for e in events:
        t = type(e)
        if t is ContentDelta or (t is ParseProblem and e.in_reply):
            content.append(e.text)
        elif t is ReasoningDelta:
            reasoning.append(e.text)
        elif t is TokenLogprobs:
            out.logprobs.append(e)
        elif t is ToolCall:
            out.tool_calls.append(e)
        elif t is ParseProblem and e.call is not None:
            out.unread_calls.append(e)
        elif t is Usage:
            out.usage = e
        elif t is Finished:
            out.finish_reason = e.reason
        elif t is Error:
            _raise(e)
    out.content, out.reasoning = "".join(content), "".join(reasoning)
    return out


def _usage(u: Usage | None) -> dict:
    if u is None:
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
                "prompt_tokens_details": {"cached_tokens": 0}}
    usage = {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
    }
    if u.accepted_draft_tokens is not None:
        # OpenAI's field for predicted tokens that made it into the completion.
        usage["completion_tokens_details"] = {
            "accepted_prediction_tokens": u.accepted_draft_tokens}
    return usage


def _call_of(e: ToolCall | ParseProblem) -> ToolCall | UnreadToolCall:
    """The tool call a client gets for ``e``: a parsed one, or a remote server's whose
    arguments are not JSON."""
    return e if type(e) is ToolCall else e.call


def _sent_call(e: ToolCall | ParseProblem) -> tuple[ToolCall | UnreadToolCall, str]:
    """A tool call as a client gets it, and its arguments' text: JSON of those parsed, or
    those a remote server sent that are not JSON, as it sent them."""
    if type(e) is ToolCall:
        return e, json.dumps(e.arguments, ensure_ascii=False)
    return e.call, e.text


def _tool_call(e: ToolCall | ParseProblem, streaming: bool) -> dict:
    call, arguments = _sent_call(e)
    out = {
        "function": {"name": call.name, "arguments": arguments},
        "type": "function",
        "id": call.id,
    }
    if streaming:
        out["index"] = call.index
    return out


def _bytes(text: str, raw: bytes | None = None) -> list[int]:
    return list(text.encode("utf-8") if raw is None else raw)


def _chat_logprobs(items: list[TokenLogprobs]) -> dict:
    # ``bytes`` are the token's own (a piece of an emoji too), so that joined they give the
    # reply's text, as OpenAI's field is meant to; the end-of-sequence token, which shows no
    # text, is left out (as OpenAI and vLLM leave it; mlx_lm.server lists it).
    return {"content": [
        {
            "token": lp.token,
            "logprob": lp.logprob,
            "bytes": _bytes(lp.token, lp.raw),
            "top_logprobs": [
                {"token": t, "logprob": v, "bytes": _bytes(t, raw)}
                for (t, v), raw in zip(lp.top, lp.top_raw or (None,) * len(lp.top))
            ],
        }
        for lp in items if not lp.ends_reply
    ]}


def _text_logprobs(items: list[TokenLogprobs], *, at: int = 0, skip: int = 0,
                   end: int | None = None) -> dict:
    """The legacy ``logprobs`` object. ``text_offset`` indexes the reply's text: tokens'
    text from ``at`` on, less the ``skip`` leading characters the text lacks, at most
    ``end`` (the text's length so far)."""
    offsets, pos = [], at
    for lp in items:
        offset = max(0, pos - skip)
        offsets.append(offset if end is None else min(offset, end))
        pos += len(lp.token)
    return {
        "tokens": [lp.token for lp in items],
        "token_logprobs": [lp.logprob for lp in items],
        # As OpenAI's legacy API: the sampled token is always among its alternatives (up to
        # ``logprobs`` + 1 of them; one at ``logprobs: 0``).
        "top_logprobs": [{**dict(lp.top), lp.token: lp.logprob} for lp in items],
        "text_offset": offsets,
    }


def _dropped_space(tokens: str, text: str) -> int:
    """How much leading whitespace of the tokens' text the reply's text lacks: a detokenizer
    drops the space a reply's first token starts with (``" 4"`` reads ``"4"``). The text may
    end sooner (a stop string, or a stream holding a tail back), never start later."""
    lead = len(tokens) - len(tokens.lstrip())
    return next((k for k in range(lead + 1) if tokens.startswith(text, k)), 0)


def _head(request_id: str, obj: str, request: GenerationRequest, created: int) -> dict:
    return {
        "id": request_id,
        "system_fingerprint": system_fingerprint(),
        "object": obj,
        "model": request.model,
        "created": created,
    }


def chat_completion(events, *, request: GenerationRequest, request_id: str, created: int) -> dict:
    """A ``chat.completion`` object."""
    r = collect(events)
    # As OpenAI: null beside tool calls when there is no text (the blank lines a model writes
    # between its reasoning and its calls are none; mlx_lm.server sends them); an empty
    # answer (a stop string at its start, a cancelled request) is "" (the server sends null).
    blank = not r.content.strip()
    calls = sorted([*r.tool_calls, *r.unread_calls], key=lambda e: _call_of(e).index)
    message = {"role": "assistant", "content": None if calls and blank else r.content}
    if r.reasoning:
        message[request.reasoning_field] = r.reasoning
    if calls:
        message["tool_calls"] = [_tool_call(c, False) for c in calls]
    choice = {"index": 0, "finish_reason": r.finish_reason, "message": message}
    if request.logprobs:
        choice["logprobs"] = _chat_logprobs(r.logprobs)
    return {**_head(request_id, "chat.completion", request, created),
            "choices": [choice], "usage": _usage(r.usage)}


class ChatChunks:
    """``chat.completion.chunk`` objects made one event at a time: ``feed`` each event (it
    returns the chunks it makes, and raises on ``Error``), then ``end`` for the usage chunk.
    A thread that reads events pulls them through ``chat_chunks``; a server's IO loop pushes."""

    def __init__(self, *, request: GenerationRequest, request_id: str, created: int):
        self.request = request
        self.head = _head(request_id, "chat.completion.chunk", request, created)
        self.pending: list[TokenLogprobs] = []
        self.usage: Usage | None = None
        self.blank: str | None = ""
        """Content that is only whitespace so far, held back: a reply that makes tool calls
        and writes no text has none (as ``chat_completion``). None once text has gone out."""
        self.calls = False

    def _chunk(self, delta: dict, finish_reason=None) -> dict:
        choice = {"index": 0, "finish_reason": finish_reason,
                  "delta": {"role": "assistant", **delta}}
        if self.request.logprobs and self.pending:
            logprobs = _chat_logprobs(self.pending)
            self.pending.clear()
            if logprobs["content"]:  # not the end-of-sequence token's alone
                choice["logprobs"] = logprobs
        return {**self.head, "choices": [choice]}

    def feed(self, e) -> list[dict]:
        t = type(e)
        if t is ContentDelta or (t is ParseProblem and e.in_reply):
            text = e.text
            if self.blank is not None:
                text = self.blank + text
                if not text.strip():
                    self.blank = text
                    return []
                self.blank = None
            return [self._chunk({"content": text})]
        if t is ReasoningDelta:
            return [self._chunk({self.request.reasoning_field: e.text})]
        if t is ToolCall or (t is ParseProblem and e.call is not None):
            self.calls = True
            return [self._chunk({"tool_calls": [_tool_call(e, True)]})]
        if t is TokenLogprobs:
            self.pending.append(e)
        elif t is Usage:
            self.usage = e
        elif t is Finished:
            held = [] if self.calls or not self.blank else [self._chunk({"content": self.blank})]
            return held + [self._chunk({}, e.reason)]
        elif t is Error:
            _raise(e)
        return []

    def end(self) -> list[dict]:
        if self.request.include_usage:
            return [{**self.head, "choices": [], "usage": _usage(self.usage)}]
        return []


def chat_chunks(events, *, request: GenerationRequest, request_id: str,
                created: int) -> Iterator[dict]:
    """``chat.completion.chunk`` objects: one per delta, a final one, then usage if asked."""
    chunks = ChatChunks(request=request, request_id=request_id, created=created)
    for e in events:
        yield from chunks.feed(e)
    yield from chunks.end()


def text_completion(events, *, request: GenerationRequest, request_id: str, created: int) -> dict:
    """A ``text_completion`` object."""
    r = collect(events)
    choice = {"index": 0, "finish_reason": r.finish_reason, "text": r.content}
    if request.logprobs:
        tokens = "".join(lp.token for lp in r.logprobs)
        choice["logprobs"] = _text_logprobs(r.logprobs, skip=_dropped_space(tokens, r.content),
                                            end=len(r.content))
    return {**_head(request_id, "text_completion", request, created),
            "choices": [choice], "usage": _usage(r.usage)}


class CompletionChunks:
    """Streaming ``text_completion`` objects made one event at a time (as ``ChatChunks``)."""

    def __init__(self, *, request: GenerationRequest, request_id: str, created: int):
        self.request = request
        self.head = _head(request_id, "text_completion", request, created)
        self.pending: list[TokenLogprobs] = []
        self.at = 0  # characters of token text sent so far
        self.sent = 0  # characters of reply text sent so far
        self.skip: int | None = None  # decided once some text came (``_dropped_space``)
        self.tokens = ""  # the tokens' text until then
        self.usage: Usage | None = None

    def _chunk(self, text: str, finish_reason=None) -> dict:
        choice = {"index": 0, "finish_reason": finish_reason, "text": text}
        self.sent += len(text)
        if self.request.logprobs:
            if self.skip is None:
                self.tokens += "".join(lp.token for lp in self.pending)
                if text:
                    self.skip = _dropped_space(self.tokens, text)
            choice["logprobs"] = _text_logprobs(self.pending, at=self.at, skip=self.skip or 0,
                                                end=self.sent)
            self.at += sum(len(lp.token) for lp in self.pending)
            self.pending.clear()
        return {**self.head, "choices": [choice]}

    def feed(self, e) -> list[dict]:
        t = type(e)
        if t is ContentDelta or t is ReasoningDelta:
            return [self._chunk(e.text)]
        if t is TokenLogprobs:
            self.pending.append(e)
        elif t is Usage:
            self.usage = e
        elif t is Finished:
            return [self._chunk("", e.reason)]
        elif t is Error:
            _raise(e)
        return []

    def end(self) -> list[dict]:
        if self.request.include_usage:
            return [{**self.head, "choices": [], "usage": _usage(self.usage)}]
        return []


def completion_chunks(events, *, request: GenerationRequest, request_id: str,
                      created: int) -> Iterator[dict]:
    """Streaming ``text_completion`` objects, then a usage chunk if asked."""
    chunks = CompletionChunks(request=request, request_id=request_id, created=created)
    for e in events:
        yield from chunks.feed(e)
    yield from chunks.end()


def _sum_usage(usages: list[dict]) -> dict:
    total = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
             "prompt_tokens_details": {"cached_tokens": 0}}
    for u in usages:
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            total[key] += u[key]
        total["prompt_tokens_details"]["cached_tokens"] += u["prompt_tokens_details"][
            "cached_tokens"]
    return total


def text_completion_list(streams: list, *, request: GenerationRequest, request_id: str,
                         created: int) -> dict:
    """One ``text_completion`` for a list of prompts: choice ``i`` answers prompt ``i``."""
    results = [text_completion(events, request=request, request_id=request_id, created=created)
               for events in streams]
    choices = [{**r["choices"][0], "index": i} for i, r in enumerate(results)]
    return {**results[0], "choices": choices, "usage": _sum_usage([r["usage"] for r in results])}


def completion_list_chunks(streams: list, *, request: GenerationRequest, request_id: str,
                           created: int) -> Iterator[dict]:
    """Streaming ``text_completion`` chunks for a list of prompts, one prompt after another
    (each chunk's choice ``index`` says which), then one usage chunk for all if asked."""
    usages: list[Usage] = []

    def tapped(events):
        for e in events:
            if type(e) is Usage:
                usages.append(e)
            yield e

    quiet = replace(request, include_usage=False)
    for i, events in enumerate(streams):
        for chunk in completion_chunks(tapped(events), request=quiet, request_id=request_id,
                                       created=created):
            chunk["choices"] = [{**c, "index": i} for c in chunk["choices"]]
            yield chunk
    if request.include_usage:
        head = _head(request_id, "text_completion", request, created)
        yield {**head, "choices": [], "usage": _sum_usage([_usage(u) for u in usages])}
