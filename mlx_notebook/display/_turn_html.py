"""Self-contained ``text/html`` for a finished turn, with the live widget's look.

The stylesheet is inlined (no CDN, no extension needed) and the few styles that carry
meaning are repeated inline on the elements, because JupyterLab strips ``<style>`` from
untrusted notebooks but keeps inline colours.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ._footer import footer_items, status_label
from ._markdown import markdown_html
from ._numbers import format_seconds, plural
from ._turn_parts import (
    cache_parting_lines, problem_lines, tools_offered_line, tools_unsupported_warning, turn_parts,
)
from ._turn_record import json_safe

__all__ = ["turn_html", "turn_css", "reasoning_summary", "reasoning_text", "pretty_json",
           "tool_card_html", "notices_html"]

_BOX = "border:1px solid #d0d7de;border-radius:6px;padding:8px 12px"
_MUTED = "color:#57606a;font-size:12px"


@lru_cache(maxsize=1)
def turn_css() -> str:
    """The shared stylesheet (``turn.css``), also loaded by the live widget."""
    return (Path(__file__).with_name("turn.css")).read_text(encoding="utf-8")


def pretty_json(value: Any) -> str:
    """Tool arguments and results as people read them: indented, non-ASCII kept (and cut
    below ``JSON_DEPTH`` levels, which the indenting encoder could not reach), and cut after
    ``SHOWN_CHARS`` characters: a tool that returned a whole web page would otherwise fill
    the notebook's screen and file three times over (HTML, Markdown, text). The turn keeps it
    whole."""
    text = value if isinstance(value, str) else json.dumps(
        json_safe(value), indent=2, ensure_ascii=False, sort_keys=False)
    return shown_cut(text)


SHOWN_CHARS = 10_000


def shown_cut(text: str) -> str:
    """``text``, cut after ``SHOWN_CHARS`` characters with a line saying how much more there is."""
    if len(text) <= SHOWN_CHARS:
        return text
    return (f"{text[:SHOWN_CHARS]}\n… {len(text) - SHOWN_CHARS:,} more characters, not shown "
            "(the turn's tool_calls hold them all)")


def reasoning_text(record: dict) -> str:
    """All reasoning, one paragraph per round (the turn's joined text keeps each round's blank lines)."""
    rounds = [r["reasoning"].strip() for r in record.get("rounds") or [] if r["reasoning"].strip()]
    return "\n\n".join(rounds) if rounds else record["reasoning"].strip()


def reasoning_summary(tokens: int | None = None, seconds: float | None = None, *,
                      active: bool = False) -> str:
    """``Reasoning · 41 tokens · 1.32 s``, with whatever the live view measured;
    ``Reasoning… · 3 tokens`` while the model is still reasoning."""
    parts = ["Reasoning…" if active else "Reasoning"]
    if tokens is not None:
        parts.append(plural(tokens, "token"))
    if seconds:  # one delta has no duration; "0 s" would read as a measurement
        parts.append(format_seconds(seconds))
    return " · ".join(parts)


def tool_card_html(call: dict, *, waiting: bool = False) -> str:
    """A tool call's card: name, id, arguments, then its result or error.

    ``waiting``: the live card of a call whose tool has not answered yet says so.
    """
    parts = [
        '<div class="mlxnb-tool" style="border:1px solid #d0d7de;border-radius:6px;'
        'padding:6px 8px;margin:6px 0">',
        f'<div><span class="mlxnb-tool-badge">tool call</span> <span class="mlxnb-tool-name"><bdi>{html.escape(call["name"])}</bdi></span>'
        f' <span class="mlxnb-tool-id" style="{_MUTED}"><bdi>{html.escape(call["id"])}</bdi></span></div>',
        '<div class="mlxnb-tool-label">arguments</div>',
        f'<pre class="mlxnb-tool-args">{html.escape(pretty_json(call["arguments"]))}</pre>',
    ]
    if call["error"] is not None:
        parts.append('<div class="mlxnb-tool-label">error</div>')
        parts.append(f'<pre class="mlxnb-tool-error" style="color:#a40e26">'
                     f'{html.escape(call["error"])}</pre>')
    elif call["result"] is not None or call.get("returned"):
        parts.append('<div class="mlxnb-tool-label">result</div>')
        parts.append(f'<pre class="mlxnb-tool-result">{html.escape(pretty_json(call["result"]))}</pre>')
    elif waiting:
        parts.append(f'<div class="mlxnb-tool-pending" style="{_MUTED}">waiting for the result…</div>')
    parts.append("</div>")
    return "".join(parts)


def _header(record: dict) -> str:
    model = record["model"]
    short = model.rstrip("/").rsplit("/", 1)[-1] or model
    status = status_label(record)
    return (
        f'<div class="mlxnb-header" style="{_MUTED}">'
        # <bdi>: a name with right-to-left marks must not reorder the rest of the line
        f'<span class="mlxnb-model" title="{html.escape(model)}"><bdi>{html.escape(short)}</bdi></span>'
        f'<span class="mlxnb-session">session <bdi>{html.escape(record["session"])}</bdi></span>'
        '<span class="mlxnb-spacer"></span>'
        f'<span class="mlxnb-status mlxnb-status-{html.escape(status)}">{html.escape(status)}</span>'
        "</div>"
    )


def _reasoning_panel(part: dict) -> str:
    return (
        '<details class="mlxnb-reasoning" style="color:#57606a">'
        f"<summary>{html.escape(reasoning_summary(part['tokens'], part['seconds']))}</summary>"
        '<div class="mlxnb-reasoning-body" style="white-space:pre-wrap">'
        f"{html.escape(part['text'])}</div></details>"
    )


def notices_html(record: dict) -> str:
    """The lines under the header: which tools were offered, a warning when the model's
    template could not show them (reads ``tools_offered`` and ``tools_unsupported``), and where
    a prompt whose cache lookup missed left the cache tree (``rounds[i].cache_parting``)."""
    out = []
    if line := tools_offered_line(record):
        out.append(f'<div class="mlxnb-tools-offered" style="{_MUTED}">{html.escape(line)}</div>')
    if warning := tools_unsupported_warning(record):
        out.append(f'<div class="mlxnb-warning" style="color:#7a5b00">⚠ {html.escape(warning)}</div>')
    for line, reason in cache_parting_lines(record):  # where a missed prompt left the cache tree
        title = f' title="{html.escape(reason)}"' if reason else ""
        out.append(f'<div class="mlxnb-cache-parting" style="{_MUTED}"{title}>{html.escape(line)}</div>')
    return "".join(out)


def _part_html(part: dict) -> str:
    kind = part["kind"]
    if kind == "reasoning":
        return _reasoning_panel(part)
    if kind == "tool":
        return tool_card_html(part["call"])
    if kind == "interim":
        return f'<div class="mlxnb-interim">{markdown_html(part["text"])}</div>'
    return f'<div class="mlxnb-content">{markdown_html(part["text"])}</div>'


def turn_html(record: dict) -> str:
    """The whole turn as one ``<div>``: header, notices, its rounds in order, error, footer."""
    parts = [
        f'<div class="mlxnb-turn mlxnb-static" data-mlxnb-version="{record["version"]}"'
        f' style="{_BOX}">',
        f"<style>{turn_css()}</style>",
        _header(record),
        notices_html(record),
        *(_part_html(part) for part in turn_parts(record)),
        *(f'<div class="mlxnb-problem" style="color:#7a5b00">⚠ {html.escape(line)}</div>'
          for line in problem_lines(record)),
    ]
    if record["error"]:
        parts.append(f'<div class="mlxnb-error" style="color:#a40e26">'
                     f'{html.escape(record["error"])}</div>')
    footer = "".join(
        f'<span class="mlxnb-stat" data-stat="{html.escape(label)}">{html.escape(label)} '
        f"<b>{html.escape(value)}</b></span>"
        for label, value in footer_items(record)
    )
    parts.append(f'<div class="mlxnb-footer" style="{_MUTED}">{footer}</div>')
    parts.append("</div>")
    return "".join(parts)
