"""``%%chat --compare``: one message, two option sets or two models, two replies side by side.

Both sides are ordinary requests on the one request path, each with its own tool loop and its
own live card. Sides on one engine are submitted together so it batches them; sides on two
engines (``model=NAME``, a model loaded with ``%load_model SPEC --name NAME``) run at once, each
on its engine's thread. Both ask for log-probabilities. On one model the replies part at the
first token the model produced differently (token ids compared). Two models' tokenizers cut
the same text into different tokens, so there the replies part at the first *character* where
their texts differ, and each pane marks its own token holding that character. Neither reply
joins the session on its own: ``choose(i)`` adds one.
"""

from __future__ import annotations

import html
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .cache_tree import watch_cache
from .display import (TURN_MIME_TYPE, encodable, token_view_html, turn_css, turn_mimebundle,
                      visible_text)
from .runner import run_turn
from .turn import Turn

__all__ = ["Comparison", "run_comparison", "compare_turns", "first_divergence",
           "first_text_divergence", "comparison_mimebundle", "COMPARE_MIME_TYPE"]

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


def first_text_divergence(a: list[Any] | None, b: list[Any] | None
                          ) -> tuple[int | None, tuple[int | None, int | None]]:
    """Where two replies from different tokenizers part: (the first character where their
    token texts, joined, differ, or None when the texts are equal; on each side the index of
    the token holding that character, None past its end)."""
    texts = [[t["token"] for t in side or []] for side in (a, b)]
    at = _first_difference(*("".join(side) for side in texts))
    if at is None:
        return None, (None, None)
    marks = []
    for side in texts:
        end, mark = 0, None
        for i, token in enumerate(side):
            end += len(token)
            if end > at:
                mark = i
                break
        marks.append(mark)
    return at, (marks[0], marks[1])


def _first_difference(x: str, y: str) -> int | None:
    """The first character where two texts differ (the shorter one's end, where one goes
    on), or None when they are equal."""
    at = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), None)
    return min(len(x), len(y)) if at is None and len(x) != len(y) else at


@dataclass(eq=False)
class Comparison:
    """Two turns of one message under two option sets or two models (``sides``), and where
    they part."""

    sides: list[Turn]
    labels: list[str]
    diverges_at: int | None = None
    """Where the replies part (None: they are the same): a token index when both sides ran
    on one model (``by == "token"``), a character index into the replies' text when they ran
    on two (``by == "text"``: their tokenizers differ) or when a side has no tokens to show
    (``by == "reply"``: a server sent no log-probabilities)."""
    by: str = "token"
    marks: tuple[int | None, int | None] | None = None
    """The token each side's token view outlines; None: ``diverges_at`` on both."""
    _session: Any = field(default=None, repr=False)

    def marked(self, side: int) -> int | None:
        """The token index side ``side`` marks as where the replies part."""
        return self.diverges_at if self.marks is None else self.marks[side]

    def choose(self, side: int) -> Turn:
        """Continue the conversation with side ``side`` (0 or 1): it joins the session, in
        place of the side chosen before, if any."""
        if isinstance(side, bool) or not (isinstance(side, int) and 0 <= side < len(self.sides)):
            # Not a bare IndexError: name the sides, as the card labels them.
            choices = " or ".join(f"{i} ({label!r})" for i, label in enumerate(self.labels))
            raise ValueError(f"choose({side!r}): there is no such side; choose {choices}.")
        turn = self.sides[side]
        if self._session is None:
            raise ValueError("This comparison has no session to add the turn to.")
        if self._session.dropped:  # the extension was unloaded: no cell continues it either
            raise ValueError(f"Session '{self._session.name}' was dropped when the extension "
                             "was unloaded (%reload_ext) after this comparison, so there is "
                             "nothing to continue.")
        if self._session.replaced:  # it would join a conversation no cell continues
            raise ValueError(f"Session '{self._session.name}' was started anew (%%chat --new) "
                             "after this comparison; its turns are gone, so there is nothing "
                             "to continue.")
        turns = self._session.turns
        chosen = [i for i, t in enumerate(turns) if any(t is s for s in self.sides)]
        if chosen:  # choosing again replaces the first choice where it stood
            turns[chosen[0]] = turn
        else:
            self._session.add(turn)
        return turn

    def summary(self) -> str:
        same, unit = ("the same tokens", "token") if self.by == "token" else ("the same text", "character")
        where = same if self.diverges_at is None else f"they diverge at {unit} {self.diverges_at}"
        return f"compare {self.labels[0]!r} vs {self.labels[1]!r}: {where}"

    def __str__(self) -> str:
        """Both replies under their labels, as a turn's ``str`` is its reply: what ``{_}`` in
        a later cell sends and ``print`` shows (not the repr, with every request and timing)."""
        return "\n\n".join(f"--- {label} ---\n{turn.text}" for label, turn in zip(self.labels, self.sides))

    def _repr_mimebundle_(self, **_: Any) -> tuple[dict, dict]:
        return comparison_mimebundle(self)


