"""``POST /v1/responses`` driven by the openai SDK: the Responses API on the chat request path.

Agent frameworks call this endpoint by default (openai-agents' default model, pydantic-ai's
``openai:`` models). Each reply is compared with the chat endpoint's reply to the same
conversation: one request path, two shapes.
"""

from __future__ import annotations

import json
import re

import httpx
import openai
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mlx_notebook.engine import EngineRequestError
from mlx_notebook.engine.request._responses_api import (
    ResponseEvents, chat_body, in_responses_terms, response_object,
)

pytestmark = pytest.mark.model


def _client(listener) -> openai.OpenAI:
    return openai.OpenAI(base_url=listener.url, api_key=listener.token, max_retries=0)


def _tools(script: dict) -> list[dict]:
    """A chat script's tools as the Responses API writes them (flat, no ``function`` key)."""
    return [{"type": "function", **tool["function"]} for tool in script["tools"]]


def _split(reply: str) -> tuple[str, str]:
    thought, _, answer = reply.partition("</think>")
    return thought.split("<think>")[1], answer


def test_a_response_holds_the_reasoning_and_the_answer_with_chats_usage(tiny_listener, scripts):
    client = _client(tiny_listener)
    messages = scripts["reason_then_answer"]["messages"]
    response = client.responses.create(model="default_model", input=messages,
                                       max_output_tokens=200)
    thought, answer = _split(scripts["reason_then_answer"]["reply"])
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].content[0].text == thought
    # The blank lines after </think> belong to no output_text (chat's content keeps them).
    assert response.output_text == answer.lstrip("\n") == "17 + 25 = 42."
    assert (response.status, response.object, response.store) == ("completed", "response", False)
    chat = client.chat.completions.create(model="default_model", messages=messages, max_tokens=200)
    assert response.usage.input_tokens == chat.usage.prompt_tokens
    assert response.usage.output_tokens == chat.usage.completion_tokens
    assert response.usage.total_tokens == chat.usage.total_tokens
    # The same conversation again: its prompt came from the cache.
    again = client.responses.create(model="default_model", input=messages, max_output_tokens=200)
    assert again.usage.input_tokens_details.cached_tokens > 0


