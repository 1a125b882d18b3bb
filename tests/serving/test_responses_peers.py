"""``POST /v1/responses`` against what peers and clients check: checks ported from vLLM's
Responses API tests (tests/entrypoints/openai/responses/: test_basic, test_simple,
test_function_call, test_consecutive_function_call_merge, test_replayed_input_items and the
event-stack validator of its conftest), the openai SDK's pydantic models and stream
accumulator, and the request bodies openai-agents' ``OpenAIResponsesModel`` and pydantic-ai's
``OpenAIResponsesModel`` send (recorded from those clients run against this listener).

Only what this stateless, text-only server claims is ported; where a peer expects more
(reasoning token counts, structured output), the check is left out.
"""

from __future__ import annotations

import json
import typing

import httpx
import openai
import pytest
from openai.types.responses import Response
from openai.types.responses.response_stream_event import ResponseStreamEvent

from mlx_notebook.engine.request._responses_api import chat_body

pytestmark = pytest.mark.model

_EVENT_TYPES = {
    typing.get_args(cls.model_fields["type"].annotation)[0]: cls
    for cls in typing.get_args(typing.get_args(ResponseStreamEvent)[0])
}
"""Each stream event type the SDK knows, by its ``type``."""

_KNOWN_GAPS: set = set()
"""Fields the SDK's models require that we do not emit (none now; every field is checked)."""

# vLLM's conftest ``pairs_of_event_types``: each done event and the start it closes.
_PAIRS = {
    "response.completed": "response.created",
    "response.output_item.done": "response.output_item.added",
    "response.content_part.done": "response.content_part.added",
    "response.output_text.done": "response.output_text.delta",
    "response.reasoning_text.done": "response.reasoning_text.delta",
    "response.reasoning_part.done": "response.reasoning_part.added",
    "response.function_call_arguments.done": "response.function_call_arguments.delta",
}


def _client(listener) -> openai.OpenAI:
    return openai.OpenAI(base_url=listener.url, api_key=listener.token, max_retries=0)


def _tools(script: dict) -> list[dict]:
    return [{"type": "function", **tool["function"]} for tool in script["tools"]]


def _answer(script: dict) -> str:
    return script["reply"].partition("</think>")[2].lstrip("\n")


def _post(listener, body: dict) -> httpx.Response:
    return httpx.post(f"{listener.url}/responses", json={"model": "default_model", **body},
                      headers={"Authorization": f"Bearer {listener.token}"}, timeout=60)


def _stream(listener, body: dict) -> list[dict]:
    """The raw SSE events of a streamed response, as JSON."""
    with httpx.stream("POST", f"{listener.url}/responses",
                      json={"model": "default_model", **body, "stream": True},
                      headers={"Authorization": f"Bearer {listener.token}"}, timeout=60) as reply:
        text = reply.read().decode()
    return [json.loads(frame.split("\n")[1].removeprefix("data: "))
            for frame in text.split("\n\n") if frame]


def _problems(model, data: dict, prefix: tuple = ()) -> list[tuple]:
    """What the SDK's pydantic model finds wrong with ``data``, strictly, less the known gaps."""
    try:
        model.model_validate(data, strict=True)
    except Exception as exc:  # pydantic.ValidationError
        found = [(tuple(map(str, e["loc"])), e["type"]) for e in exc.errors()]
        return [(loc, kind) for loc, kind in found if loc[len(prefix):] not in _KNOWN_GAPS]
    return []


