"""The Turn: as a user meets it in a terminal or a debugger, and as engine events fold into it."""

from __future__ import annotations

import dataclasses
import datetime
import re
import threading

import pytest

from mlx_notebook.turn import Round, Timings, TokenLogprob, ToolCallRecord, TopLogprob, Turn, Usage


def test_repr_shows_the_answer_not_the_raw_record():
    chunk = {"object": "chat.completion.chunk", "choices": [{"delta": {"content": "x"}}]}
    turn = Turn(model="tiny", session="default", request={"messages": []},
                content="\n\n17 + 25 = 42.", finish_reason="stop", chunks=[chunk] * 300,
                logprobs=[{"token": "x", "logprob": -0.1, "top_logprobs": []}] * 300,
                rounds=[Round(request={"messages": []}, content="\n\n17 + 25 = 42.")])
    text = repr(turn)
    assert "content='\\n\\n17 + 25 = 42.'" in text and "finish_reason='stop'" in text
    assert "chat.completion.chunk" not in text and "logprob" not in text
    assert len(text) < 600


def test_plain_text_tells_a_tool_turn_in_the_order_it_happened():
    call = {"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}, "result": {"sky": "sunny"},
            "error": None}
    turn = Turn(model="m", session="s", request={}, rounds=[
        Round(request={}, reasoning="I should look it up.", tool_calls=[call], finish_reason="tool_calls"),
        Round(request={}, reasoning="The tool says sunny.", content="It is sunny.", finish_reason="stop"),
    ], tool_calls=[call])
    turn.refresh()
    lines = turn.plain_text().splitlines()
    assert lines[:4] == ["[reasoning] I should look it up.",
                         '[tool] get_weather({"city": "Paris"}) -> {"sky": "sunny"}',
                         "[reasoning] The tool says sunny.", "It is sunny."]


# -- folding engine events: the one place a turn's totals come from ---------------------------

def _usage_event(prompt, cached, completion, *, ttft=0.1, peak=100, drafted=None):
    from mlx_notebook.engine._events import Usage as UsageEvent

    return UsageEvent(prompt, cached, completion, ttft, 900.0, 40.0, peak, drafted)


def test_folding_a_tool_loop_sums_usage_over_rounds_and_keeps_the_first_ttft_and_the_peak():
    from mlx_notebook.engine._events import ContentDelta, Finished, ReasoningDelta, Started, ToolCall

    turn = Turn(model="m", session="s", request={"messages": []})
    turn.begin_round(turn.request, "r1")
    for event in [Started("r1", 40, 0), ReasoningDelta("Look "), ReasoningDelta("it up."),
                  ToolCall(0, "c1", "get_weather", {"city": "Paris"}, "<tool_call>"),
                  _usage_event(40, 0, 10, ttft=0.5, peak=300, drafted=6), Finished("tool_calls")]:
        turn.apply(event)
    turn.tool_calls[0].result = {"sky": "sunny"}  # the tool loop fills the shared record
    turn.begin_round({"messages": ["..."]}, "r2")
    turn.apply(Started("r2", 60, 50))
    assert turn.usage == Usage(100, 50, 10, 6)  # the running round's prompt counts at once
    for event in [ReasoningDelta("Sunny."), ContentDelta("It is sunny."),
                  _usage_event(60, 50, 5, ttft=0.2, peak=200, drafted=3), Finished("stop")]:
        turn.apply(event)
    assert turn.usage == Usage(100, 50, 15, 9)
    assert [r.usage for r in turn.rounds] == [Usage(40, 0, 10, 6), Usage(60, 50, 5, 3)]
    assert (turn.timings.time_to_first_token, turn.timings.peak_memory) == (0.5, 300)
    assert turn.reasoning == "Look it up.\nSunny." and turn.content == "It is sunny."
    assert turn.finish_reason == "stop" and not turn.interrupted
    assert turn.rounds[0].tool_calls[0] is turn.tool_calls[0]
    assert turn.rounds[0].messages()[1]["content"] == '{"sky": "sunny"}'


def test_a_cancelled_round_folds_as_stopped_and_unrun_calls_say_why():
    from mlx_notebook.engine._events import Finished, Started, ToolCall

    turn = Turn(model="m", session="s", request={})
    for event in [Started("r1", 5, 0), ToolCall(0, "c1", "f", {}, ""), Finished("cancelled")]:
        turn.apply(event)
    turn.mark_stopped()
    assert turn.interrupted and turn.finish_reason == "stopped" == turn.rounds[0].finish_reason
    assert turn.tool_calls[0].error == "not run: the user stopped the turn"