def compare_turns(sides: list[Turn], labels: list[str], *, same_model: bool = True,
                  session: Any = None) -> Comparison:
    """The comparison of two finished (or stopped) turns: by token on one model, by text on two."""
    a, b = sides[0].logprobs, sides[1].logprobs
    if not a or not b:
        # No tokens on a side (a server that streams no log-probabilities, as mlx_lm.server):
        # the replies' text is all there is to compare, never an empty list to call equal.
        at = _first_difference(sides[0].content or "", sides[1].content or "")
        return Comparison(sides, labels, at, by="reply", marks=(None, None), _session=session)
    if same_model:
        return Comparison(sides, labels, first_divergence(a, b), _session=session)
    at, marks = first_text_divergence(a, b)
    return Comparison(sides, labels, at, by="text", marks=marks, _session=session)


def cut_alike(a: Any, b: Any) -> bool:
    """Whether two engines' replies are made of the same tokens: one engine, or one model
    loaded twice (its directory, or a server's URL and model name, alike)."""
    if a is b:
        return True
    first, second = a.model_info, b.model_info
    # A remote model's name is the last part of its id: compare the whole id.
    return ((first.path, first.name, getattr(a, "model", None))
            == (second.path, second.name, getattr(b, "model", None)))


def _divergence_line(comparison: Comparison) -> str:
    at = comparison.diverges_at
    tokens = [turn.logprobs or [] for turn in comparison.sides]
    if comparison.by == "reply":
        why = "No token probabilities came back, so the replies are compared by their text"
        return (f"{why}: both say the same." if at is None
                else f"{why}: they diverge at character {at}.")
    if comparison.by == "text":
        models = (f"{comparison.sides[0].model} and {comparison.sides[1].model} cut text into "
                  "different tokens, so the replies are compared by text")
        if at is None:
            return f"{models}: both say the same."
        shown = [f"token {i} {t[i]['token']!r}" if i is not None else "(ended)"
                 for i, t in zip(comparison.marks or (None, None), tokens)]
        return f"{models}: they diverge at character {at}: {shown[0]} vs {shown[1]}."
    if at is None:
        return "Both replies are the same tokens."
    shown = [repr(t[at]["token"]) if at < len(t) else "(ended)" for t in tokens]
    return f"They diverge at token {at}: {shown[0]} vs {shown[1]}."


def comparison_mimebundle(comparison: Comparison) -> tuple[dict, dict]:
    """Both finished cards side by side, each made by the one turn renderer, with the token
    where they part outlined in each side's token view."""
    panes, texts, records = [], [], []
    for i, (label, turn) in enumerate(zip(comparison.labels, comparison.sides)):
        data, _ = turn_mimebundle(turn)
        records.append(data[TURN_MIME_TYPE])
        panes.append(
            '<div class="mlxnb-compare-side" style="flex:1;min-width:0">'
            f'<div class="mlxnb-compare-label" style="font-size:12px;color:#57606a">{html.escape(label)}</div>'
            f'{data["text/html"]}{token_view_html(turn.logprobs, mark=comparison.marked(i))}</div>')
        texts.append(f"--- {label} ---\n{data['text/plain']}")
    line = _divergence_line(comparison)
    body = (f'<div class="mlxnb-compare"><style>{turn_css()}</style>'
            f'<div class="mlxnb-compare-divergence" style="font-size:12px;margin-bottom:4px">'
            f"{html.escape(line)}</div>"
            f'<div style="display:flex;gap:12px;align-items:flex-start">{"".join(panes)}</div></div>')
    labels = encodable(list(comparison.labels))
    record = {"version": 1, "labels": labels, "diverges_at": comparison.diverges_at,
              "sides": records}
    if comparison.by != "token":  # two models: the index is a character's; each pane marks its token
        record.update(by=comparison.by, marks=list(comparison.marks or (None, None)))
    # The labels and model names are the user's or a server's: no escape sequence of theirs
    # reaches a terminal, and no lone surrogate fails the output.
    data = {COMPARE_MIME_TYPE: record, "text/html": encodable(body),
            "text/plain": visible_text("\n".join([line, *texts]))}
    metadata = {"mlx_notebook": {"compare": labels, "diverges_at": comparison.diverges_at}}
    return data, metadata


