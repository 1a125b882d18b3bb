"""Run one turn on the engine from the cell's thread: stream events, run tools, build the Turn.

The cell blocks until the turn ends (a headless Run All must save the final answer), reading
``handle.events()`` on its own thread and passing every event to the view as it arrives. The
view's Stop cancels the request on the engine (and ends a tool loop between rounds): the turn
ends normally, ``stopped``, with the partial reply. A ``KeyboardInterrupt`` (Kernel ›
Interrupt, Ctrl-C) does the same and is then raised again once the turn is recorded, so the
cell fails as IPython's convention wants and Run All stops. The tool loop sends each round's
assistant message and the tools' results back as ``tool`` messages and asks again, up to
``max_rounds`` model calls.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Iterator, Protocol

from mlx_notebook.engine import events, responses
from mlx_notebook.engine.errors import EngineRequestError

from .tools import Tool, call_tool
from .turn import STOPPED, Round, Turn

__all__ = ["View", "run_turn", "DEFAULT_MAX_ROUNDS"]

DEFAULT_MAX_ROUNDS = 5


class View(Protocol):
    """What a turn is shown on: the notebook's ``ChatView`` or the ``TerminalView``."""

    def display(self) -> None: ...
    def handle(self, event: events.EngineEvent) -> None: ...
    def tool_result(self, call_id: str, result: Any = None, error: str | None = None) -> None: ...
    def on_stop(self, callback: Callable[[], None]) -> None: ...
    def offer_tools(self, names: list[str], unsupported: bool) -> None: ...
    def finish(self, turn: Turn) -> None: ...


Confirm = Callable[[str, dict], bool]
"""Asks the user whether to run tool ``name`` with ``arguments``; True runs it."""


def run_turn(
    engine: Any,
    turn: Turn,
    view: View | None,
    *,
    kind: str = "chat",
    tools: list[Tool] = (),
    confirm: Confirm | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
) -> Turn:
    """Send ``turn.request`` (and tool-loop follow-ups), filling ``turn`` as events arrive.

    The view is displayed once the first request is admitted and finished by the caller. A
    ``KeyboardInterrupt`` is raised again after the turn is recorded as stopped.
    """
    started = time.perf_counter()
    current: list[Any] = [None]
    stop_pressed = threading.Event()

    def stop() -> None:  # may run on another thread (a comm message on a kernel subshell)
        stop_pressed.set()
        if current[0] is not None:
            current[0].cancel()

    if view is not None:
        view.on_stop(stop)
    body = turn.request
    try:
        for number in range(max_rounds):
            try:
                current[0] = engine.submit(body, kind=kind)
            except Exception as exc:
                if number > 0 and view is not None:  # shown already: end it in its error state
                    turn.error = str(exc)
                    _summarize(turn, started)
                    view.finish(turn)
                raise
            if stop_pressed.is_set():  # pressed while the tools ran or this round was sent
                current[0].cancel()
            round_ = Round(request=body, request_id=current[0].id)
            turn.rounds.append(round_)
            if number == 0:
                turn.tools_unsupported = current[0].prompt.tools_rendered is False
                if view is not None:
                    view.offer_tools(turn.tools_offered, turn.tools_unsupported)
                    view.display()  # only once admitted: a rejected request shows just the error line
            _consume(current[0], turn, round_, view, kind)
            _summarize(turn, started)
            if turn.interrupted or turn.error or not round_.tool_calls or not tools:
                break
            if number == max_rounds - 1:
                turn.error = (
                    f"the model was still calling tools after {max_rounds} rounds; "
                    "raise --max-rounds to let it continue"
                )
                break
            _run_tools(round_, tools, confirm, view)
            if stop_pressed.is_set():
                turn.interrupted = True
                break
            body = {**body, "messages": [*body["messages"], *round_.messages()]}
    except KeyboardInterrupt:  # in a tool, its confirmation, a submit or a round's events
        turn.interrupted = True
        if current[0] is not None:
            current[0].cancel()
        _mark_stopped(turn)
        _summarize(turn, started)
        raise
    _mark_stopped(turn)
    _summarize(turn, started)
    return turn


