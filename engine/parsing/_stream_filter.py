"""The one splitter: model output text in, reasoning / content / tool-call events out.

``StreamFilter`` reads a reply delta by delta and never lets a marker, or a fragment of one,
reach reasoning or content: a tail of the text that could still grow into a marker is
withheld until the next delta settles it. Decisions depend only on the text, never on where
it was cut, so any chunking of a reply gives the same events as one ``feed`` of the whole
(``parse_output``, the buffered oracle). Per feed the work is proportional to the delta plus
the withheld tail (at most one marker long); a tool-call body is collected as pieces and
parsed once, when its closing marker arrives.

Think blocks: a reply's reasoning is the block at its start (or the one its prompt opened).
A ``<think>…</think>`` block that comes after the reply has spoken (after content, or after
the first block ended) is text of the mode it appears in, both of its markers, kept verbatim:
``before<think>middle</think>after`` is all content. vllm-mlx and mlx-lm's server route such
a block to reasoning instead; we keep it visible, because a model that writes about the tag
(or an unclosed one) would otherwise hide the rest of its answer as reasoning, and because a
stray marker must never decide half a block. Inside reasoning a repeated ``<think>`` is
dropped (it opens nothing new), and a lone ``</think>`` after reasoning ended is a stray token,
dropped. Gemma 4 (``Family.think_anywhere``) is the exception: its thought channel opens
anywhere. A trace shows the state ``content, <think> as text`` inside such a block.

Example (qwen3)::

    f = StreamFilter("qwen3")
    f.feed("<think>hm</thi")  # [Event("reasoning", "hm")]   ("</thi" withheld)
    f.feed("nk>Hi <tool_")    # [Event("content", "Hi ")]    ("<tool_" withheld)
    f.feed('call>{"name": "f", "arguments": {}}</tool_call>')
                              # [Event("tool_call", raw, name="f", arguments={})]
    f.finish()                # []
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ._body_scanners import JsonValueScanner, make_scanner
from ._event import Event, merge_events
from ._families import (
    WHOLE_FUNCTION_JSON, WHOLE_JSON, WHOLE_PARSE, Family, ToolMarker, get_family,
)
from ._tool_calls import CallProblem, normalize_tools, parse_calls

__all__ = ["ParsedOutput", "StreamFilter", "parse_output"]

# Filter modes, shown as "state" in traces. UNDECIDED: the caller did not say whether the
# prompt opened reasoning, so text is held until the output itself says (see StreamFilter).
REASONING, CONTENT, TOOL, UNDECIDED = "reasoning", "content", "tool_call", "undecided"


class StreamFilter:
    """Splits one reply of one request; make a new one per request (state is per instance).

    ``starts_in_reasoning`` says whether the rendered prompt left reasoning open (a template
    that pre-fills ``<think>``): True or False when known (``for_tokenizer`` always knows).
    None (the default) takes the family's own answer when it has one (DeepSeek-R1 always
    pre-fills), and otherwise holds the text until the output decides: a ``</think>`` makes
    what came before reasoning, while a tool call (except for DeepSeek-V4's DSML, see
    ``Family.undecided_call_is_reasoning``) or the end of the reply makes it content.
    """

    def __init__(
        self,
        family: str | Family,
        *,
        tools: list[dict[str, Any]] | None = None,
        starts_in_reasoning: bool | None = None,
    ) -> None:
        self.family = get_family(family)
        self.tools = normalize_tools(tools)
        self._offered = {t["function"].get("name") for t in self.tools or ()}
        if starts_in_reasoning is None and self.family.starts_in_reasoning:
            starts_in_reasoning = True
        if starts_in_reasoning and self.family.think:
            self.mode = REASONING
        elif starts_in_reasoning is None and self.family.think:
            self.mode = UNDECIDED
        else:
            self.mode = CONTENT
        self.starts_in_reasoning: bool | None = {REASONING: True, CONTENT: False}.get(self.mode)
        """The start state as resolved (None: undecided); pass it on to replay this reply."""
        self._tail = ""  # received, not yet scanned to a decision (at most a marker long)
        # Whitespace that came while a whitespace-only tail waited for a leading marker: the
        # decision cannot change until other text comes, so it is kept here unscanned
        # (appending it to the tail would rescan the whole run on every delta).
        self._space: list[str] = []
        self._waits_on_space = False
        self._pending: list[str] = []  # scanned text held while UNDECIDED
        self._reasoning_seen = self.mode == REASONING
        self._spoke = self.mode == REASONING  # any output yet (ends "leading" markers)
        self._mode_has_text = False  # non-whitespace text emitted in the current mode
        self._marker: ToolMarker | None = None
        self._body: list[str] = []
        self._scanner = None
        self._finished = False
        self._out: list[Event] = []
        self.tool_calls = 0
        """Complete tool calls emitted so far (for ``finish_reason="tool_calls"``)."""
        fam = self.family
        markers = [m for m in fam.tools if self.tools or not m.only_with_tools]
        self._hard_tools = [(m.start, m) for m in markers if not m.is_soft]
        self._soft_tools = [(m.start, m) for m in markers if m.soft and not m.leading]
        self._leading_tools = [(m.start, m) for m in markers if m.leading]
        self._soft_from: str | None = None  # the mode a soft marker interrupted
        self._edge_cache: dict[tuple, tuple[list, list]] = {}
        self._end_used = ""
        self._after_call = False  # the last thing read was a call (for call_gap_is_markup)
        self._think_is_text = False  # inside a think block written after the reply spoke
        # Right after a call: another call (any of its markers, a leading one too), the call's
        # own closing marker, or a separator the next call would make markup.
        self._gap_markers = [(m.start, _AfterCall(m)) for m in markers] + [
            (m.end, "drop") for m in markers if not m.is_soft and m.end
        ] + [(separator, "separator") for separator in fam.call_separators]
        self._echo = ""
        """The last call's body and closing marker: right after that call, the same text
        again is the model repeating it (LFM2 does), dropped rather than shown as content."""
        self._gap: list[str] = []  # what came between a call and what follows: dropped if
        # that is a call or the reply's end, text otherwise
        self._max_marker = max(
            [len(m.start) for m in markers] + [len(s) for s in fam.think or ()]
            + [len(fam.reasoning_prefix or ""), len(fam.content_channel or "")]
        )

    @classmethod
    def for_tokenizer(cls, tokenizer: Any, rendered_prompt: str, *, tools=None) -> StreamFilter:
        """A filter for this model's family, starting where the rendered prompt leaves off."""
        from ._tokenizer_family import family_for_tokenizer, prompt_starts_in_reasoning

        family = family_for_tokenizer(tokenizer)
        return cls(
            family,
            tools=tools,
            starts_in_reasoning=prompt_starts_in_reasoning(family, rendered_prompt),
        )

    # -- public surface -------------------------------------------------------------------

    @property
    def state(self) -> str:
        """The mode for people: ``reasoning``, ``content``, ``undecided``, or ``tool_call``
        followed by the marker that opened the call; ``, <think> as text`` is added inside a
        think block that came after the reply had spoken (text until its closing marker)."""
        if self.mode == TOOL:
            return f"{TOOL} {self._marker.start}"
        if self._think_is_text:
            return f"{self.mode}, {self.family.think[0]} as text"
        return self.mode

    @property
    def withheld(self) -> str:
        """Text received but not emitted yet: a possible marker, an open call, undecided text."""
        held = "".join(self._pending) + self._tail + "".join(self._space)
        if self.mode == TOOL:
            return "".join(self._gap) + self._marker.start + "".join(self._body) + held
        return "".join(self._gap) + held

    def feed(self, delta: str) -> list[Event]:
        """Consume the next piece of decoded text; return the events it completes."""
        if self._finished:
            raise ValueError("StreamFilter.feed() after finish(): make a new filter per reply.")
        if not isinstance(delta, str):
            raise TypeError(f"StreamFilter.feed() takes text (str), not {type(delta).__name__}.")
        if len(delta) > _PIECE:
            # Read in pieces, which the contract makes the same as one feed: a feed rescans its
            # own text once per marker it meets, so one huge delta would cost quadratic time.
            return merge_events([event for at in range(0, len(delta), _PIECE)
                                 for event in self.feed(delta[at:at + _PIECE])])
        if self._waits_on_space:
            if delta.isspace():
                self._space.append(delta)
                return self._take()
            self._join_space()
        if not self._tail and self.mode != TOOL:
            anywhere, leading, firsts = self._edges()
            if not leading and not any(c in delta for c in firsts):
                # No marker, nor the start of one: what _step would decide, without the scan.
                self._emit(self.mode, delta)
                return self._take()
        self._tail += delta
        while self._tail and self._step():
            pass
        # A whitespace-only tail withheld only because a leading marker may follow it.
        self._waits_on_space = (self.mode != TOOL and bool(self._edges()[1])
                                and self._tail.isspace())
        return self._take()

    def finish(self) -> list[Event]:
        """End of reply: flush the withheld tail. A tool call left open is a call if only its
        wrapper's closing marker is missing, else a problem."""
        if self._finished:
            return []
        self._finished = True
        self._join_space()
        # A marker withheld because a longer one could still follow it is the marker now
        # (Gemma's "<|channel>" could have become "<|channel>response\n"); the answer's channel
        # cut inside its label is that channel, opened with nothing in it.
        channel, think = self.family.content_channel, self.family.think
        cut = self._tail.lstrip()  # (whitespace before a channel marker goes with it)
        if (channel and think and self.mode != TOOL and len(cut) > len(think[0])
                and channel.startswith(cut)):
            if self.mode == UNDECIDED:
                self._release(CONTENT, "")
            self._tail = ""
            self._transition("open_content")
        if self.mode != TOOL and self._gap and not self._tail.strip():
            self._gap = []  # a separator after the last call, with nothing after it
        while self.mode != TOOL and self._tail and self._step(final=True):
            pass
        if self.mode == TOOL:
            body = "".join(self._body) + self._tail
            self._tail = ""
            if self._scanner is not None and (self._marker.leading or not self._marker.is_soft) \
                    and _CALL_LIST_END.search(body):
                # A call list that reached its ")]" but whose quotes or brackets never balanced
                # (one call's stray quote, ``f(a=[1)``): the parser reads each call on its own,
                # so the good ones survive a bad sibling. A list cut short (by max_tokens) ends
                # elsewhere and stays what it was; so do soft markers in prose.
                self._body, self._end_used = [body], ""
                self._close_call()
            elif self._marker.is_soft:
                self._give_back(self._marker.start + body)  # an unclosed "[" or "call:" was text
            elif not _partial_suffix(body, self._marker.end) and _is_whole(
                    body, self._marker.whole_ends):  # (not cut inside its closing marker)
                # Only the wrapper's closing marker is missing (a stop string or the end of
                # the reply took it): mlx_lm.server parses such a call, and so do we.
                self._body, self._end_used = [body], ""
                self._close_call(unclosed=True)
            elif (isinstance(self._scanner, JsonValueScanner) and not self._scanner.opened
                  and body.strip()):
                # (Mistral's "[TOOL_CALLS]" then prose: not a call cut short, a call never made)
                self._problem(self._marker.start + body, "The tool call did not parse: no "
                              f"arguments came after {body.strip()[:40]!r}.")
            else:
                self._problem(self._marker.start + body, _CUT_OFF)
        if self.mode != TOOL:
            # A marker prefix that never completed is plain text; undecided text is content.
            self._release(CONTENT if self.mode == UNDECIDED else self.mode, self._tail)
        self._tail = ""
        return self._take()

    def _join_space(self) -> None:
        self._tail += "".join(self._space)
        self._space, self._waits_on_space = [], False

    # -- scanning ---------------------------------------------------------------------------

    def _step(self, final: bool = False) -> bool:
        """Advance once; False when the rest of the text must wait for more input (with
        ``final``, at the reply's end, nothing waits)."""
        if self.mode == TOOL:
            return self._step_tool()
        buf = self._tail
        anywhere, leading, _ = self._edges()
        hit = _find_marker(buf, anywhere, leading, self._max_marker, final)
        if hit is None:
            self._emit(self.mode, buf)
            self._tail = ""
            return False
        start, end, action = hit
        if action is None:  # a marker may begin at ``start``: wait for more text
            self._emit(self.mode, buf[:start])
            self._tail = buf[start:]
            return False
        self._tail = buf[end:]
        if action == "separator":  # text after all, unless a call or the end follows
            self._gap.append(buf[start:end])
            return True
        if isinstance(action, _AfterCall):
            self._gap.append(buf[start:end - len(action.marker.start)])  # back if it is no call
        if action in ("open_text_think", "close_text_think"):
            self._emit(self.mode, buf[:end])  # the marker is text of the current mode
            self._think_is_text = action == "open_text_think"
            return True
        if self.mode == UNDECIDED and not (isinstance(action, ToolMarker) and action.is_soft):
            # The marker decides what the held text was (a soft one only once it parses).
            reasoning = action == "close_think" or (
                isinstance(action, ToolMarker) and self.family.undecided_call_is_reasoning
            )
            self._release(REASONING if reasoning else CONTENT, buf[:start])
        else:
            self._emit(self.mode, buf[:start])
        self._transition(action)
        return True

    def _edges(self):
        """Markers that can fire now: (anywhere, leading, the first characters of anywhere's
        markers). A leading marker fires only before any text of the current stretch, and
        whitespace before it belongs to the marker."""
        key = (self.mode, self._mode_has_text, self._spoke, self._reasoning_seen,
               self._after_call, self._think_is_text)
        edges = self._edge_cache.get(key)
        if edges is None:
            anywhere, leading = self._compute_edges()
            firsts = tuple({marker[0] for marker, _ in anywhere})
            edges = self._edge_cache[key] = (anywhere, leading, firsts)
        if self._echo and self._after_call and not self._mode_has_text:
            anywhere, leading, firsts = edges
            return anywhere, [*leading, (self._echo, "drop")], firsts
        return edges

    def _compute_edges(self):
        fam = self.family
        think = fam.think
        # The answer's own channel opens it from any mode (Gemma 4's).
        channel = [(fam.content_channel, "open_content")] if fam.content_channel else []
        if self.mode == REASONING:
            # Already reasoning: a repeated opening marker is structure with nothing to do.
            anywhere = [(think[1], "close_think"), (think[0], "drop"), *channel]
            if fam.tool_ends_reasoning:
                anywhere += self._hard_tools
            leading = []
            if not self._mode_has_text:
                # The model may repeat the opening its prompt already wrote, and some write a
                # label after it: neither is reasoning text. (An empty thought may end at
                # once in the answer's channel, which starts with that opening.)
                leading += [*channel, (think[0], "drop_repeat")]
                if fam.reasoning_prefix:
                    leading.append((fam.reasoning_prefix, "drop"))
            return anywhere, leading
        anywhere = self._hard_tools + self._soft_tools
        leading = []
        if think and self._think_is_text:
            anywhere.append((think[1], "close_text_think"))  # the pair of a text <think>
        elif self.mode == UNDECIDED:
            anywhere.append((think[1], "close_think"))
        elif think and self._reasoning_seen:
            # A second close marker after reasoning ended is a stray token, not text.
            anywhere.append((think[1], "drop"))
        anywhere += channel
        if think and fam.think_anywhere:
            anywhere.append((think[0], "open_think"))
        elif think and not self._think_is_text:
            # Once the reply has spoken, a think block is text, both of its markers (see the
            # module docstring): tracked only so its closing marker is not taken for structure.
            # Before that, one at the start of the reply opens reasoning (the leading edge wins
            # there; the text edge catches one after text in the same delta).
            anywhere.append((think[0], "open_text_think"))
            if not self._spoke:
                leading.append((think[0], "open_think"))
        if not self._spoke:
            leading += self._leading_tools
        if self._after_call and not self._mode_has_text and fam.call_gap_is_markup:
            # Right after a call, whitespace goes with the next call or with a closing
            # marker of the call itself; anything else and it is content after all.
            leading += self._gap_markers
        return anywhere, leading

    def _transition(self, action) -> None:
        if action in ("drop", "drop_repeat"):
            return
        self._after_call = False
        if isinstance(action, _AfterCall):  # a call opens, the whitespace before it dropped
            action = action.marker
        if isinstance(action, ToolMarker):  # a call opens
            if action.is_soft:
                self._soft_from = self.mode  # nothing is decided until it parses
            else:
                self._opened()
            self.mode = TOOL
            self._marker = action
            self._body = []
            self._scanner = make_scanner(action.scanner)
            return
        self._mode_has_text = False
        self._spoke = True
        self._reasoning_seen = True
        self.mode = REASONING if action == "open_think" else CONTENT

    def _opened(self) -> None:
        """A real call started: reasoning (if any) is over and the reply has spoken."""
        self._reasoning_seen = True
        self._spoke = True
        self._mode_has_text = False

    def _step_tool(self) -> bool:
        buf, marker = self._tail, self._marker
        if self._scanner is not None:
            n = self._scanner.feed(buf)
            if n is None:
                self._body.append(buf)
                self._tail = ""
                return False
            if n < 0:  # not a call after all: give the text back and scan on from there
                n = -n - 1
                # (A hard marker is a control token, not text: Llama's "<|python_tag|>" before
                # code its built-in interpreter would run leaves the code, not the tag.)
                opening = marker.start if marker.is_soft else ""
                raw = opening + "".join(self._body) + buf[:n]
                self._tail = buf[n:]
                self._give_back(raw)
                return True
            self._body.append(buf[:n])
            self._tail = buf[n:]
            self._end_used = ""
            self._close_call()
            return True
        ends = (marker.end, *marker.ends)
        hits = [(p, end) for end in ends if (p := buf.find(end)) != -1]
        if not hits:
            keep = max(_partial_suffix(buf, end) for end in ends)
            self._body.append(buf[: len(buf) - keep])
            self._tail = buf[len(buf) - keep:]
            return False
        p, end = min(hits, key=lambda h: (h[0], -len(h[1])))
        self._body.append(buf[:p])
        self._tail = buf[p + len(end):]
        self._end_used = end
        self._close_call()
        return True

    def _give_back(self, raw: str) -> None:
        """A soft marker's text was not a call: it is text of the mode it interrupted."""
        self.mode = self._soft_from or CONTENT
        self._soft_from, self._marker, self._body, self._scanner = None, None, [], None
        self._emit(self.mode, raw)

    def _close_call(self, unclosed: bool = False) -> None:
        marker, body = self._marker, "".join(self._body)
        raw = marker.start + body + self._end_used
        try:
            calls = parse_calls(self.family, raw if marker.keep else body, self.tools)
        except Exception as exc:  # noqa: BLE001 -- a parser failure on model output is a problem
            if marker.is_soft:
                self._give_back(raw)  # "[a link]" or "call: me" was text, not calls
                return
            calls = None
            message = (f"{_CUT_OFF[:-1]}, and did not parse: {exc}" if unclosed
                       else f"The tool call did not parse: {exc}")
        if marker.is_soft and (calls == [] or marker.offered_names and self.tools and any(
                isinstance(c, dict) and c["name"] not in self._offered for c in calls)):
            self._give_back(raw)  # "[]" in prose is no call block, nor a call of no tool offered
            return
        if marker.is_soft:
            if self._soft_from == UNDECIDED:
                self._release(CONTENT, "")  # a call settles it: what came before was content
            self._opened()
        self.mode, self._marker, self._body, self._scanner = CONTENT, None, [], None
        self._soft_from, self._gap = None, []
        self._mode_has_text = False
        self._after_call = True
        if calls is None:
            self._problem(raw, message)
            self._echo = ""
            return
        # (lstripped: a leading marker is matched after the whitespace before it; at most
        # _ECHO_MAX long: text that may grow into it is withheld and rescanned per delta)
        echo = (body + self._end_used).lstrip()
        self._echo = echo if self._end_used and body.strip() and len(echo) <= _ECHO_MAX else ""
        for call in calls:
            if isinstance(call, CallProblem):
                self._problem(call.text or raw, f"The tool call did not parse: {call.message}")
            else:
                self.tool_calls += 1
                self._out.append(Event("tool_call", raw, name=call["name"],
                                       arguments=call["arguments"], id=call.get("id")))

    # -- output -----------------------------------------------------------------------------

    def _emit(self, kind: str, text: str) -> None:
        if not text:
            return
        if self._gap:  # what followed the last call was no call: the gap was text
            text, self._gap = "".join(self._gap) + text, []
        if not self._mode_has_text and not text.isspace():
            self._mode_has_text = True
            self._spoke = True
        if kind == UNDECIDED:
            self._pending.append(text)
            return
        out = self._out
        if out and out[-1].kind == kind:
            out[-1] = Event(kind, out[-1].text + text)
        else:
            out.append(Event(kind, text))

    def _release(self, kind: str, text: str) -> None:
        """Emit the held undecided text, then ``text``, as ``kind``."""
        held, self._pending = "".join(self._pending), []
        text = held + text
        prefix = self.family.reasoning_prefix
        # The prompt opened the thought, so the label after its opening marker came first
        # (Gemma's "thought\n"): a label, not thought, dropped with the whitespace before it
        # and as often as it repeats, as when the start state is known.
        while kind == REASONING and prefix and text.lstrip().startswith(prefix):
            text = text.lstrip()[len(prefix):]
        self._emit(kind, text)

    def _problem(self, raw: str, message: str) -> None:
        self._spoke = True
        self._out.append(Event("problem", raw, message=message))

    def _take(self) -> list[Event]:
        out, self._out = self._out, []
        return out


