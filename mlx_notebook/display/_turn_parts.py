"""A turn record as the reader meets it: its parts in the order they happened, and its notices.

A tool turn is several model calls (rounds): the model reasons, calls tools, reads their
results, reasons again and answers. Showing all reasoning in one panel above the tool cards
made the model seem to read a result before asking for it, so every rendering walks the
record's ``rounds``: round 1 reasoning -> its calls -> round 2 reasoning -> answer. Records
written before rounds existed (or a turn built by hand without them) keep the old layout:
all reasoning, then every call, then the answer.

Example::

    >>> [part["kind"] for part in turn_parts(tool_turn_record)]
    ['reasoning', 'tool', 'reasoning', 'content']
"""

from __future__ import annotations

__all__ = ["turn_parts", "tools_offered_line", "tools_unsupported_warning", "cache_parting_lines",
           "problem_lines"]

_PARTING_CHARACTERS = 32
"""Each text around a cache parting point is cut to about this many characters."""
_PROBLEM_CHARACTERS = 200
"""A remote tool-call field that did not read is shown up to this many characters."""


def _reasoning(text: str, stats: dict | None) -> dict:
    stats = stats or {}
    return {"kind": "reasoning", "text": text.strip(), "tokens": stats.get("tokens"),
            "seconds": stats.get("seconds")}


def turn_parts(record: dict) -> list[dict]:
    """``{"kind": "reasoning", "text", "tokens", "seconds"}``, ``{"kind": "tool", "call"}``,
    ``{"kind": "interim", "text"}`` (a round's text before its tool calls) and, last, one
    ``{"kind": "content", "text"}`` with the answer."""
    calls = record.get("tool_calls") or []
    rounds = record.get("rounds") or []
    answer = {"kind": "content", "text": record.get("content") or ""}
    if not rounds:
        parts = [_reasoning(record["reasoning"], record.get("reasoning_stats"))] \
            if (record.get("reasoning") or "").strip() else []
        return [*parts, *({"kind": "tool", "call": call} for call in calls), answer]

    by_id = {call["id"]: call for call in calls}
    reasoning_rounds = [r for r in rounds if (r.get("reasoning") or "").strip()]
    # The live view's turn-wide numbers belong to a panel only when there is one panel.
    shared_stats = record.get("reasoning_stats") if len(reasoning_rounds) == 1 else None
    parts: list[dict] = []
    shown: set[str] = set()
    for number, round_ in enumerate(rounds):
        if (round_.get("reasoning") or "").strip():
            parts.append(_reasoning(round_["reasoning"], round_.get("reasoning_stats") or shared_stats))
        last = number == len(rounds) - 1
        if not last and (round_.get("content") or "").strip():
            parts.append({"kind": "interim", "text": round_["content"]})
        for call_id in round_.get("tool_call_ids") or []:
            if call_id in by_id and call_id not in shown:
                parts.append({"kind": "tool", "call": by_id[call_id]})
                shown.add(call_id)
    parts.extend({"kind": "tool", "call": call} for call in calls if call["id"] not in shown)
    parts.append(answer)
    return parts


def tools_offered_line(record: dict) -> str | None:
    """``tools offered: get_weather, get_time``, or None when the turn offered none."""
    offered = record.get("tools_offered") or []
    return f"tools offered: {', '.join(offered)}" if offered else None


def tools_unsupported_warning(record: dict) -> str | None:
    """Why the model ignored the tools: its chat template could not show them."""
    offered = record.get("tools_offered") or []
    if not record.get("tools_unsupported") or not offered:
        return None
    return (f"This model's chat template cannot show tools: the model never saw "
            f"{', '.join(offered)}.")


def _near(text: str, *, before: bool) -> str:
    """Text next to a parting point, newlines shown, cut away from the point: ``…user⏎``."""
    text = text.replace("\n", "⏎")
    if len(text) <= _PARTING_CHARACTERS:
        return text
    return "…" + text[-_PARTING_CHARACTERS:] if before else text[:_PARTING_CHARACTERS] + "…"


def cache_parting_lines(record: dict) -> list[tuple[str, str | None]]:
    """One ``(line, the engine's reason)`` per round whose prompt left the prompt cache's tree
    (``rounds[i].cache_parting``): how much it shared, and the text where it parted."""
    rounds = record.get("rounds") or []
    out = []
    for number, round_ in enumerate(rounds):
        parting = round_.get("cache_parting")
        if not parting:
            continue
        entries = parting["branch_entries"]
        line = (f"prompt cache: shared {parting['shared_tokens']} of {parting['prompt_tokens']} "
                f"prompt tokens, then left a cached branch ({entries} "
                f"{'entry' if entries == 1 else 'entries'} from token {parting['branch_start']}): "
                f"after “{_near(parting['shared_text'], before=True)}” this prompt has "
                f"“{_near(parting['prompt_text'], before=False)}” where the cache has "
                f"“{_near(parting['cached_text'], before=False)}”")
        out.append((f"round {number + 1} · {line}" if len(rounds) > 1 else line, parting.get("reason")))
    return out


def problem_lines(record: dict) -> list[str]:
    """One ``unparsed markup: why`` per piece of markup that did not parse
    (``rounds[i].problems``); its raw text is in the reply, where the model wrote it, or, for
    a remote server's tool-call field (``in_reply`` false), on the line."""
    rounds = record.get("rounds") or []
    lines = []
    for number, round_ in enumerate(rounds):
        for problem in round_.get("problems") or []:
            line = f"unparsed markup: {problem['message']}"
            if problem.get("in_reply") is False:
                text = problem["text"]
                line += ": " + (text if len(text) <= _PROBLEM_CHARACTERS
                                else text[:_PROBLEM_CHARACTERS] + "…")
            lines.append(f"round {number + 1} · {line}" if len(rounds) > 1 else line)
    return lines
