"""vLLM's OpenAI-compatible server tests for chat and completions (vllm-project/vllm
``tests/entrypoints/openai/``: completion/test_completion.py, chat_completion/test_chat.py,
test_chat_echo.py, test_chat_logit_bias_validation.py, completion/test_prompt_validation.py),
ported to our listener with the official ``openai`` client, the real SmolLM2 and the tiny
reasoner: what a client of ``vllm serve`` checks there must hold here too, where we claim it.

Ported (their test → ours): single completion (usage sums, ``length`` after ``max_tokens``,
token-id prompts), no/zero/some logprobs and too many logprobs (then the server still works),
streaming spells the unstreamed text with one ``finish_reason``, ``stream_options``
(``include_usage``: usage only on a last chunk whose ``choices`` is ``[]``; refused without
``stream``), batch completions (a list of prompts, streamed by ``index``), an invalid JSON
schema refused, out-of-vocabulary prompt ids refused; chat no/zero/some/too many logprobs,
single chat session (usage, multi-turn), chat streaming, chat ``stream_options``,
``response_format`` text/json_object/json_schema (the content parses and fits the schema; we
do not assert their 7B model's arithmetic), extra message fields ignored, text parts read as
the string, out-of-range ``seed`` refused, ``n`` = 1, logit_bias valid/invalid/non-integer key/
non-numeric value/several bad keys, ``continue_final_message`` without echo, structured
answers' logprobs within -9999 ... 0, streamed ``text_offset`` equal to the unstreamed one with a
stop (completion/test_completion_text_offset.py), a null ``tool_choice`` read as absent
(test_tool_choice_null.py), non-object bodies a 400 (test_non_object_body_validation.py). Also
checked, as their files do for their features: stop sequences (streamed or not), logprob
tokens spelling the reply, ``max_completion_tokens`` over ``max_tokens``, seed determinism
(also two seeded requests batched together), ``tool_choice`` auto/none/required/named on the
tiny reasoner, streamed tool calls.

Where we deliberately differ (README's list and docs/openai-fields.md), ours is asserted:
``n`` > 1 and ``echo: true`` are refused (400 naming the field), not served; a custom role is
refused (the roles we render are listed), a ``seed`` is 0 ... 2**64 - 1 (mlx's key is
unsigned 64-bit; vLLM's is signed), ``tool_choice`` without ``tools`` is served as no tools,
and ``top_logprobs: -1`` is mlx_lm.server's "none" (vLLM:
the whole vocabulary). Their prompts that are questions ("What is an LLM?") end SmolLM2's
completion at once (it answers ``<|im_end|>``), so the streaming checks continue a story.

Skipped: prompt_logprobs, return_token_ids, return_tokens_as_token_ids, truncate_prompt_tokens,
min_tokens/min_characters, continuous_usage_stats, stop_token_ids (vLLM extensions we do not
implement; the last two are ignored as unknown fields), beam search and ``use_beam_search``,
LoRA models, structured_outputs choice/regex/grammar (refused here: only ``response_format``
JSON is decoded to), prompt_embeds and hidden-state extraction, ``/invocations`` (SageMaker's
route).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import jsonschema
import openai
import pytest

pytestmark = pytest.mark.model

SMOL_VOCAB = 49152
TINY_VOCAB = 400
ONE_PLUS_ONE = [{"role": "system", "content": "you are a helpful assistant"},
                {"role": "user", "content": "what is 1+1?"}]
FRANCE = [{"role": "system", "content": "You are a helpful assistant."},
          {"role": "user", "content": "What is the capital of France?"}]


def _refused(call, **body) -> openai.BadRequestError:
    with pytest.raises(openai.BadRequestError) as caught:
        result = call(**body)
        if body.get("stream"):
            list(result)
    assert caught.value.status_code == 400
    return caught.value


# -- completion/test_completion.py --------------------------------------------------------------
def test_single_completion_counts_its_tokens(smol):
    done = smol.completions.create(model="default_model", prompt="Hello, my name is",
                                   max_tokens=5, temperature=0.0)
    assert done.id and len(done.choices) == 1
    choice = done.choices[0]
    assert len(choice.text) >= 5 and choice.finish_reason == "length"
    assert done.usage.completion_tokens == 5
    assert done.usage.prompt_tokens == 5  # SmolLM2 spells the prompt in 5 tokens, no BOS
    assert done.usage.total_tokens == 10
    assert done.usage.prompt_tokens_details.cached_tokens >= 0

    ids = smol.completions.create(model="default_model", prompt=[504, 3458, 314, 253, 2],
                                  max_tokens=5, temperature=0.0)
    assert ids.choices[0].text and ids.usage.prompt_tokens == 5


def test_no_zero_and_some_completion_logprobs(smol):
    def logprobs(n):
        return smol.completions.create(model="default_model", prompt="Hello, my name is",
                                       max_tokens=5, temperature=0.0,
                                       logprobs=n).choices[0].logprobs

    assert logprobs(None) is None
    zero = logprobs(0)
    assert len(zero.token_logprobs) == len(zero.tokens) == 5
    assert all(len(top) == 1 for top in zero.top_logprobs)  # the sampled token alone
    some = logprobs(5)
    assert all(5 <= len(top) <= 6 for top in some.top_logprobs)
    assert all(lp <= 0.0 for lp in some.token_logprobs)
    for token, lp, top in zip(some.tokens, some.token_logprobs, some.top_logprobs):
        assert max(top.values()) >= lp - 1e-4  # greedy: the chosen token is the best one


def test_too_many_completion_logprobs_are_refused_and_the_server_goes_on(smol):
    error = _refused(smol.completions.create, model="default_model", prompt="Hi",
                     max_tokens=5, logprobs=21)
    assert error.body["param"] == "logprobs"
    _refused(smol.completions.create, model="default_model", prompt="Hi", max_tokens=5,
             logprobs=30, stream=True)
    assert smol.completions.create(model="default_model", prompt="Hi", max_tokens=5,
                                   temperature=0.0).choices[0].finish_reason


def test_completion_streaming_spells_the_unstreamed_text(smol):
    body = dict(model="default_model", prompt="Once upon a time", max_tokens=5, temperature=0.0)
    whole = smol.completions.create(**body).choices[0].text
    chunks = list(smol.completions.create(**body, stream=True))
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason]
    assert finishes == ["length"] and chunks[-1].choices[0].finish_reason == "length"
    assert "".join(c.choices[0].text for c in chunks) == whole


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_stream_options_include_usage(smol, endpoint):
    if endpoint == "completions":
        call, body = smol.completions.create, {"prompt": "Once upon a time"}
    else:
        call, body = smol.chat.completions.create, {"messages": FRANCE}
    body = {"model": "default_model", "max_tokens": 5, "temperature": 0.0, **body}

    assert all(c.usage is None for c in call(**body, stream=True,
                                            stream_options={"include_usage": False}))
    assert all(c.usage is None for c in call(**body, stream=True, stream_options={}))

    chunks = list(call(**body, stream=True, stream_options={"include_usage": True}))
    *replies, last = chunks
    assert all(c.usage is None and len(c.choices) == 1 for c in replies)
    assert [c.choices[0].finish_reason for c in replies][-1] == "length"
    assert last.choices == [] and last.usage.completion_tokens == 5
    assert last.usage.prompt_tokens > 0
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens

    for options in ({"include_usage": None}, {"include_usage": True}):
        error = _refused(call, **body, stream=False, stream_options=options)
        assert "stream_options" in error.body["param"]


def test_batch_completions_answer_each_prompt(smol):
    for prompts in (["Hello, my name is"] * 2, [[504, 3458, 314, 253, 2]] * 2):
        batch = smol.completions.create(model="default_model", prompt=prompts, max_tokens=5,
                                        temperature=0.0)
        assert [c.index for c in batch.choices] == [0, 1]
        assert batch.choices[0].text == batch.choices[1].text
        texts = ["", ""]
        for chunk in smol.completions.create(model="default_model", prompt=prompts,
                                             max_tokens=5, temperature=0.0, stream=True):
            assert len(chunk.choices) == 1
            texts[chunk.choices[0].index] += chunk.choices[0].text
        assert texts == [batch.choices[0].text] * 2


def test_n_above_one_and_echo_are_refused_naming_the_field(smol):
    """Deliberate differences (docs/openai-fields.md "Refused"): ``n`` > 1 and ``echo`` are not
    implemented, so they are refused rather than answered with one choice or no prompt."""
    for field, value in (("n", 3), ("echo", True)):
        error = _refused(smol.completions.create, model="default_model", prompt="What is an LLM?",
                         max_tokens=5, **{field: value})
        assert error.body["param"] == field
    error = _refused(smol.chat.completions.create, model="default_model", messages=FRANCE,
                     max_tokens=5, n=3)
    assert error.body["param"] == "n"


def test_an_invalid_json_schema_is_refused(smol):
    schema = {"$defs": {"CarType": {"enum": ["sedan", "SUV"], "type": "string"}},
              "properties": {"brand": {"type": "string"}, "car_type": {"$ref": "#/$defs/CarType"},
                             "foo": "bar"},
              "required": ["brand", "car_type"], "type": "object"}
    error = _refused(smol.chat.completions.create, model="default_model",
                     messages=[{"role": "user", "content": "A car, as JSON."}],
                     response_format={"type": "json_schema",
                                      "json_schema": {"name": "car", "schema": schema}})
    assert error.body["param"].startswith("response_format")


def test_their_structured_outputs_field_is_refused_pointing_to_response_format(smol):
    error = _refused(smol.completions.create, model="default_model", prompt="An email:",
                     extra_body={"structured_outputs": {"regex": r"[.*"}})
    assert "response_format" in error.message


# -- completion/test_prompt_validation.py -------------------------------------------------------
def test_out_of_vocabulary_prompt_ids_are_refused(smol):
    error = _refused(smol.completions.create, model="default_model", prompt=[999999],
                     max_tokens=5)
    assert error.body["param"].startswith("prompt") and str(SMOL_VOCAB - 1) in error.message


def test_an_empty_prompt_is_answered(smol):
    """OpenAI answers ``""`` from ``<|endoftext|>``; so do we (docs/openai-fields.md)."""
    done = smol.completions.create(model="default_model", prompt="", max_tokens=3,
                                   temperature=0.0)
    assert done.usage.completion_tokens >= 1


# -- chat_completion/test_chat.py ---------------------------------------------------------------
def _chat(client, **extra):
    return client.chat.completions.create(model="default_model", messages=ONE_PLUS_ONE,
                                          **{"max_completion_tokens": 5, "temperature": 0.0,
                                             **extra})


def test_no_zero_and_some_chat_logprobs(smol):
    assert _chat(smol, logprobs=False).choices[0].logprobs is None
    zero = _chat(smol, logprobs=True, top_logprobs=0).choices[0].logprobs
    assert zero.content and zero.content[0].top_logprobs == []
    some = _chat(smol, logprobs=True, top_logprobs=5).choices[0].logprobs
    for entry in some.content:
        assert len(entry.top_logprobs) == 5
        assert -9999.0 <= entry.logprob <= 0.0
        assert all(-9999.0 <= top.logprob <= 0.0 for top in entry.top_logprobs)
        assert entry.top_logprobs[0].logprob >= entry.logprob - 1e-4
        assert bytes(entry.bytes).decode("utf-8", "replace") == entry.token


def test_too_many_chat_logprobs_are_refused_and_the_server_goes_on(smol):
    for stream, count in ((True, 21), (False, 30)):
        error = _refused(smol.chat.completions.create, model="default_model",
                         messages=ONE_PLUS_ONE, max_completion_tokens=10, logprobs=True,
                         top_logprobs=count, stream=stream)
        assert error.body["param"] == "top_logprobs"
    message = _chat(smol, max_completion_tokens=10).choices[0].message
    assert message.content is not None


def test_top_logprobs_minus_one_reads_as_none(smol):
    """A deliberate difference: -1 is mlx_lm.server's "none" (docs/openai-fields.md), where
    vLLM lists the whole vocabulary."""
    done = _chat(smol, max_completion_tokens=1, logprobs=True, top_logprobs=-1)
    assert done.choices[0].logprobs.content[0].top_logprobs == []


def test_a_single_chat_session(smol):
    messages = list(ONE_PLUS_ONE)
    done = smol.chat.completions.create(model="default_model", messages=messages,
                                        max_completion_tokens=5, logprobs=True, top_logprobs=5)
    assert done.id and len(done.choices) == 1
    choice = done.choices[0]
    assert choice.finish_reason == "length"
    usage = done.usage
    assert usage.completion_tokens == 5
    assert usage.total_tokens == usage.prompt_tokens + 5
    assert choice.message.role == "assistant" and len(choice.message.content) >= 5
    messages += [{"role": "assistant", "content": choice.message.content},
                 {"role": "user", "content": "express your result in json"}]
    again = smol.chat.completions.create(model="default_model", messages=messages,
                                         max_completion_tokens=5)
    assert again.choices[0].message.content is not None
    assert again.usage.prompt_tokens > usage.prompt_tokens


def test_chat_streaming_spells_the_unstreamed_reply(smol):
    whole = _chat(smol, max_completion_tokens=10)
    chunks = list(_chat(smol, max_completion_tokens=10, stream=True))
    assert all(c.choices[0].delta.role in (None, "assistant") for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason] == [chunks[-1].choices[0].finish_reason]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) \
        == whole.choices[0].message.content


def test_response_format_json_object_and_json_schema(smol):
    ask = [{"role": "user", "content": 'what is 1+1? please respond with a JSON object, '
                                       'the format is {"result": 2}'}]
    done = smol.chat.completions.create(model="default_model", messages=ask, max_tokens=40,
                                        temperature=0.0, response_format={"type": "json_object"})
    assert done.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(done.choices[0].message.content), dict)

    schema = {"type": "object", "properties": {"result": {"type": "integer"}},
              "required": ["result"], "additionalProperties": False}
    for _ in range(2):
        done = smol.chat.completions.create(
            model="default_model", max_tokens=40, temperature=0.0,
            messages=[{"role": "user", "content": 'what is 1+1? The format is "result": 2'}],
            response_format={"type": "json_schema",
                             "json_schema": {"name": "foo_test", "schema": schema}})
        assert done.choices[0].finish_reason == "stop"
        jsonschema.validate(json.loads(done.choices[0].message.content), schema)


def test_response_format_text_is_free_text(smol):
    done = _chat(smol, max_completion_tokens=10, response_format={"type": "text"})
    assert done.choices[0].message.content


def test_extra_message_fields_are_ignored_and_text_parts_read_as_the_string(smol):
    plain = smol.chat.completions.create(
        model="default_model", temperature=0, seed=0, max_tokens=8,
        messages=[{"role": "user", "content": "what is 1+1?", "extra_field": "0"}])
    parts = smol.chat.completions.create(
        model="default_model", temperature=0, seed=0, max_tokens=8,
        messages=[{"role": "user", "content": [{"type": "text", "text": "what is 1+1?"}]}])
    assert plain.choices[0].message.content == parts.choices[0].message.content


def test_a_custom_role_is_refused_naming_it(smol):
    """A deliberate difference: vLLM hands any role to the template; we render the roles
    docs/openai-fields.md lists and refuse others rather than guess how a template takes them."""
    error = _refused(smol.chat.completions.create, model="default_model", max_tokens=5,
                     messages=[{"role": "my-custom-role", "content": "what is 1+1?"}])
    assert error.body["param"] == "messages[0].role"


def test_seed_range_is_unsigned_64_bit(smol):
    """vLLM refuses seeds outside a signed 64-bit integer; ours is mlx's unsigned 64-bit key
    (docs/openai-fields.md), so 2**63 + 1 is served and -2**63 - 1 or 2**64 refused."""
    for seed in (-(2**63) - 1, 2**64):
        error = _refused(smol.chat.completions.create, model="default_model", messages=FRANCE,
                         max_tokens=2, seed=seed)
        assert error.body["param"] == "seed"
    assert smol.chat.completions.create(model="default_model", messages=FRANCE, max_tokens=2,
                                        temperature=0.8, seed=2**63 + 1).choices


def test_a_seeded_sampled_reply_repeats_and_n_one_is_one_choice(smol):
    body = dict(model="default_model", messages=[{"role": "user", "content": "Say hello."}],
                max_completion_tokens=10, temperature=0.8, seed=42, n=1)
    first, second = (smol.chat.completions.create(**body) for _ in range(2))
    assert len(first.choices) == 1 and first.choices[0].index == 0
    assert first.choices[0].message.content == second.choices[0].message.content


def test_max_completion_tokens_wins_over_max_tokens(smol):
    done = _chat(smol, max_completion_tokens=3, max_tokens=9)
    assert done.usage.completion_tokens == 3 and done.choices[0].finish_reason == "length"


def test_a_stop_sequence_cuts_the_reply_before_it(smol):
    whole = smol.chat.completions.create(model="default_model", temperature=0.0, max_tokens=20,
                                         messages=[{"role": "user", "content":
                                                    "What is the capital of France? "
                                                    "Answer in one sentence."}])
    assert whole.choices[0].message.content == "The capital of France is Paris."
    for stream in (False, True):
        body = dict(model="default_model", temperature=0.0, max_tokens=20, stop=[" Paris", "xyz"],
                    messages=[{"role": "user", "content": "What is the capital of France? "
                                                          "Answer in one sentence."}])
        if stream:
            chunks = list(smol.chat.completions.create(**body, stream=True))
            text = "".join(c.choices[0].delta.content or "" for c in chunks)
            finish = chunks[-1].choices[0].finish_reason
        else:
            done = smol.chat.completions.create(**body)
            text, finish = done.choices[0].message.content, done.choices[0].finish_reason
        assert (text, finish) == ("The capital of France is", "stop")


# -- chat_completion/test_chat_echo.py ----------------------------------------------------------
def test_continue_final_message_goes_on_without_repeating_it(smol):
    saying = "Here is a common saying about apple. An apple a day, keeps"
    done = smol.chat.completions.create(
        model="default_model", temperature=0.0, max_tokens=30,
        messages=[{"role": "user", "content": "tell me a common saying"},
                  {"role": "assistant", "content": saying}],
        extra_body={"continue_final_message": True, "add_generation_prompt": False})
    message = done.choices[0].message
    assert message.role == "assistant" and message.content and saying not in message.content
    error = _refused(smol.chat.completions.create, model="default_model", max_tokens=5,
                     messages=FRANCE, extra_body={"echo": True})
    assert error.body["param"] == "echo"


# -- chat_completion/test_chat_logit_bias_validation.py -----------------------------------------
def test_logit_bias_on_the_last_token_id_is_accepted(smol):
    done = smol.chat.completions.create(model="default_model", max_tokens=5, messages=FRANCE,
                                        logit_bias={str(SMOL_VOCAB - 1): 1.0})
    assert done.choices[0].message.content is not None


def test_logit_bias_past_the_vocabulary_names_the_id_and_the_size(smol):
    error = _refused(smol.chat.completions.create, model="default_model", max_tokens=5,
                     messages=FRANCE, logit_bias={str(SMOL_VOCAB + 1): 1.0})
    assert str(SMOL_VOCAB + 1) in error.message and "logit_bias" in error.body["param"]
    assert str(SMOL_VOCAB - 1) in error.message or str(SMOL_VOCAB) in error.message


@pytest.mark.parametrize("bias", [{"not_a_token_id": 50}, {"1": "not_a_number"}])
def test_a_malformed_logit_bias_entry_is_refused_naming_it(smol, bias):
    error = _refused(smol.chat.completions.create, model="default_model", max_tokens=5,
                     messages=FRANCE, logit_bias=bias)
    assert "logit_bias" in error.message or "logit_bias" in error.body["param"]
    assert next(iter(bias)) in error.message or next(iter(bias)) in error.body["param"]


def test_every_bad_logit_bias_key_is_named(smol):
    error = _refused(smol.chat.completions.create, model="default_model", max_tokens=5,
                     messages=FRANCE, logit_bias={"bad1": 50.0, "bad2": 20.0})
    assert "bad1" in error.message and "bad2" in error.message


# -- tool_choice on the tiny reasoner ------------------------------------------------------------
def _weather(scripts, **extra):
    script = scripts["single_tool_call"]
    return dict(model="default_model", messages=script["messages"], tools=script["tools"],
                max_tokens=200, temperature=0.0, **extra)


def test_tool_choice_auto_calls_the_tool(tiny, scripts):
    done = tiny.chat.completions.create(**_weather(scripts, tool_choice="auto"))
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.id
    assert (call.function.name, json.loads(call.function.arguments)) \
        == ("get_weather", {"city": "Paris"})


def test_tool_choice_none_returns_no_tool_calls(tiny, scripts):
    done = tiny.chat.completions.create(**_weather(scripts, tool_choice="none"))
    assert not done.choices[0].message.tool_calls
    assert done.choices[0].finish_reason in ("stop", "length")


@pytest.mark.parametrize("choice", ["required",
                                    {"type": "function", "function": {"name": "get_weather"}}])
def test_a_forced_tool_choice_returns_a_call_of_that_tool(tiny, scripts, choice):
    done = tiny.chat.completions.create(**_weather(scripts, tool_choice=choice))
    calls = done.choices[0].message.tool_calls
    assert done.choices[0].finish_reason == "tool_calls" and calls
    assert all(c.function.name == "get_weather" for c in calls)
    assert all(isinstance(json.loads(c.function.arguments), dict) for c in calls)


def test_a_named_tool_choice_that_is_not_offered_is_refused(tiny, scripts):
    error = _refused(tiny.chat.completions.create,
                     **_weather(scripts, tool_choice={"type": "function",
                                                      "function": {"name": "nope"}}))
    assert "tool_choice" in error.body["param"]


def test_streamed_tool_call_matches_the_whole_one(tiny, scripts):
    whole = tiny.chat.completions.create(**_weather(scripts)).choices[0].message.tool_calls
    name, arguments = None, ""
    finish = None
    for chunk in tiny.chat.completions.create(**_weather(scripts), stream=True):
        for call in chunk.choices[0].delta.tool_calls or []:
            name = call.function.name or name
            arguments += call.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert (name, json.loads(arguments)) == (whole[0].function.name,
                                              json.loads(whole[0].function.arguments))


def test_unknown_model_is_404(smollm2_listener):
    reply = httpx.post(f"{smollm2_listener.url}/chat/completions",
                       headers={"Authorization": f"Bearer {smollm2_listener.token}"},
                       json={"model": "HuggingFaceH4/zephyr-7b-beta", "messages": FRANCE})
    assert reply.status_code == 404 and reply.json()["error"]["code"] == "model_not_found"


def test_streamed_text_offsets_match_the_whole_reply_with_a_stop(smol):
    """completion/test_completion_text_offset.py: a stop string's hold-back must not shift the
    streamed ``text_offset`` away from the unstreamed one."""
    body = dict(model="default_model", prompt="Once upon a time", max_tokens=12,
                temperature=0.0, logprobs=0, stop=["Nova H"])
    whole = smol.completions.create(**body).choices[0]
    chunks = list(smol.completions.create(**body, stream=True))
    offsets = [offset for c in chunks if c.choices[0].logprobs
               for offset in c.choices[0].logprobs.text_offset]
    assert whole.finish_reason == chunks[-1].choices[0].finish_reason == "stop"
    assert "".join(c.choices[0].text for c in chunks) == whole.text == ", the city of "
    assert offsets == whole.logprobs.text_offset
    assert offsets == sorted(offsets) and offsets[0] == 0


def test_two_requests_with_one_seed_batched_together_say_the_same(smol):
    body = dict(model="default_model", messages=[{"role": "user", "content": "Say hello."}],
                max_tokens=12, temperature=1.0, seed=7)
    with ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(lambda _: smol.chat.completions.create(**body), range(2)))
    assert replies[0].choices[0].message.content == replies[1].choices[0].message.content


# -- chat_completion/test_tool_choice_null.py, test_non_object_body_validation.py ------------------
def test_a_null_field_means_the_same_as_an_absent_one(tiny, scripts):
    done = tiny.chat.completions.create(**_weather(scripts), extra_body={"tool_choice": None})
    assert done.choices[0].finish_reason == "tool_calls"
    error = _refused(tiny.chat.completions.create, **_weather(scripts, tool_choice="bogus"))
    assert error.body["param"] == "tool_choice"


def test_tool_choice_auto_without_tools_is_served_as_no_tools(tiny, scripts):
    """A deliberate difference (docs/openai-fields.md): vLLM and OpenAI refuse ``tool_choice``
    without ``tools``; mlx_lm.server and we answer as if no tools were offered, since clients
    send their default ``tool_choice`` beside an empty tool list."""
    script = scripts["reason_then_answer"]
    done = tiny.chat.completions.create(model="default_model", messages=script["messages"],
                                        max_tokens=200, temperature=0.0, tool_choice="auto")
    assert done.choices[0].finish_reason == "stop" and not done.choices[0].message.tool_calls
    answer = script["reply"].partition("</think>")[2]
    assert done.choices[0].message.content.strip() == answer.strip()


@pytest.mark.parametrize("raw", ['"this is not valid json{{{', '["not", "an", "object"]', "42",
                                 "null", "not json{{{"])
def test_a_body_that_is_no_json_object_is_a_400(smollm2_listener, raw):
    reply = httpx.post(f"{smollm2_listener.url}/chat/completions", content=raw,
                       headers={"Authorization": f"Bearer {smollm2_listener.token}",
                                "Content-Type": "application/json"})
    assert reply.status_code == 400
    assert reply.json()["error"]["type"] == "invalid_request_error"


def test_logprobs_of_a_structured_answer_are_bounded(smol):
    """chat_completion/test_chat.py ``test_structured_outputs_choice_chat_logprobs``: with the
    grammar masking tokens, no logprob is below OpenAI's floor of -9999.0, nor above 0."""
    done = smol.chat.completions.create(
        model="default_model", max_tokens=12, temperature=0.0, logprobs=True, top_logprobs=5,
        messages=[{"role": "user", "content": "Give a JSON object with a name."}],
        response_format={"type": "json_object"})
    content = done.choices[0].logprobs.content
    assert content
    for entry in content:
        assert -9999.0 <= entry.logprob <= 0.0
        assert all(-9999.0 <= top.logprob <= 0.0 for top in entry.top_logprobs)
    assert "".join(entry.token for entry in content) == done.choices[0].message.content
