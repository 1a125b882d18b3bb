"""The live view of one chat turn: the engine's events drive it while the reply streams.

Durable state (blocks, tool calls, usage, phase) lives in synced traits; while the model
writes, only what changed travels, as ``{"kind": "delta", ...}`` custom messages coalesced to
at most ``MAX_MESSAGES_PER_SECOND``: new reasoning text, and the content's Markdown blocks
that differ from what the front end has. Resending the whole reply per token would cost
O(n²) bytes and hit jupyter_server's IOPub rate limits (1000 msg/s, 1 MB/s, excess silently
dropped). Text is flushed at every switch between reasoning, content and tool calls, and at
the end. ``finish(turn)`` swaps the output for the static mimebundle, which is what a saved,
headless-run or reopened notebook shows.

Every piece of HTML the card shows (Markdown, tool cards, notices, footer items) is made by
``mlx_notebook.display``, the renderer of the static output too; the front end only places
it, so the live and the saved card cannot drift apart.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import anywidget
import traitlets

from ..display import (
    TURN_MIME_TYPE,
    encodable,
    finish_reason_name,
    footer_items,
    json_safe,
    MarkdownStream,
    notices_html,
    reasoning_summary,
    status_label,
    tool_card_html,
    turn_css,
    turn_mimebundle,
    visible_text,
)
from ..engine import (
    ContentDelta,
    Error,
    Finished,
    ParseProblem,
    PrefillProgress,
    ReasoningDelta,
    Started,
    TokenLogprobs,
    ToolCall,
    Usage,
)
from .._upstream import keep_front_end_subshell
from ..turn import Turn

__all__ = ["ChatView", "MAX_MESSAGES_PER_SECOND"]

log = logging.getLogger(__name__)

MAX_MESSAGES_PER_SECOND = 20
"""Ceiling on coalesced stream messages (deltas, prefill progress) per view."""

_TERMINAL = ("done", "stopped", "error")
_LIVE_TOOL_CARDS = 64
"""Tool cards the live view draws. A reply with more calls (a model in a loop wrote 3,000)
shows the rest when the turn ends: every card change re-sends the synced cards, so drawing
them all live cost the kernel minutes and the front end a gigabyte."""


def _common_prefix_length(old: list[str], new: list[str]) -> int:
    n = 0
    for a, b in zip(old, new):
        if a != b:
            break
        n += 1
    return n


def _utf16_length(text: str) -> int:
    # The front end counts string offsets in UTF-16 code units (JavaScript strings), of the
    # text as sent: a lone surrogate goes as its escape.
    return len(encodable(text).encode("utf-16-le")) // 2


class _Block:
    """One run of reasoning or content text, or a tool call's place in the reply."""

    __slots__ = ("kind", "text", "pending", "sent_length", "html", "html_final", "markdown",
                 "tokens", "first", "last", "call_id", "round")

    def __init__(self, kind: str, now: float, call_id: str | None = None, round_: int = 0):
        self.kind = kind
        self.round = round_
        """Which model call (round of the tool loop) wrote this block."""
        self.text = ""
        self.pending = ""
        self.sent_length = 0
        """UTF-16 length of the text the front end already has (reasoning)."""
        self.html: list[str] = []
        """The Markdown blocks the front end already has (content)."""
        self.markdown = MarkdownStream()
        self.html_final = False
        """``html`` is the full render of ``text`` (not a streaming tail render)."""
        self.tokens = 0
        self.first = now
        self.last = now
        self.call_id = call_id

    @property
    def seconds(self) -> float:
        return round(self.last - self.first, 3)

    def summary(self) -> str:
        return reasoning_summary(self.tokens, self.seconds)

    def snapshot(self) -> dict:
        if self.kind == "tool":
            return {"kind": "tool", "id": self.call_id}
        if self.kind == "reasoning":
            return {"kind": "reasoning", "text": self.text, "tokens": self.tokens,
                    "seconds": self.seconds, "summary": self.summary()}
        if not self.html_final:
            self.html, self.html_final = self.markdown.render(self.text, final=True), True
        return {"kind": "content", "text": self.text, "html": self.html, "tokens": self.tokens,
                "seconds": self.seconds}


