"""The parser debugger: watch the stream filter work chunk by chunk.

``trace(...)`` feeds a reply through a ``StreamFilter`` the way a live request would (token
by token through mlx-lm's streaming detokenizer, in fixed-size pieces, or in random splits)
and records one row per chunk: the chunk, the filter state before and after, the events it
emitted and the tail it withheld. ``Trace.from_deltas`` does the same for the deltas a live
request actually produced. ``diff()`` compares the streamed events with the buffered parse
of the whole text; it is empty when the filter is right.

The state column explains each decision: ``undecided`` (start state unknown: text is held
until a marker says what it was), ``reasoning``, ``content``, ``tool_call <marker>`` (a call is
being collected), and ``content, <think> as text`` (a think block written after the reply had
spoken: both its markers stay text, see ``StreamFilter``).
"""

from __future__ import annotations

import html
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._event import Event, merge_events
from ._families import Family, get_family
from ._stream_filter import ParsedOutput, StreamFilter, parse_output

__all__ = ["Trace", "TraceDifference", "TraceRow", "trace"]

FINISH = "(finish)"


@dataclass(frozen=True, slots=True)
class TraceRow:
    """What one chunk did to the filter."""

    index: int
    chunk: str
    """The text fed (``"(finish)"`` marks the final ``finish()`` call)."""
    state_before: str
    state_after: str
    events: tuple[Event, ...]
    withheld: str
    """Text received but not emitted after this chunk."""
    final: bool = False
    """This row is the ``finish()`` call at the end of the reply."""


@dataclass(frozen=True, slots=True)
class TraceDifference:
    """One place where streaming and the buffered parse disagree (event ``index``, merged)."""

    index: int
    streamed: Event | None
    buffered: Event | None


