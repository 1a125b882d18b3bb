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
