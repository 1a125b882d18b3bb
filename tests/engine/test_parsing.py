"""StreamFilter guarantees, per family, over the reply tables in ``parsing_cases``.

The buffered parse is checked against hand-written expectations (the independent oracle);
every streaming chunking is then checked against the buffered parse.
"""

import json
import random
import warnings

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mlx_notebook.engine.parsing import (
    FAMILIES,
    Event,
    StreamFilter,
    merge_events,
    parse_output,
    trace,
)
from parsing_cases.glm_pairs import pairs_well_formed
from parsing_cases.streaming import pieces, streamed
from parsing_cases import core, families, peers, peers_vllm_mlx

CASES = core.CASES + families.CASES + peers.CASES + peers_vllm_mlx.CASES
IDS = [c[0] for c in CASES]


def stream(text, family, sizes, **options):
    """Feed ``text`` in pieces of the given sizes (cycled); return the merged events."""
    return streamed(StreamFilter(family, **options), pieces(text, sizes))


def random_sizes(seed, length):
    rng = random.Random(seed)
    return [rng.randint(1, 12) for _ in range(max(1, length))]


def markers(family):
    fam = FAMILIES[family]
    found = list(fam.think or ())
    for m in fam.tools:
        found += [m.start, m.end] if m.end else [m.start]
    return [m for m in found if m]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_buffered_parse_matches_expected(case):
    _, family, text, options, expected = case
    out = parse_output(text, family, **options)
    assert out.reasoning == expected["reasoning"]
    assert out.content == expected["content"]
    assert out.tool_calls == expected["tool_calls"]
    assert [p.text for p in out.problems] == expected["problems"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_chunk_size_gives_the_buffered_parse(case):
    _, family, text, options, _ = case
    buffered = parse_output(text, family, **options).events
    for size in range(1, 129):
        assert stream(text, family, [size], **options) == buffered, f"chunk size {size}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_random_splits_give_the_buffered_parse(case):
    _, family, text, options, _ = case
    buffered = parse_output(text, family, **options).events
    for seed in range(25):
        sizes = random_sizes(seed, len(text))
        assert stream(text, family, sizes, **options) == buffered, f"seed {seed}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_no_marker_fragment_reaches_reasoning_or_content(case):
    _, family, text, options, expected = case
    f = StreamFilter(family, **options)
    for ch in text:
        for event in f.feed(ch):
            if event.kind in ("reasoning", "content"):
                # Every emitted piece is final: it must be part of the expected text.
                assert event.text in expected[event.kind]


def test_partial_marker_is_withheld_until_it_resolves():
    f = StreamFilter("qwen3")
    assert f.feed("<think>Let me see</thi") == [Event("reasoning", "Let me see")]
    assert f.withheld == "</thi"
    assert f.feed("nk>The answer<tool_") == [Event("content", "The answer")]
    assert f.feed("box> is 4") == [Event("content", "<tool_box> is 4")]
    assert f.finish() == []


def test_text_before_and_after_a_call_in_one_delta_is_kept():
    f = StreamFilter("qwen3")
    events = f.feed(f"Checking.<tool_call>{core.WEATHER}</tool_call>Now I wait.") + f.finish()
    assert [(e.kind, e.text if e.kind != "tool_call" else e.name) for e in events] == [
        ("content", "Checking."),
        ("tool_call", "get_weather"),
        ("content", "Now I wait."),
    ]
    assert events[1].arguments == {"city": "Paris", "unit": "celsius"}
    assert events[1].text == f"<tool_call>{core.WEATHER}</tool_call>"


def test_cut_off_call_becomes_a_problem_with_its_raw_text():
    f = StreamFilter("qwen3")
    assert f.feed('<tool_call>{"name": "get_weather", "arg') == []
    [problem] = f.finish()
    assert problem.kind == "problem"
    assert problem.text == '<tool_call>{"name": "get_weather", "arg'
    assert "cut off" in problem.message


def test_interleaved_requests_never_mix():
    a, b = StreamFilter("qwen3"), StreamFilter("qwen3", starts_in_reasoning=True)
    text_a = f"<think>A thinks</think>A says<tool_call>{core.TIME}</tool_call>"
    text_b = "B thinks</think>B says"
    events_a, events_b = [], []
    for i in range(max(len(text_a), len(text_b))):
        events_a += a.feed(text_a[i:i + 1])
        events_b += b.feed(text_b[i:i + 1])
    events_a, events_b = merge_events(events_a + a.finish()), merge_events(events_b + b.finish())
    assert events_a == parse_output(text_a, "qwen3").events
    assert events_b == parse_output(text_b, "qwen3", starts_in_reasoning=True).events


def test_feed_after_finish_is_refused():
    f = StreamFilter("plain")
    f.finish()
    with pytest.raises(ValueError, match="new filter per reply"):
        f.feed("more")


def test_unknown_family_names_the_choices():
    with pytest.raises(ValueError, match="qwen3"):
        StreamFilter("nonsense")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_scanned_tail_stays_bounded_by_one_marker(family):
    """Per-feed work is the delta plus a tail shorter than the longest marker: a reply of
    thousands of tokens never makes a feed rescan what came before (constant cost per token)."""
    fam = FAMILIES[family]
    longest = max([len(m.start) for m in fam.tools] + [len(s) for s in fam.think or ()] + [1])
    opening = (fam.think[0] + "thought\n") if fam.think else ""
    words = ("reasoning < and > </ [ { text " * 400).split(" ")
    f = StreamFilter(family)
    for piece in [opening, *words[:1500], (fam.think or ("", ""))[1], *words[1500:]]:
        f.feed(piece + " ")
        assert len(f._tail) < longest + 1
    f.finish()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_markup_soup_streams_exactly_like_the_buffered_parse(family):
    """Random replies made of marker pieces, brackets and quotes, in random splits (fixed
    seeds): streaming equals the buffered parse and nothing raises."""
    fam = FAMILIES[family]
    pieces = ["a", " ", "\n", "{", "}", "[", "]", '"', "'", "<", ">", "/", ":", ",", "thought\n",
              '{"name": "f", "arguments": {}}', "call:f{}", "f(x=1)", "<function=f>"]
    for m in fam.tools:
        pieces += [m.start, m.end, m.start[: len(m.start) // 2]]
    if fam.think:
        pieces += [*fam.think, fam.think[0][:3], fam.think[1][:4]]
    rng = random.Random(family)
    for _ in range(60):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 25)))
        for options in ({}, {"starts_in_reasoning": True}, {"starts_in_reasoning": False}):
            buffered = parse_output(text, family, **options).events
            sizes = [rng.randint(1, 9) for _ in range(20)]
            assert stream(text, family, sizes, **options) == buffered, (text, options, sizes)
            assert stream(text, family, [1], **options) == buffered, (text, options)


