"""The versioned JSON record of a finished turn: ``application/vnd.mlx-notebook.turn+json``.

Every static rendering (HTML, Markdown, plain text) is built from this record, and a
JupyterLab renderer reads it from saved notebooks, so its shape is a contract written down in
``turn.schema.json``. Bump ``TURN_SCHEMA_VERSION`` on any change that is not a new optional
field.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from ..turn import Round, TokenLogprob, ToolCallRecord, Turn, Usage

__all__ = [
    "TURN_MIME_TYPE", "TURN_SCHEMA_VERSION", "turn_record", "json_safe", "encodable",
    "finish_reason_name",
]

TURN_MIME_TYPE = "application/vnd.mlx-notebook.turn+json"
TURN_SCHEMA_VERSION = 1


JSON_DEPTH = 100
"""Levels of nesting a record keeps. Deeper (a model's arguments nested 600 levels, which
its parser reads) is cut to a marker: rendering it would exceed Python's recursion limit."""


def json_safe(value: Any, _depth: int = 0) -> Any:
    """A JSON-serializable copy: unknown objects become their ``repr``, NaN/inf become None,
    anything nested deeper than ``JSON_DEPTH`` levels a marker string.

    Requests can hold Python callables (tools) and results can be any object a tool
    returned; the record must still save into a notebook.
    """
    if isinstance(value, str):
        return _encodable(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if _depth >= JSON_DEPTH:
        return f"… (nested deeper than {JSON_DEPTH} levels)"
    if isinstance(value, dict):
        return {_encodable(str(key)): json_safe(item, _depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item, _depth + 1) for item in value]
    try:
        return json_safe(json.loads(json.dumps(value)), _depth)
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        return _encodable(repr(value))
    except Exception:  # a result's own __repr__ failing must not fail the turn's display
        return f"<{type(value).__name__} that cannot be shown as text>"


def encodable(value: Any) -> Any:
    """``value`` (a JSON-shaped structure) with every lone surrogate in its strings, keys
    included, as an escape: whatever a tool, a server or a file name put in a turn, the
    kernel can send it as UTF-8 (one such character would fail the whole output)."""
    if isinstance(value, str):
        return _encodable(value)
    if isinstance(value, dict):
        return {encodable(key): encodable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encodable(item) for item in value]
    return value


def _encodable(text: str) -> str:
    """``text`` with lone surrogates (``"\\ud83d"``, from a cut emoji) as escapes: the kernel
    sends outputs as UTF-8 and cannot encode one, which would fail the whole cell."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _usage(usage: Usage) -> dict:
    out = {"prompt_tokens": usage.prompt_tokens, "cached_tokens": usage.cached_tokens,
           "completion_tokens": usage.completion_tokens}
    if usage.accepted_draft_tokens is not None:  # only with a draft model: older records lack it
        out["accepted_draft_tokens"] = usage.accepted_draft_tokens
    return out


def _tool_call(call: ToolCallRecord) -> dict:
    return {
        "id": call.id,
        "name": call.name,
        "arguments": json_safe(call.arguments),
        "result": json_safe(call.read_result()),
        "error": None if call.error is None else str(call.error),
        # Only where a null result would be ambiguous: the function returned None, and the
        # model read null (every other record stays as it was saved before the field).
        **({"returned": True} if call.returned and call.result is None and call.error is None
           else {}),
    }


def _logprob(item: TokenLogprob) -> dict:
    record = {
        "token": item.token,
        "logprob": json_safe(float(item.logprob)),
        "top_logprobs": [{"token": top.token, "logprob": json_safe(float(top.logprob))}
                         for top in item.top_logprobs],
    }
    if item.from_draft is not None:  # only with a draft model: older records stay as they were
        record["from_draft"] = bool(item.from_draft)
    return record


def finish_reason_name(reason: str | None) -> str | None:
    """The engine's ``cancelled`` is the user's Stop: every front end says ``stopped``."""
    return "stopped" if reason == "cancelled" else reason


def _round(round_: Round, reasoning_stats: dict | None) -> dict:
    out = {
        "content": round_.content,
        "reasoning": round_.reasoning,
        "tool_call_ids": [call.id for call in round_.tool_calls],
        "usage": _usage(round_.usage),
        "finish_reason": finish_reason_name(round_.finish_reason),
    }
    if reasoning_stats is not None:
        out["reasoning_stats"] = {"tokens": reasoning_stats.get("tokens"),
                                  "seconds": json_safe(reasoning_stats.get("seconds"))}
    if round_.cache_parting is not None:  # only a round whose prompt-cache lookup missed
        out["cache_parting"] = json_safe(dataclasses.asdict(round_.cache_parting))
    if round_.problems:
        out["problems"] = [dict(problem) for problem in round_.problems]
    return out


def turn_record(
    turn: Turn,
    *,
    reasoning_tokens: int | None = None,
    reasoning_seconds: float | None = None,
    round_reasoning_stats: list[dict | None] | None = None,
) -> dict:
    """The JSON record of ``turn``.

    ``reasoning_tokens``/``reasoning_seconds`` are what the live view measured while the
    model reasoned, ``round_reasoning_stats`` the same per round (``{"tokens", "seconds"}``
    or None); a turn rebuilt later has neither and the record says so with None.
    """
    per_round = list(round_reasoning_stats or [])
    return encodable({
        "version": TURN_SCHEMA_VERSION,
        "model": str(turn.model),
        "session": str(turn.session),
        "request": json_safe(turn.request or {}),
        "reasoning": turn.reasoning or "",
        "reasoning_stats": {"tokens": reasoning_tokens, "seconds": json_safe(reasoning_seconds)},
        "content": turn.content or "",
        "tool_calls": [_tool_call(call) for call in turn.tool_calls],
        "usage": _usage(turn.usage),
        "timings": {key: json_safe(value) for key, value in turn.timings.items()},
        "finish_reason": finish_reason_name(turn.finish_reason),
        "interrupted": bool(turn.interrupted),
        "error": turn.error,
        "rounds": [
            _round(round_, per_round[i] if i < len(per_round) else None)
            for i, round_ in enumerate(turn.rounds)
        ],
        "logprobs": None if turn.logprobs is None else [_logprob(item) for item in turn.logprobs],
        "tools_offered": [str(name) for name in turn.tools_offered if name],
        "tools_unsupported": bool(turn.tools_unsupported),
        "model_dtype": str(turn.model_dtype) if turn.model_dtype else None,
        # Only a turn with a think budget has it: older records and readers never see it.
        **({"think_budget": turn.think_budget} if turn.think_budget is not None else {}),
    })
