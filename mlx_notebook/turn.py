"""The result of one ``%%chat`` or ``%%complete`` cell: what was sent, what came back, how fast.

A ``Turn`` is folded from the engine's events on the cell's thread (``Turn.apply``, the one
place that sums usage), then handed to the display (the live ``ChatView`` and the static
mimebundle) and returned to the user (``_``). It is mutable on purpose: the tool loop fills
each call's ``result`` after the model asked for it, and the user may take a stopped turn out
of its session with ``drop`` or put a failed one back with ``keep``.

Its parts are typed (``_turn_types``: ``Usage``, ``Timings``, ``ToolCallRecord``,
``TokenLogprob``) and still read like the dicts they replaced (``round_.usage["prompt_tokens"]``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ._turn_types import Timings, TokenLogprob, ToolCallRecord, TopLogprob, Usage

__all__ = [
    "Turn", "Round", "Usage", "Timings", "ToolCallRecord", "TokenLogprob", "TopLogprob",
    "STOPPED",
]

STOPPED = "stopped"
"""The finish reason of a turn the user stopped (Stop button, Kernel › Interrupt, Ctrl-C): one
name on the turn, its rounds, the card, the footer and the history. The engine calls the same
event ``cancelled``; the fold translates it at the boundary."""

NOT_RUN = "not run: the user stopped the turn"
"""A stopped turn's error for the tool calls it never ran."""
STOPPED_RUNNING = "stopped while it ran: the user stopped the turn"
"""A stopped turn's error for the tool call that was running when it stopped."""


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _typed(value: Any, record: type) -> Any:
    """``value`` as ``record``: hand-built turns (tests, old code) may still pass the dicts."""
    return value if isinstance(value, record) else record.from_mapping(value)


@dataclass(slots=True)
class Round:
    """One model call inside a turn; a tool loop makes one round per model reply.

    ``request`` is the exact body of that call, ``tool_calls`` the calls the model made in
    it (the same records as in ``Turn.tool_calls``, results filled once the functions ran),
    ``usage`` its token counts (the prompt's from when it started, all of them once it ended)
    and ``finish_reason`` why the model stopped (``stop``, ``length``, ``tool_calls``,
    ``stopped`` by the user) or None when it failed.
    """

    request: dict
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    request_id: str | None = None
    """The engine's id for this call (``engine.trace(request_id)`` replays its parse)."""
    reasoning_tokens: int | None = None
    """Tokens the model spent reasoning in this call, as the engine counted them; only a
    request with a think budget (``thinking_token_budget``) counts them."""
    recorded: Any = field(default=None, repr=False, compare=False)
    """What the model produced and the stream filter made of it (a ``testing.RecordedReply``:
    token ids, deltas, family), kept for ``Turn.to_fixture``; None for a completion."""
    cache_parting: Any = None
    """Where this call's prompt left the prompt cache's tree when its lookup missed or hit
    only partly (a ``cache_tree.CacheParting``); None otherwise."""
    problems: list[dict] = field(default_factory=list)
    """Markup in this call's reply that did not parse: ``{"message": why, "text": the raw
    text}`` each, in order; the text is also in ``content``, where the model wrote it, except
    where ``"in_reply": False`` says a remote server sent it as a tool call's field."""

    def __post_init__(self) -> None:
        self.tool_calls = [_typed(call, ToolCallRecord) for call in self.tool_calls]
        self.usage = _typed(self.usage, Usage)

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
                {"id": call.id, "type": "function",
                 "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}
                for call in self.tool_calls
            ]
        out = [assistant]
        for call in self.tool_calls:
            out.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                        "content": call.message_content()})
        return out


