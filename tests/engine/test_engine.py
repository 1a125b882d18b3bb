"""The in-process engine on real models: replies, streaming, usage, events, inspect, bad input."""

from __future__ import annotations

import json

import pytest

from mlx_notebook.engine import (
    ContentDelta, Engine, EngineRequestError, Finished, ParseProblem, PrefillProgress,
    ReasoningDelta, Started, TokenLogprobs, ToolCall, Usage,
)

pytestmark = pytest.mark.model

FRANCE = {"messages": [{"role": "user",
                        "content": "What is the capital of France? Answer in one sentence."}],
          "max_tokens": 20}


def test_smollm2_answers_the_capital_question(smollm2_engine):
    r = smollm2_engine.chat_completions(FRANCE)
    choice = r["choices"][0]
    assert r["object"] == "chat.completion"
    assert choice["message"] == {"role": "assistant", "content": "The capital of France is Paris."}
    assert choice["finish_reason"] == "stop"
    usage = r["usage"]
    assert usage["completion_tokens"] == 8  # seven tokens of text and the end-of-turn token
    assert usage["total_tokens"] == usage["prompt_tokens"] + 8
    assert "cached_tokens" in usage["prompt_tokens_details"]


def test_smollm2_stream_has_the_same_text_and_ends_with_usage(smollm2_engine):
    chunks = list(smollm2_engine.chat_completions(
        {**FRANCE, "stream": True, "stream_options": {"include_usage": True}}))
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "The capital of France is Paris."
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["object"] == "chat.completion.chunk" and chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == 8
    assert chunks[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0  # a repeat


def test_completions_stop_at_max_tokens(smollm2_engine):
    r = smollm2_engine.completions({"prompt": "The capital of France is", "max_tokens": 3})
    assert r["object"] == "text_completion"
    assert r["choices"][0]["finish_reason"] == "length"
    assert r["choices"][0]["text"].startswith("Paris")  # mlx-lm drops the leading space
    assert r["usage"]["completion_tokens"] == 3


def test_completion_text_offsets_index_the_text_after_its_dropped_leading_space(smollm2_engine):
    body = {"prompt": "1, 2, 3,", "max_tokens": 5, "logprobs": 2, "temperature": 0}
    choice = smollm2_engine.completions(body)["choices"][0]
    text, logprobs = choice["text"], choice["logprobs"]
    assert text == "4, 5" and logprobs["tokens"] == [" ", "4", ",", " ", "5"]
    assert logprobs["text_offset"] == [0, 0, 1, 2, 3]  # the dropped space starts where "4" does
    chunks = [c["choices"][0] for c in smollm2_engine.completions({**body, "stream": True})
              if c["choices"]]
    assert "".join(c["text"] for c in chunks) == text
    assert [o for c in chunks for o in c["logprobs"]["text_offset"]] == logprobs["text_offset"]


def test_chat_logprob_bytes_of_the_pieces_of_an_emoji_join_into_the_reply(smollm2_engine):
    body = {"messages": [{"role": "user", "content": "Reply with only these emoji: 🔴🟢🔵"}],
            "logprobs": True, "top_logprobs": 2, "temperature": 0, "max_tokens": 12}
    choice = smollm2_engine.chat_completions(body)["choices"][0]
    content = choice["logprobs"]["content"]
    assert content[0]["token"] == "\ufffd" and content[0]["bytes"] == [240, 159]  # 🔴's first two
    joined = bytes(b for item in content for b in item["bytes"]).decode()
    assert joined.startswith(choice["message"]["content"]) and "🔴" in joined
    assert content[0]["top_logprobs"][0]["bytes"] == [240, 159]


@pytest.mark.parametrize("name", ["reason_then_answer", "thinking_disabled", "answer_from_tool_result"])
def test_tiny_reasoner_reasoning_goes_to_reasoning_and_the_answer_to_content(
    tiny_engine, name, script_body, scripts
):
    r = tiny_engine.chat_completions(script_body(name))
    message = r["choices"][0]["message"]
    expected = scripts[name]["reply"]
    answer = expected.split("</think>")[-1]
    assert message["content"] == answer
    if "<think>" in expected:
        thought = expected.split("<think>")[1].split("</think>")[0]
        assert message["reasoning"] == thought
    else:
        assert "reasoning" not in message
    assert r["choices"][0]["finish_reason"] == "stop"


def test_reasoning_content_on_request(tiny_engine, script_body):
    r = tiny_engine.chat_completions(script_body("reason_then_answer",
                                                 reasoning_field="reasoning_content"))
    message = r["choices"][0]["message"]
    assert "reasoning" not in message and "17 + 25" in message["reasoning_content"]


def test_tool_calls_come_back_as_openai_tool_call_objects(tiny_engine, script_body):
    r = tiny_engine.chat_completions(script_body("parallel_tool_calls"))
    choice = r["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    calls = choice["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "get_weather"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"city": "Tokyo"}, {"city": "Oslo"}]
    assert all(c["type"] == "function" and c["id"] for c in calls)
    assert "<tool_call>" not in (choice["message"]["content"] or "")


