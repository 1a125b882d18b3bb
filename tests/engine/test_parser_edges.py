"""Two rough edges of the tool-call parsers, where model text was cut at the wrong place or
vanished: GLM 4.7 (and LongCat, which shares its scan) pairs with a tag missing, and a
Mistral ``[TOOL_CALLS]`` followed by prose and then a call list.

GLM: mlx-lm's pattern skips a pair whose ``</arg_key>`` is missing (and any text its matches
do not cover), so the call ran without an argument the model wrote. Ours reads only bodies
whose pairs are all whole, exactly as before; any other body is one problem holding the
block's text (``glm47.py`` says why we do not guess the broken pair back).

Mistral: in ``[TOOL_CALLS] prose [{...}] trail`` the call's value was taken to start at the
``{``, so the problem ended before the list's ``]``, which went to the content. The value now
spans the list: the problem holds the bracketed text and ``trail`` stays content.

Every case is checked for the splitter's guarantees: the events' texts put back together are
the reply (nothing lost, nothing twice), and every chunking gives the buffered parse.
"""

from __future__ import annotations

import importlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlx_notebook.engine.parsing import StreamFilter, parse_output
from parsing_cases.glm_pairs import pairs_well_formed
from parsing_cases.streaming import pieces, streamed

_GLM_TAGS = {"glm47": ("<tool_call>", "</tool_call>", ""),
             "longcat": ("<longcat_tool_call>", "</longcat_tool_call>", "longcat_")}


def _rejoined(events):
    """The events' texts in order, a block's raw text once (each call of a block carries it)."""
    return "".join(e.text for i, e in enumerate(events)
                   if not (i and e.kind == "tool_call" and e.text is events[i - 1].text))


def _checked(text, family, sizes=(1, 2, 3, 5, 7, 64)):
    """The buffered parse of ``text``, after checking it keeps every character once and that
    each chunk size streams to the same events."""
    events = parse_output(text, family, starts_in_reasoning=False).events
    assert _rejoined(events) == text  # nothing lost, nothing twice
    for size in sizes:
        chunks = pieces(text, [size])
        assert streamed(StreamFilter(family, starts_in_reasoning=False), chunks) == events, size
    return events


def _glm(family, body):
    start, end, prefix = _GLM_TAGS[family]
    body = body.replace("<arg_", f"<{prefix}arg_").replace("</arg_", f"</{prefix}arg_")
    return start + body + end


# -- GLM 4.7 / LongCat: a pair with a tag missing ----------------------------------------------

_BROKEN_GLM = [
    # (the brief's case) a key without its </arg_key>: mlx-lm ran get_weather({})
    ("key_without_close", "get_weather<arg_key>a\n<arg_value>v</arg_value>",
     "the argument key 'a' has no </arg_key>"),
    # the whole first pair must not run alone without the second
    ("second_key_without_close", "get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris"
     "</arg_value>\n<arg_key>unit\n<arg_value>celsius</arg_value>\n",
     "the argument key 'unit' has no </arg_key>"),
    # mlx-lm ran the first key on into the next pair's: one argument named "a ... b"
    ("key_without_close_before_a_whole_pair", "f<arg_key>a\n<arg_value>1</arg_value>"
     "<arg_key>b</arg_key><arg_value>2</arg_value>", "the argument key 'a' has no </arg_key>"),
    ("key_without_value", "f<arg_key>a</arg_key>\n<arg_key>b</arg_key><arg_value>2</arg_value>",
     "the argument 'a' has no <arg_value>"),
    ("value_without_open", "f<arg_key>a</arg_key>1</arg_value>",
     "the argument 'a' has no <arg_value>"),
    ("value_without_close", "f<arg_key>a</arg_key><arg_value>1\n",
     "the value of 'a' has no </arg_value>"),
    ("text_between_pairs", "f<arg_key>a</arg_key><arg_value>1</arg_value> and then "
     "<arg_key>b</arg_key><arg_value>2</arg_value>", "text outside an argument: 'and then"),
    ("text_after_the_last_pair", "f<arg_key>a</arg_key><arg_value>1</arg_value>\nDone",
     "text outside an argument: 'Done'"),
]


