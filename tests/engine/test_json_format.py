"""``response_format`` JSON: answers decoded to fit a schema, on the real SmolLM2 and the
tiny reasoner, through the engine, the listener and the openai SDK's ``parse``."""

from __future__ import annotations

import json
import threading

import openai
import pydantic
import pytest

from mlx_notebook.engine import EngineRequestError
from mlx_notebook.engine.serving import Listener

pytestmark = pytest.mark.model

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
ASK = [{"role": "user", "content": "Describe a person as JSON with name and age."}]


def _schema(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "person", "schema": schema}}


def _content(reply: dict) -> str:
    return reply["choices"][0]["message"]["content"]


def test_an_answer_fits_its_schema_streamed_or_not_in_the_schemas_key_order(smollm2_engine):
    body = {"messages": ASK, "max_tokens": 60, "response_format": _schema(PERSON)}
    whole = smollm2_engine.chat_completions(body)
    person = json.loads(_content(whole))
    assert list(person) == ["name", "age"]
    assert isinstance(person["name"], str) and type(person["age"]) is int
    assert whole["choices"][0]["finish_reason"] == "stop"  # the turn ends with the JSON
    streamed = "".join(chunk["choices"][0]["delta"].get("content") or ""
                       for chunk in smollm2_engine.chat_completions({**body, "stream": True}))
    assert streamed == _content(whole)
    # Free text from the same question is no JSON: the format is what made it so.
    free = _content(smollm2_engine.chat_completions({"messages": ASK, "max_tokens": 60}))
    with pytest.raises(ValueError):
        json.loads(free)


def test_json_object_is_an_object_and_text_is_free(smollm2_engine):
    reply = smollm2_engine.chat_completions(
        {"messages": ASK, "max_tokens": 60, "response_format": {"type": "json_object"}})
    assert isinstance(json.loads(_content(reply)), dict)
    text = smollm2_engine.chat_completions(
        {"messages": ASK, "max_tokens": 8, "response_format": {"type": "text"}})
    assert smollm2_engine.admit({"messages": ASK, "response_format": {"type": "text"}}) \
        .response_format is None and _content(text)


@pytest.mark.parametrize("fmt, param, said", [
    ({"type": "json_schema", "json_schema": {"schema": {"type": "nonsense"}}},
     "response_format.json_schema.schema",
     "The JSON schema of 'response_format' cannot be decoded to: Invalid type: nonsense."),
    ({"type": "xml"}, "response_format.type",
     "'response_format' type must be \"text\", \"json_object\" or \"json_schema\"."),
    ({"type": "json_schema"}, "response_format.json_schema",
     "'response_format.json_schema' must be an object whose 'schema' is a JSON schema object."),
    ("json", "response_format",
     "'response_format' must be an object such as {\"type\": \"json_object\"}."),
])
def test_a_format_that_cannot_be_decoded_to_is_refused_naming_its_part(smollm2_engine, fmt, param,
                                                                       said):
    with pytest.raises(EngineRequestError) as caught:
        smollm2_engine.submit({"messages": ASK, "response_format": fmt})
    assert (caught.value.error["param"], caught.value.error["message"]) == (param, said)


def test_a_completion_takes_no_json_format(smollm2_engine):
    with pytest.raises(EngineRequestError, match="'response_format' is for chat requests"):
        smollm2_engine.completions({"prompt": "x", "response_format": {"type": "json_object"}})


def test_a_reasoning_model_thinks_freely_then_answers_in_json(tiny_engine, scripts):
    reply = tiny_engine.chat_completions(
        {"messages": scripts["reason_then_answer"]["messages"], "max_tokens": 60,
         "response_format": {"type": "json_object"}})
    message = reply["choices"][0]["message"]
    thought = scripts["reason_then_answer"]["reply"].split("<think>")[1].split("</think>")[0]
    assert message["reasoning"] == thought  # the reasoning as the script has it
    assert message["content"].startswith('{"')  # then the answer is held to JSON


def test_a_json_request_beside_a_free_one_leaves_it_as_it_is_alone(smollm2_engine):
    free = {"messages": [{"role": "user", "content": "Name three colours."}], "max_tokens": 24}
    alone = _content(smollm2_engine.chat_completions(free))
    replies: dict = {}
    start = threading.Barrier(2)

    def ask(name, body):
        start.wait()
        replies[name] = _content(smollm2_engine.chat_completions(body))

    threads = [threading.Thread(target=ask, args=("free", free)),
               threading.Thread(target=ask, args=("json", {
                   "messages": ASK, "max_tokens": 60, "response_format": _schema(PERSON)}))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert replies["free"] == alone
    assert set(json.loads(replies["json"])) == {"name", "age"}


class Person(pydantic.BaseModel):
    name: str
    age: int


def test_the_sdks_parse_gets_its_model_over_chat_and_responses(smollm2_engine):
    with Listener(smollm2_engine, port=0) as listener:
        client = openai.OpenAI(base_url=listener.url, api_key=listener.token, max_retries=0)
        chat = client.chat.completions.parse(model="default_model", messages=ASK, max_tokens=60,
                                             response_format=Person)
        assert isinstance(chat.choices[0].message.parsed, Person)
        response = client.responses.parse(model="default_model", input=ASK,
                                          max_output_tokens=60, text_format=Person)
        assert isinstance(response.output_parsed, Person)
        assert response.text.format.type == "json_schema"


@pytest.mark.parametrize("schema, said", [
    ({"type": "string", "pattern": "[unclosed"},
     "regex parse error: [unclosed ^ error: unclosed character class."),
    ({"type": "integer", "minimum": 5, "maximum": 1},
     "Unsatisfiable schema: minimum (5) is greater than maximum (1)."),
    ({"$ref": "http://example.com/schema.json"}, "Resource 'http://example.com/schema.json'"),
])
def test_a_schema_that_cannot_be_compiled_is_refused_in_one_line(smollm2_engine, schema, said):
    with pytest.raises(EngineRequestError) as caught:
        smollm2_engine.admit({"messages": ASK, "response_format": _schema(schema)})
    message = caught.value.error["message"]
    assert message.startswith("The JSON schema of 'response_format' cannot be decoded to: ")
    assert said in message and "\n" not in message and len(message) < 400