def _validate_event_stack(events: list[dict]) -> None:
    """vLLM's ``validate_streaming_event_stack``: pairing, ordering and field consistency
    (item_id, output_index, content_index) of a stream's events."""
    stack: list[str] = []
    for event in events:
        kind = event["type"]
        if kind in _PAIRS:
            assert stack and stack[-1] == _PAIRS[kind], (kind, stack)
            stack.pop()
        elif kind in _PAIRS.values():
            if kind.endswith("delta") and stack and stack[-1] == kind:
                continue
            stack.append(kind)
    assert stack == []
    kinds = [event["type"] for event in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [i for i, kind in enumerate(kinds) if kind == "response.in_progress"] == [1]
    assert kinds.count("response.created") == kinds.count("response.completed") == 1
    active, last_index = None, -1
    for event in events:
        kind = event["type"]
        if kind in ("response.created", "response.in_progress", "response.completed"):
            continue
        if kind == "response.output_item.added":
            assert event["item"]["id"] and event["output_index"] >= last_index
            active, last_index = (event["item"]["id"], event["output_index"]), event["output_index"]
        elif kind == "response.output_item.done":
            assert (event["item"]["id"], event["output_index"]) == active
            active = None
        else:
            assert (event["item_id"], event["output_index"]) == active, (kind, active)
            if "content_index" in event:
                assert event["content_index"] == 0


# -- the SDK's models ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["reason_then_answer", "single_tool_call", "parallel_tool_calls"])
def test_every_field_validates_against_the_sdks_models(tiny_listener, scripts, name):
    script = scripts[name]
    body = {"input": script["messages"], **({"tools": _tools(script)} if "tools" in script else {})}
    whole = _post(tiny_listener, body).json()
    assert _problems(Response, whole) == []
    events = _stream(tiny_listener, body)
    for event in events:
        assert event["type"] in _EVENT_TYPES
        assert _problems(_EVENT_TYPES[event["type"]], event, ("response",)) == [], event["type"]
    # The SDK's accumulator: the lifecycle events keep one response id.
    assert {e["response"]["id"] for e in events if "response" in e} == {events[0]["response"]["id"]}
    assert events[0]["response"]["status"] == "in_progress"
    assert events[0]["response"]["usage"] is None


def test_an_incomplete_response_validates_too(tiny_listener, scripts):
    body = {"input": scripts["reason_then_answer"]["messages"], "max_output_tokens": 5}
    whole = _post(tiny_listener, body).json()
    assert _problems(Response, whole) == []
    assert whole["incomplete_details"] == {"reason": "max_output_tokens"}
    events = _stream(tiny_listener, body)
    assert events[-1]["type"] == "response.incomplete"
    for event in events:
        assert _problems(_EVENT_TYPES[event["type"]], event, ("response",)) == [], event["type"]


# -- vLLM's stream checks --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["reason_then_answer", "single_tool_call", "parallel_tool_calls",
                                  "tool_call_without_thinking"])
def test_stream_events_nest_and_name_their_item(tiny_listener, scripts, name):
    """vLLM's test_streaming_types / test_function_calling_with_streaming_types."""
    script = scripts[name]
    body = {"input": script["messages"]}
    for key in ("chat_template_kwargs",):
        if key in script:
            body[key] = script[key]
    if "tools" in script:
        body["tools"] = _tools(script)
    _validate_event_stack(_stream(tiny_listener, body))


def test_streamed_deltas_add_up_to_the_completed_output_text(tiny_listener, scripts):
    """vLLM's test_streaming_output_consistency, through the SDK's typed events."""
    stream = _client(tiny_listener).responses.create(
        model="default_model", input=scripts["long_story"]["messages"], stream=True)
    events = list(stream)
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert events[-1].type == "response.completed"
    assert events[-1].response.status == "completed" and events[-1].response.output
    assert text == events[-1].response.output_text == _answer(scripts["long_story"])


def test_streamed_call_arguments_add_up_to_the_done_item(tiny_listener, scripts):
    """vLLM's test_function_calling_with_streaming_expected_arguments."""
    script = scripts["parallel_tool_calls"]
    stream = _client(tiny_listener).responses.create(
        model="default_model", input=script["messages"], tools=_tools(script), stream=True)
    added, done = {}, {}
    for event in stream:
        if event.type == "response.output_item.added" and event.item.type == "function_call":
            added[event.output_index] = event.item
        elif event.type == "response.function_call_arguments.delta":
            added[event.output_index].arguments += event.delta
        elif event.type == "response.output_item.done" and event.item.type == "function_call":
            done[event.output_index] = event.item
    assert added.keys() == done.keys() and len(done) == 2
    for index, item in done.items():
        assert (added[index].arguments, added[index].name, added[index].call_id) == \
            (item.arguments, item.name, item.call_id)
        assert added[index].id == item.id
    assert [json.loads(item.arguments)["city"] for _, item in sorted(done.items())] == \
        ["Tokyo", "Oslo"]


def test_the_sdks_accumulator_builds_parallel_calls_as_the_whole_response(tiny_listener, scripts):
    script = scripts["parallel_tool_calls"]
    client = _client(tiny_listener)
    kwargs = {"model": "default_model", "input": script["messages"], "tools": _tools(script)}
    with client.responses.stream(**kwargs) as stream:
        final = stream.get_final_response()
    whole = client.responses.create(**kwargs)

    def shown(response):
        return [(i.type, i.status, getattr(i, "name", None), getattr(i, "arguments", None))
                for i in response.output]

    assert shown(final) == shown(whole)
    ids = [item.id for item in final.output]
    assert len(set(ids)) == len(ids)