def test_streamed_tool_calls_carry_an_index(tiny_engine, script_body):
    chunks = list(tiny_engine.chat_completions(script_body("parallel_tool_calls", stream=True)))
    calls = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert [c["index"] for c in calls] == [0, 1]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_events_tell_the_whole_story(tiny_engine, script_body):
    handle = tiny_engine.submit(script_body("single_tool_call"))
    events = list(handle.events())
    assert handle.done
    assert isinstance(events[0], Started) and events[0].request_id == handle.id
    assert events[0].prompt_tokens == len(handle.prompt.tokens)
    assert any(isinstance(e, PrefillProgress) for e in events)
    assert any(isinstance(e, ReasoningDelta) for e in events)
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
    usage, finished = events[-2:]
    assert isinstance(usage, Usage) and isinstance(finished, Finished)
    assert finished.reason == "tool_calls"
    assert usage.time_to_first_token > 0 and usage.decode_tokens_per_second > 0
    assert usage.peak_memory > 0


def test_a_tool_call_cut_off_by_max_tokens_is_kept_as_content(tiny_engine, script_body):
    whole = tiny_engine.chat_completions(script_body("single_tool_call"))
    assert whole["choices"][0]["finish_reason"] == "tool_calls"
    # Cut a few tokens before the end: inside the call, before its closing tag.
    body = script_body("single_tool_call", max_tokens=whole["usage"]["completion_tokens"] - 4)
    problems = [e for e in tiny_engine.submit(body).events() if isinstance(e, ParseProblem)]
    (problem,) = problems
    assert problem.text.startswith('<tool_call>\n{"name": "get_weather"')
    choice = tiny_engine.chat_completions(body)["choices"][0]
    assert choice["finish_reason"] == "length" and "tool_calls" not in choice["message"]
    assert choice["message"]["content"].endswith(problem.text)
    chunks = list(tiny_engine.chat_completions({**body, "stream": True}))
    streamed = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert streamed == choice["message"]["content"]


def test_logprobs_follow_openai_shape(tiny_engine, script_body):
    r = tiny_engine.chat_completions(script_body("thinking_disabled", logprobs=True,
                                                 top_logprobs=2))
    content = r["choices"][0]["logprobs"]["content"]
    # every token but the end-of-sequence token, which shows no text: joined, they are the reply
    assert len(content) == r["usage"]["completion_tokens"] - 1
    assert "".join(e["token"] for e in content) == r["choices"][0]["message"]["content"]
    first = content[0]
    assert set(first) == {"token", "logprob", "bytes", "top_logprobs"}
    assert len(first["top_logprobs"]) == 2
    # Greedy: the chosen token is the most likely one.
    assert first["top_logprobs"][0]["token"] == first["token"]
    assert first["logprob"] == pytest.approx(first["top_logprobs"][0]["logprob"])
    assert "".join(e["token"] for e in content).startswith("Bonjour")


