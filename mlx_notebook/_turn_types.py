"""The typed parts of a turn: token usage, timings, tool calls and token log-probabilities.

They were dicts, and users' cells subscript them (``call["name"]``,
``round_.usage["prompt_tokens"]``, ``turn.timings.items()``), so each also answers
``part["name"]``, ``keys()``, ``items()`` and ``get()`` as that dict did.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import pathlib
import uuid
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Iterator, Mapping

__all__ = ["Usage", "Timings", "ToolCallRecord", "TokenLogprob", "TopLogprob"]


class _FieldMapping:
    """Read-only ``record["name"]``, ``keys()``, ``items()`` and ``get()`` over a dataclass's
    fields: the turn's parts were dicts, and users' cells subscript them."""

    __slots__ = ()
    _OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ()
    """Fields the old dicts left out when unset (``accepted_draft_tokens`` without a draft)."""

    def keys(self) -> list[str]:
        return [f.name for f in fields(self)
                if not (f.name in self._OMITTED_WHEN_NONE and getattr(self, f.name) is None)]

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self.keys() else default

    def items(self) -> list[tuple[str, Any]]:
        return [(key, getattr(self, key)) for key in self.keys()]

    def values(self) -> list[Any]:
        return [getattr(self, key) for key in self.keys()]

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())


@dataclass(frozen=True, slots=True)
class Usage(_FieldMapping):
    """Token counts of one model call, or of a whole turn (the sum of its rounds)."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens served from the prompt cache (not recomputed)."""
    completion_tokens: int = 0
    accepted_draft_tokens: int | None = None
    """Completion tokens a draft model proposed and the model accepted; None without a draft."""
    _OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("accepted_draft_tokens",)

    def __add__(self, other: "Usage") -> "Usage":
        drafted = (None if self.accepted_draft_tokens is None and other.accepted_draft_tokens is None
                   else (self.accepted_draft_tokens or 0) + (other.accepted_draft_tokens or 0))
        return Usage(self.prompt_tokens + other.prompt_tokens, self.cached_tokens + other.cached_tokens,
                     self.completion_tokens + other.completion_tokens, drafted)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Usage":
        """From the dict shape a turn's usage had (missing counts are 0)."""
        drafted = values.get("accepted_draft_tokens")
        return cls(int(values.get("prompt_tokens") or 0), int(values.get("cached_tokens") or 0),
                   int(values.get("completion_tokens") or 0), None if drafted is None else int(drafted))


@dataclass(slots=True)
class Timings(_FieldMapping):
    """How fast a turn ran; None where it is not known (yet)."""

    time_to_first_token: float | None = None
    """Seconds from the first request's start to its first token."""
    prefill_tokens_per_second: float | None = None
    """Prompt processing speed of the last round."""
    decode_tokens_per_second: float | None = None
    """Generation speed of the last round."""
    peak_memory: int | None = None
    """Bytes: MLX's peak memory over the turn's rounds (model weights included)."""
    total_seconds: float | None = None
    """Wall time of the whole turn, tools included; set when the turn ends."""

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Timings":
        return cls(**{f.name: values.get(f.name) for f in fields(cls)})


@dataclass(slots=True)
class ToolCallRecord(_FieldMapping):
    """One tool call the model made, and once the tool loop ran it, its result or error."""

    id: str
    name: str
    arguments: dict
    result: Any = None
    error: str | None = None
    """Why the call has no result: the tool raised, the user declined or stopped the turn."""
    returned: bool | None = None
    """True once the function returned: its ``result`` is what the model read, even None
    (read as ``null``); None while it has not run (or never will)."""

    _OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ("returned",)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "ToolCallRecord":
        return cls(str(values.get("id", "")), str(values.get("name", "")),
                   dict(values.get("arguments") or {}), values.get("result"), values.get("error"),
                   True if values.get("returned") else None)

    def read_result(self) -> Any:
        """The result as the model read it, as JSON: a record as its fields, a date as ISO
        text, a NumPy number as Python's; text stays text. What the cards show and the saved
        record keeps. A result with no JSON form is returned as it is (the model read its
        ``repr``; a record shows each part it can)."""
        if self.result is None or isinstance(self.result, (str, bool, int, float)):
            return self.result
        if (text := _utf8(self.result)) is not None:
            return text
        try:
            return json.loads(self.message_content())
        except ValueError:  # its repr, which the model read
            return self.result

    def message_content(self) -> str:
        """What the model reads back: the result as text (JSON when it can be), or the error."""
        if self.error is not None:
            return f"Error: {self.error}"
        if isinstance(self.result, str):
            return self.result
        if (text := _utf8(self.result)) is not None:  # a command's output, say: its text
            return text
        if type(self.result) is int:  # every digit, also past the 4,300 Python writes as text
            return str(decimal.Decimal(self.result))  # (math.factorial(2000) has 5,736)
        try:
            return json.dumps(self.result, default=_as_json)
        except TypeError:  # a key json cannot write (a date): keys as text, then once more
            try:
                return json.dumps(_text_keys(self.result), default=_as_json)
            except Exception:  # noqa: BLE001
                return result_repr(self.result)
        except Exception:  # noqa: BLE001 -- no JSON form, or one that fails when asked
            return result_repr(self.result)


