"""The static output a saved notebook keeps: JSON record, HTML, Markdown, plain text, tokens."""

from __future__ import annotations

import json
import math
import re
from html import unescape
from pathlib import Path

import jsonschema
import pytest

import mlx_notebook.display as display
from mlx_notebook.display import (
    TURN_MIME_TYPE,
    markdown_html,
    token_view_html,
    turn_mimebundle,
)
from mlx_notebook.turn import Round, Turn
from mlx_notebook.widgets import TokenView

SCHEMA = json.loads((Path(display.__file__).parent / "turn.schema.json").read_text())


def make_turn(**overrides) -> Turn:
    values = dict(
        model="/models/tiny-reasoner",
        session="weather",
        request={"messages": [{"role": "user", "content": "Weather in Paris?"}], "seed": 3,
                 "tools": [{"type": "function", "function": {"name": "get_weather"}}]},
        reasoning="The user wants the weather. I should call the tool.",
        content="It is **21 °C** in Paris.",
        tool_calls=[{"id": "call_0", "name": "get_weather", "arguments": {"city": "Paris"},
                     "result": {"temperature": 21}, "error": None}],
        usage={"prompt_tokens": 80, "cached_tokens": 60, "completion_tokens": 25},
        timings={"time_to_first_token": 0.05, "prefill_tokens_per_second": 1500.0,
                 "decode_tokens_per_second": 95.2, "peak_memory": 3 << 20, "total_seconds": 0.61},
        finish_reason="stop",
        rounds=[Round(request={}, reasoning="The user wants the weather. I should call the tool.",
                      finish_reason="tool_calls",
                      tool_calls=[{"id": "call_0", "name": "get_weather", "arguments": {}}]),
                Round(request={}, content="It is **21 °C** in Paris.", finish_reason="stop")],
        options={"temperature": 0.0, "max_tokens": 64},
    )
    values.update(overrides)
    return Turn(**values)


@pytest.mark.parametrize(
    "markdown, expected",
    [
        ("Hello **world**", "<p>Hello <strong>world</strong></p>\n"),
        ("Use `x < y` here", "<p>Use <code>x &lt; y</code> here</p>\n"),
        ("# Title\ntext", "<h1>Title</h1>\n<p>text</p>\n"),
        ("- one\n- two *it*", "<ul>\n<li>one</li>\n<li>two <em>it</em></li>\n</ul>\n"),
        ("3. c\n4. d", '<ol start="3">\n<li>c</li>\n<li>d</li>\n</ol>\n'),
        ("> quoted", "<blockquote>\n<p>quoted</p>\n</blockquote>\n"),
        ("a\n\n---\n\nb", "<p>a</p>\n<hr />\n<p>b</p>\n"),
        ("[docs](https://ml-explore.github.io)",
         '<p><a href="https://ml-explore.github.io" target="_blank" rel="noopener noreferrer">docs</a></p>\n'),
        ("[bad](javascript:alert(1))", "<p>[bad](javascript:alert(1))</p>\n"),
        ("<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"),
        ('<img src=x onerror="alert(1)">', "<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>\n"),
        ("![tracker](https://example.com/t.png)",  # never fetched when the notebook opens
         '<p>!<a href="https://example.com/t.png" target="_blank" rel="noopener noreferrer">tracker</a></p>\n'),
        ("snake_case_name stays", "<p>snake_case_name stays</p>\n"),
        ("| a |\n|---|\n| 1 |", "<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n"
                                  "<tr>\n<td>1</td>\n</tr>\n</tbody>\n</table>\n"),
        ("~~old~~ $a_1 < b_1$", '<p><s>old</s> <span class="math inline">\\(a_1 &lt; b_1\\)</span></p>\n'),
        ("It costs $5 and $10, or $ 3 $.", "<p>It costs $5 and $10, or $ 3 $.</p>\n"),
        ("cost $3 for $2x$", '<p>cost $3 for <span class="math inline">\\(2x\\)</span></p>\n'),
    ],
)
def test_markdown_subset_renders_and_escapes(markdown, expected):
    assert markdown_html(markdown) == expected


