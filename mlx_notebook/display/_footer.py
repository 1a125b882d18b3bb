"""The numbers under a turn: tokens, prompt-cache hits, speed, memory, dtype and why it stopped.

The one formatter of the footer: the static output and the live widget (which the kernel
sends these items) both read it.
"""

from __future__ import annotations

from ._numbers import fixed, format_bytes, format_seconds, plural

__all__ = ["footer_items", "format_bytes", "status_label"]


def status_label(record: dict) -> str:
    """``stopped``, ``error`` or the finish reason (``stop``, ``length``, ``tool_calls``).

    A turn the user stopped says ``stopped`` whichever way it was stopped (Stop, a kernel
    interrupt, or an old record whose engine reason was ``cancelled``).
    """
    if record.get("interrupted") or record.get("finish_reason") in ("stopped", "cancelled"):
        return "stopped"
    if record.get("error"):
        return "error"
    return record.get("finish_reason") or "done"


def footer_items(record: dict, *, timings: bool = True, finished: bool = True) -> list[tuple[str, str]]:
    """(label, value) pairs; ``timings=False`` leaves out the run-to-run varying numbers,
    ``finished=False`` the finish reason (a turn still streaming has none yet)."""
    usage, times = record["usage"], record["timings"]
    prompt, cached = usage["prompt_tokens"], usage["cached_tokens"]
    items = [("prompt", plural(prompt, "token"))]
    if prompt:
        items.append(("cached", f"{cached} ({fixed(100 * cached / prompt, 0)}%)"))
    items.append(("completion", plural(usage["completion_tokens"], "token")))
    budget = record.get("think_budget")
    if budget:
        used = [n for n in budget.get("reasoning_tokens") or () if n is not None]
        if budget.get("cut"):
            items.append(("think budget", f"cut reasoning at {plural(budget['budget'], 'token')}"))
        elif used:
            items.append(("think budget", f"{max(used)} of {plural(budget['budget'], 'token')}"))
    if usage.get("accepted_draft_tokens") is not None:
        accepted, completion = usage["accepted_draft_tokens"], usage["completion_tokens"]
        rate = f" ({fixed(100 * accepted / completion, 0)}%)" if completion else ""
        items.append(("drafted", f"{accepted} accepted{rate}"))
    if timings:
        ttft = times.get("time_to_first_token")
        prefill = times.get("prefill_tokens_per_second")
        decode = times.get("decode_tokens_per_second")
        memory = format_bytes(times.get("peak_memory"))
        total = times.get("total_seconds")
        if ttft is not None:
            items.append(("TTFT", format_seconds(ttft)))
        if prefill is not None:
            items.append(("prefill", f"{fixed(prefill, 0)} tok/s"))
        if decode is not None:
            items.append(("decode", f"{fixed(decode, 1)} tok/s"))
        if memory is not None:
            items.append(("peak memory", memory))
        if total is not None:
            items.append(("total", format_seconds(total)))
    if record.get("model_dtype"):
        items.append(("dtype", str(record["model_dtype"])))
    if finished:
        items.append(("finish", status_label(record)))
    return items
