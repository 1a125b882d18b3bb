"""Every reproducer of issue 17: refused at admission with the exact error, or served right.

Each hostile body once took the kernel down (an out-of-vocabulary ``logit_bias`` wrote past the
logits), stopped the engine thread for everyone (a sampler raising inside mlx-lm's batched
step), escaped as the wrong exception (a lone surrogate, deep nesting) or was served when it
was invalid. On the tiny reasoner (vocabulary 400, context 2048).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from mlx_notebook.engine import Engine, EngineError, EngineRequestError, Error
from mlx_notebook.engine.request._handle import RequestHandle
from mlx_notebook.engine.request._job import Job
from mlx_notebook.engine.request._responses import collect

pytestmark = pytest.mark.model

M = [{"role": "user", "content": "Hi"}]


def _nested(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


REFUSED = [
    # The kernel crashed (writes past the logits) or failed late with std::bad_cast.
    ({"logit_bias": {"400": 5}}, "logit_bias",
     "'logit_bias' token id \"400\" is out of vocabulary (ids run from 0 to 399; the vocabulary size is 400)."),
    ({"logit_bias": {"1000000": 5}}, "logit_bias",
     "'logit_bias' token id \"1000000\" is out of vocabulary (ids run from 0 to 399; the vocabulary size is 400)."),
    ({"logit_bias": {"-1": 5}}, "logit_bias",
     "'logit_bias' token id \"-1\" is out of vocabulary (ids run from 0 to 399; the vocabulary size is 400)."),
    ({"logit_bias": {str(2**64): 5}}, "logit_bias",
     "'logit_bias' token id \"18446744073709551616\" is out of vocabulary (ids run from 0 to 399; the vocabulary size is 400)."),
    ({"logit_bias": {"400": 5, "12": 1, "401": 2}}, "logit_bias",  # every one named at once
     "'logit_bias' token ids \"400\", \"401\" are out of vocabulary (ids run from 0 to 399; the vocabulary size is 400)."),
    ({"logit_bias": {"1.5": 5}}, "logit_bias",
     "'logit_bias' keys must be integer token ids, got \"1.5\"."),
    ({"logit_bias": {"12": float("nan")}}, "logit_bias",
     "'logit_bias' values must be numbers between -100 and 100, got NaN for token 12."),
    ({"logit_bias": {"12": 101}}, "logit_bias",
     "'logit_bias' values must be numbers between -100 and 100, got 101 for token 12."),
    # The engine thread died, for every request.
    ({"temperature": 1, "top_k": 1000}, "top_k",
     "'top_k' must be at most 399 (the vocabulary size minus one), got 1000."),
    ({"repetition_penalty": 1.1, "repetition_context_size": 10**20}, "repetition_context_size",
     "'repetition_context_size' must be at most 2147483647, got 100000000000000000000."),
    ({"presence_context_size": 2**63, "presence_penalty": 0.5}, "presence_context_size",
     "'presence_context_size' must be at most 2147483647, got 9223372036854775808."),
    ({"min_p": float("nan")}, "min_p", "'min_p' must be a finite number, got nan."),
    ({"xtc_threshold": 0.6}, "xtc_threshold", "'xtc_threshold' must be at most 0.5, got 0.6."),
    # Served although invalid.
    ({"temperature": float("nan")}, "temperature", "'temperature' must be a finite number, got nan."),
    ({"temperature": float("inf")}, "temperature", "'temperature' must be a finite number, got inf."),
    ({"temperature": 2.5}, "temperature", "'temperature' must be at most 2, got 2.5."),
    ({"top_p": float("nan")}, "top_p", "'top_p' must be a finite number, got nan."),
    ({"frequency_penalty": float("nan")}, "frequency_penalty",
     "'frequency_penalty' must be a finite number, got nan."),
    ({"repetition_penalty": 1e-300, "logprobs": True}, "repetition_penalty",
     "'repetition_penalty' must be 0 (off) or at least 0.01, got 1e-300."),
    ({"tools": "get_weather"}, "tools", "'tools' must be a list of function tools."),
    ({"tool_choice": 5}, "tool_choice",
     "'tool_choice' must be a string or an object naming a function."),
    ({"tool_choice": "required"}, "tool_choice",
     "'tool_choice' \"required\" needs 'tools' for the call."),
    ({"n": True}, "n", "'n' must be an integer, got true."),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop", "'stop' may hold at most 4 strings, got 5."),
    ({"stop": ["", "", "", "", "a"]}, "stop", "'stop' may hold at most 4 strings, got 5."),
    ({"messages": [*M, {"role": "tool", "tool_call_id": 7, "content": "sunny"}]},
     "messages[1].tool_call_id",
     "'messages[1].tool_call_id' must be a string: the id of the call it answers."),
    ({"max_tokens": 4096}, "max_tokens",
     "'max_tokens' must be at most 2048 (the model's context), got 4096."),
    ({"max_tokens": 10**30}, "max_tokens",
     "'max_tokens' must be at most 2048 (the model's context), got 1000000000000000000000000000000."),
    ({"stream": True, "stream_options": {"include_usage": "no"}}, "stream_options.include_usage",
     "'stream_options.include_usage' must be true or false."),
    ({"stream_options": {"include_usage": True}}, "stream_options",
     "'stream_options' is only allowed when 'stream' is true."),
    # The wrong exception: the tokenizer's TypeError, a RecursionError.
    ({"messages": [{"role": "user", "content": "a\ud800b"}]}, "messages[0].content",
     "'messages[0].content' is not valid Unicode text (it holds a lone surrogate such as "
     "\\ud800); send UTF-8 text."),
    ({"stop": ["a\ud800"]}, "stop[0]",
     "'stop[0]' is not valid Unicode text (it holds a lone surrogate such as \\ud800); send "
     "UTF-8 text."),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "x": _nested(600)}}}]}, "tools",
     "'tools' is nested more than 64 levels deep; flatten it."),
    # Templates: a body may set the template's variables, not the template or the engine's own.
    ({"chat_template_kwargs": {"chat_template": "{{ messages }}"}},
     "chat_template_kwargs.chat_template",
     "'chat_template_kwargs.chat_template' is not allowed: the model's chat template cannot be "
     "replaced per request (pass chat_template to Engine)."),
    ({"chat_template_kwargs": {"add_generation_prompt": False}},
     "chat_template_kwargs.add_generation_prompt",
     "'chat_template_kwargs.add_generation_prompt' is not allowed: send 'add_generation_prompt' at "
     "the top level of the body."),
]


@pytest.mark.parametrize("extra,param,message", REFUSED, ids=[p for _, p, _ in REFUSED])
def test_reproducer_is_refused_at_admission_naming_the_parameter(tiny_engine, extra, param, message):
    with pytest.raises(EngineRequestError) as info:
        tiny_engine.chat_completions({"messages": M, "max_tokens": 4, **extra})
    assert info.value.error == {"message": message, "type": "invalid_request_error",
                                "param": param, "code": None}
    # Refused before scheduling: nothing ran, nothing is left open.
    assert tiny_engine.healthy and tiny_engine.active_requests == 0


@pytest.mark.parametrize("extra,param", [
    ({"prompt": "a\ud800b"}, "prompt"),
    ({"prompt": "x", "stop": "\udfff"}, "stop"),
    ({"prompt": "x", "top_logprobs": 21}, "top_logprobs"),
])
def test_completion_reproducers_are_refused(tiny_engine, extra, param):
    with pytest.raises(EngineRequestError) as info:
        tiny_engine.completions({"max_tokens": 4, **extra})
    assert info.value.param == param and info.value.error["type"] == "invalid_request_error"


def _strict(response) -> str:
    return json.dumps(response, allow_nan=False)


def test_denormal_temperatures_decode_greedily(tiny_engine, script_body):
    greedy = tiny_engine.chat_completions(script_body("reason_then_answer"))
    for temperature in (1e-300, 1e-45, 5e-6):
        r = tiny_engine.chat_completions(script_body("reason_then_answer", temperature=temperature))
        assert r["choices"][0]["message"] == greedy["choices"][0]["message"]


def test_an_empty_completion_prompt_is_served_from_the_start_token(tiny_engine):
    r = tiny_engine.completions({"prompt": "", "max_tokens": 3})
    _strict(r)
    assert r["usage"]["prompt_tokens"] == 1 and r["usage"]["completion_tokens"] >= 1


def test_legacy_logprobs_always_hold_the_sampled_token(tiny_engine):
    # OpenAI's legacy completions (and vLLM's test_zero_logprobs): up to logprobs + 1 entries.
    for n in (0, 2):
        r = tiny_engine.completions({"prompt": "Hi", "max_tokens": 4, "logprobs": n,
                                     "temperature": 1.5, "seed": 7})
        lp = r["choices"][0]["logprobs"]
        assert len(lp["top_logprobs"]) == len(lp["tokens"]) == 4
        for token, value, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
            assert top[token] == pytest.approx(value)
            assert 1 <= len(top) <= n + 1

def test_twenty_top_logprobs_are_served_as_strict_json(tiny_engine):
    r = tiny_engine.completions({"prompt": "Hi", "max_tokens": 3, "logprobs": True,
                                 "top_logprobs": 20})
    _strict(r)
    assert all(len(top) == 20 for top in r["choices"][0]["logprobs"]["top_logprobs"])
    r = tiny_engine.chat_completions({"messages": M, "max_tokens": 3, "top_logprobs": 20})
    _strict(r)
    assert len(r["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) == 20


def test_a_prompt_list_gets_one_choice_per_prompt(tiny_engine):
    one = [tiny_engine.completions({"prompt": p, "max_tokens": 4})["choices"][0]["text"]
           for p in ("Hi", "The")]
    r = tiny_engine.completions({"prompt": ["Hi", "The"], "max_tokens": 4})
    _strict(r)
    assert [c["index"] for c in r["choices"]] == [0, 1]
    assert [c["text"] for c in r["choices"]] == one
    chunks = list(tiny_engine.completions({"prompt": ["Hi", "The"], "max_tokens": 4,
                                           "stream": True,
                                           "stream_options": {"include_usage": True}}))
    texts = ["".join(c["choices"][0]["text"] for c in chunks if c["choices"]
                     and c["choices"][0]["index"] == i) for i in (0, 1)]
    assert texts == one
    assert chunks[-1]["usage"]["prompt_tokens"] == r["usage"]["prompt_tokens"]


def test_a_list_of_token_id_prompts_gets_one_choice_per_prompt(tiny_engine):
    ids = [list(tiny_engine.inspect({"prompt": p}, kind="completion").token_ids)
           for p in ("Hi", "The")]
    one = [tiny_engine.completions({"prompt": p, "max_tokens": 4})["choices"][0]["text"]
           for p in ("Hi", "The")]
    r = tiny_engine.completions({"prompt": ids, "max_tokens": 4})
    assert [c["text"] for c in r["choices"]] == one
    assert tiny_engine.completions({"prompt": ids[:1], "max_tokens": 4})["choices"][0]["text"] == one[0]
    with pytest.raises(EngineRequestError, match="out of vocabulary"):
        tiny_engine.completions({"prompt": [ids[0], [10**6]], "max_tokens": 4})
    for prompt, message in (([["a", "b"]], "'prompt[0]' must be a non-empty list of token ids."),
                            ([ids[0], []], "'prompt[1]' must be a non-empty list of token ids."),
                            (["a", ids[0]], "'prompt' mixes strings and token-id lists; send one kind.")):
        with pytest.raises(EngineRequestError) as caught:
            tiny_engine.completions({"prompt": prompt, "max_tokens": 4})
        assert caught.value.message == message


def test_an_empty_stop_string_stops_nothing(tiny_engine):
    plain = tiny_engine.completions({"prompt": "Hi", "max_tokens": 6})["choices"][0]
    for stop in ("", [""], ["", ""]):
        r = tiny_engine.completions({"prompt": "Hi", "max_tokens": 6, "stop": stop})["choices"][0]
        assert (r["text"], r["finish_reason"]) == (plain["text"], plain["finish_reason"])

def test_tool_choice_none_renders_no_tools(tiny_engine, script_body):
    body = script_body("single_tool_call")
    assert tiny_engine.inspect(body).tools_rendered is True
    plain = tiny_engine.inspect({**body, "tools": None})
    assert tiny_engine.inspect({**body, "tool_choice": "none"}).prompt_text == plain.prompt_text
    assert tiny_engine.inspect({**body, "tool_choice": "auto"}).tools_rendered is True


# A bad neighbour past admission (it refuses these bodies): mlx-lm's top-k sampler raises
# ValueError for k at or beyond the vocabulary, its presence penalty "Slice indices must be
# 32-bit integers." for a 64-bit context; both inside the batched step, beside a good request.
BAD_NEIGHBOURS = [
    ("sampler", lambda r: replace(r, sampling=replace(r.sampling, temperature=1.0, top_k=1000)),
     "ValueError: `top_k` has to be an integer in the (0, 400) interval, but is 1000."),
    ("processor", lambda r: replace(r, penalties=replace(
        r.penalties, presence_penalty=0.5, presence_context_size=2**63)),
     "Slice indices must be 32-bit integers"),
]


@pytest.mark.parametrize("spoil,why", [b[1:] for b in BAD_NEIGHBOURS],
                         ids=[b[0] for b in BAD_NEIGHBOURS])
def test_a_request_failing_inside_the_batched_step_fails_alone(
        tiny_engine, script_body, engine_thread_held, spoil, why):
    good_body = script_body("reason_then_answer")
    solo = collect(tiny_engine.submit(good_body).events())
    request, prompt = tiny_engine._prepare({"messages": M, "max_tokens": 20}, "chat")
    bad_job = Job("bad-neighbour", spoil(request), prompt, tiny_engine._thread.outbox("bad-neighbour"))
    with engine_thread_held(tiny_engine):  # both start in one pass: they share the batch
        good = tiny_engine.submit(good_body)
        tiny_engine._thread.submit(bad_job)
    bad_events = list(RequestHandle(bad_job, tiny_engine._thread).events())
    error = bad_events[-1]
    assert isinstance(error, Error) and error.message.startswith(
        "Generation failed for this request (") and why in error.message
    beside = collect(good.events())
    assert (beside.reasoning, beside.content, beside.finish_reason) == (
        solo.reasoning, solo.content, solo.finish_reason)
    assert tiny_engine.healthy and tiny_engine.active_requests == 0
    again = collect(tiny_engine.submit(good_body).events())
    assert again.content == solo.content


def test_a_model_template_the_sandbox_refuses_fails_at_load(tiny_reasoner_path):
    refused = "{% for m in messages %}{{ m.content.__class__.__mro__ }}{% endfor %}"
    with pytest.raises(EngineError) as info:
        Engine(str(tiny_reasoner_path), progress=False, chat_template=refused)
    assert info.value.args[0].startswith(
        "The model's chat template cannot be used: the template sandbox refused it (SecurityError")
    assert info.value.args[0].endswith("pass chat_template=... to use another one.")


def test_a_text_far_past_the_context_is_refused_before_tokenizing(tiny_engine):
    # 32 characters per token of the 2048-token context: 65 536 characters at most.
    with pytest.raises(EngineRequestError) as info:
        tiny_engine.completions({"prompt": "ab" * 40_000, "max_tokens": 4})
    assert info.value.error == {
        "message": "The prompt of 80000 characters is longer than the model's context length "
                   "of 2048 tokens; shorten it.",
        "type": "invalid_request_error", "param": "prompt", "code": "context_length_exceeded"}
    with pytest.raises(EngineRequestError) as info:
        tiny_engine.chat_completions({"messages": [{"role": "user", "content": "ab" * 40_000}]})
    assert info.value.param == "messages" and info.value.error["code"] == "context_length_exceeded"


def test_a_prompt_past_the_context_is_refused_in_one_sentence_and_nothing_else(
        tiny_engine, capfd, caplog):
    # transformers would log its own "Token indices sequence length is longer..." warning
    # once, which a notebook shows in the cell under the engine's sentence
    with pytest.raises(EngineRequestError, match="of 9001 tokens is longer than the model's context length of 2048 tokens"):
        tiny_engine.completions({"prompt": "word " * 3000, "max_tokens": 1})
    assert "Token indices" not in capfd.readouterr().err
    assert not [r for r in caplog.records if "Token indices" in r.getMessage()]


def test_a_prompt_that_fills_the_context_exactly_is_refused_for_want_of_room_for_a_reply(
        tiny_engine):
    with pytest.raises(EngineRequestError) as refused:
        tiny_engine.completions({"prompt": [5] * 2048, "max_tokens": 4})
    assert refused.value.error["message"] == (
        "The prompt of 2048 tokens is longer than the model's context length of 2048 tokens "
        "allows with a reply; shorten the prompt.")
    # one token shorter: served, the reply cut where the context ends
    reply = tiny_engine.completions({"prompt": [5] * 2047, "max_tokens": 4})
    assert reply["usage"]["completion_tokens"] == 1
    assert reply["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize("prompts, param, said", [
    ([[1, 2], [3, 2**70]], "prompt[1]", "'prompt[1]' holds the token id 1180591620717411303424"),
    (["Hi.", "word " * 3000], "prompt[1]",
     "The prompt of 9001 tokens is longer than the model's context length of 2048 tokens; "
     "shorten the prompt."),
])
def test_a_bad_prompt_in_a_list_is_named_by_its_place_in_the_list(tiny_engine, prompts, param,
                                                                   said):
    with pytest.raises(EngineRequestError) as refused:
        tiny_engine.completions({"prompt": prompts, "max_tokens": 1})
    assert refused.value.param == param
    assert refused.value.error["message"].startswith(said)


def test_non_finite_log_probabilities_are_reported_as_openais_floor():
    # What reaches a logprobs field when a step's logits overflowed: never NaN or Infinity.
    from mlx_notebook.engine.request._reply_stream import LOGPROB_FLOOR, _finite

    assert LOGPROB_FLOOR == -9999.0
    assert [_finite(v) for v in (float("nan"), float("-inf"), -1e30, float("inf"), -1.5)] == [
        -9999.0, -9999.0, -9999.0, 0.0, -1.5]


def test_smollm2_checks_token_ids_against_its_own_vocabulary(smollm2_engine):
    # SmolLM2 sometimes served {"1000000": 5} silently, writing past its 49152 logits.
    body = {"messages": M, "max_tokens": 2}
    for bias in ({"1000000": 5}, {"49152": 5}):
        with pytest.raises(EngineRequestError) as info:
            smollm2_engine.chat_completions({**body, "logit_bias": bias})
        assert info.value.message.endswith(
            "is out of vocabulary (ids run from 0 to 49151; the vocabulary size is 49152).")
    with pytest.raises(EngineRequestError) as info:
        smollm2_engine.chat_completions({**body, "temperature": 1, "top_k": 49152})
    assert info.value.message == (
        "'top_k' must be at most 49151 (the vocabulary size minus one), got 49152.")
    served = smollm2_engine.chat_completions({**body, "logit_bias": {"49151": -100}})
    assert served["usage"]["completion_tokens"] >= 1