def test_code_blocks_are_highlighted_inline_and_unclosed_fences_run_to_the_end():
    rendered = markdown_html("```python\ndef f():\n    return 1\n```")
    assert rendered.startswith('<pre class="mlxnb-code" data-lang="python"><code>')
    assert '<span style="color: #8839EF">def</span>' in rendered  # inline: survives sanitizers
    streaming = markdown_html("Look:\n```js\nlet x = '<b>'")
    assert streaming.endswith("</code></pre>\n")
    assert "&#x27;&lt;b&gt;&#x27;" in streaming or "&lt;b&gt;" in streaming


def test_record_matches_the_written_schema():
    data, _ = turn_mimebundle(make_turn(logprobs=[
        {"token": "It", "logprob": -0.1, "top_logprobs": [{"token": "It", "logprob": -0.1},
                                                         {"token": "The", "logprob": -2.5}]}]))
    record = data[TURN_MIME_TYPE]
    jsonschema.validate(record, SCHEMA)
    assert record["version"] == SCHEMA["properties"]["version"]["const"] == 1
    assert record["tool_calls"][0] == {"id": "call_0", "name": "get_weather",
                                       "arguments": {"city": "Paris"}, "result": {"temperature": 21},
                                       "error": None}
    assert [r["finish_reason"] for r in record["rounds"]] == ["tool_calls", "stop"]
    json.dumps(record, allow_nan=False)  # saves into a notebook as strict JSON


def test_non_json_values_are_saved_as_their_repr():
    class Weather:
        def __repr__(self):
            return "Weather(21)"

    turn = make_turn(request={"messages": [], "tools": [print]},
                     tool_calls=[{"id": "c", "name": "w", "arguments": {}, "result": Weather(), "error": None}],
                     timings={"time_to_first_token": math.nan})
    record = turn_mimebundle(turn)[0][TURN_MIME_TYPE]
    jsonschema.validate(record, SCHEMA)
    assert record["tool_calls"][0]["result"] == "Weather(21)"
    assert record["request"]["tools"] == [repr(print)]
    assert record["timings"]["time_to_first_token"] is None


def test_a_result_with_a_lone_surrogate_or_a_failing_repr_still_displays():
    """A tool result from ``json.loads`` of a cut emoji (``"\\ud83d"``) or an object whose
    ``__repr__`` raises: every copy of the turn still packs as the kernel sends it (UTF-8
    JSON), with the surrogate as its escape and the object named."""
    from jupyter_client.session import json_packer

    class Weird:
        def __repr__(self):
            raise RuntimeError("repr blew up")

    result = {"note": "\ud83d", "\udc80key": [Weird()]}
    turn = make_turn(tool_calls=[{"id": "c", "name": "w", "arguments": {}, "result": result,
                                  "error": None}])
    data = turn_mimebundle(turn)[0]
    for mime, value in data.items():
        json_packer({"data": {mime: value}})
    assert data[TURN_MIME_TYPE]["tool_calls"][0]["result"] == {
        "note": "\\ud83d", "\\udc80key": ["<Weird that cannot be shown as text>"]}


def test_html_shows_reasoning_folded_tool_card_answer_and_footer():
    html = turn_mimebundle(make_turn(), reasoning_tokens=12, reasoning_seconds=0.4)[0]["text/html"]
    assert '<details class="mlxnb-reasoning"' in html and "<details class=\"mlxnb-reasoning\" open" not in html
    assert "Reasoning · 12 tokens · 0.40 s" in html
    assert '<span class="mlxnb-tool-name"><bdi>get_weather</bdi></span>' in html
    assert "{\n  &quot;city&quot;: &quot;Paris&quot;\n}" in html  # pretty JSON arguments
    assert "<strong>21 °C</strong>" in html
    assert "cached <b>60 (75%)</b>" in html
    assert "TTFT <b>0.05 s</b>" in html and "decode <b>95.2 tok/s</b>" in html
    assert "peak memory <b>3.1 MB</b>" in html and "finish <b>stop</b>" in html  # 3 << 20 bytes
    assert "<style>" in html and "http" not in html.split("<style>")[1].split("</style>")[0]