# -- vLLM's input-item checks (test_basic, test_simple, test_replayed_input_items) -----------------
def test_input_text_parts_are_a_users_message(tiny_listener, scripts):
    """vLLM's test_chat_with_input_type."""
    script = scripts["reason_then_answer"]
    question = script["messages"][0]["content"]
    response = _client(tiny_listener).responses.create(model="default_model", input=[
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": question}]}])
    assert response.status == "completed" and response.output_text == _answer(script)


@pytest.mark.parametrize("with_ids", [True, False])
def test_replayed_history_with_or_without_ids_and_status(tiny_listener, scripts, with_ids):
    """vLLM's test_input_history_openai_shape_e2e / ..._openresponses_shape_e2e and
    test_multiturn_history_replay_without_ids_e2e: an assistant output message and its
    reasoning item, with or without the server's ``id``, ``status`` and ``annotations``."""
    script = scripts["follow_up_turn"]
    user, assistant, again = script["messages"]
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": None,
                 "content": [{"type": "reasoning_text", "text": assistant["reasoning_content"]}]}
    message = {"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": assistant["content"]}]}
    if with_ids:
        reasoning |= {"id": "rs_hist_1", "status": "completed"}
        message |= {"id": "msg_hist_1", "status": "completed"}
        message["content"][0] |= {"annotations": [], "logprobs": []}
    response = _client(tiny_listener).responses.create(model="default_model", input=[
        {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                         "text": user["content"]}]},
        reasoning, message, {"type": "message", "role": "user", "content": again["content"]}])
    assert response.status == "completed" and response.incomplete_details is None
    assert response.output_text == _answer(script)


def test_a_trailing_reasoning_item_is_accepted():
    """vLLM's test_reasoning_item: a reasoning item after the last message."""
    body = {"input": [{"type": "message", "content": "Hello.", "role": "user"},
                      {"type": "reasoning", "id": "lol", "summary": [],
                       "content": [{"type": "reasoning_text", "text": "A greeting."}]}]}
    assert chat_body(body)["messages"] == [{"role": "user", "content": "Hello."}]


def _call(n: str) -> dict:
    return {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": f"fn_{n}",
            "arguments": '{"k": "v"}', "status": "completed"}


def _output(n: str) -> dict:
    return {"type": "function_call_output", "id": f"fco_{n}", "call_id": f"call_{n}",
            "output": f"result_{n}", "status": "completed"}


def _shape(messages: list[dict]) -> list[tuple]:
    return [(m["role"], [c["id"] for c in m.get("tool_calls", [])]) for m in messages]


@pytest.mark.parametrize("items, shape", [
    ([_call("1"), _call("2")], [("assistant", ["call_1", "call_2"])]),
    ([_call("a"), _call("b"), _call("c")], [("assistant", ["call_a", "call_b", "call_c"])]),
    ([_call("a"), _output("a"), _call("b")],
     [("assistant", ["call_a"]), ("tool", []), ("assistant", ["call_b"])]),
    ([_call("a"), _call("b"), _output("a"), _output("b")],
     [("assistant", ["call_a", "call_b"]), ("tool", []), ("tool", [])]),
])
def test_consecutive_function_calls_are_one_assistant_turn(items, shape):
    """vLLM's test_consecutive_function_call_merge (its message-then-call case aside: here a
    call after an assistant message joins that message's turn, as chat writes one turn)."""
    messages = chat_body({"input": [{"role": "user", "content": "q"}, *items]})["messages"][1:]
    assert _shape(messages) == shape
    calls = [call for m in messages for call in m.get("tool_calls", [])]
    assert all(c["type"] == "function" and c["function"]["arguments"] == '{"k": "v"}'
               for c in calls)
    assert [m["content"] for m in messages if m["role"] == "tool"] == \
        [item["output"] for item in items if item["type"] == "function_call_output"]


def test_a_function_call_output_given_as_text_parts_is_its_text():
    body = {"input": [{"role": "user", "content": "q"}, _call("1"),
                      {"type": "function_call_output", "call_id": "call_1",
                       "output": [{"type": "input_text", "text": "sunny, "},
                                  {"type": "input_text", "text": "18 C"}]}]}
    assert chat_body(body)["messages"][-1] == {"role": "tool", "tool_call_id": "call_1",
                                               "content": "sunny, 18 C"}


