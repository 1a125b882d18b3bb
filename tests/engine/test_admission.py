"""Admission turns OpenAI bodies into requests with mlx_lm.server's defaults, or names the bad field."""

from __future__ import annotations

import pytest

from mlx_notebook.engine import EngineConfig, EngineRequestError
from mlx_notebook.engine.request._admission import GREEDY_BELOW, ModelLimits, admit

CONFIG = EngineConfig()
USER = [{"role": "user", "content": "Hi"}]


def chat(**body):
    return admit({"messages": USER, **body}, kind="chat", config=CONFIG)


def test_defaults_match_mlx_lm_server():
    r = chat()
    assert (r.sampling.temperature, r.sampling.top_p, r.sampling.top_k, r.sampling.min_p) == (
        0.0, 1.0, 0, 0.0)
    assert (r.sampling.xtc_probability, r.sampling.xtc_threshold) == (0.0, 0.1)
    p = r.penalties
    assert (p.repetition_penalty, p.repetition_context_size) == (0.0, 20)
    assert (p.presence_penalty, p.presence_context_size) == (0.0, 20)
    assert (p.frequency_penalty, p.frequency_context_size) == (0.0, 20)
    assert r.max_tokens == 512 and r.stop == () and r.seed is None
    assert not r.logprobs and r.top_logprobs == 0 and not r.stream
    assert r.reasoning_field == "reasoning" and r.model == "default_model"


def test_engine_defaults_and_body_override_in_that_order():
    config = EngineConfig(default_sampling={"temperature": 0.7, "max_tokens": 64})
    r = admit({"messages": USER, "max_tokens": 9}, kind="chat", config=config)
    assert r.sampling.temperature == 0.7 and r.max_tokens == 9


def test_a_served_top_logprobs_default_does_not_refuse_a_body_with_logprobs_false():
    config = EngineConfig(default_sampling={"top_logprobs": 3})
    r = admit({"messages": USER, "logprobs": False}, kind="chat", config=config)
    assert r.top_logprobs == 3  # as before: the server's default still asks for them


def test_max_completion_tokens_wins_over_max_tokens():
    assert chat(max_tokens=5, max_completion_tokens=7).max_tokens == 7


def test_options_are_read():
    r = chat(temperature=0.5, top_p=0.9, top_k=40, min_p=0.05, stop="END", seed=3,
             logit_bias={"12": -100}, logprobs=True, top_logprobs=3, stream=True,
             stream_options={"include_usage": True},
             chat_template_kwargs={"enable_thinking": False},
             reasoning_field="reasoning_content")
    assert r.sampling.top_k == 40 and r.stop == ("END",) and r.seed == 3
    assert r.penalties.logit_bias == ((12, -100.0),)
    assert r.logprobs and r.top_logprobs == 3 and r.include_usage
    assert r.template_kwargs == {"enable_thinking": False}
    assert r.reasoning_field == "reasoning_content"


def test_reasoning_is_accepted_under_either_name_on_input():
    for key in ("reasoning", "reasoning_content"):
        r = admit({"messages": [*USER, {"role": "assistant", "content": "x", key: "because"},
                                {"role": "user", "content": "and?"}]},
                  kind="chat", config=CONFIG)
        assert r.messages[1]["reasoning_content"] == "because"


def test_tool_call_arguments_given_as_json_text_become_objects_for_the_template():
    call = {"id": "c1", "type": "function",
            "function": {"name": "f", "arguments": '{"city": "Paris"}'}}
    r = chat(messages=[*USER, {"role": "assistant", "content": None, "tool_calls": [call]},
                       {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])
    assert r.messages[1]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}


def test_legacy_completions_logprobs_count():
    r = admit({"prompt": "x", "logprobs": 2}, kind="completion", config=CONFIG)
    assert r.logprobs and r.top_logprobs == 2


