"""The result of one ``%%chat`` or ``%%complete`` cell: what was sent, what came back, how fast.

A ``Turn`` is built on the cell's thread while the engine's events arrive, then handed to the
display (the live ``ChatView`` and the static mimebundle) and returned to the user (``_``).
It is mutable on purpose: the tool loop fills each call's ``result`` after the model asked
for it, and the user may take a stopped turn out of its session with ``drop`` or put a failed
one back with ``keep``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Turn", "Round", "empty_usage", "empty_timings", "STOPPED"]

STOPPED = "stopped"
"""The finish reason of a turn the user stopped (Stop button, Kernel › Interrupt, Ctrl-C): one
name on the turn, its rounds, the card, the footer and the history. The engine calls the same
event ``cancelled``; the runner translates it at the boundary."""


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def empty_usage() -> dict:
    return {"prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0}


def empty_timings() -> dict:
    return {
        "time_to_first_token": None,
        "prefill_tokens_per_second": None,
        "decode_tokens_per_second": None,
        "peak_memory": None,
        "total_seconds": None,
    }


@dataclass(slots=True)
class Round:
    """One model call inside a turn; a tool loop makes one round per model reply.

    ``request`` is the exact body of that call, ``tool_calls`` the calls the model made in
    it (same dict shape as ``Turn.tool_calls``, results filled once the functions ran),
    ``usage`` its token counts and ``finish_reason`` why the model stopped (``stop``,
    ``length``, ``tool_calls``, ``stopped`` by the user) or None when it failed.
    """

    request: dict
    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    usage: dict = field(default_factory=empty_usage)
    finish_reason: str | None = None
    request_id: str | None = None
    """The engine's id for this call (``engine.trace(request_id)`` replays its parse)."""

    def messages(self) -> list[dict]:
        """The assistant message and tool-result messages this round adds to a conversation."""
        # Whitespace-only content (the "\n\n" after </think> before a tool call) goes back as
        # "": templates test content for truthiness, and a re-rendered "\n\n" would make the
        # next prompt differ from what the model generated.
        content = self.content if self.content.strip() else ""
        assistant: dict[str, Any] = {"role": "assistant", "content": content}
        if self.reasoning:
            # Templates that keep earlier reasoning (the tiny reasoner's) then re-render the
            # reply exactly as generated, so the next prompt extends this one: a cache hit.
            assistant["reasoning_content"] = self.reasoning.strip("\n")
        if self.tool_calls:
            assistant["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                }
                for call in self.tool_calls
            ]
        out = [assistant]
        for call in self.tool_calls:
            out.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"],
                        "content": tool_message_content(call)})
        return out


def tool_message_content(call: dict) -> str:
    """What the model reads back for a call: the result as text (JSON when it can be), or the error."""
    if call.get("error") is not None:
        return f"Error: {call['error']}"
    result = call.get("result")
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result)
    except (TypeError, ValueError):
        return repr(result)


