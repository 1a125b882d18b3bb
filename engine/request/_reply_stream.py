"""One request's output on the engine thread: tokens in, typed events out.

Per generated token: streaming detokenizer (mlx-lm's) → stop-string guard → the one
``StreamFilter`` (chat only) → events on the caller's queue. This is the per-token Python
path, so it stays thin: no per-token syncs beyond mlx-lm's own, logprob work only when asked.
"""

from __future__ import annotations

import time
import uuid
import weakref

import mlx.core as mx

from ._admission import GenerationRequest
from ._job import Outbox
from .._events import (
    ContentDelta, Error, Finished, ParseProblem, ReasoningDelta, Started, TokenLogprobs,
    ToolCall, Usage,
)
from .._upstream import bpe_byte_decoder, keep_leading_space
from ..parsing import StreamFilter, per_tokenizer
from ._think_budget import reasoning_token_count, think_budget_for

__all__ = ["ReplyStream", "LOGPROB_FLOOR"]

# OpenAI's floor for a token the model gives (next to) no chance. A step whose logits
# overflowed yields NaN or -inf, which JSON cannot carry (every response must serialise with
# allow_nan=False), so those become this floor, and +inf (certainty) 0.
LOGPROB_FLOOR = -9999.0


def _finite(logprob: float) -> float:
    if logprob != logprob or logprob < LOGPROB_FLOOR:
        return LOGPROB_FLOOR
    return 0.0 if logprob > 0 else logprob


class _StopGuard:
    """Holds back text that could still grow into a stop string; finds a complete one.

    A marker token's text (``<think>``, ``<|im_end|>``: the tokenizer's added tokens) is one
    piece: a stop string may hold it whole, but never start or end inside it, as a stop
    matched on token sequences (mlx_lm.server) never takes part of such a token.
    """

    def __init__(self, stops: tuple[str, ...]):
        self.stops = stops
        self.held = ""
        self.markers: tuple[tuple[int, int], ...] = ()
        """(start, end) of each marker's text within ``held``."""

    def push(self, text: str, marker: int = 0) -> tuple[str, bool]:
        """(text safe to emit, whether a stop string completed); ``marker``: the length of
        the marker text ``text`` ends with (0: none)."""
        text = self.held + text
        markers = self.markers + (((len(text) - marker, len(text)),) if marker else ())
        inside = (lambda i: any(a < i < b for a, b in markers)) if markers else None
        # The stop that completes first wins, as it would one character at a time.
        hits = []
        for s in self.stops:
            i = text.find(s)
            while i >= 0 and inside is not None and (inside(i) or inside(i + len(s))):
                i = text.find(s, i + 1)
            if i >= 0:
                hits.append((i + len(s), i))
        if hits:
            self.held, self.markers = "", ()
            return text[: min(hits)[1]], True
        keep = 0
        for s in self.stops:
            for k in range(min(len(s) - 1, len(text)), keep, -1):
                if text.endswith(s[:k]) and (inside is None or not inside(len(text) - k)):
                    keep = k
                    break
        cut = len(text) - keep
        self.held = text[cut:]
        self.markers = tuple((a - cut, b - cut) for a, b in markers if a >= cut)
        return text[:cut], False

    def flush(self) -> str:
        text, self.held, self.markers = self.held, "", ()
        return text


_marker_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _marker_texts(tokenizer) -> dict[int, str]:
    """Each added token's id and text: the markers ``_StopGuard`` keeps whole. Read once per
    tokenizer: a reply stream is made on the engine thread, and listing 6,000 added tokens
    (a Gemma vocabulary) takes 7.6 ms."""
    return per_tokenizer(_marker_cache, tokenizer, _read_marker_texts)


def _read_marker_texts(tokenizer) -> dict[int, str]:
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return {i: t.content for i, t in added.items() if getattr(t, "content", "")}