def _mark_stopped(turn: Turn) -> None:
    """A stopped turn's last round says ``stopped``; calls it never ran say why."""
    if not turn.interrupted or not turn.rounds:
        return
    last = turn.rounds[-1]
    if last.finish_reason in (None, "cancelled", "tool_calls") and turn.error is None:
        last.finish_reason = STOPPED
    for call in last.tool_calls:
        if call["result"] is None and call["error"] is None:
            call["error"] = "not run: the user stopped the turn"


def _consume(handle: Any, turn: Turn, round_: Round, view: View | None, kind: str) -> None:
    """Record every event of one request; on KeyboardInterrupt cancel it, drain the rest and
    raise the interrupt again."""
    try:
        _stream(handle, turn, round_, view, kind)
    except KeyboardInterrupt:
        handle.cancel()
        turn.interrupted = True
        try:
            # The interrupt may have landed inside the event generator and ended it; the
            # handle's queue still holds the rest, and the engine ends a cancelled request
            # promptly with Usage and Finished, which keep the counts honest. A second
            # interrupt stops waiting.
            _stream(handle, turn, round_, None, kind)
        except KeyboardInterrupt:
            pass
        raise


def _stream(handle: Any, turn: Turn, round_: Round, view: View | None, kind: str) -> None:
    def observed(stream: Iterator[events.EngineEvent]) -> Iterator[events.EngineEvent]:
        for event in stream:
            _record(turn, round_, event)
            if view is not None:
                view.handle(event)
            yield event

    # The engine's own chunk builder, so ``turn.chunks`` is what the HTTP path would send.
    build = responses.chat_chunks if kind == "chat" else responses.completion_chunks
    chunks = build(observed(handle.events()), request=handle.request, request_id=handle.id,
                   created=int(time.time()))
    try:
        turn.chunks.extend(chunks)
    except EngineRequestError:
        pass  # an Error event: already recorded on the turn as ``turn.error``


def _record(turn: Turn, round_: Round, event: events.EngineEvent) -> None:
    if isinstance(event, events.ReasoningDelta):
        round_.reasoning += event.text
    elif isinstance(event, events.ContentDelta):
        round_.content += event.text
    elif isinstance(event, events.ToolCall):
        call = {"id": event.id, "name": event.name, "arguments": dict(event.arguments),
                "result": None, "error": None}
        round_.tool_calls.append(call)
        turn.tool_calls.append(call)
    elif isinstance(event, events.TokenLogprobs):
        if turn.logprobs is None:
            turn.logprobs = []
        turn.logprobs.append({
            "token_id": event.token_id, "token": event.token, "logprob": event.logprob,
            "top_logprobs": [{"token": t, "logprob": p} for t, p in event.top],
        })
    elif isinstance(event, events.Usage):
        round_.usage = {"prompt_tokens": event.prompt_tokens, "cached_tokens": event.cached_tokens,
                        "completion_tokens": event.completion_tokens}
        if event.accepted_draft_tokens is not None:
            round_.usage["accepted_draft_tokens"] = event.accepted_draft_tokens
        _timings(turn, event)
    elif isinstance(event, events.Finished):
        round_.finish_reason = STOPPED if event.reason == "cancelled" else event.reason
        if event.reason == "cancelled":
            turn.interrupted = True
    elif isinstance(event, events.Error):
        turn.error = event.message


def _timings(turn: Turn, usage: events.Usage) -> None:
    timings = turn.timings
    if timings.get("time_to_first_token") is None:
        timings["time_to_first_token"] = usage.time_to_first_token
    timings["prefill_tokens_per_second"] = usage.prefill_tokens_per_second
    timings["decode_tokens_per_second"] = usage.decode_tokens_per_second
    timings["peak_memory"] = max(timings.get("peak_memory") or 0, usage.peak_memory)


def _summarize(turn: Turn, started: float) -> None:
    turn.refresh()
    turn.timings["total_seconds"] = time.perf_counter() - started


def _run_tools(round_: Round, tools: list[Tool], confirm: Confirm | None, view: View | None) -> None:
    for call in round_.tool_calls:
        if confirm is not None and not confirm(call["name"], call["arguments"]):
            call["error"] = "the user declined to run this tool call"
        else:
            call["result"], call["error"] = call_tool(tools, call["name"], call["arguments"])
        if view is not None:
            view.tool_result(call["id"], result=call["result"], error=call["error"])