def test_footer_counts_accepted_drafts_when_a_draft_model_made_the_turn():
    plain = turn_mimebundle(make_turn())[0]
    assert "drafted" not in plain["text/html"]
    assert "accepted_draft_tokens" not in plain[TURN_MIME_TYPE]["usage"]
    drafted = make_turn(usage={"prompt_tokens": 80, "cached_tokens": 60, "completion_tokens": 25,
                               "accepted_draft_tokens": 18})
    bundle = turn_mimebundle(drafted)[0]
    jsonschema.validate(bundle[TURN_MIME_TYPE], SCHEMA)
    assert bundle[TURN_MIME_TYPE]["usage"]["accepted_draft_tokens"] == 18
    assert "drafted <b>18 accepted (72%)</b>" in bundle["text/html"]


def test_plain_text_and_markdown_do_not_change_with_timings():
    fast = turn_mimebundle(make_turn())[0]
    slow = turn_mimebundle(make_turn(timings={"time_to_first_token": 9.0, "total_seconds": 30.0}))[0]
    assert fast["text/plain"] == slow["text/plain"]
    assert fast["text/markdown"] == slow["text/markdown"]
    assert fast["text/plain"] == (
        "[reasoning] The user wants the weather. I should call the tool.\n"
        '[tool] get_weather({"city": "Paris"}) -> {"temperature": 21}\n'
        "It is **21 °C** in Paris.\n"
        "[stop, 80 prompt tokens (60 cached), 25 completion tokens]"
    )
    assert "<details><summary>Reasoning</summary>" in fast["text/markdown"]
    assert "**Tool call** `get_weather`" in fast["text/markdown"]


def test_a_stopped_turn_says_stopped_everywhere_and_keeps_its_partial_reply():
    turn = make_turn(interrupted=True, finish_reason="cancelled", content="It is 21",
                     rounds=[Round(request={}, content="It is 21", finish_reason="cancelled")],
                     tool_calls=[], reasoning="")
    data, metadata = turn_mimebundle(turn)
    record = data[TURN_MIME_TYPE]
    jsonschema.validate(record, SCHEMA)
    assert record["finish_reason"] == "stopped" and record["rounds"][0]["finish_reason"] == "stopped"
    assert metadata["mlx_notebook"]["finish_reason"] == "stopped"
    assert data["text/plain"].splitlines()[-2:] == [
        "It is 21 [stopped]", "[stopped, 80 prompt tokens (60 cached), 25 completion tokens]"]
    assert 'mlxnb-status-stopped">stopped<' in data["text/html"]
    assert "finish <b>stopped</b>" in data["text/html"]
    assert '<div class="mlxnb-content"><p>It is 21</p>\n</div>' in data["text/html"]
    assert 'class="mlxnb-error"' not in data["text/html"]  # the user's choice, not a failure
    assert all("cancelled" not in str(value) for value in [*data.values(), metadata])
    # A user stop that the runner already named "stopped" reads the same.
    assert turn_mimebundle(make_turn(finish_reason="stopped", interrupted=True))[0][
        TURN_MIME_TYPE]["finish_reason"] == "stopped"


def test_failed_turns_say_so():
    failed = turn_mimebundle(make_turn(error="The engine stopped.", finish_reason=None))[0]
    assert "[error] The engine stopped." in failed["text/plain"]
    assert 'class="mlxnb-error"' in failed["text/html"]


def test_tool_errors_show_on_the_card():
    turn = make_turn(tool_calls=[{"id": "c1", "name": "get_weather", "arguments": {"city": "Atlantis"},
                                  "result": None, "error": "unknown city"}])
    data = turn_mimebundle(turn)[0]
    assert 'class="mlxnb-tool-error"' in data["text/html"] and "unknown city" in data["text/html"]
    assert "-> error: unknown city" in data["text/plain"]


