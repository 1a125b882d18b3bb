"""``tool_choice`` "required" or a named function: the call is decoded in the model's own
markup (``<tool_call>`` JSON), with arguments that fit the tool's parameters."""

from __future__ import annotations

import json

import pytest

from mlx_notebook.engine import EngineRequestError

pytestmark = pytest.mark.model

WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "enum": ["Paris", "Oslo", "Tokyo"]}}, "required": ["city"]}}}]
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a zone.",
    "parameters": {"type": "object", "properties": {"zone": {"type": "integer", "minimum": -12,
                                                              "maximum": 14}},
                   "required": ["zone"]}}}


def _calls(reply: dict) -> list[tuple[str, dict]]:
    message = reply["choices"][0]["message"]
    return [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []]


@pytest.mark.parametrize("choice", ["required", {"type": "function",
                                                 "function": {"name": "get_weather"}}])
def test_a_question_no_tool_answers_still_gets_the_call_it_was_told_to_make(tiny_engine, scripts,
                                                                           choice):
    body = {"messages": scripts["reason_then_answer"]["messages"], "tools": WEATHER,
            "max_tokens": 120}
    assert _calls(tiny_engine.chat_completions(body)) == []  # left to itself, it calls nothing
    forced = tiny_engine.chat_completions({**body, "tool_choice": choice})
    assert forced["choices"][0]["finish_reason"] == "tool_calls"
    (name, arguments), = _calls(forced)
    assert name == "get_weather" and arguments["city"] in ("Paris", "Oslo", "Tokyo")
    assert forced["choices"][0]["message"]["content"] is None
    # The model still reasons first, freely.
    assert forced["choices"][0]["message"]["reasoning"]


def test_a_named_function_is_the_one_called_and_a_streamed_call_is_the_same(tiny_engine, scripts):
    body = {"messages": scripts["single_tool_call"]["messages"], "tools": [*WEATHER, TIME],
            "tool_choice": {"type": "function", "function": {"name": "get_time"}},
            "max_tokens": 120}
    (name, arguments), = _calls(tiny_engine.chat_completions(body))
    assert name == "get_time" and -12 <= arguments["zone"] <= 14
    streamed = [call for chunk in tiny_engine.chat_completions({**body, "stream": True})
                for choice in chunk["choices"] for call in choice["delta"].get("tool_calls") or []]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in streamed] \
        == [(name, arguments)]


def test_a_model_whose_markup_cannot_be_written_refuses_in_a_sentence(smollm2_engine):
    with pytest.raises(EngineRequestError) as caught:
        smollm2_engine.submit({"messages": [{"role": "user", "content": "Weather in Oslo?"}],
                               "tools": WEATHER, "tool_choice": "required"})
    assert caught.value.error["param"] == "tool_choice"
    assert caught.value.error["message"] == (
        "'tool_choice' forcing a call needs a model whose calls are <tool_call> JSON (Qwen, "
        "Hermes); this model's tool-call family is 'plain', so send \"auto\" (or "
        "'response_format' JSON for an answer in a shape).")
    assert smollm2_engine.active_requests == 0


def test_forcing_a_call_and_a_json_answer_at_once_is_refused(tiny_engine, scripts):
    with pytest.raises(EngineRequestError, match="ask for two shapes of one reply"):
        tiny_engine.submit({"messages": scripts["single_tool_call"]["messages"], "tools": WEATHER,
                            "tool_choice": "required", "response_format": {"type": "json_object"}})


def test_parameters_with_refs_to_their_own_defs_compile(tiny_engine, scripts):
    """A pydantic model's schema keeps its nested types in ``$defs`` and points at them from
    its root (what pydantic-ai's ``final_result`` tool sends)."""
    pick = {"type": "object", "properties": {"colour": {"$ref": "#/$defs/Colour"}},
            "required": ["colour"], "additionalProperties": False,
            "$defs": {"Colour": {"type": "string", "enum": ["red", "blue"]}}}
    tools = [{"type": "function", "function": {"name": "final_result", "parameters": pick}}]
    reply = tiny_engine.chat_completions({"messages": scripts["single_tool_call"]["messages"],
                                          "tools": tools, "tool_choice": "required",
                                          "max_tokens": 200})
    (name, arguments), = _calls(reply)
    assert name == "final_result" and arguments["colour"] in ("red", "blue")


@pytest.mark.parametrize("stream", [False, True])
def test_parallel_tool_calls_false_ends_the_reply_with_its_first_call(tiny_engine, scripts, stream):
    script = scripts["parallel_tool_calls"]
    body = {"messages": script["messages"], "tools": script["tools"], "max_tokens": 200}
    both = tiny_engine.chat_completions(body)
    assert [a["city"] for _, a in _calls(both)] == ["Tokyo", "Oslo"]
    one = {**body, "parallel_tool_calls": False}
    if not stream:
        reply = tiny_engine.chat_completions(one)
        assert [a["city"] for _, a in _calls(reply)] == ["Tokyo"]
        assert reply["choices"][0]["finish_reason"] == "tool_calls"
        # generation stopped at the first call's end: the second was never written
        assert reply["usage"]["completion_tokens"] < both["usage"]["completion_tokens"]
        return
    chunks = list(tiny_engine.chat_completions({**one, "stream": True}))
    calls = [c for chunk in chunks for choice in chunk["choices"]
             for c in choice["delta"].get("tool_calls") or []]
    assert [c["index"] for c in calls] == [0]
    assert json.loads(calls[0]["function"]["arguments"]) == {"city": "Tokyo"}
    assert [ch["finish_reason"] for chunk in chunks for ch in chunk["choices"]
            if ch["finish_reason"]] == ["tool_calls"]


def test_a_forced_call_without_parallel_tool_calls_is_one_call(tiny_engine, scripts):
    script = scripts["parallel_tool_calls"]
    reply = tiny_engine.chat_completions({
        "messages": script["messages"], "tools": script["tools"], "tool_choice": "required",
        "parallel_tool_calls": False, "max_tokens": 200})
    assert len(_calls(reply)) == 1
    assert reply["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize("parameters", [
    {"anyOf": [{"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
                "required": ["city"]},
               {"type": "string", "maxLength": 3}]},
    {"oneOf": [{"type": "array", "maxItems": 0},
               {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}]},
])
def test_a_schema_naming_no_type_still_gets_an_object_of_arguments(tiny_engine, scripts,
                                                                  parameters):
    # Admission cannot refuse these by their "type" (there is none): the grammar holds the
    # arguments to an object, else the call came back as its markup in the content.
    tools = [{"type": "function", "function": {"name": "f", "parameters": parameters}}]
    reply = tiny_engine.chat_completions({
        "messages": scripts["reason_then_answer"]["messages"], "tools": tools,
        "tool_choice": "required", "max_tokens": 300})
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    (name, arguments), = _calls(reply)
    assert name == "f" and isinstance(arguments, dict)
    assert reply["choices"][0]["message"]["content"] is None
