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

import logging
import threading
import time
from typing import Any, Callable, Iterator, Protocol

from mlx_notebook.engine import (
    EngineDeadError, EngineError, EngineEvent, EngineRequestError, chat_chunks, completion_chunks,
)

from .display import plural
from .testing import record_reply
from .tools import Tool, call_tool
from .turn import STOPPED_RUNNING, Round, Turn

log = logging.getLogger(__name__)

__all__ = ["View", "run_turn", "ToolRoundsExceeded", "DEFAULT_MAX_ROUNDS"]

DEFAULT_MAX_ROUNDS = 5


class View(Protocol):
    """What a turn is shown on: the notebook's ``ChatView`` or the ``TerminalView``."""

    def display(self) -> None: ...
    def handle(self, event: EngineEvent) -> None: ...
    def tool_result(self, call_id: str, result: Any = None, error: str | None = None) -> None: ...
    def on_stop(self, callback: Callable[[], None]) -> None: ...
    def offer_tools(self, names: list[str], unsupported: bool) -> None: ...
    def finish(self, turn: Turn) -> None: ...


Confirm = Callable[[str, dict], bool]
"""Asks the user whether to run tool ``name`` with ``arguments``; True runs it."""


class ToolRoundsExceeded(Exception):
    """The model was still calling tools when the tool loop ran out of rounds."""


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
    """Send ``turn.request`` (and tool-loop follow-ups), folding the events into ``turn``.

    The view is displayed once the first request is admitted and finished by the caller. A
    failure the engine reports is recorded on the turn (``turn.exception``), not raised; a
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
                if number == 0 or not isinstance(exc, EngineError):
                    raise  # nothing ran (the error alone, as for a rejected request), or a bug
                # A later round: the model and the tools ran, and the turn keeps what they
                # did (it becomes ``_``, and the cell says why it stopped).
                turn.fail(_after_tools(exc, turn.rounds[-1], number))
                break
            if stop_pressed.is_set():  # pressed while the tools ran or this round was sent
                current[0].cancel()
            round_ = turn.begin_round(body, current[0].id)
            if number == 0:
                turn.tools_unsupported = current[0].prompt.tools_rendered is False
                if view is not None:
                    view.offer_tools(turn.tools_offered, turn.tools_unsupported)
                    view.display()  # only once admitted: a rejected request shows just the error line
            _consume(engine, current[0], turn, view, kind)
            if kind == "chat":  # what the parser saw, for Turn.to_fixture
                round_.recorded = record_reply(engine, current[0].id)
            if turn.interrupted or turn.error or not round_.tool_calls or not tools:
                break
            if number == max_rounds - 1:
                for call in round_.tool_calls:  # the model would read null, the user nothing
                    call.error = f"not run: the turn reached its limit of {plural(max_rounds, 'round')}"
                turn.fail(ToolRoundsExceeded(
                    f"the model was still calling tools after {plural(max_rounds, 'round')}; "
                    "raise --max-rounds to let it continue"))
                break
            _run_tools(round_, tools, confirm, view, stop_pressed)
            if stop_pressed.is_set():
                turn.interrupted = True
                break
            body = {**body, "messages": [*body["messages"], *round_.messages()]}
    except KeyboardInterrupt:  # in a tool, its confirmation, a submit or a round's events
        turn.interrupted = True
        if current[0] is not None:
            current[0].cancel()
        _end(turn, started)
        raise
    _end(turn, started)
    return turn


def _after_tools(exc: Exception, tools_round: Round, number: int) -> Exception:
    """A round after tools ran was refused: a prompt past the context says which results
    made it so (a fresh session would not help: the tools would run again)."""
    if not (isinstance(exc, EngineRequestError)
            and exc.error.get("code") == "context_length_exceeded"):
        return exc
    sizes = ", ".join(f"{call.name} returned {len(call.message_content()):,} characters"
                      for call in tools_round.tool_calls)
    return EngineRequestError(
        f"{exc.message.rstrip('.').split(';')[0]} once the tool results of round {number} were "
        f"added ({sizes}); have the tools return less.", param=exc.param,
        code="tool_results_too_long")


def _end(turn: Turn, started: float) -> None:
    if turn.interrupted:
        turn.mark_stopped()
    turn.timings.total_seconds = time.perf_counter() - started


def _consume(engine: Any, handle: Any, turn: Turn, view: View | None, kind: str) -> None:
    """Fold every event of one request into the turn; on KeyboardInterrupt cancel it, drain
    the rest and raise the interrupt again."""
    try:
        _stream(engine, handle, turn, view, kind)
    except KeyboardInterrupt:
        handle.cancel()
        turn.interrupted = True
        try:
            # The interrupt may have landed inside the event generator and ended it; the
            # handle's queue still holds the rest, and the engine ends a cancelled request
            # promptly with Usage and Finished, which keep the counts honest. The view shows
            # the rest too: the turn keeps what was shown, no more. A second interrupt stops
            # waiting.
            if not handle.done:  # the interrupt may have come after its last event, too
                _stream(engine, handle, turn, view, kind)
        except KeyboardInterrupt:
            pass
        raise


def _stream(engine: Any, handle: Any, turn: Turn, view: View | None, kind: str) -> None:
    live = [view] if view is not None else []

    def observed(stream: Iterator[EngineEvent]) -> Iterator[EngineEvent]:
        for event in stream:
            turn.apply(event)
            for shown in live:
                if not _shown_on(shown, "handle", event):
                    live.clear()
            yield event

    # The engine's own chunk builder, so ``turn.chunks`` is what the HTTP path would send.
    build = chat_chunks if kind == "chat" else completion_chunks
    chunks = build(observed(handle.events()), request=handle.request, request_id=handle.id,
                   created=int(time.time()))
    try:
        turn.chunks.extend(chunks)
    except EngineRequestError as failure:  # the builder raises it for the Error event
        turn.fail(failure if engine.healthy else _dead(failure))


def _shown_on(view: View, method: str, *args: Any, **kwargs: Any) -> bool:
    """Call a view's method; a view's failure is logged, never the turn's (it goes on, and
    the magics show its static output when it ends). False when the view failed."""
    try:
        getattr(view, method)(*args, **kwargs)
    except Exception:  # noqa: BLE001 -- a view's bug must not lose the turn
        log.exception("the live view failed; the turn goes on and is shown when it ends")
        return False
    return True


def _dead(failure: EngineRequestError) -> EngineDeadError:
    """The Error event does not say the engine thread died; the engine does, and the magics
    then tell the user to reload rather than to fix the request."""
    dead = EngineDeadError(failure.message)
    dead.__cause__ = failure
    return dead


def _run_tools(round_: Round, tools: list[Tool], confirm: Confirm | None, view: View | None,
               stop_pressed: threading.Event) -> None:
    for call in round_.tool_calls:
        if stop_pressed.is_set():  # Stop between two calls: the rest say "not run" (mark_stopped)
            return
        if confirm is not None and not confirm(call.name, call.arguments):
            call.error = "the user declined to run this tool call"
        else:
            try:
                call.result, call.error = call_tool(tools, call.name, call.arguments)
                call.returned = call.error is None or None
            except KeyboardInterrupt:  # it ran, so not "not run" (what the calls after it say)
                call.error = STOPPED_RUNNING
                raise
        if view is not None:
            _shown_on(view, "tool_result", call.id, result=call.read_result(), error=call.error)