def test_a_tool_stopped_while_it_runs_says_so_and_the_calls_after_it_never_ran():
    from mlx_notebook.engine._events import Finished, Started, ToolCall
    from mlx_notebook.runner import _run_tools
    from mlx_notebook.tools import make_tool

    def slow(city: str) -> str:
        """Wait for a reply that does not come."""
        raise KeyboardInterrupt  # Kernel > Interrupt while the tool runs

    turn = Turn(model="m", session="s", request={})
    for event in [Started("r1", 5, 0), ToolCall(0, "c1", "slow", {"city": "Oslo"}, ""),
                  ToolCall(1, "c2", "slow", {"city": "Rome"}, ""), Finished("tool_calls")]:
        turn.apply(event)
    with pytest.raises(KeyboardInterrupt):
        _run_tools(turn.rounds[0], [make_tool(slow)], None, None, threading.Event())
    turn.mark_stopped()
    assert [call.error for call in turn.tool_calls] == [
        "stopped while it ran: the user stopped the turn", "not run: the user stopped the turn"]


def test_a_call_that_fails_after_it_started_still_counts_its_prompt():
    # The live footer showed the prompt's counts from Started; the saved turn says the same.
    from mlx_notebook.engine._errors import EngineRequestError
    from mlx_notebook.engine._events import ContentDelta, Started

    turn = Turn(model="m", session="s", request={})
    for event in [Started("r1", 12, 4), ContentDelta("Half")]:
        turn.apply(event)
    failure = EngineRequestError("The engine ran out of memory.", type="server_error")
    turn.fail(failure)
    assert turn.exception is failure and turn.error == "The engine ran out of memory."
    assert dict(turn.usage) == {"prompt_tokens": 12, "cached_tokens": 4, "completion_tokens": 0}
    assert not turn.in_history


def test_logprobs_fold_into_typed_records_that_read_like_the_old_dicts():
    from mlx_notebook.engine._events import TokenLogprobs

    turn = Turn(model="m", session="s", request={})
    turn.apply(TokenLogprobs(7, "It", -0.1, (("It", -0.1), ("The", -2.5))))
    (item,) = turn.logprobs
    assert (item.token_id, item.token, item.logprob) == (7, "It", -0.1)
    assert [t["token"] for t in item["top_logprobs"]] == ["It", "The"]


# -- the typed parts answer the subscripts users' cells already use ---------------------------

def test_usage_reads_like_the_dict_it_was_and_leaves_out_an_unset_draft_count():
    usage = Usage(42, 0, 8)
    assert usage["prompt_tokens"] == 42 and usage.get("accepted_draft_tokens") is None
    assert dict(usage) == {"prompt_tokens": 42, "cached_tokens": 0, "completion_tokens": 8}
    assert "accepted_draft_tokens" in Usage(1, 0, 1, 0)
    with pytest.raises(KeyError):
        usage["accepted_draft_tokens"]
    assert Usage(1, 1, 1) + Usage(2, 0, 3, 2) == Usage(3, 1, 4, 2)


def test_timings_items_and_tool_call_subscripts_keep_working():
    timings = Timings(time_to_first_token=0.25, peak_memory=1 << 20)
    assert list(timings.keys()) == ["time_to_first_token", "prefill_tokens_per_second",
                                    "decode_tokens_per_second", "peak_memory", "total_seconds"]
    assert dict(timings.items())["peak_memory"] == 1 << 20
    call = ToolCallRecord("c1", "get_weather", {"city": "Paris"})
    assert (call["name"], call["arguments"], call["result"], call["error"]) == (
        "get_weather", {"city": "Paris"}, None, None)


def test_a_turn_built_from_dicts_holds_typed_parts():
    turn = Turn(model="m", session="s", request={},
                usage={"prompt_tokens": 3, "cached_tokens": 1, "completion_tokens": 2},
                timings={"total_seconds": 1.5},
                tool_calls=[{"id": "c", "name": "f", "arguments": {"x": 1}}],
                logprobs=[{"token": "a", "logprob": -0.5, "top_logprobs": [{"token": "a", "logprob": -0.5}]}])
    assert turn.usage == Usage(3, 1, 2) and turn.timings == Timings(total_seconds=1.5)
    assert turn.tool_calls == [ToolCallRecord("c", "f", {"x": 1})]
    assert turn.logprobs == [TokenLogprob(None, "a", -0.5, (TopLogprob("a", -0.5),))]
    assert turn.summary() == "None, 3 prompt tokens (1 cached), 2 completion tokens, 1 tool call, 1.50 s"


def test_text_folded_token_by_token_reads_as_the_rounds_joined_at_every_step():
    from mlx_notebook.engine._events import ContentDelta, ReasoningDelta, Started

    turn = Turn(model="m", session="s", request={"messages": []})
    steps = [Started("r1", 5, 0), ReasoningDelta(""), ReasoningDelta("Look"), ReasoningDelta(" up."),
             ContentDelta("Calling."), Started("r2", 9, 5), ContentDelta("A"), ReasoningDelta(""),
             ReasoningDelta("Sunny."), ContentDelta("B")]
    for event in steps:
        turn.apply(event)
        seen = (turn.content, turn.reasoning)
        turn.refresh()  # what deriving the totals from the rounds gives at this point
        assert seen == (turn.content, turn.reasoning), event
    assert (turn.content, turn.reasoning) == ("AB", "Look up.\nSunny.")