def test_unreadable_tool_schemas_never_sink_a_good_call():
    text = ("<longcat_tool_call>f<longcat_arg_key>a</longcat_arg_key>"
            "<longcat_arg_value>1</longcat_arg_value></longcat_tool_call>")
    tools = [{"type": "function", "function": {"name": "f"}}, "junk", {"name": "g"}, None]
    out = parse_output(text, "longcat", tools=tools)
    assert out.tool_calls == [{"name": "f", "arguments": {"a": 1}}]
    assert out.problems == []



_SCHEMA_CALLS = {
    "qwen3_coder": "<tool_call>\n<function=f>\n<parameter=x>\n3\n</parameter>\n</function>\n"
                   "</tool_call>",
    "glm47": "<tool_call>f<arg_key>x</arg_key><arg_value>3</arg_value></tool_call>",
    "minimax_m2": '<minimax:tool_call>\n<invoke name="f">\n<parameter name="x">3</parameter>\n'
                  "</invoke>\n</minimax:tool_call>",
}


@pytest.mark.parametrize("family", sorted(_SCHEMA_CALLS))
@pytest.mark.parametrize("parameters", [
    {"properties": 5}, {"properties": []}, {"properties": {"x": 5}}, {"properties": {"x": True}},
    {"properties": {"x": {"anyOf": 5}}}, {"properties": {"x": {"oneOf": [5, "integer"]}}},
    {"properties": {"x": {"type": ["integer", 3]}}}, {"properties": {"x": {"type": {}}}},
    {"properties": {"x": {"enum": 5}}}, {"properties": {"x": {"items": 7}}},
], ids=repr)
def test_a_malformed_schema_leaves_an_argument_untyped_not_the_call_a_problem(family, parameters):
    tools = [{"type": "function", "function": {"name": "f", "parameters": parameters}}]
    untyped = parse_output(_SCHEMA_CALLS[family], family, tools=[
        {"type": "function", "function": {"name": "f"}}])
    out = parse_output(_SCHEMA_CALLS[family], family, tools=tools)
    assert out.problems == []
    assert out.tool_calls == untyped.tool_calls


