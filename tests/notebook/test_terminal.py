"""Plain-text streaming in terminal IPython: what a reader sees for each kind of event."""

from __future__ import annotations

import io

import pytest

from mlx_notebook.engine import ContentDelta, ParseProblem, ReasoningDelta, ToolCall
from mlx_notebook.terminal import TerminalView
from mlx_notebook.turn import Turn


def _shown(event_list, *, trim_edges=True, interrupted=False, results=()):
    out = io.StringIO()
    view = TerminalView("m", "s", stream=out, trim_edges=trim_edges)
    for event in event_list:
        view.handle(event)
        if isinstance(event, ToolCall):
            for call_id, result, error in results:
                view.tool_result(call_id, result=result, error=error)
    turn = Turn(model="m", session="s", request={}, interrupted=interrupted, content="x")
    view.finish(turn)
    return out.getvalue()


@pytest.mark.parametrize(
    "event_list, expected",
    [
        # The blank lines around <think> markup are template whitespace, never shown.
        ([ReasoningDelta("\n"), ReasoningDelta("Add"), ReasoningDelta(" them.\n"),
          ContentDelta("\n\n"), ContentDelta("42"), ContentDelta(".")],
         "[thinking] Add them.\n42.\n"),
        # Whitespace inside a section is kept once more text follows it.
        ([ContentDelta("a\n"), ContentDelta("\nb")], "a\n\nb\n"),
        ([ContentDelta("Hi")], "Hi\n"),
        ([ParseProblem("<tool_call>{", "no JSON")], "[unparsed markup: no JSON] <tool_call>{\n"),
    ],
)
def test_events_stream_as_plain_text(event_list, expected):
    assert _shown(event_list) == expected


def test_tool_calls_and_results_get_a_line_each():
    shown = _shown(
        [ReasoningDelta("Call it."), ToolCall(0, "call_1", "get_weather", {"city": "Paris"}, "")],
        results=[("call_1", {"temperature_c": 18}, None)],
    )
    assert shown == ('[thinking] Call it.\n[tool call] get_weather({"city": "Paris"})\n'
                     "[tool result] {'temperature_c': 18}\n")


def test_a_long_tool_result_is_shortened_on_screen_only():
    rows = [{"id": i, "name": f"row {i}"} for i in range(200)]
    shown = _shown([ToolCall(0, "call_1", "query", {}, "")], results=[("call_1", rows, None)])
    line = shown.splitlines()[1]
    assert line.startswith("[tool result] [{'id': 0, 'name': 'row 0'}")
    assert line.endswith(f"… ({len(repr(rows)):,} characters; the turn's tool_calls hold it whole)")
    assert len(line) < 600


def test_a_result_whose_repr_raises_is_named_by_its_type():
    """The live view failed with a traceback; the card and the model's copy name the type."""
    class Weird:
        def __repr__(self):
            raise RuntimeError("no")

    shown = _shown([ToolCall(0, "call_1", "odd", {}, "")], results=[("call_1", Weird(), None)])
    assert shown.splitlines()[1] == "[tool result] <Weird that cannot be shown as text>"


def test_completions_keep_their_edges_and_interrupts_are_marked():
    shown = _shown([ContentDelta(" Paris"), ContentDelta(".\n")], trim_edges=False,
                   interrupted=True)
    assert shown == " Paris.\n [stopped]\n[stopped, 0 prompt tokens (0 cached), 0 completion tokens]\n"


def test_a_reply_cannot_drive_the_terminal():
    """Escape sequences and carriage returns from a model or a server are shown, not obeyed:
    no screen clear, title, clipboard write (OSC 52), overwritten line or reversed text."""
    hostile = "ok \x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07 done\rX\u202eabc\tA\nB"
    shown = _shown([ContentDelta(hostile), ToolCall(0, "c", "get\x1b[31mweather", {}, ""),
                    ParseProblem("<tool_call>\x1b[8m", "bad\x9b")])
    assert not any(c in shown for c in "\x1b\r\x07\u202e\x9b")
    assert "ok ␛[2J␛]52;c;cm0gLXJmIH4=␇␛]0;pwned␇ done␍X\\u202eabc\tA\nB" in shown
    assert "[tool call] get␛[31mweather({})" in shown
    turn = Turn(model="m", session="s", request={}, content=hostile)
    from mlx_notebook.display import turn_mimebundle
    assert "\x1b" not in turn_mimebundle(turn)[0]["text/plain"]
    assert str(turn) == hostile  # the text itself is the model's, unchanged


def test_a_lone_surrogate_reaches_any_terminal_as_its_escape():
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    view = TerminalView("m", "s", stream=out)
    view.handle(ContentDelta("caf\udce9.txt \ud83d\r\nnext"))
    out.flush()
    assert raw.getvalue().decode() == "caf\\udce9.txt \\ud83d\nnext"  # CRLF is a newline
