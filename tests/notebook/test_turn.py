"""The Turn record as a user meets it in a terminal or a debugger."""

from __future__ import annotations

from mlx_notebook.turn import Round, Turn


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
    from mlx_notebook.turn import Round, Turn

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