def test_metadata_records_how_the_answer_was_made():
    _, metadata = turn_mimebundle(make_turn())
    meta = metadata["mlx_notebook"]
    assert meta["model"] == "/models/tiny-reasoner"
    assert meta["options"] == {"temperature": 0.0, "max_tokens": 64}
    assert meta["seed"] == 3
    assert meta["usage"]["cached_tokens"] == 60
    assert meta["timings"]["decode_tokens_per_second"] == 95.2


def test_turn_displays_its_static_bundle():
    data, metadata = make_turn()._mimebundle()
    assert TURN_MIME_TYPE in data and metadata["mlx_notebook"]["session"] == "weather"


def test_token_view_shades_by_probability_with_alternatives_on_hover():
    logprobs = [
        {"token": "Paris", "logprob": math.log(0.9),
         "top_logprobs": [{"token": "Paris", "logprob": math.log(0.9)},
                          {"token": "Lyon", "logprob": math.log(0.05)}]},
        {"token": "\n", "logprob": math.log(0.2), "top_logprobs": []},
    ]
    html = token_view_html(logprobs)
    assert html.count('class="mlxnb-token"') == 2
    assert 'data-p="0.9000"' in html and "hsla(108, 75%, 72%, 0.44)" in html
    assert "&#x27;Lyon&#x27;</td><td>5.0%" in html  # the hover table lists the alternatives
    assert "↵" in html  # a newline token is visible
    assert "mean probability <b>55.0%</b>" in html
    view = TokenView(logprobs)
    assert view._repr_mimebundle_()["text/html"] == html
    assert "'Paris'   90.0%" in view.plain_text()


def test_token_view_without_logprobs_says_how_to_get_them():
    assert "%%chat --tokens" in token_view_html(None)


def tool_turn(**overrides) -> Turn:
    """The tiny reasoner's weather turn: reason, call, read the result, reason, answer."""
    call = {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"},
            "result": {"condition": "sunny"}, "error": None}
    values = dict(
        reasoning="\nI need the weather, so I call get_weather.\n\n\nThe tool says sunny.\n",
        content="\n\nIt is sunny in Paris.", tool_calls=[call],
        rounds=[Round(request={}, reasoning="\nI need the weather, so I call get_weather.\n",
                      content="\n\n", tool_calls=[call], finish_reason="tool_calls"),
                Round(request={}, reasoning="\nThe tool says sunny.\n",
                      content="\n\nIt is sunny in Paris.", finish_reason="stop")])
    values.update(overrides)
    return make_turn(**values)


def test_a_tool_turn_shows_its_rounds_in_the_order_they_happened():
    data = turn_mimebundle(tool_turn())[0]
    html = data["text/html"]
    order = [html.index(text) for text in (
        "I need the weather, so I call get_weather.", '<span class="mlxnb-tool-name"><bdi>get_weather',
        "The tool says sunny.", "It is sunny in Paris.")]
    assert order == sorted(order)  # the model reads the result after it asked for it
    assert html.count('<details class="mlxnb-reasoning"') == 2
    assert html.count('class="mlxnb-content"') == 1  # round 1's blank text is no answer
    assert data["text/plain"].splitlines()[:4] == [
        "[reasoning] I need the weather, so I call get_weather.",
        '[tool] get_weather({"city": "Paris"}) -> {"condition": "sunny"}',
        "[reasoning] The tool says sunny.",
        "",
    ]
    markdown = data["text/markdown"]
    assert (markdown.index("I need the weather") < markdown.index("**Tool call** `get_weather`")
            < markdown.index("The tool says sunny.") < markdown.index("It is sunny in Paris."))


