"""The static output a saved notebook keeps: JSON record, HTML, Markdown, plain text, tokens."""

from __future__ import annotations

import json
import math
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
        ("Hello **world**", "<p>Hello <strong>world</strong></p>"),
        ("Use `x < y` here", "<p>Use <code>x &lt; y</code> here</p>"),
        ("# Title\ntext", "<h1>Title</h1><p>text</p>"),
        ("- one\n- two *it*", "<ul><li>one</li><li>two <em>it</em></li></ul>"),
        ("3. c\n4. d", '<ol start="3"><li>c</li><li>d</li></ol>'),
        ("> quoted", "<blockquote><p>quoted</p></blockquote>"),
        ("a\n\n---\n\nb", "<p>a</p><hr><p>b</p>"),
        ("[docs](https://ml-explore.github.io)",
         '<p><a href="https://ml-explore.github.io" target="_blank" rel="noopener">docs</a></p>'),
        ("[bad](javascript:alert(1))", "<p>[bad](javascript:alert(1))</p>"),
        ("<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"),
        ("snake_case_name stays", "<p>snake_case_name stays</p>"),
    ],
)
def test_markdown_subset_renders_and_escapes(markdown, expected):
    assert markdown_html(markdown) == expected


def test_code_blocks_are_highlighted_inline_and_unclosed_fences_run_to_the_end():
    rendered = markdown_html("```python\ndef f():\n    return 1\n```")
    assert rendered.startswith('<pre class="mlxnb-code" data-lang="python"><code>')
    assert '<span style="color: #8839EF">def</span>' in rendered  # inline: survives sanitizers
    streaming = markdown_html("Look:\n```js\nlet x = '<b>'")
    assert streaming.endswith("</code></pre>")
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


def test_html_shows_reasoning_folded_tool_card_answer_and_footer():
    html = turn_mimebundle(make_turn(), reasoning_tokens=12, reasoning_seconds=0.4)[0]["text/html"]
    assert '<details class="mlxnb-reasoning"' in html and "<details class=\"mlxnb-reasoning\" open" not in html
    assert "Reasoning · 12 tokens · 0.4 s" in html
    assert '<span class="mlxnb-tool-name">get_weather</span>' in html
    assert "{\n  &quot;city&quot;: &quot;Paris&quot;\n}" in html  # pretty JSON arguments
    assert "<strong>21 °C</strong>" in html
    assert "cached <b>60 (75%)</b>" in html
    assert "TTFT <b>0.05 s</b>" in html and "decode <b>95.2 tok/s</b>" in html
    assert "peak memory <b>3.0 MB</b>" in html and "finish <b>stop</b>" in html
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
    assert "drafted <b>18 accepted</b>" in bundle["text/html"]


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


def test_interrupted_and_failed_turns_say_so():
    stopped = turn_mimebundle(make_turn(interrupted=True, finish_reason="cancelled"))[0]
    assert stopped["text/plain"].splitlines()[-2].endswith("[interrupted]")
    assert 'mlxnb-status-stopped">stopped<' in stopped["text/html"]
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


def test_reasoning_of_several_rounds_reads_as_one_paragraph_per_round():
    turn = make_turn(reasoning="\nFirst I call.\n\n\n\nThen I answer.\n",
                     rounds=[Round(request={}, reasoning="\nFirst I call.\n\n"),
                             Round(request={}, reasoning="\nThen I answer.\n")])
    data = turn_mimebundle(turn)[0]
    assert ">First I call.\n\nThen I answer.</div>" in data["text/html"]
    assert data["text/plain"].startswith("[reasoning] First I call.\n\nThen I answer.\n")


def test_show_tokens_without_logprobs_says_how_to_get_them():
    from mlx_notebook.turn import Turn

    turn = Turn(model="m", session="default", request={}, content="Hi", reasoning="", tool_calls=[])
    with pytest.raises(ValueError, match=r"run the cell with %%chat --tokens"):
        turn.show_tokens()
