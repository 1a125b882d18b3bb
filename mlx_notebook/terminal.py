"""Plain-text streaming of a turn, for terminal IPython and any shell without a kernel.

It has the same surface as the notebook's ``ChatView`` (``display``, ``handle``,
``tool_result``, ``on_stop``, ``finish``) so the cell code does not care which it drives.
Reasoning is shown in brackets as it streams, then the answer, then one summary line; Ctrl-C
is the stop button here, so ``on_stop`` has nothing to wire.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, TextIO

from mlx_notebook.engine import ContentDelta, EngineEvent, Error, ParseProblem, ReasoningDelta, ToolCall

from ._turn_types import result_repr
from .display import visible_text
from .turn import Turn

__all__ = ["TerminalView", "TOOL_RESULT_SHOWN"]

TOOL_RESULT_SHOWN = 500
"""Characters of a tool's result a terminal shows; the turn keeps all of it."""


class TerminalView:
    """Writes a turn's events to a text stream as they arrive."""

    def __init__(self, turn_model: str, session: str, *, stream: TextIO | None = None,
                 trim_edges: bool = True) -> None:
        # Resolved now, not at import, so IPython's and pytest's stdout capture apply.
        self._out = stream if stream is not None else sys.stdout
        self._section: str | None = None
        self._written = False
        self._held = ""
        # A chat reply's edges are template whitespace; a raw completion's are part of the text.
        self._trim = trim_edges
        self.model = turn_model
        self.session = session

    def display(self) -> None:
        pass

    def on_stop(self, callback: Callable[[], None]) -> None:
        pass

    def offer_tools(self, names: list[str], unsupported: bool) -> None:
        if names and unsupported:
            self._start("line", f"[tools not shown to the model: its chat template cannot "
                                f"show tools ({', '.join(names)})]")

    def handle(self, event: EngineEvent) -> None:
        if isinstance(event, ReasoningDelta):
            self._text("reasoning", event.text, "[thinking] ")
        elif isinstance(event, ContentDelta):
            self._text("content", event.text)
        elif isinstance(event, ToolCall):
            self._start("line", f"[tool call] {event.name}({json.dumps(event.arguments)})")
        elif isinstance(event, ParseProblem):
            self._start("line", f"[unparsed markup: {event.message}] {event.text}")
        elif isinstance(event, Error):
            self._start("line", f"[error] {event.message}")

    def tool_result(self, call_id: str, result: Any = None, error: str | None = None) -> None:
        # (a result's repr may raise: the card and the model's copy name its type instead)
        outcome = f"error: {error}" if error is not None else result_repr(result)
        if len(outcome) > TOOL_RESULT_SHOWN:  # a page of JSON would bury the reply
            outcome = (f"{outcome[:TOOL_RESULT_SHOWN]}… ({len(outcome):,} characters; the "
                       "turn's tool_calls hold it whole)")
        self._start("line", f"[tool result] {outcome}")

    def finish(self, turn: Turn) -> None:
        if turn.interrupted:
            self._write(" [stopped]")
        if turn.error and self._section != "line":
            self._start("line", f"[error] {turn.error}")
        if turn.interrupted or turn.error:
            # A failed cell has no Out[n]; a finished one shows the summary there.
            self._start("line", f"[{turn.summary()}]")
        self._write("\n")

    def _text(self, section: str, text: str, prefix: str = "") -> None:
        """Stream text without the blank lines at a section's edges (the newlines around
        ``<think>`` markup): leading whitespace is dropped, trailing whitespace held back
        until more text of the same section follows it."""
        if not self._trim:
            self._start(section, prefix)
            self._write(text)
            return
        if section != self._section:
            text = text.lstrip()
            if not text:
                return
            self._held = ""
            self._start(section, prefix)
        text = self._held + text
        body = text.rstrip()
        self._held = text[len(body):]
        self._write(body)

    def _start(self, section: str, prefix: str = "") -> None:
        """Begin a section on a new line; a ``line`` section always starts a new line."""
        if self._section != section or section == "line":
            if self._written:
                self._write("\n")
            self._write(prefix)
        self._section = section

    def _write(self, text: str) -> None:
        if text:
            self._out.write(visible_text(text))
            self._out.flush()
            self._written = True