BAD = [
    ({"messages": []}, "messages"),
    ({"messages": "hi"}, "messages"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"content": "x"}]}, "messages[0].role"),
    ({"messages": ["hello"]}, "messages[0]"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": None}]}, "messages[0].content"),
    ({"messages": USER, "temperature": -1}, "temperature"),
    ({"messages": USER, "temperature": "hot"}, "temperature"),
    ({"messages": USER, "top_p": 1.5}, "top_p"),
    ({"messages": USER, "top_k": 2.5}, "top_k"),
    ({"messages": USER, "min_p": -0.1}, "min_p"),
    ({"messages": USER, "max_tokens": 0}, "max_tokens"),
    ({"messages": USER, "max_tokens": True}, "max_tokens"),
    ({"messages": USER, "max_completion_tokens": -3}, "max_completion_tokens"),
    ({"messages": USER, "repetition_penalty": -1}, "repetition_penalty"),
    ({"messages": USER, "repetition_context_size": -1}, "repetition_context_size"),
    ({"messages": USER, "presence_penalty": "x"}, "presence_penalty"),
    ({"messages": USER, "frequency_context_size": 1.5}, "frequency_context_size"),
    ({"messages": USER, "xtc_probability": 2}, "xtc_probability"),
    ({"messages": USER, "xtc_threshold": -1}, "xtc_threshold"),
    ({"messages": USER, "logit_bias": {"a": 1}}, "logit_bias"),
    ({"messages": USER, "logit_bias": [1]}, "logit_bias"),
    ({"messages": USER, "stop": 5}, "stop"),
    ({"messages": USER, "logprobs": "yes"}, "logprobs"),
    ({"messages": USER, "top_logprobs": 50}, "top_logprobs"),
    ({"messages": USER, "logprobs": False, "top_logprobs": 3}, "top_logprobs"),
    ({"messages": USER, "seed": "42"}, "seed"),
    ({"messages": USER, "seed": -1}, "seed"),
    ({"messages": USER, "seed": 2**64}, "seed"),
    ({"messages": USER, "stream": "true"}, "stream"),
    ({"messages": USER, "stream_options": 1}, "stream_options"),
    ({"messages": USER, "chat_template_kwargs": "x"}, "chat_template_kwargs"),
    ({"messages": USER, "tools": {"f": 1}}, "tools"),
    ({"messages": USER, "tools": [{"type": "function", "function": {}}]}, "tools[0].function"),
    ({"messages": USER, "tools": [{"type": "retrieval"}]}, "tools[0]"),
    ({"messages": USER, "n": 2}, "n"),
    ({"messages": USER, "model": 7}, "model"),
    ({"messages": USER, "reasoning_field": "thoughts"}, "reasoning_field"),
    ({"messages": [*USER, {"role": "assistant", "content": None,
                           "tool_calls": [{"function": {"name": "f", "arguments": "{bad"}}]}]},
     "messages[1].tool_calls[0].function.arguments"),
    ({"messages": [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"function": {"name": "f", "arguments": '{"n": ' + "9" * 5000 + "}"}}]}]},
     "messages[1].tool_calls[0].function.arguments"),
]


BAD += [
    ({"messages": USER, "temperature": float("nan")}, "temperature"),
    ({"messages": USER, "temperature": 2.01}, "temperature"),
    ({"messages": USER, "top_p": float("inf")}, "top_p"),
    ({"messages": USER, "xtc_threshold": 0.51}, "xtc_threshold"),
    ({"messages": USER, "presence_penalty": 2.5}, "presence_penalty"),
    ({"messages": USER, "repetition_penalty": 1e-9}, "repetition_penalty"),
    ({"messages": USER, "repetition_context_size": 2**31}, "repetition_context_size"),
    ({"messages": USER, "logit_bias": {"-3": 1}}, "logit_bias"),
    ({"messages": USER, "logit_bias": {" 12": 1}}, "logit_bias"),
    ({"messages": USER, "logit_bias": {"12": float("inf")}}, "logit_bias"),
    ({"messages": USER, "n": 1.0}, "n"),
    ({"messages": USER, "stop": ["x" * 513]}, "stop"),
    ({"messages": USER, "tool_choice": "any"}, "tool_choice"),
    ({"messages": USER, "tool_choice": {"type": "function", "function": {"name": "f"}}},
     "tool_choice"),
    ({"messages": USER, "response_format": {"type": "json"}}, "response_format.type"),
    ({"messages": USER, "response_format": {"type": "json_schema", "json_schema": {
        "schema": {"type": "nonsense"}}}}, "response_format.json_schema.schema"),
    ({"messages": USER, "guided_json": {"type": "object"}}, "guided_json"),
    ({"messages": USER, "grammar": "root ::= \"a\""}, "grammar"),
    ({"messages": USER, "echo": True}, "echo"),
    ({"messages": USER, "functions": []}, "functions"),
    ({"messages": USER, "chat_template_kwargs": {"tools": []}}, "chat_template_kwargs.tools"),
    ({"messages": USER, "chat_template_kwargs": {"a-b": 1}}, "chat_template_kwargs"),
    ({"messages": [{"role": "user", "content": "x", "name": 3}]}, "messages[0].name"),
    ({"messages": [{"role": "user\ud800", "content": "x"}]}, "messages[0].role"),
    ({"messages": USER, "role_mapping": {"user": 1}}, "role_mapping"),
    ({"messages": USER, "tools": [{"type": "function", "function": {"name": ""}}]},
     "tools[0].function"),
]