def test_a_well_formed_schema_still_types_the_argument():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"anyOf": [{"type": "null"}, {"type": "integer"}]}}}}}]
    assert parse_output(_SCHEMA_CALLS["qwen3_coder"], "qwen3_coder", tools=tools).tool_calls == [
        {"name": "f", "arguments": {"x": 3}}]
    nested = {"type": "object"}
    for _ in range(500):  # deeper than any schema parsers read: untyped, not a RecursionError
        nested = {"type": "object", "properties": {"x": nested}}
    tools = [{"type": "function", "function": {"name": "f", "parameters": nested}}]
    assert parse_output(_SCHEMA_CALLS["qwen3_coder"], "qwen3_coder", tools=tools).problems == []

@pytest.mark.parametrize("family", sorted(f for f in FAMILIES if FAMILIES[f].parser))
def test_call_markers_come_from_the_family_parser_module(family):
    """Each marker has one home, its parser module (ours or mlx-lm's): the table reads it."""
    from mlx_notebook.engine.parsing._families import load_parser

    fam = FAMILIES[family]
    module = load_parser(fam.parser)
    start, end = ("function_calls_start", "function_calls_end") if family == "deepseek_v32" else (
        "tool_call_start", "tool_call_end")  # V3.2's block name is a second deepseek_v4 export
    assert (fam.tools[0].start, fam.tools[0].end) == (getattr(module, start), getattr(module, end))


@pytest.mark.parametrize("name, family", [("json_tools", "qwen3"), ("hermes", "qwen3"),
                                          ("qwen3_coder", "qwen3_coder"), ("lfm2", "pythonic"),
                                          ("deepseekv31", "deepseek_v3"), ("glm47", "glm47")])
def test_other_servers_names_select_the_same_family(name, family):
    assert StreamFilter(name).family is FAMILIES[family]


def test_bracketed_prose_at_the_start_is_not_withheld():
    # An apostrophe would keep a "[" open to the reply's end: the list is judged at its start.
    f = StreamFilter("llama3_json")
    assert f.feed("[Editor's note] It is") == [Event("content", "[Editor's note] It is")]
    f = StreamFilter("pythonic", starts_in_reasoning=False)
    assert f.feed("[1] See") == [Event("content", "[1] See")]


def test_arguments_given_as_text_are_decoded_or_named_in_the_problem():
    """Some models write the arguments as a JSON string: it is decoded; text that is no JSON
    becomes a problem that quotes it, not a JSON decoder's column number."""
    call = '<tool_call>\n{{"name": "search", "arguments": {}}}\n</tool_call>'
    parsed = parse_output(call.format('"{\\"q\\": \\"mlx\\"}"'), "qwen3")
    assert parsed.tool_calls == [{"name": "search", "arguments": {"q": "mlx"}}]
    parsed = parse_output(call.format('"hello"'), "qwen3")
    assert parsed.tool_calls == []
    assert parsed.problems[0].message == ("The tool call did not parse: the arguments of "
                                          "'search' are the text 'hello', not a JSON object")


_OBJECT_X = [{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"x": {"type": "object"}}}}}]