_CUT_OFF = "The tool call was cut off before it was closed."
_ECHO_MAX = 4096
"""The longest repeat of a call that is dropped (``StreamFilter._echo``)."""
_PIECE = 4096
"""The longest delta ``feed`` scans at once."""


def _is_whole(body: str, whole_ends: tuple[str, ...]) -> bool:
    """Whether a call left open ends where its own element ends (``ToolMarker.whole_ends``)."""
    body = body.strip()
    for end in whole_ends:
        if end == WHOLE_PARSE:
            return True
        if end in (WHOLE_JSON, WHOLE_FUNCTION_JSON):
            if _json_values(body, function=end == WHOLE_FUNCTION_JSON):
                return True
        elif body.endswith(end):
            return True
    return False


_CALL_LIST_END = re.compile(r"\)\s*\]\s*\Z")

_LLAMA_OPENING = re.compile(r"<function=[^>\n]*>")


def _json_values(body: str, function: bool = False) -> bool:
    """Whether ``body`` is one or more whole JSON objects or arrays (with ``function``, after
    a Llama-style ``<function=name>`` if any), nothing else."""
    text = body[m.end():] if function and (m := _LLAMA_OPENING.match(body)) else body
    decoder, at, seen = json.JSONDecoder(), 0, False
    try:
        while (at := _SPACE.match(text, at).end()) < len(text):
            value, at = decoder.raw_decode(text, at)
            if not isinstance(value, (dict, list)):
                return False
            seen = True
    except (ValueError, RecursionError):  # cut, or nested past what Python reads
        return False
    return seen