def test_a_streamed_response_builds_the_same_response_through_the_sdks_accumulator(
        tiny_listener, scripts):
    client = _client(tiny_listener)
    messages = scripts["reason_then_answer"]["messages"]
    with client.responses.stream(model="default_model", input=messages) as stream:
        events = list(stream)
        final = stream.get_final_response()
    whole = client.responses.create(model="default_model", input=messages)
    assert [event.sequence_number for event in events] == list(range(len(events)))
    kinds = [event.type for event in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    assert kinds[-1] == "response.completed" and "response.reasoning_text.delta" in kinds
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == final.output_text == whole.output_text == "17 + 25 = 42."
    def shown(response):  # each item's kind, status and text
        return [(i.type, i.status, [part.text for part in i.content]) for i in response.output]

    assert shown(final) == shown(whole)
    assert final.usage.output_tokens == whole.usage.output_tokens


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_loop_round_trips_through_responses_items(tiny_listener, scripts, stream):
    """The model calls a tool, the client sends back the output items and the call's result,
    and the model answers from it: what openai-agents does on each turn."""
    client = _client(tiny_listener)
    asked = scripts["single_tool_call"]
    kwargs = {"model": "default_model", "input": asked["messages"], "tools": _tools(asked)}
    if stream:
        with client.responses.stream(**kwargs) as events:
            for _ in events:
                pass
            first = events.get_final_response()
    else:
        first = client.responses.create(**kwargs)
    assert [item.type for item in first.output] == ["reasoning", "function_call"]
    call = first.output[1]
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
    assert call.call_id.startswith("call_") and first.status == "completed"
    result = scripts["answer_from_tool_result"]["messages"][2]["content"]
    follow_up = [*asked["messages"], *[item.model_dump(exclude_none=True) for item in first.output],
                 {"type": "function_call_output", "call_id": call.call_id, "output": result}]
    answer = client.responses.create(model="default_model", input=follow_up, tools=_tools(asked))
    assert answer.output_text == _split(scripts["answer_from_tool_result"]["reply"])[1].lstrip("\n")


def test_parallel_calls_are_one_item_each(tiny_listener, scripts):
    asked = scripts["parallel_tool_calls"]
    response = _client(tiny_listener).responses.create(
        model="default_model", input=asked["messages"], tools=_tools(asked))
    calls = [item for item in response.output if item.type == "function_call"]
    assert [json.loads(c.arguments)["city"] for c in calls] == ["Tokyo", "Oslo"]
    assert len({c.call_id for c in calls}) == 2
    assert [item.type for item in response.output] == ["reasoning", "function_call", "function_call"]
    one = _client(tiny_listener).responses.create(
        model="default_model", input=asked["messages"], tools=_tools(asked),
        parallel_tool_calls=False)
    assert [item.type for item in one.output] == ["reasoning", "function_call"]
    assert one.parallel_tool_calls is False


def test_instructions_are_the_system_prompt_and_a_text_input_is_the_users_message(
        tiny_listener, scripts):
    pirate = scripts["system_prompt"]["messages"]
    response = _client(tiny_listener).responses.create(
        model="default_model", instructions=pirate[0]["content"], input=pirate[1]["content"])
    assert response.output_text == _split(scripts["system_prompt"]["reply"])[1].lstrip("\n")
    assert response.instructions == pirate[0]["content"]


def test_a_reply_cut_by_max_output_tokens_is_incomplete(tiny_listener, scripts):
    response = _client(tiny_listener).responses.create(
        model="default_model", input=scripts["reason_then_answer"]["messages"], max_output_tokens=3)
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage.output_tokens == 3


@pytest.mark.parametrize("extra, param, said", [
    ({"input": [{"role": "user", "content": 5}]}, "input[0].content", "'input[0].content'"),
    ({"instructions": "Be brief.", "input": [{"role": "user", "content": "Hi."},
                                             {"role": "robot", "content": "Hi."}]},
     "input[1].role", "'input[1].role' must be one of"),
    ({"input": [{"role": "user", "content": "Weather?"},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Call it."}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{oops"},
                {"type": "function_call_output", "call_id": "c1", "output": "sun"}]},
     "input[3].arguments", "'input[3].arguments' is not valid JSON"),
    ({"input": [{"role": "user", "content": "Hi."},
                {"type": "function_call_output", "call_id": 7, "output": "sun"}]},
     "input[1].call_id", "'input[1].call_id' must be a string"),
    ({"max_output_tokens": -1}, "max_output_tokens", "'max_output_tokens'"),
    ({"tools": [{"type": "function", "name": "f", "description": 5}]}, "tools[0].description",
     "'tools[0].description' must be a string."),
])
def test_a_refusal_of_the_chat_request_names_the_responses_field(tiny_listener, extra, param,
                                                                   said):
    body = {"model": "default_model", "input": "Hi.", **extra}
    reply = httpx.post(f"{tiny_listener.url}/responses", json=body,
                       headers={"Authorization": f"Bearer {tiny_listener.token}"})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["param"] == param
    assert said in error["message"] and "messages" not in error["message"], error["message"]


@pytest.mark.parametrize("extra, param, said", [
    ({"previous_response_id": "resp_1"}, "previous_response_id",
     "'previous_response_id' is not supported: this server stores no responses; send the whole "
     "conversation in 'input'."),
    ({"tools": [{"type": "web_search"}]}, "tools[0]",
     "'tools[0]' is \"web_search\"; only function tools are supported (the model calls them, the "
     "client runs them)."),
    ({"text": {"format": {"type": "grammar"}}}, "text.format",
     "'text.format' \"grammar\" is not supported; send \"text\", \"json_object\" or "
     "\"json_schema\"."),
    ({"input": []}, "input", "'input' must be a string or a non-empty list of items."),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "input[0].content[0]",
     "'input[0].content[0]' is not a text part; this server reads only text (input_text, "
     "output_text)."),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type",
     "'input[0]' is a \"item_reference\" item, which this server does not take; send messages, "
     "function calls and their outputs."),
])
def test_what_cannot_be_served_is_a_400_naming_the_field(tiny_listener, extra, param, said):
    body = {"model": "default_model", "input": "Hi.", **extra}
    reply = httpx.post(f"{tiny_listener.url}/responses", json=body,
                       headers={"Authorization": f"Bearer {tiny_listener.token}"})
    assert reply.status_code == 400
    assert reply.json()["error"] == {"message": said, "type": "invalid_request_error",
                                     "param": param, "code": None}


