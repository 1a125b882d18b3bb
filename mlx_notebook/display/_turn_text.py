"""``text/markdown`` and deterministic ``text/plain`` renderings of a turn record.

Both leave timings out (they live in the output metadata and the HTML), so the same greedy
answer gives byte-identical text on every run and nbval can compare it without sanitizers.
"""

from __future__ import annotations

import json

from ._footer import footer_items, status_label
from ._turn_html import pretty_json, reasoning_text

__all__ = ["turn_markdown", "turn_plain_text"]


def _fence(text: str, language: str = "") -> str:
    # A fence longer than any backtick run inside, so code in a result cannot close it.
    longest = max((len(run) for run in text.split("\n") if set(run) == {"`"}), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def turn_markdown(record: dict) -> str:
    """The turn as Markdown: reasoning folded in ``<details>``, tool calls as code blocks."""
    parts = []
    if record["reasoning"]:
        parts.append(f"<details><summary>Reasoning</summary>\n\n"
                     f"{_fence(reasoning_text(record))}\n\n</details>")
    for call in record["tool_calls"]:
        block = [f"**Tool call** `{call['name']}`", _fence(pretty_json(call["arguments"]), "json")]
        if call["error"] is not None:
            block.append(f"**Error:** {call['error']}")
        elif call["result"] is not None:
            block.append("**Result**")
            block.append(_fence(pretty_json(call["result"]), "json"))
        parts.append("\n\n".join(block))
    if record["content"]:
        parts.append(record["content"])
    if record["error"]:
        parts.append(f"**Error:** {record['error']}")
    stats = " · ".join(f"{label} {value}" for label, value in footer_items(record, timings=False))
    parts.append(f"*{record['model']} · {stats}*")
    return "\n\n".join(parts)


def turn_plain_text(record: dict) -> str:
    """The turn for terminals and nbval: same text for the same answer, no timings."""
    lines = []
    if record["reasoning"]:
        lines.append(f"[reasoning] {reasoning_text(record)}")
    for call in record["tool_calls"]:
        outcome = (f"error: {call['error']}" if call["error"] is not None
                   else json.dumps(call["result"], ensure_ascii=False))
        lines.append(f"[tool] {call['name']}({json.dumps(call['arguments'], ensure_ascii=False)})"
                     f" -> {outcome}")
    lines.append(record["content"] + (" [interrupted]" if record["interrupted"] else ""))
    if record["error"]:
        lines.append(f"[error] {record['error']}")
    usage = record["usage"]
    lines.append(
        f"[{status_label(record)}, {usage['prompt_tokens']} prompt tokens "
        f"({usage['cached_tokens']} cached), {usage['completion_tokens']} completion tokens]"
    )
    return "\n".join(lines)
