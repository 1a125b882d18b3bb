"""A model's reply as a parser regression test: record it, save it, replay it, compare.

``Turn.to_fixture(path)`` writes what the model produced (its token ids, the text as decoded,
the deltas the engine fed the stream filter, the parser family, whether the reply started in
reasoning, the tools offered) and what the stream filter made of it (reasoning, content, tool
calls, problems and the events in order) as JSON. ``check_fixture(path)`` replays each reply
through today's ``StreamFilter`` as it streamed (the recorded token boundaries), as one piece,
and in pieces of 1 to 32 characters, and reports every place the result differs from the
recording. A parser bug seen in a notebook becomes a file a parser author can run:

>>> turn.to_fixture("weather_call.json")                       # doctest: +SKIP
>>> check_fixture("weather_call.json")                         # doctest: +SKIP
<FixtureReport weather_call.json: 1 reply, 34 replays, no differences>

In pytest, ``assert check_fixture(path)`` fails with the differences in the message (the
report is falsy when they differ), and ``check_fixture(path, strict=True)`` raises
``AssertionError`` with them itself. A fixture written by hand needs only ``family``, each
reply's ``text`` and its ``expected`` parts (see ``tests/engine/parsing_fixtures``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

__all__ = [
    "RecordedReply", "Fixture", "FixtureDifference", "FixtureReport", "check_fixture",
    "load_fixture", "replay", "record_reply", "FORMAT",
]

FORMAT = "mlx-notebook parser fixture"
"""The ``format`` field of every fixture file; ``version`` says which shape of it."""
VERSION = 1
CHUNK_SIZES = range(1, 33)
PARTS = ("reasoning", "content", "tool_calls", "problems")


@dataclass(frozen=True, slots=True)
class RecordedReply:
    """One model call's output as the stream filter saw it, and what the filter made of it.

    ``deltas`` are the pieces the engine fed the filter (one per token, stop strings held
    back: mlx-lm's streaming detokenizer cuts there); ``token_ids`` the generated tokens they
    were decoded from (empty in a fixture written by hand); ``expected`` the parts the filter
    produced (``reasoning``, ``content``, ``tool_calls`` as name and arguments, ``problems``
    as raw text); ``events`` the filter's events in order, when recorded.
    """

    family: Any
    """The ``Family`` the reply was parsed with."""
    text: str
    deltas: tuple[str, ...] = ()
    token_ids: tuple[int, ...] = ()
    tools: list[dict] | None = None
    starts_in_reasoning: bool | None = None
    expected: dict = field(default_factory=dict)
    events: tuple | None = None
    request_id: str | None = None
    name: str = ""
    """What the reply shows, in a fixture written by hand (reports name it)."""

    @classmethod
    def from_trace(cls, trace: Any, request_id: str | None = None) -> RecordedReply:
        """What a live request's trace (``Engine.trace``) recorded."""
        deltas = tuple(row.chunk for row in trace.rows if not row.final)
        family = trace.family_definition or trace.family
        from mlx_notebook.engine import get_family

        return cls(get_family(family), trace.text, deltas, tuple(trace.token_ids),
                   trace.options.get("tools"), trace.options.get("starts_in_reasoning"),
                   _parts(trace.events), tuple(trace.events), request_id)

    def trace(self, *, family: Any = None, chunking: Any = None) -> Any:
        """Replay this reply through today's filter: as it streamed (``chunking`` None or
        ``"tokens"``), or cut otherwise (an int, sizes, ``"random"``); ``family`` another
        parser family to see what it would have made of the same output."""
        from mlx_notebook.engine import Trace, trace_text

        fam = self.family if family is None else family
        options = {"tools": self.tools, "starts_in_reasoning": self.starts_in_reasoning}
        if chunking in (None, "tokens") and self.deltas:
            return Trace.from_deltas(list(self.deltas), fam, token_ids=self.token_ids, **options)
        return trace_text(self.text, fam, chunking=1 if chunking in (None, "tokens") else chunking,
                          **options)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"text": self.text, "deltas": list(self.deltas),
                               "token_ids": list(self.token_ids),
                               "starts_in_reasoning": self.starts_in_reasoning,
                               "tools": self.tools, "expected": self.expected}
        if self.events is not None:
            out["events"] = [_event_json(e) for e in self.events]
        if self.request_id:
            out["request_id"] = self.request_id
        if self.name:
            out = {"name": self.name, **out}
        return out

    @classmethod
    def from_json(cls, data: dict, family: Any, where: str = "the reply") -> RecordedReply:
        """One reply of a fixture file; ``_Malformed`` names the field a hand edit broke."""
        from mlx_notebook.engine import ParseEvent

        if not isinstance(data, dict):
            raise _Malformed(f"{where} must be an object, not {_brief(data)}")

        def read(key: str, fits: Callable[[Any], bool], what: str) -> Any:
            value = data.get(key)
            if value is not None and not fits(value):
                raise _Malformed(f"{where}.{key} must be {what}, not {_brief(value)}")
            return value

        def listed(kind: Any) -> Callable[[Any], bool]:
            return lambda v: isinstance(v, list) and all(
                isinstance(x, kind) and not isinstance(x, bool) for x in v)

        if not isinstance(data.get("text"), str):
            raise _Malformed(f"{where}.text must be the reply's text, not {_brief(data.get('text'))}")
        expected = {**_EMPTY_PARTS, **(read("expected", lambda v: isinstance(v, dict),
                                            "an object") or {})}
        for part, kind in (("reasoning", str), ("content", str), ("tool_calls", list),
                           ("problems", list)):
            if not isinstance(expected[part], kind):
                raise _Malformed(f"{where}.expected.{part} must be "
                                 f"{'text' if kind is str else 'a list'}, not "
                                 f"{_brief(expected[part])}")
        events = read("events", listed(dict), "a list of event objects")
        try:
            events = None if events is None else tuple(ParseEvent(**e) for e in events)
        except TypeError as exc:  # a field the event has not, or one missing
            raise _Malformed(f"{where}.events: {exc}") from None
        return cls(family, data["text"], tuple(read("deltas", listed(str), "a list of texts") or ()),
                   tuple(read("token_ids", listed(int), "a list of token ids") or ()),
                   read("tools", listed(dict), "a list of tool objects"),
                   read("starts_in_reasoning", lambda v: isinstance(v, bool), "true or false"),
                   expected, events, read("request_id", lambda v: isinstance(v, str), "text"),
                   read("name", lambda v: isinstance(v, str), "text") or "")