@pytest.mark.parametrize("family, text, tools, why", [
    ("glm47", "<tool_call>f<arg_key>x</arg_key><arg_value>{1, 2}</arg_value></tool_call>", None,
     "a set"),
    ("longcat", "<longcat_tool_call>f<longcat_arg_key>x</longcat_arg_key><longcat_arg_value>1j"
                "</longcat_arg_value></longcat_tool_call>", None,
     "a complex"),
    ("qwen3_coder", "<tool_call>\n<function=f>\n<parameter=x>\n{1, 2}\n</parameter>\n"
                    "</function>\n</tool_call>", _OBJECT_X, "a set"),
    ("qwen3", '<tool_call>{"name": "f", "arguments": {"x": NaN}}</tool_call>', None,
     "NaN or Infinity"),
    ("mistral", '[TOOL_CALLS]f[ARGS]{"x": Infinity}', None, "NaN or Infinity"),
    ("qwen3", '<tool_call>{"name": "f", "arguments": {"x": "\\ud83d x"}}</tool_call>', None,
     "a lone surrogate"),
    ("glm47", "<tool_call>f<arg_key>x</arg_key><arg_value>{1: 'a', '1': 'b'}</arg_value>"
              "</tool_call>", None, "a key of type int"),
])
def test_arguments_json_cannot_carry_are_a_problem_not_a_call(family, text, tools, why):
    """A parser that reads values as Python literals makes sets or complex numbers, and JSON
    readers take NaN: a client is sent strict JSON, so such a call is a problem that says why
    (it used to raise in the server's serializer, or send NaN on the wire)."""
    parsed = parse_output(text, family, tools=tools, starts_in_reasoning=False)
    assert parsed.tool_calls == []
    assert parsed.problems[0].message == ("The tool call did not parse: the arguments of 'f' "
                                          f"hold a value JSON cannot carry ({why})")


def test_a_gemma_bare_call_reads_its_strings_by_their_token_so_a_quote_inside_is_text():
    """``<|"|>TV 55" screen<|"|>``: the lone ``"`` is part of the string, so the bare call
    closes at its brace, the text after it streams at once, and a later call parses."""
    text = ('call:buy{item:<|"|>TV 55" screen<|"|>} Checking the price.'
            '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|> Done.')
    f = StreamFilter("gemma4", starts_in_reasoning=False)
    streamed = []
    for ch in text[:text.index("<|tool_call>")]:
        streamed += f.feed(ch)
    assert [e.kind for e in merge_events(streamed)] == ["tool_call", "content"]
    assert merge_events(streamed)[1].text == " Checking the price."
    parsed = parse_output(text, "gemma4", starts_in_reasoning=False)
    assert parsed.tool_calls == [{"name": "buy", "arguments": {"item": 'TV 55" screen'}},
                                 {"name": "get_weather", "arguments": {"city": "Paris"}}]
    for size in range(1, 8):
        assert stream(text, "gemma4", [size], starts_in_reasoning=False) == parsed.events


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=12)


@example(value=float("-inf"), indent=None, cuts=[1], after="")  # (a number spelled in letters)
@settings(max_examples=300, deadline=None)
@given(value=_json_values, indent=st.sampled_from([None, 1]), cuts=st.lists(
    st.integers(1, 7), min_size=1, max_size=6), after=st.sampled_from(["", " Done.", "}{["]))
def test_the_llama_json_scanner_closes_every_json_call_where_json_does(value, indent, cuts,
                                                                      after):
    """Whatever JSON a call's parameters hold (NaN, escapes, nesting, newlines from an
    indent), the scanner closes the object at its last brace, in any chunking."""
    from mlx_notebook.engine.parsing._body_scanners import JsonCallScanner
    from mlx_notebook.engine.parsing.parsers.llama3_json import CALL_KEYS

    call = json.dumps({"name": "f", "parameters": value}, indent=indent)
    text, scanner, at, closed = call[1:] + after, JsonCallScanner(CALL_KEYS), 0, None
    for size in cuts * len(text):
        piece = text[at:at + size]
        n = scanner.feed(piece)
        if n is not None:
            closed = at + n
            break
        at += size
    assert closed == len(call) - 1


