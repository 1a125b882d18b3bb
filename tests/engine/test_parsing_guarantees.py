"""The stream filter's guarantees, one test per family over ``parsing_cases.samples``."""

import pytest
from mlx_notebook.engine.parsing import (
    FAMILIES,
    Event,
    StreamFilter,
    merge_events,
    parse_output,
)
from parsing_cases.streaming import streamed
from parsing_cases.samples import CALLS

FAMILIES_WITH_TOOLS = sorted(CALLS)
REASONING_FAMILIES = sorted(f for f in CALLS if FAMILIES[f].think)


def run(family, deltas, **options):
    return streamed(StreamFilter(family, **options), deltas)


def test_every_family_with_tools_has_a_sample():
    assert set(CALLS) == {name for name, fam in FAMILIES.items() if fam.tools}


@pytest.mark.parametrize("family", FAMILIES_WITH_TOOLS)
def test_text_before_and_after_a_call_in_one_delta_is_kept(family):
    markup, name, arguments, _ = CALLS[family]
    events = run(family, [f"Checking now. {markup} Back soon."], starts_in_reasoning=False)
    assert [e.kind for e in events] == ["content", "tool_call", "content"]
    assert events[0].text == "Checking now. " and events[2].text == " Back soon."
    assert (events[1].name, events[1].arguments, events[1].text) == (name, arguments, markup)


@pytest.mark.parametrize("family", FAMILIES_WITH_TOOLS)
def test_call_split_at_every_character_gives_the_same_call(family):
    markup, name, arguments, _ = CALLS[family]
    text = f"Sure.{markup}"
    expected = parse_output(text, family, starts_in_reasoning=False).events
    assert run(family, list(text), starts_in_reasoning=False) == expected
    assert expected[-1] == Event("tool_call", markup, name=name, arguments=arguments,
                                 id=expected[-1].id)


@pytest.mark.parametrize("family", FAMILIES_WITH_TOOLS)
def test_cut_off_call_becomes_a_problem_with_its_raw_text(family):
    markup = CALLS[family][0]
    for cut in (len(markup) // 2, len(markup) - 1):
        events = run(family, [f"Sure. {markup[:cut]}"], starts_in_reasoning=False)
        kinds = [e.kind for e in events]
        assert "tool_call" not in kinds
        assert "".join(e.text for e in events) == f"Sure. {markup[:cut]}"  # nothing lost
        if len(markup[:cut]) >= len(FAMILIES[family].tools[0].start):
            assert kinds[-1] == "problem" and events[-1].text == markup[:cut]


@pytest.mark.parametrize("family", FAMILIES_WITH_TOOLS)
def test_malformed_call_becomes_a_problem_and_the_reply_goes_on(family):
    bad = CALLS[family][3]
    events = run(family, ["Sure. ", bad, " Anything else?"], starts_in_reasoning=False)
    assert [e.kind for e in events] == ["content", "problem", "content"]
    assert events[1].text == bad and events[1].message
    assert events[2].text == " Anything else?"


@pytest.mark.parametrize("family", REASONING_FAMILIES)
def test_a_call_inside_reasoning_ends_the_reasoning(family):
    markup, name, _, _ = CALLS[family]
    events = run(family, ["I should look it up.\n", markup], starts_in_reasoning=True)
    assert [(e.kind, e.name) for e in events] == [("reasoning", None), ("tool_call", name)]
    assert events[0].text == "I should look it up.\n"


@pytest.mark.parametrize("family", FAMILIES_WITH_TOOLS)
def test_markup_lookalikes_inside_content_stay_content(family):
    start = FAMILIES[family].tools[0].start
    lookalike = f"Text with {start[:-1]}+{start[-1]} and {start[:-1]} in it."
    assert run(family, list(lookalike), starts_in_reasoning=False) == [Event("content", lookalike)]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_interleaved_filters_never_share_state(family):
    fam = FAMILIES[family]
    open_, close = fam.think or ("", "")
    text_a = f"{open_}thinking a{close}answer a" + (CALLS[family][0] if family in CALLS else "")
    text_b = "plain answer b"
    a = StreamFilter(family, starts_in_reasoning=False)
    b = StreamFilter(family, starts_in_reasoning=False)
    events_a, events_b = [], []
    for i in range(max(len(text_a), len(text_b))):
        events_a += a.feed(text_a[i:i + 1])
        events_b += b.feed(text_b[i:i + 1])
    assert merge_events(events_a + a.finish()) == parse_output(
        text_a, family, starts_in_reasoning=False).events
    assert merge_events(events_b + b.finish()) == [Event("content", text_b)]


@pytest.mark.parametrize("family", FAMILIES_WITH_TOOLS)
@pytest.mark.parametrize("where", ["start", "after a call", "undecided start"])
def test_a_long_whitespace_run_is_held_unscanned_and_decided_like_one_feed(family, where):
    """A model that emits thousands of newlines keeps each feed's cost constant: while a
    leading marker may still follow, the run waits without being rescanned, and whatever
    ends it (a call, text, the reply's end) gives the events of the buffered parse."""
    markup, _, _, _ = CALLS[family]
    fam = FAMILIES[family]
    longest = max([len(m.start) for m in fam.tools] + [len(s) for s in fam.think or ()])
    options = {} if where == "undecided start" else {"starts_in_reasoning": False}
    head = markup if where == "after a call" else ""
    for ending in [markup, "Done.", ""]:
        f = StreamFilter(family, **options)
        events = f.feed(head)
        for _ in range(3000):
            events += f.feed("\n ")
            assert len(f._tail) <= longest + 2
        events += f.feed(ending) + f.finish()
        text = head + "\n " * 3000 + ending
        assert merge_events(events) == parse_output(text, family, **options).events


def test_merging_joins_runs_across_empty_events_of_another_kind():
    call = Event("tool_call", "", name="f", arguments={})
    events = [Event("content", "a"), Event("reasoning", ""), Event("content", "b"),
              Event("content", ""), call, Event("content", "c"), Event("reasoning", "r"),
              Event("reasoning", "s")]
    assert merge_events(events) == [Event("content", "ab"), call, Event("content", "c"),
                                    Event("reasoning", "rs")]


def test_merging_a_reply_of_many_pieces_keeps_every_character():
    # A 20 MB delta from a remote server arrives as thousands of pieces: joined once, not
    # piece by piece (that took 17 s at 20 MB).
    pieces = [Event("content", f"{i:07d}" * 512) for i in range(5000)]
    (merged,) = merge_events(pieces)
    assert merged.text == "".join(p.text for p in pieces) and len(merged.text) == 17_920_000