@dataclass(frozen=True, slots=True)
class Trace:
    """One reply through the stream filter, a row per chunk."""

    family: str
    text: str
    rows: tuple[TraceRow, ...]
    events: tuple[Event, ...]
    """Everything the stream emitted, adjacent reasoning/content merged."""
    buffered: ParsedOutput
    """``parse_output`` of the whole text: the oracle ``diff`` compares with."""
    options: dict[str, Any] = field(default_factory=dict)
    token_ids: tuple[int, ...] = ()
    """The generated tokens the text was decoded from, when a live request recorded them."""
    family_definition: Family | None = field(default=None, repr=False, compare=False)
    """The family itself (``family`` is its name): a family detected from a tokenizer may
    differ from the table's entry of that name (Mistral without think markers)."""

    @classmethod
    def from_deltas(
        cls,
        deltas: Sequence[str],
        family: str | Family,
        *,
        tools: list[dict[str, Any]] | None = None,
        starts_in_reasoning: bool | None = None,
        token_ids: Sequence[int] = (),
    ) -> Trace:
        """Trace recorded deltas (e.g. a live request's detokenized stream) as they came."""
        fam = get_family(family)
        f = StreamFilter(fam, tools=tools, starts_in_reasoning=starts_in_reasoning)
        rows, emitted = [], []
        for i, chunk in enumerate([*deltas, None]):
            before = f.state
            events = f.feed(chunk) if chunk is not None else f.finish()
            emitted += events
            rows.append(TraceRow(i, FINISH if chunk is None else chunk, before, f.state,
                                 tuple(events), f.withheld, final=chunk is None))
        text = "".join(deltas)
        buffered = parse_output(text, fam, tools=tools, starts_in_reasoning=starts_in_reasoning)
        return cls(fam.name, text, tuple(rows), tuple(merge_events(emitted)), buffered,
                   {"tools": tools, "starts_in_reasoning": starts_in_reasoning},
                   tuple(int(t) for t in token_ids), fam)

    def diff(self) -> list[TraceDifference]:
        """Where the streamed events differ from the buffered parse (empty when correct)."""
        streamed, buffered = list(self.events), list(self.buffered.events)
        out = []
        for i in range(max(len(streamed), len(buffered))):
            s = streamed[i] if i < len(streamed) else None
            b = buffered[i] if i < len(buffered) else None
            if s != b:
                out.append(TraceDifference(i, s, b))
        return out

    def to_dataframe(self):
        """The rows as a pandas DataFrame (pandas is optional: ImportError names it)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("Trace.to_dataframe() needs pandas: pip install pandas") from exc
        return pd.DataFrame(
            [
                {
                    "chunk": r.chunk,
                    "state_before": r.state_before,
                    "state_after": r.state_after,
                    "events": [_describe(e) for e in r.events],
                    "withheld": r.withheld,
                }
                for r in self.rows
            ],
            index=pd.RangeIndex(len(self.rows), name="row"),
        )

    def _repr_html_(self) -> str:
        diffs = self.diff()
        if diffs:
            verdict = (f'<p style="color:#b00">streaming differs from the buffered parse at '
                       f"{len(diffs)} event(s): first at event {diffs[0].index}</p>")
        else:
            verdict = '<p style="color:#070">streaming equals the buffered parse</p>'
        head = "".join(f"<th>{h}</th>" for h in ("#", "chunk", "state", "events", "withheld"))
        body = "".join(_row_html(r) for r in self.rows)
        return (f"<div><b>trace</b> family <code>{html.escape(self.family)}</code>, "
                f"{len(self.rows)} rows{verdict}<table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table></div>")

    def __repr__(self) -> str:
        return (f"Trace(family={self.family!r}, rows={len(self.rows)}, "
                f"events={len(self.events)}, differences={len(self.diff())})")


def trace(
    text_or_token_ids: str | Sequence[int],
    family: str | Family,
    *,
    chunking: str | int | Sequence[int] | None = None,
    tokenizer: Any = None,
    tools: list[dict[str, Any]] | None = None,
    starts_in_reasoning: bool | None = None,
    seed: int = 0,
) -> Trace:
    """Feed a reply through the stream filter chunk by chunk and record every step.

    ``chunking``: ``"tokens"`` (decode token by token with the tokenizer's streaming
    detokenizer, as the engine does; needs ``tokenizer``), an int (fixed-size pieces of the
    text), a list of ints (piece sizes, cycled) or ``"random"`` (random piece sizes from
    ``seed``). The default is ``"tokens"`` when a tokenizer is given, else one character at
    a time (the strictest replay).
    """
    if chunking is None:
        chunking = "tokens" if tokenizer is not None else 1
    deltas = _chunk(text_or_token_ids, chunking, tokenizer, seed)
    return Trace.from_deltas(deltas, family, tools=tools, starts_in_reasoning=starts_in_reasoning)


def _chunk(source, chunking, tokenizer, seed: int) -> list[str]:
    if chunking == "tokens":
        if tokenizer is None:
            raise ValueError('trace(chunking="tokens") needs tokenizer=...; or pass an int size.')
        ids = tokenizer.encode(source, add_special_tokens=False) if isinstance(source, str) else source
        return _detokenize(tokenizer, ids)
    text = source if isinstance(source, str) else _decode(tokenizer, source)
    if chunking == "random":
        rng, pieces, pos = random.Random(seed), [], 0
        while pos < len(text):
            n = rng.randint(1, 12)
            pieces.append(text[pos:pos + n])
            pos += n
        return pieces
    if isinstance(chunking, int) and not isinstance(chunking, bool):
        chunking = [chunking]
    if (isinstance(chunking, (list, tuple)) and chunking
            and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in chunking)):
        pieces, pos, i = [], 0, 0
        while pos < len(text):
            n = chunking[i % len(chunking)]
            pieces.append(text[pos:pos + n])
            pos, i = pos + n, i + 1
        return pieces
    raise ValueError(
        f'chunking must be "tokens", "random", a positive int or a list of them, not {chunking!r}.'
    )


def _detokenize(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """Per-token text as the engine sees it, through mlx-lm's streaming detokenizer."""
    from mlx_lm.tokenizer_utils import NaiveStreamingDetokenizer, TokenizerWrapper

    if isinstance(tokenizer, TokenizerWrapper):
        detok = tokenizer.detokenizer
    else:
        detok = NaiveStreamingDetokenizer(tokenizer)
        detok.reset()
    deltas = []
    for token in ids:
        detok.add_token(int(token))
        deltas.append(detok.last_segment)
    detok.finalize()
    deltas.append(detok.last_segment)
    return [d for d in deltas if d]


def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    if tokenizer is None:
        raise ValueError("trace() of token ids needs tokenizer=... to decode them.")
    return tokenizer.decode(list(ids))


def _describe(event: Event) -> str:
    if event.kind == "tool_call":
        return f"tool_call {event.name}({event.arguments})"
    if event.kind == "problem":
        return f"problem {event.text!r}: {event.message}"
    return f"{event.kind} {event.text!r}"


_COLOURS = {"reasoning": "#777", "content": "#000", "tool_call": "#06c", "problem": "#b00"}


def _row_html(row: TraceRow) -> str:
    def code(text: str) -> str:
        return f'<code style="white-space:pre-wrap">{html.escape(text)}</code>'

    events = "<br>".join(
        f'<span style="color:{_COLOURS[e.kind]}">{html.escape(_describe(e))}</span>'
        for e in row.events
    )
    state = html.escape(row.state_before)
    if row.state_after != row.state_before:
        state += " → " + html.escape(row.state_after)
    chunk = f"<i>{html.escape(FINISH)}</i>" if row.final else code(row.chunk)
    return (f"<tr><td>{row.index}</td><td>{chunk}</td><td>{state}</td><td>{events}</td>"
            f"<td>{code(row.withheld)}</td></tr>")