class _Malformed(ValueError):
    """A fixture field of the wrong shape (``load_fixture`` says which file)."""


def _brief(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


_EMPTY_PARTS = {"reasoning": "", "content": "", "tool_calls": [], "problems": []}


@dataclass(frozen=True, slots=True)
class Fixture:
    """A fixture file: one reply per model call of the turn it was written from."""

    replies: tuple[RecordedReply, ...]
    model: str | None = None
    note: str = ""

    def to_json(self) -> dict:
        family = self.replies[0].family if self.replies else None
        out: dict[str, Any] = {"format": FORMAT, "version": VERSION, "model": self.model,
                               "note": self.note, "family": family.name if family else None}
        definition = _family_definition(family) if family else None
        if definition is not None:
            out["family_definition"] = definition
        out["replies"] = [r.to_json() for r in self.replies]
        return out

    def save(self, path: str | Path) -> Path:
        if not isinstance(path, (str, PathLike)):
            raise TypeError(f"to_fixture(path): path must be a file path (a str or a Path), not "
                            f"{type(path).__name__}.")
        path = Path(path).expanduser()
        if not str(path).strip() or path.is_dir():
            raise ValueError(f"to_fixture({str(path)!r}): give a file path to write, e.g. "
                             "'weather.json'.")
        text = json.dumps(self.to_json(), indent=1, ensure_ascii=False)
        # Token ids on one line each reply, not one per line (a JSON string cannot hold the
        # raw newlines this matches, so only arrays of numbers change).
        text = _INT_ARRAY.sub(lambda m: "[" + ", ".join(m.group(1).split(",\n")).replace(" ", "")
                              .replace(",", ", ") + "]", text)
        path.write_text(text + "\n")
        return path


_INT_ARRAY = re.compile(r"\[\n\s*(\d+(?:,\n\s*\d+)*)\n\s*\]")


def load_fixture(path: str | Path) -> Fixture:
    """Read a fixture file (ValueError names what is wrong with it)."""
    try:
        data = json.loads(Path(path).read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a parser fixture: it is not JSON ({exc}).") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a parser fixture (no \"format\": \"{FORMAT}\").")
    version = data.get("version", VERSION)
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise ValueError(f"{path} is a version {version} fixture; this mlx-notebook "
                         f"reads version {VERSION}: upgrade mlx-notebook.")
    try:
        if not isinstance(version, int) or isinstance(version, bool):
            raise _Malformed(f"version must be a whole number, not {_brief(version)}")
        for key in ("model", "note", "family"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise _Malformed(f"{key} must be text, not {_brief(data[key])}")
        if not isinstance(data.get("replies") or [], list):
            raise _Malformed(f"replies must be a list, not {_brief(data['replies'])}")
        family = _family_from_json(data.get("family"), data.get("family_definition"))
        replies = tuple(RecordedReply.from_json(r, family, f"replies[{i}]")
                        for i, r in enumerate(data.get("replies") or ()))
    except ValueError as exc:  # a _Malformed field, an unknown family name
        raise ValueError(f"{path} is not a readable parser fixture: {exc}".rstrip(".") + ".") \
            from None
    return Fixture(replies, data.get("model"), data.get("note") or "")


@dataclass(frozen=True, slots=True)
class FixtureDifference:
    """One place a replay differs from the recording: ``part`` of reply ``reply`` when it
    was fed ``chunking`` (``tokens``, ``whole``, or ``size N``)."""

    reply: int
    chunking: str
    part: str
    expected: Any
    got: Any
    name: str = ""
    """The reply's name, when the fixture gives one."""


@dataclass(slots=True)
class FixtureReport:
    """What ``check_fixture`` found: falsy when any replay differs from the recording."""

    source: str
    replies: int
    replays: int
    differences: list[FixtureDifference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences

    def __bool__(self) -> bool:
        return self.ok

    def assert_ok(self) -> FixtureReport:
        """Raise ``AssertionError`` with the differences, if any (for tests)."""
        if not self.ok:
            raise AssertionError(str(self))
        return self

    def __str__(self) -> str:
        head = (f"{self.source}: {_count(self.replies, 'reply', 'replies')}, "
                f"{_count(self.replays, 'replay')}, ")
        if self.ok:
            return head + "no differences"
        lines = [head + f"{_count(len(self.differences), 'difference')}:"]
        # The same wrong result usually comes from many chunkings: one paragraph for each.
        groups: dict[tuple, list[str]] = {}
        for d in self.differences:
            key = (d.reply, d.name, d.part, _shown(d.expected), _shown(d.got))
            groups.setdefault(key, []).append(d.chunking)
        for (reply, name, part, expected, got), chunkings in groups.items():
            which = f"reply {reply} ({name})" if name else f"reply {reply}"
            lines.append(f"  {which}, {part}, fed {_chunkings(chunkings)}:")
            lines.append(f"    expected {expected}")
            lines.append(f"    got      {got}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        # pytest shows the repr of a falsy ``assert report``: make it the readable diff.
        return f"<FixtureReport {self}>"

    def _repr_html_(self) -> str:
        import html

        colour = "#070" if self.ok else "#b00"
        return f'<pre style="color:{colour}">{html.escape(str(self))}</pre>'


def check_fixture(
    source: str | Path | Fixture,
    *,
    chunk_sizes: Iterable[int] = CHUNK_SIZES,
    family: Any = None,
    strict: bool = False,
) -> FixtureReport:
    """Replay a fixture through today's stream filter and report where it differs.

    Every reply is fed as it streamed (its recorded token boundaries), as one piece, and in
    pieces of each of ``chunk_sizes`` characters (1 to 32); each result is compared with the
    recorded parts and, when the fixture has them, the recorded events in order. ``family``
    replays through another parser family instead (its differences are then expected: it
    shows what that family would make of the output). ``strict`` raises ``AssertionError``
    with the differences instead of returning them.
    """
    fixture = source if isinstance(source, Fixture) else load_fixture(source)
    name = "fixture" if isinstance(source, Fixture) else Path(source).name
    report = FixtureReport(name, len(fixture.replies), 0)
    sizes = list(chunk_sizes)
    for index, reply in enumerate(fixture.replies):
        for label, chunking in _chunkings_of(reply, sizes):
            trace = reply.trace(family=family, chunking=chunking)
            report.replays += 1
            report.differences += _compare(index, label, reply, trace.events)
    if strict:
        report.assert_ok()
    return report


def replay(source: Any, *, round: int = -1, family: Any = None, chunking: Any = None) -> Any:
    """The trace of one recorded reply: ``source`` a fixture (or its path), a turn, or a
    ``RecordedReply``; ``round`` which model call of it (the last by default)."""
    if isinstance(source, RecordedReply):
        reply = source
    else:
        replies = _replies_of(source)
        if not replies:
            raise ValueError("There is no recorded reply to replay: the turn never reached the "
                             "engine, or the fixture has no replies.")
        try:
            reply = replies[round]
        except IndexError:
            raise ValueError(f"round {round} is out of range: it has "
                             f"{_count(len(replies), 'recorded model call')} (0 is the first).") from None
    return reply.trace(family=family, chunking=chunking)


def record_reply(engine: Any, request_id: str) -> RecordedReply | None:
    """The finished request's reply as the engine's trace recorded it (None when it has no
    trace: a completion, or one the engine no longer keeps)."""
    from mlx_notebook.engine import EngineError

    try:
        return RecordedReply.from_trace(engine.trace(request_id), request_id)
    except EngineError:
        return None


# -- turns ---------------------------------------------------------------------------------------

def turn_fixture(turn: Any, note: str = "") -> Fixture:
    """The fixture of a turn: one reply per round the engine recorded."""
    replies = _replies_of(turn)
    if not replies:
        raise ValueError("This turn has no recorded reply to write: it never reached the engine "
                         "(or it was a %%complete, which the stream filter does not parse).")
    return Fixture(tuple(replies), turn.model, note)


def _replies_of(source: Any) -> list[RecordedReply]:
    if isinstance(source, Fixture):
        return list(source.replies)
    if isinstance(source, (str, Path)):
        return list(load_fixture(source).replies)
    rounds = getattr(source, "rounds", None)
    if rounds is None:
        raise TypeError(f"Cannot replay a {type(source).__name__}: give a fixture path, a "
                        "Fixture, a turn or a RecordedReply.")
    return [r.recorded for r in rounds if r.recorded is not None]


# -- comparing ------------------------------------------------------------------------------------

def _chunkings_of(reply: RecordedReply, sizes: Sequence[int]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if reply.deltas:
        out.append(("tokens", "tokens"))
    out.append(("whole", max(1, len(reply.text))))
    out += [(f"size {n}", n) for n in sizes]
    return out


def _compare(index: int, label: str, reply: RecordedReply, events: Sequence[Any]) -> list[FixtureDifference]:
    got = _parts(events)
    out = [FixtureDifference(index, label, part, reply.expected[part], got[part], reply.name)
           for part in PARTS if got[part] != reply.expected[part]]
    if not out and reply.events is not None and tuple(events) != tuple(reply.events):
        out.append(FixtureDifference(index, label, "events", [_event_json(e) for e in reply.events],
                                     [_event_json(e) for e in events], reply.name))
    return out


def _parts(events: Iterable[Any]) -> dict:
    parts = {"reasoning": "", "content": "", "tool_calls": [], "problems": []}
    for e in events:
        if e.kind in ("reasoning", "content"):
            parts[e.kind] += e.text
        elif e.kind == "tool_call":
            parts["tool_calls"].append({"name": e.name, "arguments": e.arguments})
        else:
            parts["problems"].append(e.text)
    return parts


def _event_json(event: Any) -> dict:
    return {k: v for k, v in dataclasses.asdict(event).items() if v not in (None, "")
            or k in ("kind", "text")}


def _family_definition(family: Any) -> dict | None:
    """The family spelled out, when its name alone would load another one from the table."""
    from mlx_notebook.engine import get_family

    try:
        if get_family(family.name) == family:
            return None
    except ValueError:
        pass
    return dataclasses.asdict(family)


def _family_from_json(name: str | None, definition: dict | None) -> Any:
    from mlx_notebook.engine import Family, ToolMarker, get_family

    if definition is None:
        if not name:
            raise _Malformed('it names no parser family; add "family": NAME, e.g. "qwen3"')
        return get_family(name)
    if not isinstance(definition, dict):
        raise _Malformed(f"family_definition must be an object, not {_brief(definition)}")
    try:
        spec = dict(definition)
        spec["think"] = tuple(spec["think"]) if spec.get("think") else None
        spec["tools"] = tuple(ToolMarker(**{**m, "ends": tuple(m.get("ends") or ())})
                              for m in spec.get("tools") or ())
        return Family(**spec)
    except (TypeError, AttributeError) as exc:  # a field Family has not, a marker not an object
        raise _Malformed(f"family_definition: {exc}") from None


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= 300 else text[:140] + " … " + text[-140:]


def _chunkings(labels: list[str]) -> str:
    """``tokens, whole, sizes 1-5, 7`` from the labels in order."""
    sizes = [int(label.split()[1]) for label in labels if label.startswith("size ")]
    named = [label for label in labels if not label.startswith("size ")]
    runs, start = [], None
    for i, n in enumerate(sizes):
        if start is None:
            start = n
        if i + 1 == len(sizes) or sizes[i + 1] != n + 1:
            runs.append(str(start) if start == n else f"{start}-{n}")
            start = None
    if runs:
        named.append(("size " if len(sizes) == 1 else "sizes ") + ", ".join(runs))
    return ", ".join(named)


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