@pytest.mark.parametrize("prose", [
    '{"name": "get_weather", "parameters": {...} and I run it.',
    '{"name": "get_weather", "parameters": {"city": Paris}}',
    '{"name": "get_weather" is how you call it',
    '{"name": "get_weather", "parameters": {"city": "Par\nis"}}',
])
def test_prose_that_opens_like_a_llama_call_streams_at_once(prose):
    """An example the model writes and never closes (or that is no JSON) is judged at the
    first character JSON cannot have, so the prose after it is not held to the reply's end
    and a real call later still parses."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    text = f"Write {prose} Now: " + '{"name": "get_weather", "parameters": {"city": "Oslo"}}'
    f = StreamFilter("llama3_json", tools=tools, starts_in_reasoning=False)
    before_call = text[:text.index("Now:")]
    streamed = "".join(e.text for ch in before_call for e in f.feed(ch))
    assert len(streamed) >= len(before_call) - len("Now")
    parsed = parse_output(text, "llama3_json", tools=tools, starts_in_reasoning=False)
    assert parsed.tool_calls == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    assert parsed.content.startswith(f"Write {prose}")


_TAG_SOUPS = {
    "glm47": ("f", ["<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "a", "b", " ",
                    "\n", "\\n", "1", '"x"', "{", "}"]),
    "longcat": ("f", ["<longcat_arg_key>", "</longcat_arg_key>", "<longcat_arg_value>",
                      "</longcat_arg_value>", "a", "b", " ", "\n", "\\n", "1", '"x"', "{", "}"]),
    "minimax_m2": ("", ["<invoke name=", "</invoke>", "<parameter name=", "</parameter>", '"f"',
                        "f", ">", "a", "b", " ", "\n", "1", '"x"', "null", "[1]"]),
}


@pytest.mark.parametrize("family", sorted(_TAG_SOUPS))
def test_our_tag_scans_find_what_mlx_lm_finds(family):
    """GLM 4.7's, LongCat's and MiniMax-M2's bodies are scanned by our own code (mlx-lm's lazy
    patterns cost quadratic time on openings without ends: 10 s for 200,000 characters on
    the engine thread); on bodies made of their tags in any order, both find the same calls
    (GLM's and LongCat's string values, which ours keeps unstripped, compared stripped)."""
    import importlib

    theirs = importlib.import_module(f"mlx_lm.tool_parsers.{family}")
    ours = importlib.import_module(f"mlx_notebook.engine.parsing.parsers.{family}")
    head, pieces = _TAG_SOUPS[family]
    rng = random.Random(7)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}}}]

    def outcome(module, text):
        try:
            call = module.parse_tool_call(text, tools)
        except Exception:  # noqa: BLE001 -- any failure counts as the same result
            return "fails"
        if family != "minimax_m2":  # ours keeps a string value's whitespace; mlx-lm strips it
            call["arguments"] = {k: v.strip() if k == "a" else v
                                 for k, v in call["arguments"].items()}
        return call

    for _ in range(2000):
        text = head + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        mine, upstream = outcome(ours, text), outcome(theirs, text)
        if mine == {"name": text.strip(), "arguments": {}} and upstream == "fails":
            continue  # a LongCat call without arguments, which mlx-lm's pattern cannot read
        if mine == "fails" and family != "minimax_m2" and not pairs_well_formed(
                text, "longcat_" if family == "longcat" else ""):
            continue  # a broken pair, which mlx-lm reads in part (test_parser_edges.py)
        assert mine == upstream, text


def test_our_glm47_argument_scan_refuses_keys_without_values_at_once():
    from mlx_notebook.engine.parsing.parsers import glm47 as ours

    # 10,000 keys without values, then one with: mlx-lm's first key runs on to the closing
    # tag that a value follows (it takes seconds to find it) and the call runs with one
    # argument named by all the keys; ours refuses the first key, which has no value.
    body = "f" + "<arg_key>a</arg_key>" * 10_000 + "<arg_key>b</arg_key><arg_value>2</arg_value>"
    with pytest.raises(ValueError, match="the argument 'a' has no <arg_value>"):
        ours.parse_tool_call(body)


def test_prose_inside_a_call_block_around_an_empty_list_is_kept_as_a_problem():
    """LFM2's ``[]`` block is no calls and no problem; prose in a block around ``[]`` is not
    lost without a word."""
    empty = parse_output("<|tool_call_start|>[]<|tool_call_end|>Done.", "pythonic",
                         starts_in_reasoning=False)
    assert [(e.kind, e.text) for e in empty.events] == [("content", "Done.")]
    block = "<|tool_call_start|>I cannot call a tool for this []. Sorry!<|tool_call_end|>"
    prose = parse_output(block, "pythonic", starts_in_reasoning=False)
    assert [(e.kind, e.text) for e in prose.events] == [("problem", block)]
    assert prose.problems[0].message == ("The tool call did not parse: the block holds text "
                                         "but no call")


def test_a_pythonic_value_that_is_no_literal_is_named_the_same_in_stream_and_buffer():
    """The problem names the expression, not an AST node's address (which differed between
    the streamed and the buffered parse, so the parser debugger reported a difference)."""
    text = "<|python_start|>[f(x=a+b), get_time(tz='UTC')]<|python_end|>"
    assert trace(text, "pythonic", starts_in_reasoning=False, chunking=3).diff() == []
    parsed = parse_output(text, "pythonic", starts_in_reasoning=False)
    assert parsed.tool_calls == [{"name": "get_time", "arguments": {"tz": "UTC"}}]
    assert parsed.problems[0].message.endswith("'a + b' is not a literal value")


@pytest.mark.parametrize("family, text", [
    ("pythonic", "<|tool_call_start|>[grep(pattern='\\d+ items')]<|tool_call_end|>"),
    ("glm47", "<tool_call>grep<arg_key>pattern</arg_key><arg_value>'\\d+ items'</arg_value>"
              "</tool_call>"),
])
def test_a_regex_argument_reads_without_a_warning_under_the_cell(family, text):
    """Parsers read values with ``ast``, and Python warns of "\\d" (an invalid escape) on
    stderr: a SyntaxWarning since 3.12, which a notebook shows under the cell."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parsed = parse_output(text, family, starts_in_reasoning=False)
    assert parsed.tool_calls == [{"name": "grep", "arguments": {"pattern": "\\d+ items"}}]
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("text, message", [
    ("[TOOL_CALLS] not json at all",
     "The tool call did not parse: no arguments came after 'not json at all'."),
    ('[TOOL_CALLS]add[ARGS]{"a": 1', "The tool call was cut off before it was closed."),
    ("[TOOL_CALLS]", "The tool call was cut off before it was closed."),
])
def test_a_mistral_marker_followed_by_prose_is_not_called_cut_off(text, message):
    """The text stays (as a problem's); the message says what went wrong: a call whose
    arguments never began is not a call cut short."""
    parsed = parse_output(text, "mistral", starts_in_reasoning=False)
    assert [(e.kind, e.text) for e in parsed.events] == [("problem", text)]
    assert parsed.problems[0].message == message


def test_arguments_too_deep_to_decode_sink_only_their_own_call():
    deep = "[" * 100_000 + "]" * 100_000
    text = ('[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}, '
            f'{{"name": "g", "arguments": "{deep}"}}]')
    parsed = parse_output(text, "mistral", starts_in_reasoning=False)
    assert parsed.tool_calls == [{"name": "f", "arguments": {"a": 1}}]
    assert "the arguments of 'g' are the text" in parsed.problems[0].message


@pytest.mark.parametrize("family, text", [
    ("mistral", '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1, "b": 2}}'),
    ("llama3_json", '<|python_tag|>{"name": "get_weather", "arguments": {"city": "Paris"}'),
    ("llama3_json", "<|python_tag|>[f(a=1), g(b=[2]"),
])
def test_a_call_cut_short_at_a_closing_bracket_says_it_was_cut_off(family, text):
    (problem,) = parse_output(text, family).problems
    assert problem.message == "The tool call was cut off before it was closed."
