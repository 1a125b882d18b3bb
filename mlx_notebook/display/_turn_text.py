"""``text/markdown`` and deterministic ``text/plain`` renderings of a turn record.

Both leave timings out (they live in the output metadata and the HTML), so the same greedy
answer gives byte-identical text on every run and nbval can compare it without sanitizers.
"""

from __future__ import annotations

import html
import json
import re

from ._footer import footer_items, status_label
from ._inert_markdown import _longest_backtick_run, fenced, inert_line, inert_markdown
from ._numbers import plural
from ._turn_html import pretty_json, shown_cut
from ._turn_parts import problem_lines, tools_offered_line, tools_unsupported_warning, turn_parts

__all__ = ["turn_markdown", "turn_plain_text", "visible_text"]

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _shown(match: re.Match) -> str:
    code = ord(match[0])
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␍ for a carriage return...
    return "␡" if code == 0x7F else f"\\u{code:04x}"


def visible_text(text: str) -> str:
    """``text`` for a terminal or a ``text/plain`` output: control characters (ESC, carriage
    return, C1) and bidi overrides shown as symbols, so a reply cannot clear the screen,
    retitle the terminal, write the clipboard, overwrite a line or reverse the text after it;
    a lone surrogate (from a server's ``\\ud83d`` or a file name) as its escape, which any
    stream can encode. Newlines and tabs stay."""
    return _CONTROLS.sub(_shown, text.replace("\r\n", "\n"))


def _code_span(text: str) -> str:
    """``text`` on one line as inline code that no backtick inside can close."""
    text = " ".join(text.split())  # a blank line would end the paragraph, and the span
    if "`" not in text:
        return f"`{text}`"
    ticks = "`" * (_longest_backtick_run(text) + 1)
    return f"{ticks} {text} {ticks}"  # the spaces, which CommonMark strips, part a backtick


def _literal(text: str) -> str:
    """``text`` on one line, shown as written: ``<``, ``>`` and ``&`` as character references
    (which every Markdown renderer decodes, where some leave a backslash before ``<``), and
    the characters that make links, code or bold escaped (a tool error or a model name quoting
    ``<img onerror=...>`` stays text in any Markdown renderer)."""
    return _ACTIVE.sub(r"\\\g<0>", html.escape(" ".join(text.split()), quote=False))


_ACTIVE = re.compile(r"[\\`*\[\]]")


def _markdown_part(part: dict) -> str | None:
    if part["kind"] == "reasoning":
        return f"<details><summary>Reasoning</summary>\n\n{fenced(part['text'])}\n\n</details>"
    if part["kind"] == "tool":
        call = part["call"]
        block = [inert_line(f"**Tool call** {_code_span(call['name'])}"),
                 fenced(pretty_json(call["arguments"]), "json")]
        if call["error"] is not None:
            block.append(f"**Error:** {_literal(call['error'])}")
        elif call["result"] is not None or call.get("returned"):
            block.append("**Result**")
            block.append(fenced(pretty_json(call["result"]), "json"))
        return "\n\n".join(block)
    return inert_markdown(part["text"]) or None


def turn_markdown(record: dict) -> str:
    """The turn as Markdown: rounds in order, reasoning folded in ``<details>``, tool calls as code.
    Only the reply's own Markdown is Markdown: names, errors and the model are literal text."""
    parts = [f"*{_literal(line)}*" for line in [tools_offered_line(record)] if line]
    if warning := tools_unsupported_warning(record):
        parts.append(f"**Warning:** {_literal(warning)}")
    parts.extend(text for part in turn_parts(record) if (text := _markdown_part(part)))
    parts.extend(f"**Warning:** {_literal(line)}" for line in problem_lines(record))
    if record["error"]:
        parts.append(f"**Error:** {_literal(record['error'])}")
    stats = " · ".join(f"{label} {value}" for label, value in footer_items(record, timings=False))
    parts.append(f"*{_literal(record['model'] + ' · ' + stats)}*")
    return "\n\n".join(parts)


def _plain_part(part: dict, record: dict) -> str | None:
    if part["kind"] == "reasoning":
        return f"[reasoning] {part['text']}"
    if part["kind"] == "tool":
        call = part["call"]
        outcome = (f"error: {call['error']}" if call["error"] is not None
                   else shown_cut(json.dumps(call["result"], ensure_ascii=False)))
        return (f"[tool] {call['name']}({json.dumps(call['arguments'], ensure_ascii=False)})"
                f" -> {outcome}")
    if part["kind"] == "interim":
        return part["text"].strip()
    stopped = status_label(record) == "stopped"
    return part["text"] + (" [stopped]" if stopped else "")


def turn_plain_text(record: dict) -> str:
    """The turn for terminals and nbval: same text for the same answer, no timings."""
    lines = [f"[{line}]" for line in [tools_offered_line(record)] if line]
    if warning := tools_unsupported_warning(record):
        lines.append(f"[warning] {warning}")
    lines.extend(text for part in turn_parts(record) if (text := _plain_part(part, record)) is not None)
    lines.extend(f"[warning] {line}" for line in problem_lines(record))
    if record["error"]:
        lines.append(f"[error] {record['error']}")
    usage = record["usage"]
    lines.append(
        f"[{status_label(record)}, {plural(usage['prompt_tokens'], 'prompt token')} "
        f"({usage['cached_tokens']} cached), {plural(usage['completion_tokens'], 'completion token')}]"
    )
    return visible_text("\n".join(lines))
