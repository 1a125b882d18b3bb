"""A turn becomes a parser regression test: ``Turn.to_fixture`` → ``check_fixture`` → trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlx_notebook.runner import run_turn
from mlx_notebook.testing import check_fixture, load_fixture, replay
from mlx_notebook.tools import make_tool
from mlx_notebook.turn import Turn


def _weather_turn(engine, script_body) -> Turn:
    body = script_body("single_tool_call")

    def get_weather(city: str):
        return {"city": city, "temperature_c": 18, "condition": "sunny"}

    tool = make_tool(get_weather)  # runs the calls; the body offers the trained schema
    turn = Turn(model="tiny-reasoner", session="fixtures", request=body,
                user_message=body["messages"][-1], tools_offered=["get_weather"])
    return run_turn(engine, turn, None, tools=[tool])


@pytest.fixture(scope="module")
def weather_turn(tiny_engine, script_body):
    return _weather_turn(tiny_engine, script_body)


@pytest.mark.model
def test_a_reasoning_tool_call_turn_round_trips_at_chunk_sizes_1_to_32(weather_turn, tiny_engine, tmp_path):
    turn = weather_turn
    assert [r.finish_reason for r in turn.rounds] == ["tool_calls", "stop"]
    path = turn.to_fixture(tmp_path / "weather.json", note="get_weather from thought")

    saved = json.loads(path.read_text())
    first = saved["replies"][0]
    assert saved["family"] == "qwen3" and saved["model"] == "tiny-reasoner"
    assert first["expected"]["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert first["expected"]["reasoning"].strip().startswith("I need the current weather in Paris")
    assert first["tools"] == turn.request["tools"]
    # The token ids are what the model generated: they decode to the text the filter read.
    assert tiny_engine.tokenizer.decode(first["token_ids"]) == first["text"]
    assert "".join(first["deltas"]) == first["text"]
    assert len(first["token_ids"]) == turn.rounds[0].usage.completion_tokens - 1  # not the stop token
    assert saved["replies"][1]["expected"]["content"].strip() == turn.content.strip()

    report = check_fixture(path)
    assert report.ok, str(report)
    assert report.replies == 2 and report.replays == 2 * (32 + 2)  # tokens, whole, 1..32
    assert str(report) == "weather.json: 2 replies, 68 replays, no differences"


@pytest.mark.model
def test_a_changed_expectation_is_reported_with_the_chunkings_that_differ(weather_turn, tmp_path):
    path = weather_turn.to_fixture(tmp_path / "weather.json")
    data = json.loads(path.read_text())
    data["replies"][0]["expected"]["tool_calls"][0]["arguments"] = {"city": "Lyon"}
    path.write_text(json.dumps(data))

    report = check_fixture(path, chunk_sizes=[1, 2, 3, 5])
    assert not report and len(report.differences) == 6
    assert str(report).splitlines() == [
        "weather.json: 2 replies, 12 replays, 6 differences:",
        "  reply 0, tool_calls, fed tokens, whole, sizes 1-3, 5:",
        '    expected [{"name": "get_weather", "arguments": {"city": "Lyon"}}]',
        '    got      [{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    ]
    with pytest.raises(AssertionError, match="reply 0, tool_calls"):
        check_fixture(path, strict=True)


@pytest.mark.model
def test_a_fixture_needs_a_file_path(weather_turn, tmp_path):
    """A folder or an empty path was a raw IsADirectoryError traceback."""
    for path in ("", tmp_path):
        with pytest.raises(ValueError) as error:
            weather_turn.to_fixture(path)
        assert str(error.value) == (f"to_fixture({str(Path(path))!r}): give a file path to "
                                    "write, e.g. 'weather.json'.")


@pytest.mark.model
def test_a_recorded_reply_replays_through_another_family_and_chunking(weather_turn, tmp_path):
    path = weather_turn.to_fixture(tmp_path / "weather.json")
    as_streamed = replay(path, round=0)
    assert as_streamed.family == "qwen3" and as_streamed.diff() == []
    assert [r.chunk for r in as_streamed.rows[:-1]] == list(load_fixture(path).replies[0].deltas)

    plain = replay(weather_turn, round=0, family="plain", chunking=4)
    assert plain.family == "plain"
    assert [e.kind for e in plain.events] == ["content"]  # plain parses no markup at all
    assert "<tool_call>" in plain.events[0].text
    assert {len(r.chunk) for r in plain.rows[:-2]} == {4}


def test_a_fixture_written_by_hand_needs_only_family_text_and_expectations(tmp_path):
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({
        "format": "mlx-notebook parser fixture", "version": 1, "family": "qwen3",
        "replies": [{"text": "<think>\nhm\n</think>\n\nHi.",
                     "expected": {"reasoning": "\nhm\n", "content": "\n\nHi."}}],
    }))
    report = check_fixture(path)
    assert report.ok and report.replays == 33  # no recorded deltas: whole, then 1..32


@pytest.mark.parametrize("text, why", [("{}", r"\(no"), ("not json at all", "it is not JSON")])
def test_a_file_that_is_not_a_fixture_is_refused_by_name(tmp_path, text, why):
    path = tmp_path / "other.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"other.json is not a parser fixture.*{why}"):
        check_fixture(path)


@pytest.mark.parametrize("edit, why", [
    ({"version": "2"}, 'version must be a whole number, not "2".'),
    ({"family": {"name": "qwen3"}}, 'family must be text, not {"name": "qwen3"}.'),
    ({"family": "qwen9"}, "Unknown parser family 'qwen9'"),
    ({"replies": {"text": "x"}}, 'replies must be a list, not {"text": "x"}.'),
    ({"replies": ["x"]}, 'replies[0] must be an object, not "x".'),
    ({"replies": [{"text": 5}]}, "replies[0].text must be the reply's text, not 5."),
    ({"replies": [{"text": "x", "token_ids": [1, "2"]}]},
     'replies[0].token_ids must be a list of token ids, not [1, "2"].'),
    ({"replies": [{"text": "x", "deltas": "x"}]}, 'replies[0].deltas must be a list of texts, not "x".'),
    ({"replies": [{"text": "x", "expected": {"content": 5}}]},
     "replies[0].expected.content must be text, not 5."),
    ({"replies": [{"text": "x", "events": [{"kind": "content"}]}]}, "replies[0].events: "),
    ({"family_definition": ["qwen3"]}, 'family_definition must be an object, not ["qwen3"].'),
    ({"family": None}, 'it names no parser family; add "family": NAME, e.g. "qwen3".'),
])
def test_a_fixture_edited_by_hand_into_a_wrong_shape_names_the_field(tmp_path, edit, why):
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({"format": "mlx-notebook parser fixture", "version": 1,
                                "family": "qwen3", "replies": [{"text": "x"}], **edit}))
    with pytest.raises(ValueError) as caught:
        check_fixture(path)
    assert str(caught.value).startswith(f"{path} ")
    assert why in str(caught.value)


def _hand_fixture(tmp_path):
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({
        "format": "mlx-notebook parser fixture", "version": 1, "family": "qwen3",
        "replies": [{"text": "<think>a</think>b", "deltas": ["<think>", "a", "</think>", "b"],
                     "expected": {"reasoning": "a", "content": "b"}}],
    }))
    return path


def test_mlx_trace_shows_a_fixtures_trace_as_it_streamed_or_cut_otherwise(bare_shell, tmp_path):
    path = _hand_fixture(tmp_path)
    result = bare_shell.run_cell(f"%mlx trace --fixture {path}")
    trace = result.result
    assert [r.chunk for r in trace.rows] == ["<think>", "a", "</think>", "b", "(finish)"]
    assert [(e.kind, e.text) for e in trace.events] == [("reasoning", "a"), ("content", "b")]

    trace = bare_shell.run_cell(f"%mlx trace --fixture {path} --family plain --chunking 5").result
    assert trace.family == "plain" and [r.chunk for r in trace.rows[:-1]] == ["<thin", "k>a</", "think", ">b"]
    assert [(e.kind, e.text) for e in trace.events] == [("content", "<think>a</think>b")]


def test_mlx_trace_names_a_missing_fixture_or_round(bare_shell, tmp_path, capsys):
    path = _hand_fixture(tmp_path)
    result = bare_shell.run_cell(f"%mlx trace --fixture {path} --round 3")
    assert str(result.error_in_exec) == ("%mlx trace: round 3 is out of range: it has 1 "
                                         "recorded model call (0 is the first).")
    missing = tmp_path / "none.json"
    result = bare_shell.run_cell(f"%mlx trace --fixture {missing}")
    assert str(result.error_in_exec) == f"%mlx trace: cannot read {missing}: No such file or directory."


@pytest.mark.model
def test_mlx_trace_replays_a_chat_turn_through_another_family_and_chunking(reasoner_shell, tmp_path):
    from mlx_notebook.engine.models.tiny_reasoner import load_scripts

    question = next(s for s in load_scripts() if s["name"] == "reason_then_answer")["messages"][-1]["content"]
    result = reasoner_shell.run_cell(f"%%chat --new --session trace-replay --no-stream\n{question}")
    assert result.success, result.error_in_exec
    reasoner_shell.user_ns["t"] = result.result  # ``_`` becomes each trace shown
    as_streamed = reasoner_shell.run_cell("%mlx trace t").result
    assert as_streamed.family == "qwen3" and as_streamed.diff() == []
    assert len(as_streamed.rows) - 1 == len(result.result.rounds[0].recorded.deltas)

    other = reasoner_shell.run_cell("%mlx trace t --family deepseek_r1 --chunking 7").result
    assert other.family == "deepseek_r1" and {len(r.chunk) for r in other.rows[:-2]} == {7}
    assert "".join(e.text for e in other.events if e.kind == "content").strip() == "17 + 25 = 42."

    path = tmp_path / "turn.json"
    result.result.to_fixture(path)
    assert reasoner_shell.run_cell(f"%mlx trace --fixture {path}").result.events == as_streamed.events


@pytest.mark.model
def test_a_view_that_fails_does_not_lose_the_turn(tiny_engine, script_body, weather_turn, caplog):
    class Broken:
        def __init__(self):
            self.events = 0

        def display(self): pass
        def tool_result(self, *args, **kwargs): raise ValueError("broken too")
        def on_stop(self, callback): pass
        def offer_tools(self, names, unsupported): pass
        def finish(self, turn): pass

        def handle(self, event):
            self.events += 1
            raise RecursionError("maximum recursion depth exceeded")

    body = script_body("single_tool_call")
    view = Broken()
    turn = Turn(model="tiny-reasoner", session="fixtures", request=body,
                user_message=body["messages"][-1])
    tool = make_tool(lambda city: {"city": city, "temperature_c": 18, "condition": "sunny"},
                     name="get_weather")
    turn = run_turn(tiny_engine, turn, view, tools=[tool])
    assert view.events == 2  # dropped after its failure in each round; the turn went on
    assert turn.error is None and turn.tool_calls[0].name == weather_turn.tool_calls[0].name
    assert turn.tool_calls[0].result["temperature_c"] == 18
    assert turn.content == weather_turn.content  # the second round ran and answered
    assert "the live view failed" in caplog.text