@pytest.mark.parametrize("family", sorted(_GLM_TAGS))
@pytest.mark.parametrize("body, message", [c[1:] for c in _BROKEN_GLM],
                         ids=[c[0] for c in _BROKEN_GLM])
def test_a_glm_body_with_a_broken_pair_is_one_problem_with_its_text(family, body, message):
    block = _glm(family, body)
    events = _checked(f"Checking. {block} Back soon.", family)
    assert [(e.kind, e.text) for e in events] == [
        ("content", "Checking. "), ("problem", block), ("content", " Back soon.")]
    expected = message.replace("arg_", f"{_GLM_TAGS[family][2]}arg_")
    assert events[1].message.startswith(f"The tool call did not parse: {expected}")


def test_glm_tags_without_an_arg_key_are_a_problem_not_a_name():
    # mlx-lm's plain-text fallback read this as a call named "get_weather a</arg_key>...".
    block = "<tool_call>get_weather a</arg_key><arg_value>Paris</arg_value></tool_call>"
    [event] = _checked(block, "glm47")
    assert (event.kind, event.text) == ("problem", block)
    assert event.message.endswith("an argument's tags without its <arg_key>")


def test_a_glm_call_left_open_with_a_broken_pair_is_a_problem():
    # It ends in </arg_value>, which reads an open call as whole; this one is not.
    text = "<tool_call>get_weather<arg_key>city\n<arg_value>Paris</arg_value>"
    [event] = _checked(text, "glm47")
    assert (event.kind, event.text) == ("problem", text)
    assert event.message == ("The tool call was cut off before it was closed, and did not "
                             "parse: the argument key 'city' has no </arg_key>")


@pytest.mark.parametrize("body, arguments", [
    ("get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n", {"city": "Paris"}),
    # mlx-lm's pattern allows a literal "\n" between a key and its value; between pairs too
    ("f<arg_key>a</arg_key>\\n<arg_value>1</arg_value>\\n<arg_key>b</arg_key><arg_value>x"
     "</arg_value>\\n", {"a": 1, "b": "x"}),
    # a value is all its text, GLM's tags too (code that writes them)
    ("write<arg_key>code</arg_key><arg_value>print('<arg_key>k</arg_key>')</arg_value>",
     {"code": "print('<arg_key>k</arg_key>')"}),
    ("get_time", {}),
    ('{"name": "f", "arguments": {"note": "</arg_value>"}}', {"note": "</arg_value>"}),
    # mlx-lm's "name, then JSON" fallback: its values may hold the tags too
    ('f\n{"note": "</arg_value>"}', {"note": "</arg_value>"}),
])
def test_whole_glm_bodies_still_read_as_a_call(body, arguments):
    block = _glm("glm47", body)
    [event] = _checked(block, "glm47")
    assert (event.kind, event.arguments) == ("tool_call", arguments)


_KEYS = st.sampled_from(["city", "unit", "a", " b ", "x_1"])
_VALUES = st.text(st.sampled_from("ab 1{}\"\n:,"), max_size=6)
_JUNK = st.sampled_from(["", " ", "\n", "\\n", "x", "1", " so ", '"q"'])
_GLM_PIECES = ["<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"]


@st.composite
def _glm_bodies(draw):
    """A whole GLM body (a name and pairs), then pieces dropped or repeated, and tags or junk
    put between them."""
    pieces_ = [draw(st.sampled_from(["f", "get_weather"])), draw(_JUNK)]
    for _ in range(draw(st.integers(0, 3))):
        pieces_ += ["<arg_key>", draw(_KEYS), "</arg_key>", draw(st.sampled_from(["", "\n"])),
                    "<arg_value>", draw(_VALUES), "</arg_value>", draw(_JUNK)]
    return _mutated(draw, pieces_, st.sampled_from(_GLM_PIECES), _JUNK)


def _mutated(draw, pieces_, tags, junk):
    """``pieces_`` joined after up to three edits: a piece dropped or repeated, a tag drawn
    from ``tags`` or text from ``junk`` put in."""
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(pieces_)))
        op = draw(st.sampled_from(["drop", "repeat", "tag", "junk"]))
        if op == "drop" and at < len(pieces_):
            del pieces_[at]
        elif op == "repeat" and at < len(pieces_):
            pieces_.insert(at, pieces_[at])
        elif op == "tag":
            pieces_.insert(at, draw(tags))
        else:
            pieces_.insert(at, draw(junk))
    return "".join(pieces_)