def test_a_round_that_writes_before_calling_a_tool_keeps_that_text_in_place():
    call = {"id": "c", "name": "get_time", "arguments": {}, "result": "12:00", "error": None}
    turn = make_turn(reasoning="", content="It is noon.", tool_calls=[call], rounds=[
        Round(request={}, content="Let me check the clock.", tool_calls=[call], finish_reason="tool_calls"),
        Round(request={}, content="It is noon.", finish_reason="stop")])
    html = turn_mimebundle(turn)[0]["text/html"]
    assert (html.index("Let me check the clock.") < html.index('"mlxnb-tool-name"><bdi>get_time')
            < html.index("It is noon."))


def test_a_record_from_before_rounds_tools_and_dtype_still_renders():
    record = turn_mimebundle(make_turn())[0][TURN_MIME_TYPE]
    for key in ("rounds", "tools_offered", "tools_unsupported", "model_dtype", "reasoning_stats"):
        record.pop(key)
    html = display.turn_html(record)
    assert html.index("I should call the tool.") < html.index("get_weather") < html.index("21 °C")
    assert "tools offered" not in html and "dtype" not in html
    assert display.turn_plain_text(record).startswith("[reasoning] The user wants the weather.")


def test_show_tokens_without_logprobs_says_how_to_get_them():
    from mlx_notebook.turn import Turn

    turn = Turn(model="m", session="default", request={}, content="Hi", reasoning="", tool_calls=[])
    with pytest.raises(ValueError, match=r"run the cell with %%chat --tokens"):
        turn.show_tokens()


def test_the_card_lists_the_tools_offered():
    data = turn_mimebundle(make_turn(tools_offered=["get_weather", "get_time"]))[0]
    jsonschema.validate(data[TURN_MIME_TYPE], SCHEMA)
    assert data[TURN_MIME_TYPE]["tools_offered"] == ["get_weather", "get_time"]
    assert data[TURN_MIME_TYPE]["tools_unsupported"] is False
    assert ">tools offered: get_weather, get_time</div>" in data["text/html"]
    assert "never saw" not in data["text/html"]
    assert data["text/plain"].startswith("[tools offered: get_weather, get_time]\n")
    assert "tools offered" not in turn_mimebundle(make_turn(tools_offered=[]))[0]["text/html"]


def test_tools_the_template_cannot_show_are_a_visible_warning():
    data = turn_mimebundle(make_turn(tools_offered=["get_time"], tools_unsupported=True,
                                     tool_calls=[], rounds=[]))[0]
    jsonschema.validate(data[TURN_MIME_TYPE], SCHEMA)
    warning = "This model&#x27;s chat template cannot show tools: the model never saw get_time."
    assert f'class="mlxnb-warning" style="color:#7a5b00">⚠ {warning}</div>' in data["text/html"]
    assert ("[warning] This model's chat template cannot show tools: the model never saw get_time."
            in data["text/plain"].splitlines())
    assert "**Warning:** This model's chat template cannot show tools" in data["text/markdown"]


def test_footer_says_the_dtype_the_model_runs_in():
    data = turn_mimebundle(make_turn(model_dtype="float32"))[0]
    jsonschema.validate(data[TURN_MIME_TYPE], SCHEMA)
    assert data[TURN_MIME_TYPE]["model_dtype"] == "float32"
    assert 'data-stat="dtype">dtype <b>float32</b>' in data["text/html"]
    assert "dtype float32" in data["text/markdown"]
    assert turn_mimebundle(make_turn())[0][TURN_MIME_TYPE]["model_dtype"] is None


@pytest.mark.parametrize("count, shown", [
    (562_284_672, "562.3 MB"), (0, "0 B"), (999, "999 B"), (1_250, "1.3 kB"),
    (999_960, "1.0 MB"), (3 << 20, "3.1 MB"), (124_000_000_000, "124.0 GB"),
])
def test_bytes_read_in_decimal_units(count, shown):
    assert display.format_bytes(count) == shown


