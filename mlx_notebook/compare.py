"""``%%chat --compare``: one message, two option sets, two replies decoded side by side.

Both sides are ordinary requests on the one request path, submitted together so the engine
batches them, each with its own tool loop and its own live card. Both ask for log-probabilities:
the token where the replies part is found from the tokens the model actually produced, not
guessed from the text. Neither reply joins the session on its own: ``choose(i)`` adds one.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from .display import TURN_MIME_TYPE, token_view_html, turn_css, turn_mimebundle
from .runner import run_turn
from .turn import Turn

__all__ = ["Comparison", "run_comparison", "first_divergence", "comparison_mimebundle",
           "COMPARE_MIME_TYPE"]

COMPARE_MIME_TYPE = "application/vnd.mlx-notebook.compare+json"
"""A comparison's record: its labels, where the replies part, and both turns' records."""


def first_divergence(a: list[Any] | None, b: list[Any] | None) -> int | None:
    """The index of the first generated token that differs, or where the shorter reply ended;
    None when both replies are the same tokens."""
    a, b = [(t["token_id"], t["token"]) for t in a or []], [(t["token_id"], t["token"]) for t in b or []]
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@dataclass(eq=False)
class Comparison:
    """Two turns of one message under two option sets (``sides``), and where they part."""

    sides: list[Turn]
    labels: list[str]
    diverges_at: int | None = None
    """First token index where the replies differ (None: the same tokens)."""
    _session: Any = field(default=None, repr=False)

    def choose(self, side: int) -> Turn:
        """Continue the conversation with side ``side`` (0 or 1): it joins the session."""
        turn = self.sides[side]
        if self._session is None:
            raise ValueError("This comparison has no session to add the turn to.")
        self._session.add(turn)
        return turn

    def summary(self) -> str:
        where = ("the same tokens" if self.diverges_at is None
                 else f"they diverge at token {self.diverges_at}")
        return f"compare {self.labels[0]!r} vs {self.labels[1]!r}: {where}"

    def _repr_mimebundle_(self, **_: Any) -> tuple[dict, dict]:
        return comparison_mimebundle(self)


def _divergence_line(comparison: Comparison) -> str:
    at = comparison.diverges_at
    if at is None:
        return "Both replies are the same tokens."
    tokens = [turn.logprobs or [] for turn in comparison.sides]
    shown = [repr(t[at]["token"]) if at < len(t) else "(ended)" for t in tokens]
    return f"They diverge at token {at}: {shown[0]} vs {shown[1]}."


def comparison_mimebundle(comparison: Comparison) -> tuple[dict, dict]:
    """Both finished cards side by side, each made by the one turn renderer, with the token
    where they part outlined in each side's token view."""
    panes, texts, records = [], [], []
    for label, turn in zip(comparison.labels, comparison.sides):
        data, _ = turn_mimebundle(turn)
        records.append(data[TURN_MIME_TYPE])
        panes.append(
            '<div class="mlxnb-compare-side" style="flex:1;min-width:0">'
            f'<div class="mlxnb-compare-label" style="font-size:12px;color:#57606a">{html.escape(label)}</div>'
            f'{data["text/html"]}{token_view_html(turn.logprobs, mark=comparison.diverges_at)}</div>')
        texts.append(f"--- {label} ---\n{data['text/plain']}")
    line = _divergence_line(comparison)
    body = (f'<div class="mlxnb-compare"><style>{turn_css()}</style>'
            f'<div class="mlxnb-compare-divergence" style="font-size:12px;margin-bottom:4px">'
            f"{html.escape(line)}</div>"
            f'<div style="display:flex;gap:12px;align-items:flex-start">{"".join(panes)}</div></div>')
    record = {"version": 1, "labels": list(comparison.labels), "diverges_at": comparison.diverges_at,
              "sides": records}
    data = {COMPARE_MIME_TYPE: record, "text/html": body, "text/plain": "\n".join([line, *texts])}
    metadata = {"mlx_notebook": {"compare": comparison.labels, "diverges_at": comparison.diverges_at}}
    return data, metadata


class _Pane:
    """A ChatView shown inside the comparison's row: it never displays itself, and the
    comparison collects its Stop callbacks (for a kernel interrupt)."""

    def __init__(self, view: Any):
        self.view = view
        self.stops: list[Callable[[], None]] = []

    def display(self) -> None:
        pass

    def handle(self, event: Any) -> None:
        self.view.handle(event)

    def tool_result(self, call_id: str, result: Any = None, error: str | None = None) -> None:
        self.view.tool_result(call_id, result=result, error=error)

    def on_stop(self, callback: Callable[[], None]) -> None:
        self.stops.append(callback)
        self.view.on_stop(callback)

    def offer_tools(self, names: list[str], unsupported: bool) -> None:
        self.view.offer_tools(names, unsupported)

    def finish(self, turn: Turn) -> None:
        self.view.finish(turn)


def run_comparison(engine: Any, sides: list[Turn], labels: list[str], views: list[Any] | None,
                   *, session: Any = None, **run_options: Any) -> Comparison:
    """Run both turns at once (each on its own thread, so the engine batches them) and fold
    each into its view. A ``KeyboardInterrupt`` stops both and is raised again."""
    panes = [_Pane(view) for view in views] if views else [None, None]
    failures: list[BaseException] = []

    def side(i: int) -> None:
        try:
            run_turn(engine, sides[i], panes[i], **run_options)
        except BaseException as exc:  # shown on the cell's thread
            failures.append(exc)

    threads = [threading.Thread(target=side, args=(i,), name=f"mlx-compare-{i}", daemon=True)
               for i in range(2)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.1)
    except KeyboardInterrupt:
        for pane in panes:
            for stop in (pane.stops if pane else []):
                stop()
        for thread in threads:
            thread.join()  # each side's run_turn records its turn as stopped
        raise
    finally:
        for pane, turn in zip(panes, sides):
            if pane is not None:
                pane.finish(turn)
    if failures:
        raise failures[0]
    return Comparison(sides, labels, first_divergence(sides[0].logprobs, sides[1].logprobs),
                      _session=session)