@settings(max_examples=300, deadline=None)
@given(body=_glm_bodies(), family=st.sampled_from(sorted(_GLM_TAGS)),
       around=st.sampled_from([("", ""), ("Sure. ", " Done.")]), closed=st.booleans(),
       sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4))
def test_random_broken_glm_bodies_lose_no_text_and_stream_as_buffered(body, family, around,
                                                                     closed, sizes):
    """Whatever tags a body lacks or repeats: the reply's text comes back whole and any
    chunking gives the buffered parse; a body whose pairs are all whole is mlx-lm's call
    (its values typed by no schema, as mlx-lm types them), and any other with a pair in it
    is refused, never read in part."""
    start, end, prefix = _GLM_TAGS[family]
    block = _glm(family, body)
    if not closed:
        block = block.removesuffix(end)
    text = around[0] + block + around[1]
    events = parse_output(text, family, starts_in_reasoning=False).events
    assert _rejoined(events) == text
    assert streamed(StreamFilter(family, starts_in_reasoning=False), pieces(text, sizes)) == events

    inner = _glm(family, body)[len(start):-len(end)]  # (the body, its tags prefixed)
    whole = pairs_well_formed(inner, prefix)
    if whole is None:
        return  # no pair at all: mlx-lm's fallback shapes, not this test's subject
    ours = importlib.import_module(f"mlx_notebook.engine.parsing.parsers.{family}")
    if whole:
        theirs = importlib.import_module(f"mlx_lm.tool_parsers.{family}")
        assert ours.parse_tool_call(inner.strip()) == theirs.parse_tool_call(inner.strip())
        return
    with pytest.raises(ValueError):
        ours.parse_tool_call(inner.strip())
    # (an open call runs to the reply's end: the text after it is the body's too)
    assert [e.text for e in events if e.kind == "problem"] == [
        block if closed else block + around[1]]


# -- Mistral: prose after [TOOL_CALLS], then a call list ---------------------------------------

_LIST = '[{"name": "get_weather", "arguments": {"city": "Paris"}}]'


@pytest.mark.parametrize("head", ["  junk ", " I will call ", "junk", " note: [ "])
def test_prose_then_a_mistral_call_list_is_one_problem_up_to_its_bracket(head):
    listed = _LIST if not head.endswith("[ ") else _LIST[1:]  # ("[ {": a space inside the "[")
    block = f"[TOOL_CALLS]{head}{listed}"
    events = _checked(f"Sure. {block} trail", "mistral")
    assert [(e.kind, e.text) for e in events] == [
        ("content", "Sure. "), ("problem", block), ("content", " trail")]


def test_a_mistral_name_then_a_list_is_a_problem_not_a_call_named_with_its_bracket():
    # Before, the call ran as "get_weather[" and its "]" went to the content.
    block = '[TOOL_CALLS]get_weather[{"city": "Paris"}]'
    events = _checked(block + " trail", "mistral")
    assert [(e.kind, e.text) for e in events] == [("problem", block), ("content", " trail")]
    assert events[0].message == "The tool call did not parse: text after the arguments: ']'"


@pytest.mark.parametrize("block, call", [
    (f"[TOOL_CALLS]{_LIST}", ("get_weather", {"city": "Paris"}, None)),
    (f"[TOOL_CALLS]  {_LIST}", ("get_weather", {"city": "Paris"}, None)),
    ('[TOOL_CALLS]get_weather [ARGS]{"city": "Paris"}', ("get_weather", {"city": "Paris"}, None)),
    ('[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}',
     ("get_weather", {"city": "Paris"}, "a1b2c3d4e")),
    ('[TOOL_CALLS]get_weather{"city": "Paris"}', ("get_weather", {"city": "Paris"}, None)),
])
def test_mistral_calls_with_a_bracket_after_their_name_still_read(block, call):
    events = _checked(f"Hi{block} trail", "mistral")
    assert [e.kind for e in events] == ["content", "tool_call", "content"]
    assert (events[1].text, events[2].text) == (block, " trail")
    assert (events[1].name, events[1].arguments, events[1].id) == call