@dataclass(slots=True)
class Turn:
    """One user message and everything the model did in reply.

    ``content`` is the final answer (the last round's content; exactly what the engine sent,
    after a reasoning block it usually starts with a blank line; ``text`` is it trimmed, for
    reading), ``reasoning`` all rounds' reasoning joined, ``tool_calls`` every call of every
    round, ``usage`` the sum of the rounds' and ``timings`` how fast it ran. ``request`` is
    the exact first body sent, ``chunks`` the raw ``chat.completion.chunk`` dicts of every
    round in order, ``logprobs`` one ``TokenLogprob`` per generated token when ``--tokens``
    asked for them. A turn the user stopped (``interrupted``, finish reason ``stopped``)
    stays in the session history as far as it got -- it is what the user saw -- unless they
    call ``drop()``; a failed one (``exception``, with its one-sentence message in ``error``)
    stays out unless they call ``keep()``. ``tools_offered`` names the tools sent with the
    request; ``tools_unsupported`` says the model's chat template left them out of the
    prompt, so the model never saw them.
    """

    model: str
    session: str
    request: dict
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    timings: Timings = field(default_factory=Timings)
    finish_reason: str | None = None
    # The raw record stays out of repr: a 300-token reply is ~100 KB of chunks.
    chunks: list[dict] = field(default_factory=list, repr=False)
    logprobs: list[TokenLogprob] | None = field(default=None, repr=False)
    interrupted: bool = False
    error: str | None = None
    """The failure's one-sentence message (``str(exception)``), for reading."""
    exception: Exception | None = field(default=None, repr=False, compare=False)
    """Why the turn failed, as raised: an ``EngineError`` from the engine (``EngineDeadError``
    when its thread stopped), or the tool loop's round limit. Set with ``fail``."""
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
    branched_from: dict | None = field(default=None, repr=False, compare=False)
    """For a turn made by ``branch()``: the turn it came from, the position (``at``), the
    token it replaced and the one forced there."""
    answer_type: Any = field(default=None, repr=False, compare=False)
    """What ``%%chat --json TYPE`` asked the answer to be (a pydantic model, a dataclass, a
    schema dict); ``parsed`` builds it."""
    _display_instead: dict | None = field(default=None, repr=False, compare=False)
    """What the displayhook shows, once, instead of this turn: the cell showed it live."""

    def __post_init__(self) -> None:
        self.tool_calls = [_typed(call, ToolCallRecord) for call in self.tool_calls]
        self.usage = _typed(self.usage, Usage)
        self.timings = _typed(self.timings, Timings)
        if self.logprobs is not None:
            self.logprobs = [_typed(item, TokenLogprob) for item in self.logprobs]

    @property
    def text(self) -> str:
        """The answer with a ``[stopped]`` mark when the user stopped it."""
        return self.content.strip() + (f" [{STOPPED}]" if self.interrupted else "")

    @property
    def parsed(self) -> Any:
        """The answer read as JSON (``%%chat --json``), built into the ``--json TYPE`` when one
        was given; ValueError saying why when it cannot be."""
        try:
            value = json.loads(self.content)
        except ValueError:
            why = " (it was cut at max_tokens)" if self.finish_reason == "length" else (
                " (it was stopped)" if self.interrupted else "")
            raise ValueError(f"The answer is not whole JSON{why}: {self.content[:80]!r}") from None
        if self.answer_type is None:
            return value
        from .tools import built_answer

        return built_answer(value, self.answer_type)

    @property
    def in_history(self) -> bool:
        """Whether the session sends this turn as history: complete and stopped turns (as far
        as they got), failed ones and ones stopped before the model wrote anything only when
        kept, none that were dropped."""
        if self.dropped:
            return False
        return self.kept or (self.error is None and not self.stopped_empty)

    @property
    def stopped_empty(self) -> bool:
        """Stopped before the model wrote anything (while it read the prompt, say): sent as
        history, the question would go with an empty answer the model never gave."""
        return self.interrupted and not (self.content.strip() or self.reasoning.strip()
                                         or self.tool_calls)

    # -- folding the engine's events ----------------------------------------------------------

    def begin_round(self, request: dict, request_id: str | None = None) -> Round:
        """Open the round for one model call; its events then ``apply`` to it."""
        round_ = Round(request=request, request_id=request_id)
        self.rounds.append(round_)
        return round_

    def apply(self, event: Any) -> None:
        """Fold one engine event into the current round, then the rounds into the totals.

        The one place events become a turn: the runner folds every event here and the live
        view reads the totals from the turn. A ``Started`` for another request than the
        current round's opens a round (a view fed events by hand has nobody to call
        ``begin_round``). ``Error`` is not folded: the engine raises it from its response
        builder, and the runner records that exception with ``fail``.
        """
        fold = _folds().get(type(event))
        if fold is not None:
            if fold(self, event) is not _TOTALS_KEPT:
                self.refresh()

    def _current_round(self) -> Round:
        return self.rounds[-1] if self.rounds else self.begin_round(self.request)

    def refresh(self) -> None:
        """Derive the totals from the rounds: last answer, all reasoning and calls, summed usage."""
        if not self.rounds:
            return
        last = self.rounds[-1]
        self.content = last.content
        self.reasoning = "\n".join(r.reasoning for r in self.rounds if r.reasoning)
        self.tool_calls = [call for r in self.rounds for call in r.tool_calls]
        self.finish_reason = last.finish_reason
        self.usage = sum((r.usage for r in self.rounds), Usage())

    def fail(self, exception: Exception) -> None:
        """Record why the turn failed; ``error`` holds its message."""
        self.exception = exception
        self.error = str(exception)

    def mark_stopped(self) -> None:
        """The user stopped the turn: its last round says ``stopped`` (unless it failed or
        ended on its own first), and calls it never ran say why."""
        self.interrupted = True
        if not self.rounds:
            return
        last = self.rounds[-1]
        if last.finish_reason in (None, "cancelled", "tool_calls") and self.error is None:
            last.finish_reason = STOPPED
        for call in last.tool_calls:
            if not call.returned and call.error is None:
                call.error = NOT_RUN
        self.refresh()

    # -- the user's side ------------------------------------------------------------------------

    def keep(self) -> "Turn":
        """Send this failed (or emptily stopped) turn as history after all, as far as it got."""
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

    @property
    def think_budget(self) -> dict | None:
        """``{"budget", "reasoning_tokens", "cut"}`` when the turn asked for a think budget
        (``%%chat --think-budget N``): the tokens each model call reasoned, and whether the
        budget ended any call's reasoning; None without a budget."""
        budget = (self.request or {}).get("thinking_token_budget")
        if budget is None:
            return None
        used = [r.reasoning_tokens for r in self.rounds]
        return {"budget": budget, "reasoning_tokens": used,
                "cut": any(n is not None and n >= budget for n in used)}

    def to_fixture(self, path: Any, *, note: str = "") -> Any:
        """Write this turn's replies as a parser regression test (JSON); returns the path.

        Each model call's token ids, decoded text, family, start state and tools, and what the
        stream filter made of them; ``mlx_notebook.testing.check_fixture(path)`` replays it
        through the current filter, ``%mlx trace --fixture path`` shows its trace.
        """
        from .testing import turn_fixture

        if not isinstance(note, str):
            raise TypeError(f"to_fixture(note=...) must be a string, not {type(note).__name__}.")
        return turn_fixture(self, note).save(path)

    def metadata(self) -> dict:
        """How this answer was produced: the saved output's ``metadata["mlx_notebook"]``."""
        return self._mimebundle()[1]["mlx_notebook"]

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer, cycle) -> None:
        from .display import visible_text

        # The session name is the user's: its escape sequences are shown, not acted on.
        printer.text(visible_text(f"<Turn {self.session}: {self.summary()}>"))

    def summary(self) -> str:
        """One line: finish reason and token counts, as shown under an answer."""
        usage = self.usage
        parts = [
            f"{_plural(usage.prompt_tokens, 'prompt token')} ({usage.cached_tokens} cached)",
            _plural(usage.completion_tokens, "completion token"),
        ]
        if self.tool_calls:
            parts.append(_plural(len(self.tool_calls), "tool call"))
        total = self.timings.total_seconds
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

    def branch(self, at: int, token: str | int, *, max_tokens: int | None = None,
               engine: Any = None) -> "Turn":
        """Resume this reply from its token ``at`` with ``token`` there instead ("what if the
        model had said ' Lyon' here?"): the model's first ``at`` tokens, then ``token`` (an id,
        or the text of one token, e.g. one of the alternatives the token view shows), then
        whatever the model writes next. The prompt cache serves everything before ``at``.

        In a notebook the branch streams into a card of its own under a line linking it to this
        turn; pass ``engine`` to run it without a view. Needs ``%%chat --tokens``.
        """
        if engine is not None:
            from .branch import branch_turn

            return branch_turn(engine, self, at, token, max_tokens=max_tokens)
        from IPython import get_ipython

        shell = get_ipython()
        magics = shell.magics_manager.registry.get("MlxMagics") if shell is not None else None
        if magics is None:
            raise RuntimeError("No mlx_notebook engine here: %load_ext mlx_notebook and "
                               "%load_model, or pass engine=.")
        return magics.run_branch(self, at, token, max_tokens=max_tokens)

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