_SPACE = re.compile(r"\s*")


@dataclass(frozen=True, slots=True)
class _AfterCall:
    """A call marker right after a call: it takes the whitespace before it (a leading edge
    whose action is not a ``ToolMarker`` consumes that whitespace)."""

    marker: ToolMarker


def _find_marker(buf: str, anywhere, leading, max_len: int, final: bool = False):
    """The next marker in ``buf``: ``(start, end, action)``.

    Text before ``start`` belongs to the current mode and ``buf[start:end]`` is the marker
    (for a leading think marker, with the whitespace before it). ``action`` None means a
    marker may begin at ``start`` but is not complete: wait. None when nothing must wait.
    With ``final`` (no more text will come) nothing waits: the complete markers decide.
    """
    best = None
    for marker, action in anywhere:
        p = buf.find(marker)
        if p != -1 and (best is None or p < best[0] or (p == best[0] and p + len(marker) > best[1])):
            best = (p, p + len(marker), action)
    if leading:
        ws = len(buf) - len(buf.lstrip())
        if ws == len(buf):
            return best if final else (0, None, None)  # a leading marker may follow
        tail = buf[ws:]
        for marker, action in leading:
            if tail.startswith(marker):
                # Whitespace before a think marker goes with it; before a call it is text,
                # and so it is before a repeated opening marker inside reasoning (only the
                # marker is dropped: "<think>\n<think>\nX" is the reasoning "\n\nX").
                start = ws if isinstance(action, ToolMarker) or action == "drop_repeat" else 0
                return (start, ws + len(marker), action)
            if len(marker) > len(tail) and marker.startswith(tail) and not final:
                return (0, None, None)
    if final:
        return best
    limit = best[0] if best is not None else len(buf)
    for q in range(max(0, len(buf) - max_len + 1), min(limit + 1, len(buf))):
        ch = buf[q]
        for marker, _ in anywhere:
            # First-character test before slicing: most text starts no marker.
            if marker[0] == ch and len(marker) > len(buf) - q and marker.startswith(buf[q:]):
                return (q, None, None)
    return best