def test_a_stream_is_typed_sse_events_without_done(tiny_listener, scripts):
    body = {"model": "default_model", "input": scripts["reason_then_answer"]["messages"],
            "stream": True}
    with httpx.stream("POST", f"{tiny_listener.url}/responses", json=body,
                      headers={"Authorization": f"Bearer {tiny_listener.token}"}) as reply:
        text = reply.read().decode()
    frames = [frame for frame in text.split("\n\n") if frame]
    for frame in frames:
        event, data = frame.split("\n")
        assert event == f"event: {json.loads(data.removeprefix('data: '))['type']}"
    assert "[DONE]" not in text
    completed = json.loads(frames[-1].split("\n")[1].removeprefix("data: "))
    assert completed["type"] == "response.completed"
    assert completed["response"]["usage"]["output_tokens"] > 0


# -- hostile bodies ------------------------------------------------------------------------------
_odd = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                 st.text(max_size=8), st.sampled_from(["", "\ud800", "<think>", "x" * 5000]))
_value = st.recursive(_odd, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6)


def _sometimes(valid):
    return st.one_of(valid, valid, valid, _value)


_part = st.fixed_dictionaries({"type": _sometimes(st.sampled_from(["input_text", "output_text",
                                                                   "input_image"])),
                               "text": _sometimes(st.text(max_size=20))})
_item = st.one_of(
    st.fixed_dictionaries({"role": _sometimes(st.sampled_from(["user", "assistant", "system",
                                                               "developer", "tool"])),
                           "content": _sometimes(st.one_of(st.text(max_size=30),
                                                           st.lists(_part, max_size=2)))}),
    st.fixed_dictionaries({"type": st.just("function_call"), "call_id": _sometimes(st.text()),
                           "name": _sometimes(st.just("get_weather")),
                           "arguments": _sometimes(st.just('{"city": "Paris"}'))}),
    st.fixed_dictionaries({"type": st.just("function_call_output"),
                           "call_id": _sometimes(st.text()), "output": _value}),
    st.fixed_dictionaries({"type": st.just("reasoning"), "summary": _value, "content": _value}),
    _value,
)
_hostile = st.fixed_dictionaries({"input": _sometimes(st.one_of(
    st.text(min_size=1, max_size=30), st.lists(_item, min_size=1, max_size=4)))},
                                  optional={
    "instructions": _sometimes(st.text(min_size=1, max_size=20)),
    "max_output_tokens": st.one_of(st.integers(1, 4), _odd),
    "tools": _sometimes(st.lists(st.fixed_dictionaries(
        {"type": _sometimes(st.just("function")), "name": _sometimes(st.just("get_weather")),
         "parameters": _sometimes(st.just({"type": "object"}))}), max_size=2)),
    "tool_choice": _value, "text": _value, "reasoning": _value,
    "stream": st.booleans(), "temperature": _odd,
})


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=_hostile)
def test_hostile_responses_bodies_are_refused_in_a_sentence_or_served_as_strict_json(
        tiny_engine, body):
    body = {**body, "max_output_tokens": body.get("max_output_tokens", 4)}
    try:
        handle = tiny_engine.submit(chat_body(body), kind="chat")
    except EngineRequestError as refusal:
        refusal = in_responses_terms(refusal, body)
        assert refusal.error["message"].endswith(".") and len(refusal.error["message"]) < 2000
        param = refusal.error["param"]
        if param is not None:  # a field of this body, in this API's names
            assert re.split(r"[.\[]", param)[0] in body, (param, body)
        assert "'messages" not in refusal.error["message"], refusal.error["message"]
        event(f"refused: {param}")
        return
    event("served")
    named = {"request": handle.request, "request_id": handle.id, "created": 0, "body": body}
    if handle.request.stream:
        stream = ResponseEvents(**named)
        out = stream.start() + [e for event in handle.events() for e in stream.feed(event)]
        out += stream.end()
        assert out[-1]["type"] in ("response.completed", "response.incomplete")
    else:
        out = response_object(handle.events(), **named)
    json.dumps(out, allow_nan=False)
    assert tiny_engine.healthy