@pytest.mark.parametrize("seconds, shown", [
    (0, "0 s"), (0.0004, "0.40 ms"), (0.004, "0.004 s"), (0.04, "0.04 s"), (0.61, "0.61 s"),
    (1.125, "1.13 s"), (12.34, "12.3 s"), (123.4, "123 s"),
])
def test_durations_never_read_zero_when_they_are_not(seconds, shown):
    assert display.format_seconds(seconds) == shown


def test_one_token_is_singular_everywhere_in_a_turn():
    turn = make_turn(usage={"prompt_tokens": 1, "cached_tokens": 0, "completion_tokens": 1},
                     timings={"time_to_first_token": 0.004})
    data = turn_mimebundle(turn, reasoning_tokens=1, reasoning_seconds=0.04)[0]
    assert "prompt <b>1 token</b>" in data["text/html"] and "completion <b>1 token</b>" in data["text/html"]
    assert "Reasoning · 1 token · 0.04 s" in data["text/html"]
    assert "TTFT <b>0.004 s</b>" in data["text/html"]
    assert data["text/plain"].endswith("[stop, 1 prompt token (0 cached), 1 completion token]")
    assert "1 token · mean probability" in token_view_html(
        [{"token": "a", "logprob": -0.1, "top_logprobs": []}])


def test_the_token_view_underlines_what_the_draft_model_proposed():
    logprobs = [{"token": t, "logprob": -0.1, "top_logprobs": [], "from_draft": d}
                for t, d in (("It", False), (" is", True), (" sunny", True), (".", False))]
    html = token_view_html(logprobs)
    assert html.count("mlxnb-token mlxnb-drafted") == 2
    assert "<b>2</b> from the draft model (underlined, 50%)" in html
    assert "from the draft model" not in token_view_html([{**item, "from_draft": None} for item in logprobs])


@pytest.mark.parametrize("reply", [
    "> " * 30 + "deep words\n\nafter words", "- " * 30 + "deep words\n\nafter words",
    "1. " * 25 + "deep words", "> - " * 12 + "deep words\n> after words", "> " * 2000 + "deep words"])
def test_text_nested_past_the_parsers_limit_is_shown_not_dropped(reply):
    """markdown-it drops a block nested past 20 levels, text and all: it is shown as written."""
    shown = markdown_html(reply)
    assert "deep words" in shown
    assert "after words" in shown or "after words" not in reply


def test_markdown_runs_no_html_a_model_tool_or_server_wrote():
    """Renderers that take ``text/markdown`` and honour raw HTML (Quarto, GFM exports, a
    trusted Markdown output) get text, as ``text/html`` shows it."""
    from markdown_it import MarkdownIt

    attack = "<img src=x onerror=alert(1)>"
    turn = make_turn(
        reasoning=f"ok\n   ```\n</details>{attack}",
        content=f"fine <b>bold</b>, `<i>kept</i>` {attack}\n\n<div onclick=x>\nblock\n</div>",
        tool_calls=[{"id": "call_0", "name": f"x` {attack} `", "arguments": {},
                     "result": None, "error": f"boom {attack}"}],
        model=f"/m/{attack}", error=f"bad: {attack}", rounds=[])
    markdown = turn_mimebundle(turn)[0]["text/markdown"]
    rendered = MarkdownIt("commonmark", {"html": True}).render(markdown)
    assert "<img" not in rendered and "<div" not in rendered and "<b>" not in rendered
    shown = rendered.replace("\u200b", "")  # the zero-width space that keeps a tag from opening
    assert shown.count("&lt;img src=x onerror=alert(1)&gt;") == 6  # each shown as text
    assert "<code>&lt;i&gt;kept&lt;/i&gt;</code>" in shown  # code spans read as they were
    assert "**Tool call** `get_weather`" in turn_mimebundle(make_turn())[0]["text/markdown"]