def _partial_suffix(buf: str, marker: str) -> int:
    """Length of the longest end of ``buf`` that is a proper prefix of ``marker``."""
    for k in range(min(len(marker) - 1, len(buf)), 0, -1):
        if buf.endswith(marker[:k]):
            return k
    return 0


@dataclass(frozen=True, slots=True)
class ParsedOutput:
    """A whole reply, split: what the streaming filter emits, concatenated by kind."""

    reasoning: str
    content: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """One ``{"name": str, "arguments": dict}`` per call, in order."""
    problems: list[Event] = field(default_factory=list)
    """Markup that did not parse (raw text in ``.text``, reason in ``.message``)."""
    events: list[Event] = field(default_factory=list)
    """The merged event sequence (what any chunking of the reply must reproduce)."""


def parse_output(
    text: str,
    family: str | Family,
    *,
    tools: list[dict[str, Any]] | None = None,
    starts_in_reasoning: bool | None = None,
) -> ParsedOutput:
    """Split a whole reply: the buffered oracle every streaming chunking must equal."""
    f = StreamFilter(family, tools=tools, starts_in_reasoning=starts_in_reasoning)
    events = merge_events(f.feed(text) + f.finish())
    return ParsedOutput(
        reasoning="".join(e.text for e in events if e.kind == REASONING),
        content="".join(e.text for e in events if e.kind == CONTENT),
        tool_calls=[
            {"name": e.name, "arguments": e.arguments} for e in events if e.kind == "tool_call"
        ],
        problems=[e for e in events if e.kind == "problem"],
        events=events,
    )
