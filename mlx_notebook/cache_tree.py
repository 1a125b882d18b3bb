"""``%mlx cache --tree``: the prompt cache's entries as a tree, shared prefixes merged.

Every entry is a token prefix with its KV cache; entries that start alike (the same system
prompt, an earlier turn of the same conversation) share a trunk. The tree is a radix tree over
the entries' tokens: a node holds the tokens its branch adds (decoded, elided in the middle),
and a node that ends an entry shows that entry's bytes, hits and age. Static HTML and plain
text, so a saved notebook keeps it.

A turn whose lookup missed (or hit only partly) learns where its prompt left that tree
(``cache_parting``): how many tokens it shared, the text where it parted, what the cached
branch said there and how many entries that branch holds. ``watch_cache`` notes it on the
round as the request starts, so the live card shows it while the reply streams and the
saved card keeps it.
"""

from __future__ import annotations

import dataclasses
import html
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .display import format_bytes, format_seconds, notices_html, plural

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CacheNode", "cache_tree", "tree_report", "session_reuse", "CacheParting",
           "cache_parting", "watch_cache"]

_SHOWN_CHARACTERS = 64
"""A node's decoded text longer than this is elided in the middle."""


@dataclass(slots=True)
class CacheNode:
    """A run of tokens the entries below it share (the root has none)."""

    start: int
    """Position of the node's first token in the prompts."""
    tokens: tuple[int, ...]
    entry: Any = None
    """The cache entry (``CacheEntry``) that ends here, or None for a branch point."""
    children: list[CacheNode] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.start + len(self.tokens)

    def walk(self):
        """This node and every node below it, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()


def cache_tree(entries: Sequence[Any]) -> CacheNode:
    """The radix tree of ``entries`` (anything with ``tokens``): one node per entry, plus one
    per point where entries part ways; children in token order."""
    root = CacheNode(0, ())
    _grow(root, [e for e in entries if e.tokens])
    return root


def _grow(node: CacheNode, entries: list[Any]) -> None:
    depth = node.end
    groups: dict[int, list[Any]] = {}
    for entry in entries:
        if len(entry.tokens) == depth:
            node.entry = entry
        else:
            groups.setdefault(entry.tokens[depth], []).append(entry)
    for first in sorted(groups):
        group = groups[first]
        shared = _shared_length(group, depth)
        child = CacheNode(depth, tuple(group[0].tokens[depth:depth + shared]))
        node.children.append(child)
        _grow(child, group)


def _shared_length(entries: list[Any], depth: int) -> int:
    """How many tokens from ``depth`` on every entry of the group has in common."""
    shortest = min(len(e.tokens) for e in entries) - depth
    first = entries[0].tokens
    for i in range(shortest):
        token = first[depth + i]
        if any(e.tokens[depth + i] != token for e in entries):
            return i
    return shortest


def session_reuse(engine: Any, sessions: Any) -> dict[str, tuple[tuple[int, ...], int]]:
    """Per chat session with turns: (its next prompt's tokens, how many the cache would serve).

    The next prompt is the session's history and an empty user message, with the last turn's
    tools and template arguments (``Engine.inspect``: rendered and looked up, nothing run).
    """
    from mlx_notebook.engine import EngineError

    out = {}
    for session in sessions:
        if not session.turns:
            continue
        last = session.turns[-1].request or {}
        body = {"messages": session.messages_for(""),
                **{k: last[k] for k in ("tools", "chat_template_kwargs") if k in last}}
        try:
            inspection = engine.inspect(body, kind="chat")
        except EngineError:  # a remote model, or a history the template refuses: no mark
            continue
        out[session.name] = (tuple(inspection.token_ids), inspection.cache.cached_tokens)
    return out


def _reused_node(root: CacheNode, tokens: Sequence[int], cached: int) -> CacheNode | None:
    """The deepest node on ``tokens``' path that the ``cached`` prefix reaches into."""
    node, found = root, None
    while True:
        step = next((c for c in node.children if c.start < min(cached, len(tokens))
                     and tokens[c.start] == c.tokens[0]), None)
        if step is None:
            return found
        node = found = step
        if tuple(tokens[step.start:step.end]) != step.tokens:
            return found


def _elided(text: str) -> str:
    if len(text) <= _SHOWN_CHARACTERS:
        return text
    half = (_SHOWN_CHARACTERS - 3) // 2
    return f"{text[:half]} … {text[-half:]}"


def _describe(node: CacheNode, decode: Callable[[list[int]], str], now: float) -> tuple[str, str]:
    """(decoded tokens, the numbers) for one node."""
    text = _elided(decode(list(node.tokens)).replace("\n", "⏎"))
    numbers = [f"{plural(len(node.tokens), 'token')} from {node.start}"]
    entry = node.entry
    if entry is not None:
        numbers.append(format_bytes(entry.bytes) or "0 B")
        numbers.append(f"{entry.kind}")
        numbers.append(plural(entry.hits, "hit"))
        numbers.append(f"filed {format_seconds(max(0.0, now - entry.created))} ago")
    else:
        numbers.append("shared prefix")
    return text, ", ".join(numbers)


def tree_report(info: Any, decode: Callable[[list[int]], str], *, now: float | None = None,
                reuse: dict[str, tuple[Sequence[int], int]] | None = None):
    """The tree of ``info.prompts`` (an engine ``CacheInfo``) as a ``reports.Report``;
    ``reuse`` (``session_reuse``) marks the branch each session's next turn would reuse."""
    from .reports import Report

    now = time.time() if now is None else now
    root = cache_tree(info.prompts)
    marks: dict[int, list[str]] = {}
    for name, (tokens, cached) in (reuse or {}).items():
        node = _reused_node(root, tokens, cached) if cached else None
        if node is not None:
            marks.setdefault(id(node), []).append(
                f"session '{name}' next turn reuses {plural(cached, 'token')}")
    head = (f"prompt cache: {plural(info.entries, 'entry', 'entries')}, "
            f"{format_bytes(info.bytes) or '0 B'} of {format_bytes(info.budget_bytes) or '0 B'}")
    if not root.children:
        return Report(head + " (empty)", f"<div class=\"mlxnb-cache-tree\"><b>{html.escape(head)}</b> (empty)</div>")
    lines = [head]

    def plain(node: CacheNode, prefix: str) -> None:
        for i, child in enumerate(node.children):
            last = i == len(node.children) - 1
            text, numbers = _describe(child, decode, now)
            mark = "".join(f"  ← {m}" for m in marks.get(id(child), ()))
            lines.append(f"{prefix}{'└─ ' if last else '├─ '}\"{text}\"  [{numbers}]{mark}")
            plain(child, prefix + ("   " if last else "│  "))

    def rich(node: CacheNode) -> str:
        items = []
        for child in node.children:
            text, numbers = _describe(child, decode, now)
            style = "" if child.entry is not None else ' style="color:#777"'
            mark = "".join(f' <b style="color:#06c">← {html.escape(m)}</b>'
                           for m in marks.get(id(child), ()))
            items.append(f"<li><code style=\"white-space:pre-wrap\">{html.escape(text)}</code> "
                         f"<span{style}>{html.escape(numbers)}</span>{mark}{rich(child)}</li>")
        return f"<ul style=\"margin:0;padding-left:1.2em\">{''.join(items)}</ul>" if items else ""

    plain(root, "")
    body = rich(root)
    return Report("\n".join(lines),
                  f"<div class=\"mlxnb-cache-tree\"><b>{html.escape(head)}</b>{body}</div>")


# -- where a missed prompt left the tree ------------------------------------------------------

_PARTING_CONTEXT_TOKENS = 12
"""Tokens decoded on each side of the parting point (the card elides the text further)."""


@dataclass(frozen=True, slots=True)
class CacheParting:
    """Where a prompt whose lookup missed left the prompt cache's tree."""

    shared_tokens: int
    """Leading prompt tokens some cached entry holds too (the lookup's ``diverged_at``)."""
    prompt_tokens: int
    shared_text: str
    """The last few shared tokens, decoded: the text right before the parting point."""
    prompt_text: str
    """The prompt's next few tokens from the parting point, decoded."""
    cached_text: str
    """What the cached branch has there instead (its most recently filed entry), decoded."""
    branch_start: int
    """Where the tree node the prompt left starts (``%mlx cache --tree`` labels it "N tokens
    from START"); equal to ``shared_tokens`` when the prompt left at a branch point."""
    branch_entries: int
    """Cached entries on the branch the prompt left."""
    reason: str | None = None
    """The engine's one-sentence reason for the miss."""


def _shared(a: "np.ndarray", b: "np.ndarray") -> int:
    """How many leading tokens ``a`` and ``b`` share (compared in C: prompts run long)."""
    import numpy as np

    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


def _left_node(root: CacheNode, prompt: "np.ndarray", at: int) -> CacheNode:
    """The node the prompt left after ``at`` shared tokens: the node holding the parting
    point, or the branch point where none of its children goes the prompt's way."""
    node = root
    while True:
        child = next((c for c in node.children if c.start < len(prompt)
                      and c.tokens[0] == prompt[c.start]), None)
        if child is None:
            return node
        if child.end > at:
            return child
        node = child


def cache_parting(info: Any, request_id: str, prompt: Sequence[int],
                  decode: Callable[[list[int]], str]) -> CacheParting | None:
    """Where ``prompt`` (request ``request_id``'s tokens) left the tree of ``info.prompts``,
    by the lookup ``info.lookups`` recorded for it; None when it left no cached entry behind
    (a hit, the prompt only extends an entry, an empty cache, or the entries are gone).

    Only entries that share exactly the lookup's ``diverged_at`` tokens and go on count: an
    entry sharing more was filed after the lookup (this request's own prefill snapshots).
    """
    import numpy as np  # here: %load_ext does not import it

    lookup = next((item for item in reversed(info.lookups) if item.request_id == request_id), None)
    if lookup is None or lookup.diverged_at is None:
        return None
    at, ids = lookup.diverged_at, np.asarray(prompt, dtype=np.int64)
    seen = [(entry, _shared(np.asarray(entry.tokens, dtype=np.int64), ids)) for entry in info.prompts]
    left = [entry for entry, shared in seen if shared == at and len(entry.tokens) > at]
    if not left:
        return None
    node = _left_node(cache_tree([entry for entry, shared in seen if shared <= at]), ids, at)
    branch = [n.entry for n in node.walk() if n.entry is not None and len(n.entry.tokens) > at]
    context = _PARTING_CONTEXT_TOKENS
    return CacheParting(
        shared_tokens=at, prompt_tokens=len(ids),
        shared_text=decode([int(t) for t in ids[max(0, at - context):at]]),
        prompt_text=decode([int(t) for t in ids[at:at + context]]),
        cached_text=decode(list(left[-1].tokens[at:at + context])),
        branch_start=node.start if node.end > at else at, branch_entries=len(branch) or len(left),
        reason=lookup.miss_reason)


class _CacheWatch:
    """A ``runner.View`` that, when a round's prompt-cache lookup missed, notes where the
    prompt left the cache tree on the round (before the view sees ``Started``) and shows it
    under the live card's header; every call is forwarded to ``inner`` (or to none)."""

    def __init__(self, engine: Any, turn: Any, inner: Any, kind: str, card: Any) -> None:
        self._engine, self._turn, self._inner, self._kind, self._card = engine, turn, inner, kind, card

    def handle(self, event: Any) -> None:
        if type(event).__name__ == "Started" and event.cached_tokens < event.prompt_tokens - 1:
            self._note(event.request_id)
        if self._inner is not None:
            self._inner.handle(event)

    def _note(self, request_id: str) -> None:
        from mlx_notebook.engine import EngineError

        round_ = self._turn.rounds[-1] if self._turn.rounds else None
        info_of = getattr(self._engine, "cache_info", None)
        if round_ is None or info_of is None:
            return
        info = info_of()
        if not any(item.request_id == request_id for item in info.lookups):
            return  # a remote engine keeps no lookups; the local one only the last few
        try:  # the prompt's tokens, rendered again on the one request path
            tokens = self._engine.inspect(round_.request, kind=self._kind).token_ids
        except EngineError:
            return
        round_.cache_parting = cache_parting(info, request_id, tokens, self._engine.tokenizer.decode)
        if round_.cache_parting is not None and hasattr(self._card, "notices"):
            self._card.notices = notices_html(_live_record(self._turn))

    def display(self) -> None:
        if self._inner is not None:
            self._inner.display()

    def tool_result(self, call_id: str, result: Any = None, error: str | None = None) -> None:
        if self._inner is not None:
            self._inner.tool_result(call_id, result, error)

    def on_stop(self, callback: Callable[[], None]) -> None:
        if self._inner is not None:
            self._inner.on_stop(callback)

    def offer_tools(self, names: list[str], unsupported: bool) -> None:
        if self._inner is not None:
            self._inner.offer_tools(names, unsupported)

    def finish(self, turn: Any) -> None:
        if self._inner is not None:
            self._inner.finish(turn)


def _live_record(turn: Any) -> dict:
    """What ``notices_html`` reads, from a turn still streaming."""
    return {"tools_offered": list(turn.tools_offered), "tools_unsupported": bool(turn.tools_unsupported),
            "rounds": [{"cache_parting": None if r.cache_parting is None
                        else dataclasses.asdict(r.cache_parting)} for r in turn.rounds]}


def watch_cache(engine: Any, turn: Any, view: Any, *, kind: str = "chat", card: Any = None) -> _CacheWatch:
    """``view`` (a ``runner.View`` or None) with the cache parting noted on each round whose
    lookup missed; ``card`` is the live ``ChatView`` whose notices show it (default: ``view``)."""
    return _CacheWatch(engine, turn, view, kind, view if card is None else card)
