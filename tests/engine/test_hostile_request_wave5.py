"""Fifth hostile round on the request path, called in Python (``Engine.chat_completions``,
``completions``, ``submit``, ``inspect``): each test is a body a demanding user sends and what
they see, found failing before its fix."""

from __future__ import annotations

import pytest

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