# -- one fold step per event type -------------------------------------------------------------
# Looked up by class when the first event arrives: importing the engine costs over a second
# and ``import mlx_notebook`` must stay light, and by then the engine is loaded anyway.

def _started(turn: Turn, event: Any) -> None:
    rounds = turn.rounds
    same = bool(rounds) and rounds[-1].request_id in (None, event.request_id)
    round_ = rounds[-1] if same else turn.begin_round({} if rounds else turn.request, event.request_id)
    round_.request_id = event.request_id
    # The prompt's counts are known now; the completion's arrive with Usage.
    round_.usage = Usage(event.prompt_tokens, event.cached_tokens, 0)


# Per-token folds keep the totals up to date themselves and say so: ``refresh`` joins every
# round's reasoning, which per token would copy the whole reasoning again each time.
_TOTALS_KEPT = object()


def _reasoning(turn: Turn, event: Any) -> object:
    round_ = turn._current_round()
    if event.text and not round_.reasoning and turn.reasoning:
        turn.reasoning += "\n"  # as refresh joins the rounds' reasoning
    round_.reasoning += event.text
    turn.reasoning += event.text
    return _TOTALS_KEPT


def _content(turn: Turn, event: Any) -> object:
    round_ = turn._current_round()
    round_.content += event.text
    turn.content = round_.content
    return _TOTALS_KEPT