def test_markdown_parts_cannot_change_how_the_next_one_parses():
    """An earlier round's open fence or list must not turn the answer's code into live HTML
    once the parts are joined."""
    from markdown_it import MarkdownIt

    attack = "<img src=x onerror=alert(1)>"
    for interim, answer in (("```", f"```\n{attack}\n```"), ("~~~", f"~~~\n{attack}\n~~~"),
                            ("- item", f"    {attack}")):
        turn = make_turn(content=answer, tool_calls=[], rounds=[
            Round(request={}, content=interim, finish_reason="tool_calls"),
            Round(request={}, content=answer, finish_reason="stop")])
        rendered = MarkdownIt("commonmark", {"html": True}).render(
            turn_mimebundle(turn)[0]["text/markdown"])
        assert "<img" not in rendered, (interim, rendered)


@pytest.mark.parametrize("content, name, shown", [
    ("text <img src=x\nonerror=alert(1)> more", "f", "text &lt;img src=x\nonerror=alert(1)&gt; more"),
    ("x", "x\n\n<img src=x onerror=alert(1)>", "<code>x &lt;img src=x onerror=alert(1)&gt;</code>"),
    ("Use `<br>` or <br> here", "f", "Use <code>&lt;br&gt;</code> or &lt;br&gt; here"),
    ("one\rtwo\n<b>x</b>", "f", "one\ntwo\n&lt;b&gt;x&lt;/b&gt;"),
    ("![t](https://example.com/leak?q=1)", "f", '!<a href="https://example.com/leak?q=1">t</a>'),
    ("a ` b\n\nc <img src=x onerror=1> ` d", "f", "c &lt;img src=x onerror=1&gt; ` d"),
    ("```\n<b>code</b>\n```", "f", '<code class="language-text">&lt;b&gt;code&lt;/b&gt;\n</code>'),
    ("\\`<img src=x onerror=1>\\`", "f", "`&lt;img src=x onerror=1&gt;`"),
    ("# a `\n<img src=x onerror=1>\n`", "f", "&lt;img src=x onerror=1&gt;"),
    ("- `a\n- <img src=x> `", "f", "<li>&lt;img src=x&gt; `</li>"),
], ids=["tag-across-lines", "blank-line-in-a-name", "tag-in-a-code-span-and-out",
        "carriage-return", "image", "backticks-across-paragraphs", "fenced-code",
        "escaped-backticks", "heading-then-tag", "list-items"])
def test_markdown_hostile_shapes(content, name, shown):
    from markdown_it import MarkdownIt

    turn = make_turn(content=content, rounds=[], tool_calls=[
        {"id": "c", "name": name, "arguments": {}, "result": None, "error": None}])
    rendered = MarkdownIt("commonmark", {"html": True}).render(
        turn_mimebundle(turn)[0]["text/markdown"])
    assert not any(tag in rendered for tag in ("<img", "<b>", "<br>")), rendered
    assert shown in rendered.replace("\u200b", "")


@pytest.mark.parametrize("link", [
    "javascript:alert(1)", "JavaScript&#58;alert(1)", "vbscript:msgbox(1)",
    "data:text/html,<script>x</script>", "&#106;avascript:alert(1)", "&#x6A;avascript:alert(1)",
    "java&#9;script:alert(1)", "javascript&colon;alert(1)", "java\\script:alert(1)",
    "&#x20;javascript:alert(1)", "<javascript:alert(1)>"])
def test_markdown_links_to_script_schemes_are_not_live(link):
    """``text/html`` shows such a link as text; a Markdown renderer gets no live link either,
    however the scheme is spelled (the scheme word carries a zero-width space)."""
    from urllib.parse import unquote

    from markdown_it import MarkdownIt

    turn = make_turn(content=f"See [the docs]({link}).", rounds=[], tool_calls=[])
    markdown = turn_mimebundle(turn)[0]["text/markdown"]
    md = MarkdownIt("commonmark")
    md.validateLink = lambda url: True  # as a renderer that checks no scheme (marked)
    rendered = md.render(markdown)
    for href in re.findall(r'href="([^"]*)"', rendered):
        # As a browser reads it: references decoded, tabs and newlines dropped, ends trimmed.
        url = re.sub(r"[\t\n\r]", "", unescape(unquote(href))).strip(" \x00").lower()
        assert not url.startswith(("javascript:", "vbscript:", "data:")), href
    assert "the docs" in rendered