def result_repr(result: Any) -> str:
    """A result with no JSON form as its ``repr`` (or what it is, when even that fails)."""
    try:
        return repr(result)
    except Exception:  # noqa: BLE001 -- nested past what repr reads, or a repr that raises
        return f"<{type(result).__name__} that cannot be shown as text>"


def _utf8(value: Any) -> str | None:
    """Bytes as the text they hold; None for anything else (or bytes that are no UTF-8)."""
    if not isinstance(value, (bytes, bytearray)):
        return None
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return None


def _as_json(value: Any) -> Any:
    """What ``json.dumps`` cannot write, in the form a tool's arguments take: a record as its
    fields, a date as ISO text, an Enum as its value, a NumPy value as Python's, UTF-8 bytes
    as their text; TypeError for anything else (the result is then shown as its ``repr``)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    if callable(getattr(value, "model_dump", None)) and not isinstance(value, type):
        return value.model_dump(mode="json")  # a pydantic model
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (uuid.UUID, pathlib.PurePath, decimal.Decimal)):
        return str(value)
    if (text := _utf8(value)) is not None:
        return text
    if isinstance(value, (set, frozenset)):
        try:  # in order: a set's own order changes from run to run
            return sorted(value)
        except TypeError:
            return sorted(value, key=repr)
    if type(value).__module__ == "numpy" and callable(getattr(value, "tolist", None)):
        dtype = getattr(value, "dtype", None)
        if getattr(dtype, "kind", "") in ("M", "m"):  # datetime64, timedelta64: ISO text
            return value.astype(str).tolist()
        if getattr(dtype, "names", None) and getattr(value, "ndim", 0) <= 1:  # fields by name
            rows = value.tolist()
            return ([dict(zip(dtype.names, row)) for row in rows] if isinstance(rows, list)
                    else dict(zip(dtype.names, rows)))
        return value.tolist()
    raise TypeError(f"{type(value).__name__} has no JSON form")


def _text_keys(value: Any, depth: int = 0, seen: frozenset = frozenset()) -> Any:
    """``value`` with every dict key JSON cannot write (a date, an Enum) as its JSON text; a
    container that holds itself is left as it is (``json.dumps`` then refuses it)."""
    if depth > 100 or id(value) in seen:
        return value
    if isinstance(value, dict):
        inner = seen | {id(value)}
        return {key if isinstance(key, (str, int, float, bool)) or key is None
                else str(_as_json(key)): _text_keys(item, depth + 1, inner)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        inner = seen | {id(value)}
        return [_text_keys(item, depth + 1, inner) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class TopLogprob(_FieldMapping):
    """One alternative the model weighed for a position."""

    token: str
    logprob: float


@dataclass(frozen=True, slots=True)
class TokenLogprob(_FieldMapping):
    """One generated token with its log-probability and the most likely alternatives."""

    token_id: int | None
    token: str
    logprob: float
    top_logprobs: tuple[TopLogprob, ...] = ()
    """Most likely first (``--tokens N`` asks for N)."""
    from_draft: bool | None = None
    """With a draft model: the draft proposed this token and the model kept it."""

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "TokenLogprob":
        top = tuple(TopLogprob(str(t["token"]), float(t["logprob"])) for t in values.get("top_logprobs") or ())
        return cls(values.get("token_id"), str(values.get("token", "")), float(values.get("logprob", 0.0)), top,
                   values.get("from_draft"))
