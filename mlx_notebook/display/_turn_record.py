"""The versioned JSON record of a finished turn: ``application/vnd.mlx-notebook.turn+json``.

Every static rendering (HTML, Markdown, plain text) is built from this record, and a
JupyterLab renderer reads it from saved notebooks, so its shape is a contract written down in
``turn.schema.json``. Bump ``TURN_SCHEMA_VERSION`` on any change that is not a new optional
field.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = [
    "TURN_MIME_TYPE", "TURN_SCHEMA_VERSION", "turn_record", "json_safe", "finish_reason_name",
]

TURN_MIME_TYPE = "application/vnd.mlx-notebook.turn+json"
TURN_SCHEMA_VERSION = 1

_USAGE_KEYS = ("prompt_tokens", "cached_tokens", "completion_tokens")
_OPTIONAL_USAGE_KEYS = ("accepted_draft_tokens",)
_TIMING_KEYS = (
    "time_to_first_token", "prefill_tokens_per_second", "decode_tokens_per_second",
    "peak_memory", "total_seconds",
)


def json_safe(value: Any) -> Any:
    """A JSON-serializable copy: unknown objects become their ``repr``, NaN/inf become None.

    Requests can hold Python callables (tools) and results can be any object a tool
    returned; the record must still save into a notebook.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    try:
        return json_safe(json.loads(json.dumps(value)))
    except (TypeError, ValueError):
        return repr(value)


def _usage(usage: dict) -> dict:
    out = {key: int(usage.get(key) or 0) for key in _USAGE_KEYS}
    out.update({key: int(usage[key]) for key in _OPTIONAL_USAGE_KEYS if usage.get(key) is not None})
    return out


def _tool_call(call: dict) -> dict:
    return {
        "id": str(call.get("id", "")),
        "name": str(call.get("name", "")),
        "arguments": json_safe(call.get("arguments", {})),
        "result": json_safe(call.get("result")),
        "error": None if call.get("error") is None else str(call["error"]),
    }


def finish_reason_name(reason: str | None) -> str | None:
    """The engine's ``cancelled`` is the user's Stop: every front end says ``stopped``."""
    return "stopped" if reason == "cancelled" else reason


def _round(round_: Any, reasoning_stats: dict | None) -> dict:
    out = {
        "content": round_.content,
        "reasoning": round_.reasoning,
        "tool_call_ids": [str(call.get("id", "")) for call in round_.tool_calls],
        "usage": _usage(round_.usage),
        "finish_reason": finish_reason_name(round_.finish_reason),
    }
    if reasoning_stats is not None:
        out["reasoning_stats"] = {"tokens": reasoning_stats.get("tokens"),
                                  "seconds": json_safe(reasoning_stats.get("seconds"))}
    return out


def _tools_offered(turn: Any) -> list[str]:
    return [str(name) for name in getattr(turn, "tools_offered", None) or [] if name]


def turn_record(
    turn: Any,
    *,
    reasoning_tokens: int | None = None,
    reasoning_seconds: float | None = None,
    round_reasoning_stats: list[dict | None] | None = None,
) -> dict:
    """The JSON record of ``turn`` (an ``mlx_notebook.Turn``).

    ``reasoning_tokens``/``reasoning_seconds`` are what the live view measured while the
    model reasoned, ``round_reasoning_stats`` the same per round (``{"tokens", "seconds"}``
    or None); a turn rebuilt later has neither and the record says so with None.
    """
    per_round = list(round_reasoning_stats or [])
    usage = turn.usage or {}
    timings = turn.timings or {}
    logprobs = None
    if turn.logprobs is not None:
        logprobs = [
            {
                "token": str(item.get("token", "")),
                "logprob": json_safe(float(item.get("logprob", 0.0))),
                "top_logprobs": [
                    {"token": str(top.get("token", "")), "logprob": json_safe(float(top.get("logprob", 0.0)))}
                    for top in item.get("top_logprobs") or []
                ],
            }
            for item in turn.logprobs
        ]
    return {
        "version": TURN_SCHEMA_VERSION,
        "model": str(turn.model),
        "session": str(turn.session),
        "request": json_safe(turn.request or {}),
        "reasoning": turn.reasoning or "",
        "reasoning_stats": {"tokens": reasoning_tokens, "seconds": json_safe(reasoning_seconds)},
        "content": turn.content or "",
        "tool_calls": [_tool_call(call) for call in turn.tool_calls or []],
        "usage": _usage(usage),
        "timings": {key: json_safe(timings.get(key)) for key in _TIMING_KEYS},
        "finish_reason": finish_reason_name(turn.finish_reason),
        "interrupted": bool(turn.interrupted),
        "error": turn.error,
        "rounds": [
            _round(round_, per_round[i] if i < len(per_round) else None)
            for i, round_ in enumerate(turn.rounds or [])
        ],
        "logprobs": logprobs,
        "tools_offered": _tools_offered(turn),
        "tools_unsupported": bool(getattr(turn, "tools_unsupported", False)),
        "model_dtype": (str(dtype) if (dtype := getattr(turn, "model_dtype", None)) else None),
    }