@pytest.mark.parametrize("content", [
    "```\n```~\n<img src=x onerror=1>\n```",   # marked closes the fence here, CommonMark not
    "```\n```\t\n<img src=x onerror=1>\n```",  # CommonMark closes it here, marked not
    "~~~\n```\n~~~\n<img src=x onerror=1>\n~~~"])
def test_markdown_code_blocks_end_where_every_renderer_agrees(content):
    """A reply's code block is written again with a fence no line inside can close in any
    parser (longer, with an info string), so code one renderer ends early leaks no HTML."""
    markdown = turn_mimebundle(make_turn(content=content, reasoning="", rounds=[], tool_calls=[]))[0][
        "text/markdown"]
    # Our fences: backticks and an info string open one, the same backticks alone close it.
    outside = re.sub(r"(?ms)^(`{3,})text$.*?^\1$", "", markdown)
    assert "```" not in outside and "~~~" not in outside, markdown
    assert re.findall(r"<[a-z]", outside) == [], markdown


def test_a_nan_log_probability_draws_as_zero_not_nan():
    from mlx_notebook.display import probability_colour

    nan = float("nan")
    shown = token_view_html([{"token": "a", "logprob": nan,
                              "top_logprobs": [{"token": "b", "logprob": nan}]}])
    assert "nan" not in shown.lower()
    assert probability_colour(nan) == probability_colour(0.0)


def test_very_long_code_is_shown_plain_not_highlighted():
    from mlx_notebook.display import code_html

    short, long = "x = 1\n", "x = 1\n" * 20_000
    assert "color:" in code_html(short, "python")
    assert "color:" not in code_html(long, "python") and len(code_html(long, "python")) < 2 * len(long)


def test_no_reply_leaks_html_into_the_markdown_copy_whatever_its_fences():
    """Property: built from the pieces that make renderers disagree (fences of either kind
    and any length, tabs and tildes after them, indents, lists, quotes), no reply puts a raw
    tag outside a code block every parser finds alike, nor one markdown-it renders."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from markdown_it import MarkdownIt

    from mlx_notebook.display._inert_markdown import inert_markdown

    piece = st.sampled_from(["```", "````", "~~~", "~", "\t", " ", "    ", "- ", "> ", "\n",
                             "\n\n", "<img src=x onerror=1>", "<!--", "a", "`", "python"])

    @settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(piece, max_size=24).map("".join))
    def check(reply):
        markdown = inert_markdown(reply)
        outside = re.sub(r"(?ms)^(`{3,})[\w+#.-]+$.*?^\1$", "", markdown)  # our fences
        assert re.findall(r"<[a-z!]", outside) == [], (reply, markdown)
        assert "<img" not in MarkdownIt("commonmark", {"html": True}).render(markdown)

    check()


def test_a_token_holding_a_lone_surrogate_can_still_be_sent():
    from jupyter_client.session import json_packer

    lone = {"token": "\ud83d", "logprob": -1.0, "top_logprobs": [{"token": "\ude00", "logprob": -2.0}]}
    shown = token_view_html([lone])
    json_packer(shown)  # raised UnicodeEncodeError: the cell's output was lost
    assert "\\ud83d" in shown and "\\ude00" in shown


def test_names_with_right_to_left_marks_stay_inside_their_place_in_the_header():
    """A model or session name with a right-to-left override would otherwise reorder the
    status after it on the header line."""
    rlo = "\u202eevil"
    html = turn_mimebundle(make_turn(model=f"/m/{rlo}", session=rlo))[0]["text/html"]
    assert f'<span class="mlxnb-model" title="/m/{rlo}"><bdi>{rlo}</bdi></span>' in html
    assert f'<span class="mlxnb-session">session <bdi>{rlo}</bdi></span>' in html