@dataclass
class Turn:
    """One user message and everything the model did in reply.

    ``content`` is the final answer (the last round's content), ``reasoning`` all rounds'
    reasoning joined, ``tool_calls`` every call of every round, each
    ``{"id", "name", "arguments": dict, "result": Any | None, "error": str | None}``.
    ``usage`` (``prompt_tokens``, ``cached_tokens``, ``completion_tokens``) sums the rounds;
    ``timings`` holds ``time_to_first_token`` and ``total_seconds`` (seconds),
    ``prefill_tokens_per_second`` and ``decode_tokens_per_second`` (of the last round) and
    ``peak_memory`` (bytes). ``request`` is the exact first body sent, ``chunks`` the raw
    ``chat.completion.chunk`` dicts of every round in order, ``logprobs`` one
    ``{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}`` per generated token when
    ``--tokens`` asked for them. ``content`` is exactly what the engine sent (after a
    reasoning block it usually starts with a blank line); ``text`` is it trimmed, for reading.
    A turn the user stopped (``interrupted``, finish reason ``stopped``) stays in the session
    history as far as it got -- it is what the user saw -- unless they call ``drop()``; a
    failed one (``error``, the one-sentence failure) stays out unless they call ``keep()``.
    ``tools_offered`` names the tools sent with the request; ``tools_unsupported`` says the
    model's chat template left them out of the prompt, so the model never saw them.
    """

    model: str
    session: str
    request: dict
    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    usage: dict = field(default_factory=empty_usage)
    timings: dict = field(default_factory=empty_timings)
    finish_reason: str | None = None
    # The raw record stays out of repr: a 300-token reply is ~100 KB of chunks.
    chunks: list[dict] = field(default_factory=list, repr=False)
    logprobs: list[dict] | None = field(default=None, repr=False)
    interrupted: bool = False
    error: str | None = None
    rounds: list[Round] = field(default_factory=list, repr=False)
    user_message: dict | None = field(default=None, repr=False)
    """The user message this turn answered (None for ``%%complete``)."""
    options: dict = field(default_factory=dict, repr=False)
    """The flags the user set on the cell (after ``%mlx config`` defaults), for the record."""
    kept: bool = field(default=False, repr=False)
    dropped: bool = field(default=False, repr=False)
    tools_offered: list[str] = field(default_factory=list, repr=False)
    tools_unsupported: bool = field(default=False, repr=False)
    model_dtype: str | None = field(default=None, repr=False)
    """The dtype the model computed in (``float32``, ``bfloat16``, ``4-bit``...)."""
    _display_instead: dict | None = field(default=None, repr=False, compare=False)
    """What the displayhook shows, once, instead of this turn: the cell showed it live."""

    @property
    def text(self) -> str:
        """The answer with a ``[stopped]`` mark when the user stopped it."""
        return self.content.strip() + (f" [{STOPPED}]" if self.interrupted else "")

    @property
    def in_history(self) -> bool:
        """Whether the session sends this turn as history: complete and stopped turns (as far
        as they got), failed ones only when kept, none that were dropped."""
        return not self.dropped and (self.error is None or self.kept)

    def refresh(self) -> None:
        """Derive the totals from the rounds: last answer, all reasoning, summed usage."""
        if not self.rounds:
            return
        self.content = self.rounds[-1].content
        self.reasoning = "\n".join(r.reasoning for r in self.rounds if r.reasoning)
        self.finish_reason = self.rounds[-1].finish_reason
        keys = dict.fromkeys([*self.usage, *(k for r in self.rounds for k in r.usage)])
        self.usage = {key: sum(r.usage.get(key, 0) for r in self.rounds) for key in keys}

    def keep(self) -> "Turn":
        """Send this failed turn as history after all, as far as it got."""
        self.kept, self.dropped = True, False
        return self

    def drop(self) -> "Turn":
        """Leave this turn out of its session's history (e.g. a stopped half-answer)."""
        self.dropped, self.kept = True, False
        return self

    def messages(self) -> list[dict]:
        """The messages this turn adds to its session: the user's, then every round's."""
        out = [self.user_message] if self.user_message else []
        for round_ in self.rounds:
            out.extend(round_.messages())
        return out

    def metadata(self) -> dict:
        """How this answer was produced, for the saved notebook's output metadata."""
        return {
            "model": self.model,
            "session": self.session,
            "options": dict(self.options),
            "seed": self.request.get("seed"),
            "usage": dict(self.usage),
            "timings": dict(self.timings),
            "finish_reason": self.finish_reason,
            "interrupted": self.interrupted,
        }

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(f"<Turn {self.session}: {self.summary()}>")

    def summary(self) -> str:
        """One line: finish reason and token counts, as shown under an answer."""
        usage = self.usage
        parts = [
            f"{_plural(usage['prompt_tokens'], 'prompt token')} ({usage['cached_tokens']} cached)",
            _plural(usage["completion_tokens"], "completion token"),
        ]
        if self.tool_calls:
            parts.append(_plural(len(self.tool_calls), "tool call"))
        total = self.timings.get("total_seconds")
        if total is not None:
            from .display import format_seconds

            parts.append(format_seconds(total))
        reason = STOPPED if self.interrupted else (self.error and "error") or self.finish_reason
        return f"{reason}, " + ", ".join(parts)

    def _ipython_display_(self) -> None:
        # The cell that produced this turn already showed it live; the displayhook's
        # automatic display of the cell's value (``Out[n]``) shows ``_display_instead``
        # once -- nothing in a notebook, the summary line in a terminal -- so the answer
        # does not appear twice, while ``_`` holds the turn and ``display(turn)`` shows it.
        from IPython.display import display

        if self._display_instead is not None:
            bundle, self._display_instead = self._display_instead, None
            if bundle:
                display(bundle, raw=True)
            return
        data, metadata = self._mimebundle()
        display(data, metadata=metadata, raw=True)

    def _mimebundle(self) -> tuple[dict, dict]:
        from .display import turn_mimebundle

        return turn_mimebundle(self)

    def show_tokens(self):
        """The reply token by token, shaded by probability, alternatives on hover.

        Needs the turn's logprobs: run the cell with ``%%chat --tokens``.
        """
        from .widgets import TokenView

        if not self.logprobs:
            raise ValueError("This turn has no logprobs: run the cell with %%chat --tokens to record them.")
        return TokenView(self.logprobs)

    def plain_text(self) -> str:
        """The turn as a terminal shows it: rounds in order (reasoning, tool calls, answer),
        then one summary line; the same text as the saved output's ``text/plain``."""
        from .display import turn_plain_text, turn_record

        return turn_plain_text(turn_record(self))