class ReplyStream:
    """Turns one request's tokens into events on ``out`` (engine-thread only)."""

    def __init__(self, request_id: str, request: GenerationRequest, prompt, tokenizer,
                 out: Outbox):
        self.request_id = request_id
        self.request = request
        self.tokenizer = tokenizer
        self.out = out
        self.prompt_tokens = len(prompt.tokens)
        self.cached_tokens = 0
        self.completion_tokens = 0
        self.detok = tokenizer.detokenizer
        if request.continue_final_message:  # the reply goes on from the prompt's last word
            keep_leading_space(self.detok)
        self._eos = set(tokenizer.eos_token_ids)
        self.guard = _StopGuard(request.stop) if request.stop else None
        self._markers = _marker_texts(tokenizer) if request.stop else {}
        self.filter = (
            StreamFilter.for_tokenizer(
                tokenizer, prompt.text, tools=list(request.tools) if request.tools else None)
            if request.kind == "chat" else None
        )
        self.deltas: list[str] = []
        self.think_budget = think_budget_for(tokenizer, request, prompt)
        """Counts the reasoning tokens at the end when the request has a budget."""
        self.token_ids: list[int] = []
        """The generated tokens whose text the reply shows (the stop token is not one)."""
        self.tool_calls = 0
        self.finished = False
        self.t_scheduled = time.perf_counter()
        self.t_first = 0.0

    # -- lifecycle -----------------------------------------------------------------------
    def start(self, cached_tokens: int) -> None:
        self.cached_tokens = cached_tokens
        self.out.put(Started(self.request_id, self.prompt_tokens, cached_tokens))

    def on_token(self, token: int, logprobs, finish_reason: str | None, *,
                 from_draft: bool | None = None) -> bool:
        """Handle one generated token; True when the reply ends here early: a stop string
        matched, or its one tool call is whole (``parallel_tool_calls`` false).

        ``from_draft``: with a draft model, whether the draft proposed the token."""
        stopped = self._on_token(token, logprobs, finish_reason, from_draft)
        return stopped or (self.tool_calls > 0 and not self.request.parallel_tool_calls)

    def _on_token(self, token: int, logprobs, finish_reason: str | None,
                  from_draft: bool | None) -> bool:
        self.completion_tokens += 1
        if self.completion_tokens == 1:
            self.t_first = time.perf_counter()
        if self.request.logprobs:
            self._logprobs(token, logprobs, from_draft,
                           ends_reply=finish_reason == "stop" and token in self._eos)
        detok = self.detok
        if finish_reason == "stop":
            # End of text, or a stop string matched as tokens. Neither is shown (as
            # mlx_lm.server). A stop string's token is decoded so that the text is cut where
            # the string starts: not the head of a character, nor text held for another stop.
            sequence = token not in self._eos
            if sequence:
                detok.add_token(token)
            detok.finalize()
            text = detok.last_segment
            if self.guard is not None:
                text, stopped = self.guard.push(text, self._marker(token, text))
                held = self.guard.flush()
                if not sequence:
                    text += held  # held for a stop string that never came: the model's text
                elif not stopped:
                    text = ""  # a tokenizer whose tokens do not spell the string: cut here
            self._emit(text)
            return False
        detok.add_token(token)
        self.token_ids.append(token)
        if finish_reason == "length":
            detok.finalize()
        text = detok.last_segment
        if self.guard is not None:
            text, stopped = self.guard.push(text, self._marker(token, text))
            if finish_reason == "length" and not stopped:
                text += self.guard.flush()
            self._emit(text)
            return stopped
        if text:
            self._emit(text)
        return False

    def finish(self, reason: str, *, accepted_draft_tokens: int | None = None) -> None:
        """Flush the filter, then Usage and Finished (``reason`` as the scheduler saw it).

        ``accepted_draft_tokens`` is given when a draft model proposed tokens for the reply.
        """
        if self.finished:
            return
        if self.filter is not None:
            # Before ``finished`` is set: should the filter fail, ``fail`` still sends Error
            # and the client is not left waiting for a Finished that never comes.
            self._publish(self.filter.finish())
        self.finished = True
        if reason == "stop" and self.tool_calls:
            reason = "tool_calls"
        now = time.perf_counter()
        first = self.t_first or now
        prefill = self.prompt_tokens - self.cached_tokens
        decode_time = now - first
        self.out.put(Usage(
            prompt_tokens=self.prompt_tokens,
            cached_tokens=self.cached_tokens,
            completion_tokens=self.completion_tokens,
            time_to_first_token=first - self.t_scheduled,
            prefill_tokens_per_second=prefill / max(first - self.t_scheduled, 1e-9),
            decode_tokens_per_second=(
                (self.completion_tokens - 1) / decode_time if decode_time > 0 else 0.0
            ),
            # The scheduler resets the peak when the engine goes busy; a reply cancelled
            # before any allocation still reports what is held (the weights), not 0.
            peak_memory=int(max(mx.get_peak_memory(), mx.get_active_memory())),
            accepted_draft_tokens=accepted_draft_tokens,
            reasoning_tokens=(None if self.think_budget is None
                              else reasoning_token_count(self.token_ids, self.think_budget)),
        ))
        self.out.put(Finished(reason))

    def fail(self, message: str, type: str = "server_error") -> None:
        if not self.finished:
            self.finished = True
            self.out.put(Error(message, type))

    # -- text -----------------------------------------------------------------------------
    def _emit(self, text: str) -> None:
        if not text:
            return
        self.deltas.append(text)
        if self.filter is None:
            self.out.put(ContentDelta(text))
        else:
            self._publish(self.filter.feed(text))

    def _publish(self, events) -> None:
        put = self.out.put
        for e in events:
            kind = e.kind
            if kind == "content":
                put(ContentDelta(e.text))
            elif kind == "reasoning":
                put(ReasoningDelta(e.text))
            elif kind == "tool_call":
                if self.tool_calls and not self.request.parallel_tool_calls:
                    continue  # one call was asked for: the reply ends with the first
                put(ToolCall(
                    index=self.tool_calls, id=f"call_{uuid.uuid4().hex[:24]}",
                    name=e.name, arguments=dict(e.arguments or {}), text=e.text,
                ))
                self.tool_calls += 1
            else:
                put(ParseProblem(e.text, getattr(e, "message", "") or "unparsed markup"))

    def _marker(self, token: int, text: str) -> int:
        """The length of ``token``'s marker text that ``text`` ends with; 0 for other tokens."""
        marker = self._markers.get(token)
        return len(marker) if marker and text.endswith(marker) else 0

    def _logprobs(self, token: int, logprobs, from_draft: bool | None = None, *,
                  ends_reply: bool = False) -> None:
        decode = self.tokenizer.decode
        top, top_raw = (), ()
        k = self.request.top_logprobs
        if k > 0:
            idx = mx.argpartition(-logprobs, kth=k - 1)[:k]
            vals = logprobs[idx].tolist()
            ids = idx.tolist()
            pairs = sorted(zip(ids, vals), key=lambda p: -p[1])
            top = tuple((decode([i]), _finite(v)) for i, v in pairs)
            top_raw = tuple(self._raw(i, text) for (i, _), (text, _) in zip(pairs, top))
            if not any(top_raw):
                top_raw = ()
        text = decode([token])
        self.out.put(TokenLogprobs(token, text, _finite(logprobs[token].item()), top,
                                   from_draft, self._raw(token, text), top_raw, ends_reply))

    def _raw(self, token: int, text: str) -> bytes | None:
        """A token's own bytes when its text is a piece of a character (U+FFFD), as the
        detokenizer's table holds them (byte-level BPE and SentencePiece; None for others)."""
        if "\ufffd" not in text:
            return None
        table = getattr(self.detok, "tokenmap", None)
        if table is None or not 0 <= token < len(table):
            return None
        piece = table[token]
        if isinstance(piece, bytes):  # SentencePiece: "<0xF0>" already read as its byte
            return piece.replace("\u2581".encode(), b" ")
        decoder = bpe_byte_decoder()  # byte-level BPE: one character per byte
        return b"".join(bytes([decoder[c]]) if c in decoder else c.encode() for c in piece)
