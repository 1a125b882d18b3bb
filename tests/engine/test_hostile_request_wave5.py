"""Fifth hostile round on the request path, called in Python (``Engine.chat_completions``,
``completions``, ``submit``, ``inspect``): each test is a body a demanding user sends and what
they see, found failing before its fix."""

from __future__ import annotations

import pytest

from mlx_notebook.engine import EngineRequestError

pytestmark = pytest.mark.model

_CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _weather(**extra) -> dict:
    return {"messages": [{"role": "user", "content": "What's the weather in Paris?"}],
            "max_tokens": 24, **extra}


def test_a_json_schema_holds_when_thinking_is_disabled(tiny_engine):
    # The template closed the reasoning (<think>\n\n</think>); the grammar let the model open
    # another <think> first, which it never closed: the answer was empty, not JSON.
    reply = tiny_engine.chat_completions(_weather(
        chat_template_kwargs={"enable_thinking": False},
        response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": _CITY}}))
    message = reply["choices"][0]["message"]
    assert message["content"].startswith('{"city": "')
    assert not message.get("reasoning")


@pytest.mark.parametrize("bad", ["x", 0, -3, 1.5])
def test_a_bad_max_tokens_beside_max_completion_tokens_is_named(tiny_engine, bad):
    # max_completion_tokens wins, but a max_tokens beside it that is no token count was
    # silently ignored.
    with pytest.raises(EngineRequestError) as caught:
        tiny_engine.chat_completions(_weather(max_tokens=bad, max_completion_tokens=3))
    assert caught.value.param == "max_tokens"
    assert "'max_tokens' must be" in caught.value.message


def test_max_completion_tokens_wins_over_a_valid_max_tokens(tiny_engine):
    reply = tiny_engine.chat_completions(_weather(max_tokens=9, max_completion_tokens=3))
    assert reply["usage"]["completion_tokens"] == 3


@pytest.mark.parametrize("schema", [
    {"$ref": "#"},
    {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}},
    {"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}, "required": ["a"]},
])
@pytest.mark.parametrize("thinking", [True, False])
def test_a_schema_no_json_fits_fails_in_a_sentence_not_as_an_empty_answer(
        tiny_engine, schema, thinking):
    # llguidance compiles these, then allows nothing: the reply was "" or '{"a": ' with
    # finish_reason "stop", as if it were the answer.
    body = _weather(max_tokens=60, chat_template_kwargs={"enable_thinking": thinking}, response_format={
        "type": "json_schema", "json_schema": {"name": "loop", "schema": schema}})
    with pytest.raises(EngineRequestError) as caught:
        tiny_engine.chat_completions(body)
    assert caught.value.message.startswith(
        "The reply cannot go on within the JSON schema of 'response_format'")
    # The engine goes on serving: a schema that has values is decoded to it.
    reply = tiny_engine.chat_completions(_weather(
        chat_template_kwargs={"enable_thinking": False},
        response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": _CITY}}))
    assert reply["choices"][0]["message"]["content"].startswith('{"city": "')
    assert tiny_engine.active_requests == 0


_TWO_TOOLS = [{"type": "function", "function": {"name": name, "parameters": _CITY}}
              for name in ("get_weather", "get_time")]


def _allowed(mode: str, *names: str) -> dict:
    return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": [
        {"type": "function", "function": {"name": name}} for name in names]}}


def _calls(reply: dict) -> list[str]:
    return [c["function"]["name"] for c in reply["choices"][0]["message"].get("tool_calls") or ()]


def test_allowed_tools_required_calls_only_an_allowed_tool(tiny_engine):
    # OpenAI's allowed_tools form was refused on chat; through the Responses API its
    # "required" mode forced a call of any tool, the ones not allowed included.
    body = _weather(max_tokens=60, tools=_TWO_TOOLS, chat_template_kwargs={"enable_thinking": False})
    assert _calls(tiny_engine.chat_completions({**body, "tool_choice": "required"})) == [
        "get_weather"]
    reply = tiny_engine.chat_completions({**body, "tool_choice": _allowed("required", "get_time")})
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    assert set(_calls(reply)) == {"get_time"}


def test_responses_allowed_tools_required_keeps_to_the_allowed_tools(tiny_engine):
    from mlx_notebook.engine.request._responses_api import chat_body

    body = chat_body({"input": "What's the weather in Paris?", "max_output_tokens": 60,
                      "chat_template_kwargs": {"enable_thinking": False},
                      "tools": [{"type": "function", "name": t["function"]["name"],
                                 "parameters": _CITY} for t in _TWO_TOOLS],
                      "tool_choice": {"type": "allowed_tools", "mode": "required",
                                      "tools": [{"type": "function", "name": "get_time"}]}})
    assert set(_calls(tiny_engine.chat_completions(body))) == {"get_time"}


@pytest.mark.parametrize("choice, param, said", [
    (_allowed("required", "nope"), "tool_choice.allowed_tools.tools[0]",
     "'tool_choice.allowed_tools.tools[0]' names the function \"nope\", which is not in 'tools'."),
    (_allowed("required"), "tool_choice.allowed_tools", "'tool_choice' allowed_tools must be"),
    (_allowed("any", "get_time"), "tool_choice.allowed_tools", "'tool_choice' allowed_tools must be"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"name": "get_time"}]}},
     "tool_choice.allowed_tools.tools[0]", "'tool_choice.allowed_tools.tools[0]' must be"),
])
def test_a_wrong_allowed_tools_is_named(tiny_engine, choice, param, said):
    with pytest.raises(EngineRequestError) as caught:
        tiny_engine.chat_completions(_weather(tools=_TWO_TOOLS, tool_choice=choice))
    assert caught.value.param == param and caught.value.message.startswith(said)


def test_allowed_tools_auto_offers_the_tools_as_auto_does(tiny_engine):
    body = _weather(tools=_TWO_TOOLS, max_tokens=4)
    assert tiny_engine.inspect({**body, "tool_choice": _allowed("auto", "get_time")}).prompt_text \
        == tiny_engine.inspect(body).prompt_text


def test_a_responses_allowed_tool_not_offered_is_named_in_that_apis_terms(tiny_engine):
    from mlx_notebook.engine.request._responses_api import chat_body, in_responses_terms

    body = {"input": "q", "tools": [{"type": "function", "name": "get_time"}],
            "tool_choice": {"type": "allowed_tools", "mode": "required",
                            "tools": [{"type": "function", "name": "nope"}]}}
    with pytest.raises(EngineRequestError) as caught:
        tiny_engine.admit(chat_body(body))
    error = in_responses_terms(caught.value, body).error
    assert error["param"] == "tool_choice.tools[0]"
    assert error["message"] == ("'tool_choice.tools[0]' names the function \"nope\", which is "
                                "not in 'tools'.")
