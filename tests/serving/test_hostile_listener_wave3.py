"""The listener under a third round of hostile and peer-suite bodies: what a client that fills
every field with null sends, and what the Responses API echoes back.

A Responses reply repeats fields of the request (``metadata``, ``text.format``,
``tool_choice``, ``parallel_tool_calls``); each must stay in the shape the openai SDK's
models read, or every reply to such a request fails a client that validates it. Shapes that
cannot be echoed are refused up front, as OpenAI and vLLM refuse them.
"""

from __future__ import annotations

import httpx
import pytest
from openai.types.responses import Response

pytestmark = pytest.mark.model

_TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]


def _post(listener, path: str, body: dict) -> httpx.Response:
    return httpx.post(f"{listener.url}/{path}", json={"model": "default_model", **body},
                      headers={"Authorization": f"Bearer {listener.token}"}, timeout=60)


def _answer(script: dict) -> str:
    return script["reply"].partition("</think>")[2]


def test_a_null_reasoning_field_is_the_default_as_every_other_null(tiny_listener, script_body,
                                                                     scripts):
    reply = _post(tiny_listener, "chat/completions",
                  script_body("reason_then_answer", reasoning_field=None))
    assert reply.status_code == 200, reply.text
    message = reply.json()["choices"][0]["message"]
    assert message["content"] == _answer(scripts["reason_then_answer"])
    assert message["reasoning"]  # under the engine's default name


def test_a_null_top_logprobs_asks_for_no_logprobs_on_responses(tiny_listener, scripts):
    reply = _post(tiny_listener, "responses", {"input": scripts["reason_then_answer"]["messages"],
                                               "top_logprobs": None})
    assert reply.status_code == 200, reply.text
    text = reply.json()["output"][-1]["content"][0]
    assert text["text"] == _answer(scripts["reason_then_answer"]).lstrip("\n")
    assert text["logprobs"] == []


def test_null_tool_choice_and_parallel_tool_calls_echo_as_the_defaults_served(tiny_listener,
                                                                               scripts):
    body = {"input": scripts["reason_then_answer"]["messages"], "tools": _TOOLS,
            "tool_choice": None, "parallel_tool_calls": None}
    reply = _post(tiny_listener, "responses", body).json()
    Response.model_validate(reply, strict=True)  # the SDK's model reads it
    assert (reply["tool_choice"], reply["parallel_tool_calls"]) == ("auto", True)


@pytest.mark.parametrize("extra, param, said", [
    ({"metadata": {"run": 7}}, "metadata",
     "'metadata' must be an object whose values are strings."),
    ({"metadata": ["run"]}, "metadata", "'metadata' must be an object whose values are strings."),
    ({"text": "json"}, "text",
     "'text' must be an object such as {\"format\": {\"type\": \"text\"}}."),
    ({"text": {"format": "json_object"}}, "text.format",
     "'text.format' must be an object such as {\"type\": \"json_object\"}."),
    ({"text": {"format": {"type": "json_schema", "schema": {"type": "object"}}}},
     "text.format.name",
     "'text.format.name' is required for a json_schema format: give the schema a name."),
    ({"text": {"format": {"type": "json_schema", "name": "answer"}}}, "text.format.schema",
     "'text.format.schema' must be the JSON schema object the answer fits."),
    ({"tools": _TOOLS, "tool_choice": {"type": "allowed_tools", "mode": "auto"}},
     "tool_choice.tools",
     "'tool_choice.tools' must list the allowed tools, e.g. [{\"type\": \"function\", "
     "\"name\": ...}]."),
    ({"tools": [{"type": "function", "function": {"name": "get_weather"}}]}, "tools[0]",
     "'tools[0]' is in chat's shape ({\"function\": {...}}); a Responses tool is flat: "
     "{\"type\": \"function\", \"name\": ..., \"parameters\": ...}."),
])
def test_what_a_response_could_not_echo_readably_is_a_400_naming_the_field(tiny_listener, extra,
                                                                            param, said):
    reply = _post(tiny_listener, "responses", {"input": "Hi.", "max_output_tokens": 4, **extra})
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"] == {"message": said, "type": "invalid_request_error",
                                     "param": param, "code": None}
    # The listener goes on serving.
    assert _post(tiny_listener, "responses", {"input": "Hi.", "max_output_tokens": 2}
                 ).status_code == 200


def test_a_json_schema_format_with_its_name_and_schema_is_served_and_echoed(tiny_listener):
    fmt = {"type": "json_schema", "name": "answer", "schema": {"type": "object"}}
    reply = _post(tiny_listener, "responses", {"input": "Hi.", "max_output_tokens": 4,
                                               "text": {"format": fmt},
                                               "metadata": {"run": "7"}}).json()
    Response.model_validate(reply, strict=True)
    assert (reply["text"]["format"], reply["metadata"]) == (fmt, {"run": "7"})


def test_a_refused_content_part_is_named_by_its_index_and_type(tiny_listener):
    parts = [{"type": "text", "text": "What is in "}, {"type": "text", "text": "this picture?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    reply = _post(tiny_listener, "chat/completions",
                  {"messages": [{"role": "user", "content": parts}]})
    assert reply.status_code == 400
    assert reply.json()["error"] == {
        "message": "'messages[0].content[2]' is not a text part (its type is \"image_url\"); "
                   "this server reads only text parts ({\"type\": \"text\", \"text\": ...}).",
        "type": "invalid_request_error", "param": "messages[0].content", "code": None}