class ChatView(anywidget.AnyWidget):
    """Live chat turn: Markdown answer, folding reasoning, tool cards, stats footer, Stop."""

    _esm = Path(__file__).with_name("chat_view.js")
    _css = turn_css() + Path(__file__).with_name("chat_view.css").read_text(encoding="utf-8")

    turn_id = traitlets.Unicode().tag(sync=True)
    model = traitlets.Unicode().tag(sync=True)
    session = traitlets.Unicode().tag(sync=True)
    phase = traitlets.Unicode("waiting").tag(sync=True)
    """waiting, prefill, reasoning, content, tool_calls, then done, stopped or error."""
    blocks = traitlets.List().tag(sync=True)
    """Snapshot of the reply's blocks; synced at the end and on a view's resync request."""
    tool_calls = traitlets.List().tag(sync=True)
    tool_cards = traitlets.Dict().tag(sync=True)
    """Each tool call's card, as HTML, by call id."""
    prefill = traitlets.Dict().tag(sync=True)
    usage = traitlets.Dict().tag(sync=True)
    timings = traitlets.Dict().tag(sync=True)
    finish_reason = traitlets.Unicode(allow_none=True, default_value=None).tag(sync=True)
    error = traitlets.Unicode(allow_none=True, default_value=None).tag(sync=True)
    problems = traitlets.List().tag(sync=True)
    stop_interrupts = traitlets.Bool(False).tag(sync=True)
    """The kernel's main thread is busy in this turn's cell. Stop still sends its message
    (a kernel with subshells reads it on another thread at once); the front end interrupts
    the kernel only when the kernel cannot read comm messages while busy, or when the turn
    has not stopped ~2 s after the message."""
    tools_offered = traitlets.List(traitlets.Unicode()).tag(sync=True)
    """Names of the tools offered in this turn (shown under the header)."""
    tools_unsupported = traitlets.Bool(False).tag(sync=True)
    """The chat template cannot render tools: the model never saw ``tools_offered``."""
    model_dtype = traitlets.Unicode(allow_none=True, default_value=None).tag(sync=True)
    """The dtype the model runs in (``float32``), shown in the footer when known."""
    notices = traitlets.Unicode("").tag(sync=True)
    """The lines under the header (tools offered, a warning), as HTML."""
    footer = traitlets.List().tag(sync=True)
    """The footer's ``[label, value]`` items; deltas carry fresher ones while text streams."""
    status = traitlets.Unicode("").tag(sync=True)
    """How the turn ended (``stop``, ``length``, ``stopped``, ``error``...); empty while it runs."""

    def __init__(self, model: str, session: str, *, clock: Callable[[], float] = time.monotonic,
                 model_dtype: str | None = None, turn: Turn | None = None):
        """``turn`` is the turn the runner folds this turn's events into; the view reads its
        totals. Without one (a view fed events by hand) the view folds them into its own."""
        super().__init__(turn_id=uuid.uuid4().hex, model=encodable(str(model)),
                         session=encodable(str(session)),
                         model_dtype=None if model_dtype is None else encodable(str(model_dtype)))
        self._folds_events = turn is None
        self._turn = Turn(model=str(model), session=str(session), request={}) if turn is None else turn
        self._clock = clock
        self._lock = threading.RLock()
        # Stop messages may arrive on a kernel subshell's thread while the cell's thread
        # streams; this guards the callback list, nothing else (the callbacks only set flags).
        self._stop_lock = threading.Lock()
        self._blocks: list[_Block] = []
        self._last_send = float("-inf")
        self._render_seconds = 0.0
        self._pending_prefill: dict | None = None
        self._stop_callbacks: list[Callable[[], Any]] = []
        self._display_handle = None
        self._parent: dict | None = None
        self._static: tuple[dict, dict] | None = None
        self._calls_not_drawn = 0
        self.on_msg(self._on_front_end_message)
        self._route_stop_to_the_front_ends_subshell()

    def _send(self, msg: dict, buffers: Any = None) -> None:
        # Every state update and delta goes through here: a lone surrogate a server or a tool
        # put in the turn goes as its escape (the kernel cannot encode it; the cell would fail).
        super()._send(encodable(msg), buffers)

    def _route_stop_to_the_front_ends_subshell(self) -> None:
        """Let Stop reach the kernel while this turn's cell is busy.

        JupyterLab 4.4+ sends comm messages on a kernel subshell, which runs while the main
        shell runs the cell; but ipykernel 7.4 routes a comm's incoming messages to the shell
        that last sent on it -- this cell's busy main shell -- so Stop would wait behind the
        turn it is meant to stop (measured: handled 2.3 s later, after the cell ended). Only
        Stop keeps the subshell the front end chose: it just sets flags (under a lock).
        """
        keep_front_end_subshell(getattr(self, "comm", None),
                                lambda content: isinstance(content, dict) and content.get("kind") == "stop")

    # -- public API used by the magics ------------------------------------------------------

    def display(self) -> None:
        """Show the view in the current cell (and remember the cell for later updates)."""
        from IPython import get_ipython
        from IPython.display import display

        shell = get_ipython()
        if shell is None:
            return
        self._parent = getattr(shell, "parent_header", None)
        self._display_handle = display(self, display_id=True)

    def on_stop(self, callback: Callable[[], Any]) -> None:
        """Call ``callback()`` when the user presses Stop (the magics cancel the request).

        It may run on a thread other than the cell's (a kernel subshell), so it must only
        set flags, such as the engine request's cancel.
        """
        with self._stop_lock:
            self._stop_callbacks.append(callback)

    def offer_tools(self, names: list[str], unsupported: bool = False) -> None:
        """Show which tools this turn offers; ``unsupported`` warns that the model never saw them."""
        with self.hold_sync():
            self.tools_offered = [str(name) for name in names]
            self.tools_unsupported = bool(unsupported)
            self.notices = self._notices_now()

    def handle(self, event: Any) -> None:
        """Apply one engine event; call from the thread that consumes the request's events."""
        with self._lock:
            if threading.current_thread() is threading.main_thread() and not self.stop_interrupts:
                self.stop_interrupts = True
            if self._folds_events:
                self._turn.apply(event)
            handler = _HANDLERS.get(type(event))
            if handler is not None:
                handler(self, event)

    def tool_result(self, call_id: str, result: Any = None, error: str | None = None) -> None:
        """Show what a tool returned (or why it failed) on its card."""
        with self._lock:
            calls = [dict(call) for call in self.tool_calls]
            changed = next((call for call in calls if call["id"] == call_id), None)
            if changed is None:  # a call past the cards drawn live
                return
            changed["result"] = json_safe(result)
            changed["error"] = None if error is None else str(error)
            if error is None:  # the function returned: a None result reads as null, as the model read it
                changed["returned"] = True
            with self.hold_sync():
                self.tool_calls = calls
                card = tool_card_html(changed, waiting=True)
                self.tool_cards = {**self.tool_cards, call_id: card}

    def _footer_items(self) -> list[list[str]]:
        """The footer as the static output words it, with the tokens counted so far."""
        if "prompt_tokens" not in self.usage:
            return []
        usage = dict(self.usage)
        streamed = sum(block.tokens for block in self._blocks)
        usage["completion_tokens"] = max(usage.get("completion_tokens", 0), streamed)
        record = {**self._record(), "usage": usage, "timings": dict(self.timings),
                  "model_dtype": self.model_dtype, "think_budget": self._turn.think_budget}
        return [list(item) for item in footer_items(record, finished=self.phase in _TERMINAL)]

    def _record(self) -> dict:
        """What the static renderer's status reads, as this view knows it so far."""
        return {"finish_reason": self.finish_reason, "error": self.error,
                "interrupted": self.phase == "stopped"}

    def _show_end(self) -> None:
        """Set the status and footer once the phase is final (or back to streaming)."""
        self.status = status_label(self._record()) if self.phase in _TERMINAL else ""
        self.footer = self._footer_items()

    def finish(self, turn: Turn) -> tuple[dict, dict]:
        """Final state: flush, then replace the live output with the turn's static mimebundle."""
        with self._lock:
            self._flush()
            reasoning = [block for block in self._blocks if block.kind == "reasoning"]
            self._static = turn_mimebundle(
                turn,
                reasoning_tokens=sum(block.tokens for block in reasoning) if reasoning else None,
                reasoning_seconds=(sum(block.seconds for block in reasoning) if reasoning else None),
                round_reasoning_stats=self._round_reasoning_stats(),
            )
            record = self._static[0][TURN_MIME_TYPE]
            with self.hold_sync():
                self.blocks = [block.snapshot() for block in self._blocks]
                self.usage = record["usage"]
                self.timings = record["timings"]
                self.finish_reason = record["finish_reason"]
                self.error = turn.error
                self.tools_offered = record["tools_offered"]
                self.tools_unsupported = record["tools_unsupported"]
                self.model_dtype = record["model_dtype"]
                self.phase = "error" if turn.error else "stopped" if turn.interrupted else "done"
                self.notices = notices_html(record)
                self._show_end()
            if self._display_handle is not None:
                data, metadata = self._static
                with self._in_cell():
                    self._display_handle.update(data, metadata=metadata, raw=True)
                # The output no longer shows the widget; free its comm and front-end model.
                self.close()
            return self._static

    def _round_reasoning_stats(self) -> list[dict | None]:
        """Per round of the tool loop, the reasoning tokens and seconds this view counted."""
        stats: list[dict | None] = [None] * (self._round + 1)
        for block in self._blocks:
            if block.kind != "reasoning":
                continue
            before = stats[block.round] or {"tokens": 0, "seconds": 0.0}
            stats[block.round] = {"tokens": before["tokens"] + block.tokens,
                                  "seconds": round(before["seconds"] + block.seconds, 3)}
        return stats

    def __repr__(self) -> str:
        # What text-only front ends show for the live output before the static one replaces it.
        # The names are a server's or the user's: shown, never acted on by a terminal.
        return visible_text(f"<ChatView {self.model} · session {self.session} · {self.phase}>")

    @property
    def mimebundle(self) -> tuple[dict, dict] | None:
        """The static ``(data, metadata)`` once ``finish`` ran, else None."""
        return self._static

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        if self._static is not None:
            return self._static
        return super()._repr_mimebundle_(**kwargs)

    # -- event handlers ---------------------------------------------------------------------

    @property
    def _round(self) -> int:
        """Which model call (round of the tool loop) the events now arriving belong to."""
        return max(len(self._turn.rounds) - 1, 0)

    def _on_started(self, event: Started) -> None:
        self._flush()
        with self.hold_sync():
            self.usage = dict(self._turn.usage)  # earlier rounds' and this prompt's counts
            self.prefill = {"processed": event.cached_tokens, "total": event.prompt_tokens}
            self.phase = "prefill"
            self._show_end()

    def _on_prefill(self, event: PrefillProgress) -> None:
        self._pending_prefill = {"processed": event.processed, "total": event.total}
        self._maybe_flush()

    def _on_text(self, kind: str, text: str) -> None:
        now = self._clock()
        current = self._blocks[-1] if self._blocks else None
        if current is None or current.kind != kind:
            self._flush()
            current = _Block(kind, now, round_=self._round)
            self._blocks.append(current)
            self.phase = kind  # a switch: one state message, never per token
        current.text += text
        current.pending += text
        current.html_final = False
        current.tokens += 1
        current.last = now
        self._maybe_flush()

    def _on_tool_call(self, event: ToolCall) -> None:
        self._flush()
        if len(self.tool_calls) >= _LIVE_TOOL_CARDS:
            self._calls_not_drawn += 1
            self.notices = self._notices_now()
            return
        self._blocks.append(_Block("tool", self._clock(), call_id=event.id, round_=self._round))
        call = {"id": event.id, "name": event.name, "arguments": json_safe(event.arguments),
                "result": None, "error": None}
        with self.hold_sync():
            self.tool_calls = [*self.tool_calls, call]
            self.tool_cards = {**self.tool_cards, call["id"]: tool_card_html(call, waiting=True)}
            self.phase = "tool_calls"

    def _notices_now(self) -> str:
        lines = notices_html({"tools_offered": self.tools_offered,
                              "tools_unsupported": self.tools_unsupported})
        if self._calls_not_drawn:
            lines += (f'<div class="mlxnb-warning" style="color:#7a5b00">{self._calls_not_drawn:,} '
                      f"more tool calls: shown when the turn ends</div>")
        return lines

    def _on_problem(self, event: ParseProblem) -> None:
        self._flush()
        self.problems = [*self.problems, {"message": event.message, "text": event.text}]

    def _on_usage(self, event: Usage) -> None:
        self._flush()
        with self.hold_sync():
            self.usage = dict(self._turn.usage)
            self.timings = dict(self._turn.timings)
            self.footer = self._footer_items()

    def _on_finished(self, event: Finished) -> None:
        self._flush()
        with self.hold_sync():
            self.finish_reason = finish_reason_name(event.reason)
            if event.reason == "cancelled":
                self.phase = "stopped"
            elif event.reason != "tool_calls":  # the tool loop starts another round
                self.phase = "done"
            self._show_end()

    def _on_error(self, event: Error) -> None:
        self._flush()
        with self.hold_sync():
            self.error = event.message
            self.phase = "error"
            self._show_end()

    # -- coalescing ---------------------------------------------------------------------------

    def _maybe_flush(self) -> None:
        # Rendering a long code block can take milliseconds: flush less often then, so the
        # kernel thread spends at most about a tenth of its time drawing the reply.
        interval = max(1.0 / MAX_MESSAGES_PER_SECOND, 10 * self._render_seconds)
        if self._clock() - self._last_send >= interval:
            self._flush(streaming=True)

    def _flush(self, streaming: bool = False) -> None:
        """Send what the front end lacks: the open block's news and the prefill progress.

        Reasoning travels as new text; content as the Markdown blocks that changed (``keep``
        the first blocks the front end has, then these), rendered here by the static renderer.
        """
        sent = False
        if self._blocks and self._blocks[-1].pending:
            index, block = len(self._blocks) - 1, self._blocks[-1]
            message = {"kind": "delta", "block": index, "channel": block.kind,
                       "tokens": block.tokens, "seconds": block.seconds,
                       "footer": self._footer_items()}
            if block.kind == "content":
                started = self._clock()  # the view's own clock: a test's fake clock sees no cost
                html = block.markdown.render(block.text, final=not streaming)
                self._render_seconds = self._clock() - started
                block.html_final = not streaming
                keep = _common_prefix_length(block.html, html)
                message.update(keep=keep, html=html[keep:])
                block.html = html
            else:
                message.update(offset=block.sent_length, text=block.pending, summary=block.summary())
                block.sent_length += _utf16_length(block.pending)
            block.pending = ""
            self.send(message)
            sent = True
        if self._pending_prefill is not None:
            self.prefill, self._pending_prefill = self._pending_prefill, None
            sent = True
        if sent:
            self._last_send = self._clock()

    # -- front end ----------------------------------------------------------------------------

    def _on_front_end_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        kind = content.get("kind") if isinstance(content, dict) else None
        if kind == "stop":
            # With kernel subshells (JupyterLab 4.6's default for widget comms) this runs on
            # a subshell thread while the cell's thread streams the turn.
            with self._stop_lock:
                callbacks = list(self._stop_callbacks)
            for callback in callbacks:
                try:
                    callback()
                except Exception:  # a failing callback must not break the others
                    log.exception("Stop callback %r failed", callback)
        elif kind == "resync":
            # A view that missed deltas (opened mid-stream) asks for the whole text once.
            with self._lock:
                self._flush()
                with self.hold_sync():
                    self.blocks = [block.snapshot() for block in self._blocks]
                    self.footer = self._footer_items()

    @contextlib.contextmanager
    def _in_cell(self):
        """Route output to the cell that displayed this view, from whatever thread we are on.

        ipykernel 7 sends output from other threads to the most recently executed cell unless
        the thread's parent header is set.
        """
        from IPython import get_ipython

        shell = get_ipython()
        set_parent = getattr(shell, "set_thread_parent", None)
        if self._parent is None or set_parent is None:
            yield
            return
        tokens = set_parent(self._parent)
        try:
            yield
        finally:
            shell.reset_thread_parent(tokens)


_HANDLERS: dict[type, Callable[[ChatView, Any], None]] = {
    Started: ChatView._on_started,
    PrefillProgress: ChatView._on_prefill,
    ReasoningDelta: lambda view, event: view._on_text("reasoning", event.text),
    ContentDelta: lambda view, event: view._on_text("content", event.text),
    ToolCall: ChatView._on_tool_call,
    ParseProblem: ChatView._on_problem,
    TokenLogprobs: lambda view, event: None,  # the token view is built from the finished turn
    Usage: ChatView._on_usage,
    Finished: ChatView._on_finished,
    Error: ChatView._on_error,
}