_PROSE = st.text(st.sampled_from("abc xyz.:\n"), max_size=10)
_MISTRAL_PIECES = ["[", "]", "{", "}", "[ARGS]", "[CALL_ID]", '"', ",", ":"]


@st.composite
def _mistral_bodies(draw):
    """A whole Mistral call (list, named, with a call id) cut into tokens, then tokens dropped,
    repeated or added and prose put between them."""
    arguments = json.dumps(draw(st.dictionaries(st.sampled_from(["city", "n"]),
                                                st.sampled_from(["Paris", 1, "]}["]), max_size=2)))
    shape = draw(st.sampled_from(["list", "named", "call_id"]))
    if shape == "list":
        tokens = ["[", "{", '"name": "f", "arguments": ', arguments, "}", "]"]
    else:
        tokens = ["f", *(["[CALL_ID]", "id1"] if shape == "call_id" else []), "[ARGS]", arguments]
    return _mutated(draw, tokens, st.sampled_from(_MISTRAL_PIECES), _PROSE)


@settings(max_examples=300, deadline=None)
@given(body=_mistral_bodies(), before=st.sampled_from(["", "Sure. "]), after=_PROSE,
       sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4))
def test_random_broken_mistral_bodies_lose_no_text_and_stream_as_buffered(body, before, after,
                                                                         sizes):
    text = f"{before}[TOOL_CALLS]{body}{after}"
    events = parse_output(text, "mistral", starts_in_reasoning=False).events
    assert _rejoined(events) == text
    assert streamed(StreamFilter("mistral", starts_in_reasoning=False),
                    pieces(text, sizes)) == events


@settings(max_examples=200, deadline=None)
@given(head=_PROSE, gap=st.sampled_from(["", " ", "\n"]), after=_PROSE,
       calls=st.lists(st.fixed_dictionaries({"name": st.sampled_from(["f", "get_weather"]),
                                             "arguments": st.dictionaries(
                                                 st.sampled_from(["a", "b"]),
                                                 st.sampled_from([1, "x]", "{["]), max_size=2)}),
                      min_size=1, max_size=3))
def test_prose_then_any_call_list_ends_the_problem_at_the_list_bracket(head, gap, after, calls):
    """Whatever prose comes between ``[TOOL_CALLS]`` and a call list: with none, the calls;
    with some, one problem that ends at the list's own ``]`` (brackets inside strings do not
    count), and what follows stays content."""
    block = f"[TOOL_CALLS]{head}{gap}{json.dumps(calls)}"
    events = parse_output(block + after, "mistral", starts_in_reasoning=False).events
    assert _rejoined(events) == block + after
    if head.strip():
        assert (events[0].kind, events[0].text) == ("problem", block)
    else:
        assert [(e.kind, e.text) for e in events[:len(calls)]] == [
            ("tool_call", block)] * len(calls)
    assert "".join(e.text for e in events if e.kind == "content") == after


def test_prose_then_an_object_that_no_list_follows_ends_the_problem_at_its_brace():
    # A "[" then "{" guessed a list; what follows the object says it was none, so the problem
    # ends after the "}" (and the space read to see what followed) and a later call still
    # runs, rather than one problem to the reply's end.
    text = ('[TOOL_CALLS] see [{"a": 1} and more prose'
            '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}')
    events = _checked(text, "mistral")
    assert [(e.kind, e.text) for e in events] == [
        ("problem", '[TOOL_CALLS] see [{"a": 1} '), ("content", "and more prose"),
        ("tool_call", '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}')]


@pytest.mark.parametrize("reply", ["thought\nPlan<channel|>Answer",
                                   "\nthought\nPlan<channel|>Answer",
                                   "thought\nthought\nPlan<channel|>Answer"])
def test_a_gemma_thought_label_is_dropped_when_the_start_state_is_unknown_as_when_known(reply):
    known = parse_output(reply, "gemma4", starts_in_reasoning=True)
    unknown = parse_output(reply, "gemma4")
    assert (known.reasoning, known.content) == (unknown.reasoning, unknown.content) \
        == ("Plan", "Answer")
    for size in (1, 2, 3, 7):
        assert streamed(StreamFilter("gemma4"), pieces(reply, [size])) == unknown.events
