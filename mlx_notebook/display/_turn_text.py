"""``text/markdown`` and deterministic ``text/plain`` renderings of a turn record.

Both leave timings out (they live in the output metadata and the HTML), so the same greedy
answer gives byte-identical text on every run and nbval can compare it without sanitizers.
"""

from __future__ import annotations

import json

from ._footer import footer_items, status_label
from ._numbers import plural
from ._turn_html import pretty_json
from ._turn_parts import tools_offered_line, tools_unsupported_warning, turn_parts

__all__ = ["turn_markdown", "turn_plain_text"]


def _fence(text: str, language: str = "") -> str:
    # A fence longer than any backtick run inside, so code in a result cannot close it.
    longest = max((len(run) for run in text.split("\n") if set(run) == {"`"}), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def _markdown_part(part: dict) -> str | None:
    if part["kind"] == "reasoning":
        return f"<details><summary>Reasoning</summary>\n\n{_fence(part['text'])}\n\n</details>"
    if part["kind"] == "tool":
        call = part["call"]
        block = [f"**Tool call** `{call['name']}`", _fence(pretty_json(call["arguments"]), "json")]
        if call["error"] is not None:
            block.append(f"**Error:** {call['error']}")
        elif call["result"] is not None:
            block.append("**Result**")
            block.append(_fence(pretty_json(call["result"]), "json"))
        return "\n\n".join(block)
    return part["text"] or None


def turn_markdown(record: dict) -> str:
    """The turn as Markdown: rounds in order, reasoning folded in ``<details>``, tool calls as code."""
    parts = [f"*{line}*" for line in [tools_offered_line(record)] if line]
    if warning := tools_unsupported_warning(record):
        parts.append(f"**Warning:** {warning}")
    parts.extend(text for part in turn_parts(record) if (text := _markdown_part(part)))
    if record["error"]:
        parts.append(f"**Error:** {record['error']}")
    stats = " · ".join(f"{label} {value}" for label, value in footer_items(record, timings=False))
    parts.append(f"*{record['model']} · {stats}*")
    return "\n\n".join(parts)


def _plain_part(part: dict, record: dict) -> str | None:
    if part["kind"] == "reasoning":
        return f"[reasoning] {part['text']}"
    if part["kind"] == "tool":
        call = part["call"]
        outcome = (f"error: {call['error']}" if call["error"] is not None
                   else json.dumps(call["result"], ensure_ascii=False))
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
    if record["error"]:
        lines.append(f"[error] {record['error']}")
    usage = record["usage"]
    lines.append(
        f"[{status_label(record)}, {plural(usage['prompt_tokens'], 'prompt token')} "
        f"({usage['cached_tokens']} cached), {plural(usage['completion_tokens'], 'completion token')}]"
    )
    return "\n".join(lines)