def _two_call_turn(name: str) -> Turn:
    from mlx_notebook.engine._events import Finished, Started, ToolCall

    turn = Turn(model="m", session="s", request={})
    for event in [Started("r1", 5, 0), ToolCall(0, "c1", name, {"city": "Oslo"}, ""),
                  ToolCall(1, "c2", name, {"city": "Rome"}, ""), Finished("tool_calls")]:
        turn.apply(event)
    return turn


def test_stop_pressed_between_two_calls_runs_no_more_of_them():
    from mlx_notebook.runner import _run_tools
    from mlx_notebook.tools import make_tool

    stop_pressed, ran = threading.Event(), []

    def lookup(city: str) -> str:
        """Look a city up; the user presses Stop while it runs."""
        ran.append(city)
        stop_pressed.set()
        return "found"

    turn = _two_call_turn("lookup")
    _run_tools(turn.rounds[0], [make_tool(lookup)], None, None, stop_pressed)
    turn.mark_stopped()
    assert ran == ["Oslo"]
    assert [(call.result, call.error) for call in turn.tool_calls] == [
        ("found", None), (None, "not run: the user stopped the turn")]


def test_a_tool_returning_none_shows_null_as_the_model_read_it_not_a_call_still_waiting():
    from mlx_notebook.display import tool_card_html, turn_mimebundle
    from mlx_notebook.engine._events import ToolCall
    from mlx_notebook.runner import _run_tools
    from mlx_notebook.tools import make_tool
    from mlx_notebook.widgets import ChatView

    def log(city: str) -> None:
        """Write the city to a log; returns nothing."""

    turn = _two_call_turn("log")
    view = ChatView("m", "s")
    for call in turn.tool_calls:
        view.handle(ToolCall(0, call.id, call.name, call.arguments, ""))
    _run_tools(turn.rounds[0], [make_tool(log)], None, view, threading.Event())
    turn.mark_stopped()  # a stop after the tools ran: they returned, so they are not "not run"
    assert [(call.result, call.error, call.returned) for call in turn.tool_calls] == [
        (None, None, True), (None, None, True)]
    assert turn.rounds[0].messages()[1]["content"] == "null"
    card = view.tool_cards["c1"]
    assert "waiting for the result" not in card and '<pre class="mlxnb-tool-result">null</pre>' in card
    data, _ = turn_mimebundle(turn)
    assert data["text/html"].count('<pre class="mlxnb-tool-result">null</pre>') == 2
    assert "**Result**\n\n```json\nnull\n```" in data["text/markdown"]
    assert tool_card_html({"id": "c", "name": "f", "arguments": {}, "result": None,
                           "error": None}).count("result") == 0  # not run: no result shown


@dataclasses.dataclass
class Booking:  # a tool's hints are resolved in its module: a record type lives at the top
    guest: str
    night: datetime.date


def test_a_card_shows_a_result_as_the_model_read_it_and_a_huge_one_cut():
    """A record result reached the model as its fields and a date as ISO text: the card and
    the saved turn say the same, not the object's repr. A whole web page is cut on screen, with
    how much more there is, and kept whole on the turn."""
    from mlx_notebook.display import TURN_MIME_TYPE, turn_mimebundle
    from mlx_notebook.engine._events import ToolCall
    from mlx_notebook.runner import _run_tools
    from mlx_notebook.tools import make_tool
    from mlx_notebook.widgets import ChatView

    def book(city: str) -> Booking:
        """Book a night."""
        return Booking("Ada", datetime.date(2026, 12, 4))

    def fetch(city: str) -> str:
        """Fetch a page."""
        return "<p>" + "word " * 5000

    for function, name in ((book, "book"), (fetch, "fetch")):
        turn = _two_call_turn(name)
        view = ChatView("m", "s")
        view.handle(ToolCall(0, "c1", name, {"city": "Oslo"}, ""))
        _run_tools(turn.rounds[0], [make_tool(function)], None, view, threading.Event())
        data, _ = turn_mimebundle(turn)
        card, record = view.tool_cards["c1"], data[TURN_MIME_TYPE]["tool_calls"][0]
        if name == "book":
            read = turn.rounds[0].messages()[1]["content"]
            assert read == '{"guest": "Ada", "night": "2026-12-04"}'
            assert record["result"] == {"guest": "Ada", "night": "2026-12-04"}
            assert "&quot;night&quot;: &quot;2026-12-04&quot;" in card and "Booking(" not in card
        else:
            assert record["result"] == "<p>" + "word " * 5000  # kept whole
            for shown in (card, data["text/html"], data["text/markdown"], data["text/plain"]):
                assert re.search(r"\n… 15,00[35] more characters, not shown \(the turn", shown)
                assert len(shown) < 30_000