def _problem(turn: Turn, event: Any) -> object:
    # Markup that did not parse is content, its raw text where the model wrote it, as the
    # engine's chunks (the server's reply) carry it; the round also keeps why, for the card.
    # (A remote server's unreadable tool-call field was never content: only its why is kept.)
    problem = {"message": event.message, "text": event.text}
    turn._current_round().problems.append(problem if event.in_reply else {**problem, "in_reply": False})
    return _content(turn, event) if event.in_reply else _TOTALS_KEPT


def _tool_call(turn: Turn, event: Any) -> None:
    turn._current_round().tool_calls.append(ToolCallRecord(event.id, event.name, dict(event.arguments)))


def _token_logprobs(turn: Turn, event: Any) -> object:
    if turn.logprobs is None:
        turn.logprobs = []
    top = tuple(TopLogprob(token, logprob) for token, logprob in event.top)
    turn.logprobs.append(TokenLogprob(event.token_id, event.token, event.logprob, top,
                                      getattr(event, "from_draft", None)))
    return _TOTALS_KEPT


def _usage(turn: Turn, event: Any) -> None:
    turn._current_round().usage = Usage(event.prompt_tokens, event.cached_tokens, event.completion_tokens,
                         event.accepted_draft_tokens)
    turn._current_round().reasoning_tokens = event.reasoning_tokens
    timings = turn.timings
    if timings.time_to_first_token is None:
        timings.time_to_first_token = event.time_to_first_token
    timings.prefill_tokens_per_second = event.prefill_tokens_per_second
    timings.decode_tokens_per_second = event.decode_tokens_per_second
    if event.peak_memory is not None:  # None: a remote server's, out of sight
        timings.peak_memory = max(timings.peak_memory or 0, event.peak_memory)


def _finished(turn: Turn, event: Any) -> None:
    round_ = turn._current_round()
    reason = STOPPED if event.reason == "cancelled" else event.reason
    if reason == "tool_calls" and not round_.tool_calls:
        # A remote server's call whose arguments did not read (an API client still gets it):
        # here nothing runs, and the round ends as a reply does.
        reason = "stop"
    round_.finish_reason = reason
    if event.reason == "cancelled":
        turn.interrupted = True


@functools.cache
def _folds() -> dict[type, Callable[[Turn, Any], object]]:
    from mlx_notebook.engine import (
        ContentDelta, Finished, ParseProblem, ReasoningDelta, Started, TokenLogprobs, ToolCall,
        Usage as UsageEvent,
    )

    return {Started: _started, ReasoningDelta: _reasoning, ContentDelta: _content,
            ParseProblem: _problem, ToolCall: _tool_call, TokenLogprobs: _token_logprobs,
            UsageEvent: _usage, Finished: _finished}
