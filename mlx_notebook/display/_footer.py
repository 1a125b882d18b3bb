"""The numbers under a turn: tokens, prompt-cache hits, speed, memory and why it stopped.

The live widget formats the same items in ``widgets/chat_view.js`` (``footerItems``); keep
the two in step so the static output looks like the live one.
"""

from __future__ import annotations

__all__ = ["footer_items", "format_bytes", "status_label"]


def format_bytes(count: int | float | None) -> str | None:
    """``1_572_864`` -> ``'1.5 MB'`` (binary units, as mlx reports peak memory)."""
    if count is None:
        return None
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return None  # unreachable: the loop returns at GB


def status_label(record: dict) -> str:
    """``stopped``, ``error`` or the finish reason (``stop``, ``length``, ``tool_calls``)."""
    if record.get("interrupted"):
        return "stopped"
    if record.get("error"):
        return "error"
    return record.get("finish_reason") or "done"


def footer_items(record: dict, *, timings: bool = True) -> list[tuple[str, str]]:
    """(label, value) pairs; ``timings=False`` leaves out the run-to-run varying numbers."""
    usage, times = record["usage"], record["timings"]
    prompt, cached = usage["prompt_tokens"], usage["cached_tokens"]
    items = [("prompt", f"{prompt} tokens")]
    if prompt:
        items.append(("cached", f"{cached} ({100 * cached / prompt:.0f}%)"))
    items.append(("completion", f"{usage['completion_tokens']} tokens"))
    if usage.get("accepted_draft_tokens") is not None:
        items.append(("drafted", f"{usage['accepted_draft_tokens']} accepted"))
    if timings:
        ttft = times.get("time_to_first_token")
        prefill = times.get("prefill_tokens_per_second")
        decode = times.get("decode_tokens_per_second")
        memory = format_bytes(times.get("peak_memory"))
        total = times.get("total_seconds")
        if ttft is not None:
            items.append(("TTFT", f"{ttft:.2f} s"))
        if prefill is not None:
            items.append(("prefill", f"{prefill:.0f} tok/s"))
        if decode is not None:
            items.append(("decode", f"{decode:.1f} tok/s"))
        if memory is not None:
            items.append(("peak memory", memory))
        if total is not None:
            items.append(("total", f"{total:.2f} s"))
    items.append(("finish", status_label(record)))
    return items