# -- what peers' and clients' checks found --------------------------------------------------------
def test_logprobs_asked_for_list_the_answers_tokens_which_spell_its_text(tiny_listener, scripts):
    response = _client(tiny_listener).responses.create(
        model="default_model", input=scripts["reason_then_answer"]["messages"], top_logprobs=2,
        include=["message.output_text.logprobs"])
    part = response.output[-1].content[0]
    assert "".join(lp.token for lp in part.logprobs) == part.text == "17 + 25 = 42."
    assert all(len(lp.top_logprobs) == 2 and lp.logprob <= 0 for lp in part.logprobs)


def test_a_reply_cut_inside_its_reasoning_has_no_message_and_an_incomplete_item(
        tiny_listener, scripts):
    body = {"model": "default_model", "input": scripts["reason_then_answer"]["messages"],
            "max_output_tokens": 5}
    client = _client(tiny_listener)
    whole = client.responses.create(**body)
    assert [(item.type, item.status) for item in whole.output] == [("reasoning", "incomplete")]
    with client.responses.stream(**body) as stream:
        events = [event.type for event in stream]
    assert events[-1] == "response.incomplete" and "response.output_text.done" not in events


def test_instructions_and_the_inputs_system_messages_are_one_system_message():
    body = {"instructions": "Be brief.",
            "input": [{"role": "system", "content": "You are a pirate."},
                      {"role": "developer", "content": "Say arr."},
                      {"role": "user", "content": "Hi."}]}
    assert chat_body(body)["messages"] == [
        {"role": "system", "content": "Be brief.\n\nYou are a pirate.\n\nSay arr."},
        {"role": "user", "content": "Hi."}]
    one = {"input": [{"role": "system", "content": "A."}, {"role": "user", "content": "B."}]}
    assert chat_body(one)["messages"] == one["input"]


def test_reasoning_between_a_turns_calls_stays_in_that_turn():
    call = {"type": "function_call", "name": "f", "arguments": "{}"}
    body = {"input": [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "A"}]},
        {**call, "call_id": "c1"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "B"}]},
        {**call, "call_id": "c2"},
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
        {"type": "function_call_output", "call_id": "c2", "output": "2"},
        {"role": "assistant", "content": "done"}]}
    turn, *_, last = chat_body(body)["messages"][1:]
    assert turn["reasoning_content"] == "A\nB" and len(turn["tool_calls"]) == 2
    assert last == {"role": "assistant", "content": "done"}


def test_allowed_tools_is_auto_and_other_tool_choices_are_refused_in_this_apis_words(
        tiny_listener):
    allowed = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "f"}]}
    assert chat_body({"input": "q", "tool_choice": allowed})["tool_choice"] == "auto"
    reply = httpx.post(f"{tiny_listener.url}/responses",
                       json={"input": "q", "tool_choice": {"type": "custom", "name": "g"}},
                       headers={"Authorization": f"Bearer {tiny_listener.token}"})
    assert reply.status_code == 400 and reply.json()["error"]["param"] == "tool_choice"
    assert reply.json()["error"]["message"].endswith(
        'send "auto", "none", {"type": "allowed_tools", "mode": "auto", ...} or {"type": '
        '"function", "name": ...}.')


def test_a_failure_mid_stream_is_an_error_event_then_response_failed(tiny_engine):
    from mlx_notebook.engine import Error

    request = tiny_engine.admit({"messages": [{"role": "user", "content": "q"}]})
    named = {"request": request, "request_id": "chatcmpl-x", "created": 0, "body": {}}
    stream = ResponseEvents(**named)
    events = stream.start() + stream.feed(Error("The engine stopped.", "server_error"))
    assert [e["type"] for e in events] == ["response.created", "response.in_progress", "error",
                                           "response.failed"]
    assert events[2] | {"sequence_number": 0} == {
        "type": "error", "sequence_number": 0, "code": "server_error",
        "message": "The engine stopped.", "param": None}
    assert events[3]["response"]["status"] == "failed" and stream.end() == []
    with pytest.raises(EngineRequestError, match="The engine stopped."):
        response_object([Error("The engine stopped.", "server_error")], **named)
