"""``%mlx cache --tree``: the prompt cache's entries as a tree, shared prefixes merged.

Every entry is a token prefix with its KV cache; entries that start alike (the same system
prompt, an earlier turn of the same conversation) share a trunk. The tree is a radix tree over
the entries' tokens: a node holds the tokens its branch adds (decoded, elided in the middle),
and a node that ends an entry shows that entry's bytes, hits and age. Static HTML and plain
text, so a saved notebook keeps it.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .display import format_bytes, format_seconds, plural

__all__ = ["CacheNode", "cache_tree", "tree_report", "session_reuse"]

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