class _Pane:
    """One side's ChatView inside the comparison's row (None: no live view, as in a terminal),
    which never displays itself; the comparison collects its Stop callbacks, so an interrupt
    stops both sides, shown or not."""

    def __init__(self, view: Any = None):
        self.view = view
        self.stops: list[Callable[[], None]] = []
        self.stopped = False
        self._lock = threading.Lock()

    def stop(self) -> None:
        """Stop the side, also one whose request is not sent yet: a Stop callback it
        registers later runs at once."""
        with self._lock:
            self.stopped = True
            stops = list(self.stops)
        for stop in stops:
            stop()

    def display(self) -> None:
        pass

    def handle(self, event: Any) -> None:
        if self.view is not None:
            self.view.handle(event)

    def tool_result(self, call_id: str, result: Any = None, error: str | None = None) -> None:
        if self.view is not None:
            self.view.tool_result(call_id, result=result, error=error)

    def on_stop(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self.stops.append(callback)
            stopped = self.stopped
        if self.view is not None:
            self.view.on_stop(callback)
        if stopped:  # Ctrl-C came while this side was starting
            callback()

    def offer_tools(self, names: list[str], unsupported: bool) -> None:
        if self.view is not None:
            self.view.offer_tools(names, unsupported)

    def finish(self, turn: Turn) -> None:
        if self.view is not None:
            self.view.finish(turn)


class _Submitted:
    """An engine that counts its ``submit`` calls (``_start_together`` waits for both)."""

    def __init__(self, engine: Any, done: threading.Semaphore):
        self._engine, self._done = engine, done

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._engine.submit(*args, **kwargs)
        finally:
            self._done.release()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def _start_together(engines: list[Any], threads: list[threading.Thread]) -> None:
    """Start both sides; on one engine, hold the first request until the second is submitted
    too, so that both are prefilled in one batch and neither reuses the other's prompt."""
    together = getattr(engines[0], "together", None) if engines[0] is engines[1] else None
    if together is None:  # two engines, or a remote one: nothing to batch
        for thread in threads:
            thread.start()
        return
    submitted = threading.Semaphore(0)
    engines[:] = [_Submitted(engines[0], submitted)] * 2
    with together():
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 2.0
        for _ in threads:  # a side that fails before submitting ends the wait at the deadline
            if not submitted.acquire(timeout=max(0.0, deadline - time.monotonic())):
                break


def run_comparison(engines: Any, sides: list[Turn], labels: list[str], views: list[Any] | None,
                   *, session: Any = None, **run_options: Any) -> Comparison:
    """Run both turns at once and fold each into its view. ``engines`` is one engine, or one
    per side: each side runs on its own thread, so one engine batches both and two engines
    decode at once. A ``KeyboardInterrupt`` stops both and is raised again."""
    engines = list(engines) if isinstance(engines, (list, tuple)) else [engines, engines]
    panes = [_Pane(view) for view in views] if views else [_Pane(), _Pane()]
    failures: list[BaseException] = []
    # Each side says when its turn is complete. Not Thread.join: an interrupt that lands in
    # join(timeout) on Python 3.11 marks a thread that is still running as stopped
    # (threading's bpo-45274 path), and a later join would return before the turn ends.
    done = [threading.Event(), threading.Event()]

    def side(i: int) -> None:
        try:
            run_turn(engines[i], sides[i], watch_cache(engines[i], sides[i], panes[i],
                                                       card=panes[i].view),
                     **run_options)
        except BaseException as exc:  # shown on the cell's thread
            failures.append(exc)
        finally:
            done[i].set()

    threads = [threading.Thread(target=side, args=(i,), name=f"mlx-compare-{i}", daemon=True)
               for i in range(2)]
    try:
        # (An interrupt while the sides start stops them too: none goes on unseen.)
        _start_together(engines, threads)
        for finished in done:
            while not finished.wait(0.1):
                pass
    except KeyboardInterrupt:
        for pane in panes:
            pane.stop()
        for thread, finished, turn in zip(threads, done, sides):
            if thread.ident is not None:  # (started)
                finished.wait()  # each side's run_turn records its turn as stopped
            else:
                turn.mark_stopped()  # stopped before it began
        raise
    finally:
        for pane, turn in zip(panes, sides):
            pane.finish(turn)
    if failures:
        raise failures[0]
    return compare_turns(sides, labels, same_model=cut_alike(*engines), session=session)