def test_logprob_events_arrive_one_per_token(tiny_engine, script_body):
    events = list(tiny_engine.submit(script_body("thinking_disabled", logprobs=True)).events())
    lps = [e for e in events if isinstance(e, TokenLogprobs)]
    assert len(lps) == events[-2].completion_tokens
    assert all(lp.logprob <= 0 for lp in lps)
    # the token view keeps the end-of-sequence token, marked; the stream leaves it out too
    assert lps[-1].token == "<|im_end|>" and lps[-1].ends_reply
    assert not any(lp.ends_reply for lp in lps[:-1])
    chunks = list(tiny_engine.chat_completions(
        script_body("thinking_disabled", logprobs=True, stream=True)))
    streamed = [e for c in chunks if c["choices"] and c["choices"][0].get("logprobs")
                for e in c["choices"][0]["logprobs"]["content"]]
    assert [e["token"] for e in streamed] == [lp.token for lp in lps[:-1]]


def test_stop_strings_end_the_reply_before_the_stop_text(tiny_engine, script_body):
    r = tiny_engine.chat_completions(script_body("long_story", stop=["Pip"]))
    choice = r["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["content"].endswith("a small robot named ")
    assert r["usage"]["completion_tokens"] < 100  # the unstopped reply runs to 200


@pytest.mark.parametrize("stream", [False, True])
def test_continue_final_message_goes_on_from_the_assistants_own_words(
        tiny_engine, script_body, scripts, stream):
    """A reply prefilled up to "...The user asks" goes on with " for 17 + 25", space kept, in
    reasoning (the prefix opened <think>); prefix and reply together are the scripted reply."""
    body = script_body("reason_then_answer")
    expected = scripts["reason_then_answer"]["reply"]
    prefix = expected[: expected.index(" for 17")]
    body["messages"] = body["messages"] + [{"role": "assistant", "content": prefix}]
    body["continue_final_message"] = True
    assert tiny_engine.inspect(body).prompt_text.endswith("assistant\n" + prefix)
    if not stream:
        message = tiny_engine.chat_completions(body)["choices"][0]["message"]
    else:
        deltas = [c["choices"][0]["delta"] for c in tiny_engine.chat_completions(
            {**body, "stream": True}) if c["choices"]]
        message = {key: "".join(d.get(key) or "" for d in deltas) for key in ("content", "reasoning")}
    assert message["reasoning"].startswith(" for 17 + 25.")
    assert prefix + message["reasoning"] + "</think>" + message["content"] == expected


@pytest.mark.parametrize("stream", [False, True])
def test_a_stop_string_never_matches_part_of_a_marker_token(tiny_engine, script_body, stream):
    """The reply opens with the one token <think>: "ink>" inside it is no stop, "</think>" is."""
    def message(body):
        if not stream:
            return tiny_engine.chat_completions(body)["choices"][0]["message"]
        chunks = list(tiny_engine.chat_completions({**body, "stream": True}))
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        return {key: "".join(d.get(key) or "" for d in deltas) for key in ("content", "reasoning")}

    plain = message(script_body("reason_then_answer"))
    assert message(script_body("reason_then_answer", stop=["ink>"]))["content"] == plain["content"]
    cut = message(script_body("reason_then_answer", stop=["</think>"]))
    assert cut["reasoning"] == plain["reasoning"] and not cut["content"]


@pytest.mark.parametrize("stream", [False, True])
def test_stop_strings_cut_where_they_start_and_nowhere_else(tiny_engine, script_body, stream):
    """The tiny reasoner greets "Bonjour !" (tokens B|on|j|ou|r| |!) and says "18 °C"."""
    def content(body):
        if not stream:
            r = tiny_engine.chat_completions(body)["choices"][0]
            return r["message"]["content"] or "", r["message"].get("reasoning") or "", r["finish_reason"]
        chunks = [c["choices"][0] for c in tiny_engine.chat_completions({**body, "stream": True})
                  if c["choices"]]
        return ("".join(c["delta"].get("content") or "" for c in chunks),
                "".join(c["delta"].get("reasoning") or "" for c in chunks),
                [c["finish_reason"] for c in chunks if c["finish_reason"]][-1])

    greeting = script_body("thinking_disabled", temperature=0.0)
    # Held for a second stop that never came, then cut by the first: not lost with it.
    assert content({**greeting, "stop": ["r !", "ur X"]})[0] == "Bonjou"
    # Held for a stop the end of text came before: the model's text, shown.
    assert content({**greeting, "stop": ["!?"]})[0] == "Bonjour !"
    # A stop string completing on the max_tokens token ended the reply: "stop", not "length".
    assert content({**greeting, "stop": ["ur !"], "max_tokens": 7}) == ("Bonjo", "", "stop")
    # A stop matched as tokens whose first bytes begin a character leaves no U+FFFD.
    _, reasoning, finish = content(script_body("answer_from_tool_result", temperature=0.0,
                                               stop=["°"]))
    assert reasoning.endswith("at 18 ") and "\ufffd" not in reasoning and finish == "stop"


def test_inspect_shows_every_stage_without_generating(tiny_engine, script_body):
    before = tiny_engine.cache_info().lookups
    body = script_body("follow_up_turn", temperature=0.0)
    inspection = tiny_engine.inspect(body)
    assert inspection.options["max_tokens"] == 200 and inspection.options["top_p"] == 1.0
    assert inspection.prompt_text.endswith("<|im_start|>assistant\n")
    assert len(inspection.token_ids) == len(inspection.token_strings)
    assert "".join(inspection.token_strings) == inspection.prompt_text
    assert inspection.segments[-1].end == len(inspection.token_ids)
    assert 0 <= inspection.cached_tokens < len(inspection.token_ids)
    assert tiny_engine.cache_info().lookups == before  # nothing was scheduled
    assert "prompt tokens" in str(inspection) and "<span" in inspection._repr_html_()


def test_trace_replays_a_finished_request(tiny_engine, script_body, scripts):
    handle = tiny_engine.submit(script_body("reason_then_answer"))
    list(handle.events())
    trace = tiny_engine.trace(handle.id)
    assert trace.family == "qwen3"
    assert trace.diff() == []
    assert trace.text == scripts["reason_then_answer"]["reply"]


def test_model_info_describes_the_model(tiny_engine, smollm2_engine):
    tiny = tiny_engine.model_info
    assert tiny.model_type == "qwen3" and tiny.thinking and tiny.tool_calling
    assert tiny.context_length and tiny.parameters > 0 and tiny.memory_bytes > 0
    smol = smollm2_engine.model_info
    assert smol.model_type == "llama" and not smol.thinking and not smol.tool_calling
    assert smol.quantization == "float32"
    assert 130e6 < smol.parameters < 140e6


BAD_BODIES = [
    ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": "hi"}], "temperature": -2}, "temperature"),
    ({"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}, "model"),
    ({"messages": [{"role": "user", "content": "word " * 3000}]}, "messages"),
    ({"messages": [{"role": "user", "content": "hi"}], "tools": "get_weather"}, "tools"),
]


@pytest.mark.parametrize("body,param", BAD_BODIES, ids=[p for _, p in BAD_BODIES])
def test_bad_input_raises_an_openai_error_and_the_engine_survives(
    tiny_engine, body, param, script_body
):
    with pytest.raises(EngineRequestError) as info:
        tiny_engine.chat_completions(body)
    assert info.value.error["param"] == param
    assert info.value.error["type"] == "invalid_request_error"
    assert tiny_engine.healthy
    r = tiny_engine.chat_completions(script_body("thinking_disabled"))
    assert r["choices"][0]["message"]["content"] == "Bonjour !"


def test_a_prompt_longer_than_the_context_says_so(tiny_engine):
    with pytest.raises(EngineRequestError) as info:
        tiny_engine.completions({"prompt": "word " * 3000})
    assert info.value.error["code"] == "context_length_exceeded"
    assert "context" in info.value.message


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_stops_where_the_context_ends(tiny_engine, stream):
    """A prompt of 2,040 tokens asking for 100 more on a 2,048-token model: 8 tokens, ended
    for length, rather than decoding past what the model can attend to (or a refusal)."""
    body = {"prompt": [5] * 2040, "max_tokens": 100, "temperature": 0.0}
    assert tiny_engine.model_info.context_length == 2048
    handle = tiny_engine.submit({**body, "stream": stream}, kind="completion")
    assert handle.request.max_tokens == 8
    reply = tiny_engine.completions(body)
    assert reply["usage"]["completion_tokens"] == 8
    assert reply["choices"][0]["finish_reason"] == "length"
    list(handle.events())


def test_a_seed_makes_sampling_repeatable(tiny_engine, script_body):
    body = script_body("long_story", temperature=1.5, seed=7, max_tokens=40)
    a = tiny_engine.chat_completions(body)["choices"][0]["message"]
    b = tiny_engine.chat_completions(body)["choices"][0]["message"]
    assert a == b
    c = tiny_engine.chat_completions({**body, "seed": 8})["choices"][0]["message"]
    assert c != a


def _reply_text(handle, after=None) -> str:
    """The reply's text; ``after(n)`` is called once ``n`` pieces have come."""
    pieces = []
    for event in handle.events():
        if isinstance(event, (ContentDelta, ReasoningDelta)):
            pieces.append(event.text)
            if after is not None:
                after(len(pieces))
    return "".join(pieces)


@pytest.mark.parametrize("sampling", [
    {"temperature": 1.5}, {"temperature": 0.9, "top_p": 0.8, "top_k": 30},
    {"temperature": 1.2, "min_p": 0.05, "xtc_probability": 0.5, "xtc_threshold": 0.05}])
def test_a_seeded_reply_is_the_same_beside_other_requests_and_the_one_mlx_lm_samples(
        tiny_engine, tiny_reasoner_path, script_body, sampling):
    """mlx's random key is global: batched, two seeded replies drew each other's numbers and
    matched neither alone. Each keeps its own key now, however it runs."""
    import mlx.core as mx
    from mlx_lm import load, stream_generate
    from mlx_lm.sample_utils import make_sampler

    body = script_body("long_story", seed=7, max_tokens=40, **sampling)
    other = {**body, "seed": 8}
    unseeded = {**body, "seed": None}
    alone = _reply_text(tiny_engine.submit(body))
    with tiny_engine.together():
        handles = [tiny_engine.submit(b) for b in (body, other, unseeded)]
    assert _reply_text(handles[0]) == alone
    assert _reply_text(handles[1]) == _reply_text(tiny_engine.submit(other))
    _reply_text(handles[2])
    # Started alone, moved onto the batch when another request came mid-reply.
    later = []
    moved = _reply_text(tiny_engine.submit(body), after=lambda n: n == 8 and later.append(
        tiny_engine.submit(other)))
    assert moved == alone
    assert _reply_text(later[0]) == _reply_text(tiny_engine.submit(other))
    # What mlx-lm samples after mx.random.seed(7), from the same prompt.
    model, tokenizer = load(str(tiny_reasoner_path))
    prompt = list(tiny_engine.submit({**body, "max_tokens": 1}).prompt.tokens)
    mx.random.seed(7)
    sampler = make_sampler(
        sampling["temperature"], top_p=sampling.get("top_p", 0.0), top_k=sampling.get("top_k", 0),
        min_p=sampling.get("min_p", 0.0), xtc_probability=sampling.get("xtc_probability", 0.0),
        xtc_threshold=sampling.get("xtc_threshold", 0.1),
        xtc_special_tokens=tokenizer.encode("\n") + list(tokenizer.eos_token_ids))
    theirs = [r.token for r in stream_generate(model, tokenizer, prompt, max_tokens=40,
                                               sampler=sampler)]
    ours = [e.token_id for e in tiny_engine.submit(
        {"prompt": prompt, "max_tokens": 40, "seed": 7, **sampling, "logprobs": 1},
        kind="completion").events() if isinstance(e, TokenLogprobs)]
    assert ours == theirs


TIME_TOOL = {"type": "function", "function": {
    "name": "get_time", "description": "The current time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}


def test_a_template_that_cannot_show_tools_is_reported(smollm2_engine, tiny_engine, script_body):
    # SmolLM2's template has no tools block: the prompt is the same with and without them.
    body = {"messages": [{"role": "user", "content": "What time is it in Paris?"}], "tools": [TIME_TOOL]}
    inspection = smollm2_engine.inspect(body)
    assert inspection.tools_rendered is False
    assert "cannot show tools" in str(inspection) and "cannot show tools" in inspection._repr_html_()
    handle = smollm2_engine.submit({**body, "max_tokens": 1})
    assert handle.prompt.tools_rendered is False
    list(handle.events())
    # The tiny reasoner's template renders them; a request without tools says nothing.
    tools_body = script_body("single_tool_call")
    assert tiny_engine.inspect(tools_body).tools_rendered is True
    assert tiny_engine.inspect({"messages": body["messages"]}).tools_rendered is None
    assert "cannot show tools" not in str(tiny_engine.inspect(tools_body))


def test_a_template_that_needs_its_tools_still_renders_a_tool_request(tiny_reasoner_path):
    # A template that raises without tools must not fail a request that has them.
    template = ("{% if not tools %}{{ raise_exception('tools are required') }}{% endif %}"
                "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                "{% for t in tools %}{{ t.function.name }}{% endfor %}<|im_start|>assistant\n")
    with Engine(str(tiny_reasoner_path), progress=False, chat_template=template) as engine:
        body = {"messages": [{"role": "user", "content": "Time?"}], "tools": [TIME_TOOL]}
        assert engine.inspect(body).tools_rendered is True
        with pytest.raises(EngineRequestError, match="tools are required"):
            engine.inspect({"messages": body["messages"]})


def test_parallel_calls_render_for_a_template_of_one_call_per_turn(tiny_reasoner_path):
    # Meta's Llama 3 template raises on an assistant turn with two calls: they are rendered as
    # two turns of one call, each followed by its own result.
    from parsing_cases.templates import LLAMA31_TEMPLATE

    def call(city, id_):
        return {"id": id_, "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}

    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}
    body = {"tools": [tool], "messages": [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "", "tool_calls": [call("Paris", "a"), call("Rome", "b")]},
        {"role": "tool", "tool_call_id": "b", "content": "21 C"},
        {"role": "tool", "tool_call_id": "a", "content": "18 C"},
    ]}
    with Engine(str(tiny_reasoner_path), progress=False, chat_template=LLAMA31_TEMPLATE) as engine:
        text = engine.inspect(body).prompt_text
        turn = "<|start_header_id|>{}<|end_header_id|>\n\n{}<|eot_id|>"
        expected = "".join([
            turn.format("assistant", '{"name": "get_weather", "parameters": {"city": "Paris"}}'),
            turn.format("ipython", '"18 C"'),
            turn.format("assistant", '{"name": "get_weather", "parameters": {"city": "Rome"}}'),
            turn.format("ipython", '"21 C"'),
        ])
        assert expected in text
        # Results whose ids name no call pair with the calls in order, each used once.
        body["messages"][2:] = [{"role": "tool", "tool_call_id": "x1", "content": "18 C"},
                                {"role": "tool", "tool_call_id": "b", "content": "21 C"}]
        assert expected in engine.inspect(body).prompt_text
        # So do results without an id (mlx_lm.server takes them; OpenAI's clients send one).
        body["messages"][2:] = [{"role": "tool", "content": "18 C"},
                                {"role": "tool", "content": "21 C"}]
        assert expected in engine.inspect(body).prompt_text