@pytest.mark.parametrize("body,param", BAD, ids=[p for _, p in BAD])
def test_bad_input_names_the_field(body, param):
    with pytest.raises(EngineRequestError) as info:
        admit(body, kind="chat", config=CONFIG)
    error = info.value.error
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"
    assert error["message"].endswith(".")


def test_completion_prompt_must_be_text():
    with pytest.raises(EngineRequestError) as info:
        admit({"prompt": 12}, kind="completion", config=CONFIG)
    assert info.value.param == "prompt"


def test_unknown_model_is_refused_with_model_not_found():
    with pytest.raises(EngineRequestError) as info:
        admit({"messages": USER, "model": "gpt-9"}, kind="chat", config=CONFIG,
              accepted_models=frozenset({"smollm2"}))
    assert info.value.error["code"] == "model_not_found"
    assert "smollm2" in info.value.message


def test_model_limits_bound_token_ids_top_k_and_max_tokens():
    limits = ModelLimits(vocab_size=100, context_length=64)
    ok = admit({"messages": USER, "logit_bias": {"99": 1}, "top_k": 99, "max_tokens": 64},
               kind="chat", config=CONFIG, limits=limits)
    assert ok.penalties.logit_bias == ((99, 1.0),) and ok.sampling.top_k == 99
    for extra, param in (({"logit_bias": {"100": 1}}, "logit_bias"), ({"top_k": 100}, "top_k"),
                         ({"max_tokens": 65}, "max_tokens"), ({"top_logprobs": 101}, "top_logprobs")):
        with pytest.raises(EngineRequestError) as info:
            admit({"messages": USER, **extra}, kind="chat", config=CONFIG, limits=limits)
        assert info.value.param == param


def test_tiny_temperatures_decode_greedily():
    assert chat(temperature=1e-300).sampling.greedy
    assert chat(temperature=GREEDY_BELOW).sampling.temperature == GREEDY_BELOW


def test_tool_choice_none_offers_no_tools_and_auto_offers_them():
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert chat(tools=tools, tool_choice="none").tools is None
    assert chat(tools=tools, tool_choice="auto").tools == tuple(tools)
    assert chat(tools=[]).tools is None


def test_nesting_is_bounded_without_recursion_error():
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(EngineRequestError) as info:
        chat(metadata={"x": deep})
    assert info.value.message == "'metadata' is nested more than 64 levels deep; flatten it."


def test_completions_take_an_empty_prompt_and_one_item_lists():
    assert admit({"prompt": ""}, kind="completion", config=CONFIG).prompt == ""
    assert admit({"prompt": ["x"]}, kind="completion", config=CONFIG).prompt == "x"


PREFIX = USER + [{"role": "assistant", "content": '{"answer": "'}]


@pytest.mark.parametrize("body, param, says", [
    ({"messages": PREFIX, "continue_final_message": True, "add_generation_prompt": True},
     "add_generation_prompt", "cannot both be true"),
    ({"messages": USER, "continue_final_message": True}, "messages", "last message to be an assistant"),
    ({"messages": USER + [{"role": "assistant", "content": ""}], "continue_final_message": True},
     "messages", "with the text to go on from"),
    ({"messages": PREFIX, "continue_final_message": "yes"}, "continue_final_message", "true or false"),
    ({"messages": PREFIX, "chat_template_kwargs": {"continue_final_message": True}},
     "chat_template_kwargs.continue_final_message", "at the top level of the body"),
])
def test_continue_final_message_is_refused_where_it_cannot_apply(body, param, says):
    with pytest.raises(EngineRequestError) as e:
        admit(body, kind="chat", config=CONFIG)
    assert e.value.param == param and says in str(e.value)


def test_continue_final_message_turns_the_generation_prompt_off_and_completions_refuse_it():
    r = admit({"messages": PREFIX, "continue_final_message": True}, kind="chat", config=CONFIG)
    assert r.continue_final_message and not r.add_generation_prompt
    assert chat().add_generation_prompt and not chat().continue_final_message
    with pytest.raises(EngineRequestError, match="applies to chat requests only"):
        admit({"prompt": "x", "continue_final_message": False}, kind="completion", config=CONFIG)