def test_extra_sampling_params_are_accepted(tiny_listener, scripts):
    """vLLM's test_extra_sampling_params (and test_streaming_types' ``tools: []`` and
    ``background: false``)."""
    response = _client(tiny_listener).responses.create(
        model="default_model", input=scripts["reason_then_answer"]["messages"],
        max_output_tokens=5, temperature=0.7, top_p=0.9, tools=[], background=False,
        reasoning={"effort": "low"}, extra_body={"top_k": 40, "repetition_penalty": 1.2,
                                                  "seed": 42})
    assert response.status in ("completed", "incomplete") and response.output


# -- what openai-agents and pydantic-ai send ---------------------------------------------------
def test_the_fields_agent_frameworks_send_are_served(tiny_listener, scripts):
    """openai-agents' ModelSettings (include, store, truncation, reasoning, verbosity, metadata,
    prompt_cache_retention, parallel_tool_calls) and pydantic-ai's settings, all at once."""
    script = scripts["reason_then_answer"]
    body = {"input": script["messages"], "include": ["reasoning.encrypted_content"],
            "store": False, "truncation": "auto", "reasoning": {"effort": "low",
                                                                "summary": "auto"},
            "text": {"format": {"type": "text"}, "verbosity": "low"}, "metadata": {"k": "v"},
            "prompt_cache_key": "key", "prompt_cache_retention": "24h",
            "safety_identifier": "user-1", "service_tier": "auto", "max_tool_calls": 3,
            "parallel_tool_calls": False, "conversation": None, "previous_response_id": None,
            "prompt": None, "background": False}
    reply = _post(tiny_listener, body)
    assert reply.status_code == 200
    response = Response.model_validate(reply.json() | {"usage": None})
    assert response.output_text == _answer(script) and response.status == "completed"
    assert (response.metadata, response.parallel_tool_calls, response.store) == \
        ({"k": "v"}, False, False)


@pytest.mark.parametrize("client", ["openai-agents", "pydantic-ai"])
def test_a_frameworks_second_turn_body_is_served(tiny_listener, scripts, client):
    """The second turn of a tool loop as each framework sent it (its items replayed from this
    server's first reply): openai-agents keeps each item's ``id`` and ``status`` and sends
    ``include: []``; pydantic-ai drops the call's ``id``, sends ``encrypted_content: null`` and
    ``tool_choice: "auto"``. (Both send ``strict`` on the tool, left out here: it is rendered
    into the prompt, which the scripted model must see as scripted.)"""
    asked = scripts["single_tool_call"]
    first = _post(tiny_listener, {"input": asked["messages"], "tools": _tools(asked),
                                  "include": [], "tool_choice": "auto"}).json()
    reasoning, call = first["output"]
    result = scripts["answer_from_tool_result"]["messages"][2]["content"]
    if client == "openai-agents":
        items = [reasoning, call]
        extra = {"include": []}
    else:
        items = [{"id": reasoning["id"], "summary": [], "encrypted_content": None,
                  "type": "reasoning", "content": reasoning["content"]},
                 {k: call[k] for k in ("name", "arguments", "call_id", "type")}]
        extra = {"tool_choice": "auto", "stream": False}
    body = {"input": [*asked["messages"], *items, {"type": "function_call_output",
                                                   "call_id": call["call_id"],
                                                   "output": result}],
            "tools": _tools(asked), **extra}
    reply = _post(tiny_listener, body).json()
    assert [item["type"] for item in reply["output"]] == ["reasoning", "message"]
    assert reply["output"][1]["content"][0]["text"] == \
        _answer(scripts["answer_from_tool_result"])
    # What the frameworks read of the usage.
    usage = reply["usage"]
    assert usage["input_tokens_details"]["cached_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert isinstance(usage["output_tokens_details"]["reasoning_tokens"], int)


def test_tool_choice_none_offers_no_tools(tiny_listener, scripts):
    script = scripts["reason_then_answer"]
    tools = _tools(scripts["single_tool_call"])
    response = _client(tiny_listener).responses.create(
        model="default_model", input=script["messages"], tools=tools, tool_choice="none")
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output_text == _answer(script) and response.tool_choice == "none"
