"""vllm-mlx's own server tests (waybarrios/vllm-mlx ``tests/``), ported to our listener with the
real SmolLM2 and the tiny reasoner: what a client of ``vllm-mlx serve`` sees there (status,
JSON shapes, stream framing, text, token counts), checked here over HTTP. Their tests drive
pydantic models and fake engines; ours send the request and read what comes back.

Ported (their file → ours):
- test_api_models.py, test_streaming_json_encoder.py → response and chunk shapes (ids, objects,
  ``created``, no null-valued delta fields, ``finish_reason: null`` kept, ``[DONE]``), the
  model list, the reasoning field's name, assistant reasoning in the history reaching the
  template under either name, ``max_tokens`` of 0 or less refused.
- test_api_utils.py, test_native_tool_format.py → no special token reaches the reply; text
  parts, an assistant turn of text parts beside tool calls (their issue #61), several calls and
  results, a tool result without ``tool_call_id``, all rendered in order.
- test_logprobs.py → the end token is left out of chat logprobs and the tokens spell the reply
  (with their bytes); top lists are sorted and hold the chosen token; legacy completions'
  ``top_logprobs`` always include the sampled token, and ``text_offset`` counts the text;
  streamed logprobs join to the whole reply's. (Masked logits floored at -9999 and the 20-entry
  cap are test_peer_vllm_openai.py's.)
- test_chat_template_kwargs.py and test_server.py's resolver and CLI cases → a request's
  ``chat_template_kwargs`` reach the template; the engine's defaults (``chat_template_args``,
  their ``--default-chat-template-kwargs``) apply when a request sends none or ``{}``, and a
  request's keys override them key by key.
- test_chat_template_safety.py → the prompt cache still serves the system prompt's prefix after
  a tool turn.
- test_context_limits.py → a prompt and reply that fill the context exactly are served; a
  prompt that leaves no room is refused with ``context_length_exceeded`` before any stream
  frame (their 400 before the role frame).
- test_generation_error_response.py → a failure inside generation is a 500 (non-streamed) or an
  error event then ``[DONE]`` (streamed), never ``finish_reason: "error"`` or an empty answer.
- test_cache_token_usage.py → ``usage.prompt_tokens_details.cached_tokens`` on both paths; a
  cancelled stream leaves nothing behind in the next request's count or reply.
- test_gemma4_openai_format.py → tool calls on the wire: ``type``, a unique string ``id``,
  ``arguments`` as JSON text, ``content`` null, ``finish_reason: "tool_calls"``.
- test_streaming_detokenizer.py, test_server.py's streaming cases → streamed multi-byte text
  spells the whole reply; two streams at once keep their own text; streamed and whole requests
  alternate without harm; ``response_format`` JSON streams as content; reasoning survives
  beside tool calls (content null); stop strings cut the same streamed or not.

Where we deliberately differ, ours is asserted with a comment: the reasoning field is
``reasoning`` by default (vLLM's current name; ``reasoning_field`` picks ``reasoning_content``),
a reply that would run past the context is served and ends there (``finish_reason: "length"``)
rather than refused, text parts join with nothing between them (as mlx_lm.server), a tool
message needs its content (as OpenAI requires), an engine failure says its own reason, and a
legacy completion's text lacks the space its first token starts with (mlx-lm's detokenizer, as
mlx_lm.server; ``text_offset`` indexes the text returned).

Skipped: MLLM, audio, embeddings, Anthropic ``/v1/messages``, MCP, gradio, rate limiting,
request ``timeout`` (no such field here), their server-wide ``--max-request-tokens`` ceiling,
tool-name validation (function names with spaces are served, as mlx_lm.server serves them;
OpenAI and vllm-mlx refuse them), Harmony/GPT-OSS rendering, model-registry routing.
Their parser files are ported in ``tests/engine/parsing_cases/peers_vllm_mlx.py``.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from mlx_notebook.engine import Engine
from mlx_notebook.engine.serving import Listener

pytestmark = pytest.mark.model

PARIS = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
SPECIAL = ("<|im_end|>", "<|im_start|>", "<|endoftext|>", "<think>", "</think>")
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
TINY_CONTEXT = 2048


@pytest.fixture(scope="module")
def defaults_listener(tiny_reasoner_path):
    """The tiny reasoner served with engine-wide template defaults (vllm-mlx's
    ``--default-chat-template-kwargs``)."""
    engine = Engine(str(tiny_reasoner_path), progress=False,
                    chat_template_args={"enable_thinking": False, "server_default_only": "yes"})
    try:
        with Listener(engine, port=0) as listener:
            yield listener
    finally:
        engine.close()


def _post(listener, path: str, body: dict) -> httpx.Response:
    return httpx.post(f"{listener.url}/{path}", json=body, timeout=120,
                      headers={"Authorization": f"Bearer {listener.token}"})


def _frames(listener, path: str, body: dict) -> tuple[int, list[str]]:
    """The status and the non-empty lines of a streamed reply (comments left out)."""
    with httpx.stream("POST", f"{listener.url}/{path}", json={**body, "stream": True},
                      timeout=120, headers={"Authorization": f"Bearer {listener.token}"}) as r:
        return r.status_code, [line for line in r.iter_lines() if line and not line.startswith(":")]


def _chunks(lines: list[str]) -> list[dict]:
    assert lines[-1] == "data: [DONE]"
    assert all(line.startswith("data: ") for line in lines)
    return [json.loads(line[6:]) for line in lines[:-1]]


def _joined(chunks: list[dict], field: str) -> str:
    return "".join(c["choices"][0]["delta"].get(field) or "" for c in chunks if c["choices"])


# -- test_api_models.py, test_streaming_json_encoder.py -----------------------------------------
def test_a_chat_reply_and_its_chunks_have_openais_shapes(tiny_listener, script_body):
    body = script_body("reason_then_answer", temperature=0.0)
    before = int(time.time())
    reply = _post(tiny_listener, "chat/completions", body).json()
    after = int(time.time())
    assert reply["id"].startswith("chatcmpl-") and reply["object"] == "chat.completion"
    assert before <= reply["created"] <= after
    message = reply["choices"][0]["message"]
    assert message["role"] == "assistant" and "tool_calls" not in message  # absent, not null
    assert reply["usage"]["total_tokens"] == (reply["usage"]["prompt_tokens"]
                                              + reply["usage"]["completion_tokens"])

    status, lines = _frames(tiny_listener, "chat/completions", body)
    chunks = _chunks(lines)
    assert status == 200 and {c["id"] for c in chunks} == {chunks[0]["id"]}
    assert chunks[0]["id"].startswith("chatcmpl-") and chunks[0]["id"] != reply["id"]
    assert all(c["object"] == "chat.completion.chunk" and before <= c["created"] for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    for chunk in chunks[:-1]:
        choice = chunk["choices"][0]
        assert "finish_reason" in choice and choice["finish_reason"] is None  # kept as null
        assert None not in choice["delta"].values()  # no "content": null beside reasoning
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert None not in chunks[-1]["choices"][0]["delta"].values()
    assert _joined(chunks, "content") == message["content"]
    assert _joined(chunks, "reasoning") == message["reasoning"]


def test_a_completion_and_its_chunks_have_openais_shapes(smollm2_listener):
    body = {"prompt": "Once upon a time", "max_tokens": 5, "temperature": 0.0}
    reply = _post(smollm2_listener, "completions", body).json()
    assert reply["id"].startswith("cmpl-") and reply["object"] == "text_completion"
    assert reply["choices"][0]["finish_reason"] == "length"
    status, lines = _frames(smollm2_listener, "completions", body)
    chunks = _chunks(lines)
    assert status == 200 and all(c["object"] == "text_completion" for c in chunks)
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert "".join(c["choices"][0]["text"] for c in chunks) == reply["choices"][0]["text"]


def test_the_model_list_names_the_loaded_model(tiny_listener, tiny_engine):
    reply = httpx.get(f"{tiny_listener.url}/models",
                      headers={"Authorization": f"Bearer {tiny_listener.token}"}).json()
    assert reply["object"] == "list"
    [model] = reply["data"]
    assert model["object"] == "model" and model["id"] == tiny_engine.model_info.name
    assert model["owned_by"]  # theirs says "vllm-mlx", ours "mlx-notebook"


def test_the_reasoning_field_is_reasoning_unless_the_request_picks_reasoning_content(
        tiny_listener, script_body):
    """A difference: vllm-mlx writes ``reasoning_content`` only; we write ``reasoning`` (vLLM's
    current name) by default and ``reasoning_content`` when ``reasoning_field`` asks for it."""
    body = script_body("reason_then_answer", temperature=0.0)
    default = _post(tiny_listener, "chat/completions", body).json()["choices"][0]["message"]
    picked = _post(tiny_listener, "chat/completions",
                   {**body, "reasoning_field": "reasoning_content"}).json()["choices"][0]["message"]
    assert "reasoning_content" not in default and default["reasoning"]
    assert "reasoning" not in picked and picked["reasoning_content"] == default["reasoning"]
    _, lines = _frames(tiny_listener, "chat/completions",
                       {**body, "reasoning_field": "reasoning_content"})
    chunks = _chunks(lines)
    assert _joined(chunks, "reasoning_content") == default["reasoning"]
    assert not any("reasoning" in c["choices"][0]["delta"] for c in chunks if c["choices"])


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_assistant_reasoning_in_the_history_reaches_the_template(tiny_listener, tiny_engine,
                                                                 field):
    def messages(**thought):
        return [{"role": "user", "content": "Question"},
                {"role": "assistant", "content": "Answer", **thought},
                {"role": "user", "content": "Continue"}]

    shown = tiny_engine.inspect({"messages": messages(**{field: "Exact thought\n"})})
    assert "<think>\nExact thought\n</think>" in shown.prompt_text
    with_thought = _post(tiny_listener, "chat/completions",
                         {"messages": messages(**{field: "Exact thought\n"}), "max_tokens": 1})
    without = _post(tiny_listener, "chat/completions", {"messages": messages(), "max_tokens": 1})
    assert with_thought.json()["usage"]["prompt_tokens"] > without.json()["usage"]["prompt_tokens"]


@pytest.mark.parametrize("path, body", [
    ("chat/completions", {"messages": PARIS}), ("completions", {"prompt": "Once upon a time"})])
@pytest.mark.parametrize("max_tokens", [0, -1])
def test_max_tokens_of_zero_or_less_is_refused(smollm2_listener, path, body, max_tokens):
    reply = _post(smollm2_listener, path, {**body, "max_tokens": max_tokens})
    assert reply.status_code == 400 and reply.json()["error"]["param"] == "max_tokens"


# -- test_api_utils.py, test_native_tool_format.py ------------------------------------------------
def test_no_special_token_reaches_the_reply(smol):
    whole = smol.chat.completions.create(model="default_model", messages=PARIS, max_tokens=20,
                                         temperature=0.0, logprobs=True)
    assert whole.choices[0].message.content == "The capital of France is Paris."
    assert not any(token.token in SPECIAL for token in whole.choices[0].logprobs.content)
    streamed = "".join(c.choices[0].delta.content or "" for c in smol.chat.completions.create(
        model="default_model", messages=PARIS, max_tokens=20, temperature=0.0, stream=True))
    assert streamed == whole.choices[0].message.content
    text = smol.completions.create(model="default_model", prompt="Hello", max_tokens=12,
                                   temperature=0.0).choices[0].text
    assert not any(token in text for token in SPECIAL)


def test_text_parts_render_in_order(tiny_listener, tiny_engine):
    """A difference: vllm-mlx joins text parts with a newline; we join them as mlx_lm.server
    does, with nothing between (both parts reach the model, in order)."""
    parts = [{"type": "text", "text": "First part."}, {"type": "text", "text": "Second part."}]
    body = {"messages": [{"role": "user", "content": parts}], "max_tokens": 2}
    assert "First part.Second part." in tiny_engine.inspect(body).prompt_text
    assert _post(tiny_listener, "chat/completions", body).status_code == 200


def test_tool_turns_render_natively_in_order(tiny_listener, tiny_engine, scripts):
    time_call = {**CALL, "id": "call_2", "function": {"name": "get_time", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "Weather and time?"},
        # their issue #61: an assistant turn of text parts beside its tool calls
        {"role": "assistant", "content": [{"type": "text", "text": "I'll check both."}],
         "tool_calls": [CALL, time_call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
        {"role": "tool", "content": "3:00 PM"},  # no tool_call_id: paired in order
    ]
    body = {"messages": messages, "tools": scripts["single_tool_call"]["tools"], "max_tokens": 2}
    prompt = tiny_engine.inspect(body).prompt_text.partition("Weather and time?")[2]
    pieces = ["I'll check both.", '"name": "get_weather"', '"name": "get_time"', "Sunny",
              "3:00 PM"]
    positions = [prompt.find(piece) for piece in pieces]
    assert -1 not in positions and positions == sorted(positions)
    assert _post(tiny_listener, "chat/completions", body).status_code == 200


def test_a_tool_message_without_content_is_refused(tiny_listener):
    """A difference: vllm-mlx renders a tool message's null content as ""; OpenAI requires
    the content of a tool message, and so do we."""
    messages = [{"role": "user", "content": "q"},
                {"role": "assistant", "content": None, "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "call_1", "content": None}]
    reply = _post(tiny_listener, "chat/completions", {"messages": messages, "max_tokens": 2})
    assert reply.status_code == 400 and reply.json()["error"]["param"] == "messages[2].content"


# -- test_logprobs.py -----------------------------------------------------------------------------
def test_chat_logprobs_leave_out_the_end_token_and_spell_the_reply(smol):
    done = smol.chat.completions.create(model="default_model", messages=PARIS, max_tokens=20,
                                        temperature=0.0, logprobs=True, top_logprobs=3)
    choice = done.choices[0]
    entries = choice.logprobs.content
    assert choice.finish_reason == "stop"
    assert len(entries) == done.usage.completion_tokens - 1  # the end-of-turn token left out
    assert "".join(e.token for e in entries) == choice.message.content
    for entry in entries:
        assert entry.bytes == list(entry.token.encode("utf-8"))
        tops = [top.logprob for top in entry.top_logprobs]
        assert len(tops) == 3 and tops == sorted(tops, reverse=True)
        assert entry.top_logprobs[0].token == entry.token  # greedy: the chosen one leads
        assert entry.top_logprobs[0].logprob == pytest.approx(entry.logprob)


def test_completion_top_logprobs_always_hold_the_sampled_token(smol):
    done = smol.completions.create(model="default_model", prompt="Once upon a time",
                                   max_tokens=12, temperature=1.5, seed=3, logprobs=2)
    logprobs, text = done.choices[0].logprobs, done.choices[0].text
    for token, lp, top in zip(logprobs.tokens, logprobs.token_logprobs, logprobs.top_logprobs):
        assert top[token] == pytest.approx(lp) and 2 <= len(top) <= 3
    # A difference: mlx-lm's detokenizer drops the space the first token starts with (as
    # mlx_lm.server's text does; vllm-mlx keeps it), and text_offset indexes the text returned.
    joined = "".join(logprobs.tokens)
    skip = len(joined) - len(text)
    assert joined[skip:] == text and not joined[:skip].strip()
    starts, at = [], 0
    for token in logprobs.tokens:
        starts.append(max(0, at - skip))
        at += len(token)
    assert logprobs.text_offset == starts


def test_streamed_logprobs_join_to_the_whole_replys(smol):
    body = dict(model="default_model", messages=PARIS, max_tokens=20, temperature=0.0,
                logprobs=True, top_logprobs=2)
    whole = smol.chat.completions.create(**body).choices[0].logprobs.content
    streamed = [entry for chunk in smol.chat.completions.create(**body, stream=True)
                if chunk.choices and chunk.choices[0].logprobs
                for entry in chunk.choices[0].logprobs.content]
    assert [e.token for e in streamed] == [e.token for e in whole]
    assert [e.logprob for e in streamed] == pytest.approx([e.logprob for e in whole])


# -- test_chat_template_kwargs.py, test_server.py (resolver, CLI defaults) ----------------------
def test_chat_template_kwargs_reach_the_template(tiny, scripts):
    script = scripts["thinking_disabled"]

    def reply(thinking: bool, max_tokens: int):
        return tiny.chat.completions.create(
            model="default_model", messages=script["messages"], max_tokens=max_tokens,
            temperature=0.0, extra_body={"chat_template_kwargs": {"enable_thinking": thinking}})

    off, on = reply(False, 40), reply(True, 1)
    assert off.choices[0].message.content == script["reply"]
    assert not getattr(off.choices[0].message, "reasoning", None)
    assert off.usage.prompt_tokens > on.usage.prompt_tokens  # the empty think block rendered


def test_engine_template_defaults_apply_and_a_request_overrides_them_key_by_key(
        defaults_listener, tiny_listener, scripts):
    script = scripts["thinking_disabled"]
    body = {"messages": script["messages"], "max_tokens": 40, "temperature": 0.0}
    omitted = _post(defaults_listener, "chat/completions", body).json()
    empty = _post(defaults_listener, "chat/completions",
                  {**body, "chat_template_kwargs": {}}).json()
    for reply in (omitted, empty):  # omitted or empty: the engine's defaults hold
        assert reply["choices"][0]["message"]["content"] == script["reply"]
        assert "reasoning" not in reply["choices"][0]["message"]

    override = {"enable_thinking": True, "request_only": 1}
    engine = defaults_listener.engine
    assert engine.inspect({**body, "chat_template_kwargs": override}).options[
        "chat_template_kwargs"] == {"enable_thinking": True, "server_default_only": "yes",
                                    "request_only": 1}
    overridden = _post(defaults_listener, "chat/completions",
                       {**body, "max_tokens": 1, "chat_template_kwargs": override}).json()
    plain = _post(tiny_listener, "chat/completions", {**body, "max_tokens": 1}).json()
    assert overridden["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"]


# -- test_chat_template_safety.py ----------------------------------------------------------------
def test_the_system_prefix_is_reused_after_a_tool_turn(tiny_listener, scripts):
    tools = scripts["single_tool_call"]["tools"]
    system = {"role": "system", "content": "Cache stable policy: answer briefly."}
    first = [system, {"role": "user", "content": "Check Bogota weather."}]
    after_tool = first + [{"role": "assistant", "content": None, "tool_calls": [CALL]},
                          {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}]
    one = _post(tiny_listener, "chat/completions",
                {"messages": first, "tools": tools, "max_tokens": 1}).json()["usage"]
    two = _post(tiny_listener, "chat/completions",
                {"messages": after_tool, "tools": tools, "max_tokens": 1}).json()["usage"]
    cached = two["prompt_tokens_details"]["cached_tokens"]
    assert one["prompt_tokens"] - 2 <= cached < two["prompt_tokens"]


# -- test_context_limits.py ----------------------------------------------------------------------
def test_a_prompt_and_reply_that_fill_the_context_exactly_are_served(tiny_listener):
    done = _post(tiny_listener, "completions", {"prompt": [5] * (TINY_CONTEXT - 48),
                                                "max_tokens": 48, "temperature": 0.0}).json()
    assert done["usage"]["total_tokens"] == TINY_CONTEXT
    assert done["usage"]["completion_tokens"] == 48


def test_a_reply_one_token_past_the_context_is_served_up_to_it(tiny_listener):
    """A difference: vllm-mlx refuses prompt + max_tokens past the context; we serve it and
    end the reply where the context ends (``finish_reason: "length"``), as a long
    conversation asking for a long reply should not fail every turn."""
    done = _post(tiny_listener, "completions", {"prompt": [5] * (TINY_CONTEXT - 48),
                                                "max_tokens": 49, "temperature": 0.0}).json()
    assert done["usage"]["completion_tokens"] == 48
    assert done["usage"]["total_tokens"] == TINY_CONTEXT
    assert done["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize("path, body, param", [
    ("completions", {"prompt": [5] * TINY_CONTEXT}, "prompt"),
    ("chat/completions", {"messages": [{"role": "user", "content": "a " * 3000}]}, "messages"),
])
def test_a_prompt_that_leaves_no_room_is_refused_before_any_stream_frame(
        tiny_listener, path, body, param):
    body = {**body, "max_tokens": 1}
    whole = _post(tiny_listener, path, body)
    status, lines = _frames(tiny_listener, path, body)
    assert whole.status_code == status == 400
    assert not any(line.startswith("data:") for line in lines)  # a JSON error, no SSE frame
    for error in (whole.json()["error"], json.loads(lines[0])["error"]):
        assert error["code"] == "context_length_exceeded" and error["param"] == param
        assert str(TINY_CONTEXT) in error["message"]
    assert _post(tiny_listener, path, {**body, "max_tokens": 1, **(
        {"prompt": [5] * 10} if param == "prompt" else
        {"messages": [{"role": "user", "content": "hi"}]})}).status_code == 200


# -- test_generation_error_response.py -----------------------------------------------------------
def test_a_failure_inside_generation_is_an_error_not_an_empty_answer(tiny_listener):
    """A schema that compiles but that no JSON fits fails inside generation (llguidance finds
    nothing can follow). A difference: vllm-mlx answers "Internal server error"; ours says
    the request's own reason, which holds nothing internal."""
    body = {"messages": [{"role": "user", "content": "What's the weather in Paris?"}],
            "max_tokens": 60, "chat_template_kwargs": {"enable_thinking": False},
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "loop", "schema": {"$ref": "#"}}}}
    whole = _post(tiny_listener, "chat/completions", body)
    assert whole.status_code == 500
    assert whole.json()["error"]["type"] == "server_error"
    assert "response_format" in whole.json()["error"]["message"]

    status, lines = _frames(tiny_listener, "chat/completions", body)
    assert status == 200 and lines[-1] == "data: [DONE]"  # the headers went out first
    payloads = [json.loads(line[6:]) for line in lines[:-1]]
    errors = [p["error"] for p in payloads if "error" in p]
    assert len(errors) == 1 and "error" in payloads[-1]
    assert errors[0]["type"] == "server_error"
    assert "error" not in [c.get("finish_reason") for p in payloads for c in p.get("choices", [])]
    # The engine goes on serving.
    assert _post(tiny_listener, "chat/completions",
                 {"messages": body["messages"], "max_tokens": 3}).status_code == 200


# -- test_cache_token_usage.py --------------------------------------------------------------------
def test_cached_tokens_reach_the_client_streamed_or_not(smol):
    messages = [{"role": "system", "content": "You count cached tokens for a living."},
                {"role": "user", "content": "Name a colour."}]
    body = dict(model="default_model", messages=messages, max_tokens=4, temperature=0.0)
    smol.chat.completions.create(**body)  # the prompt is now in the cache
    again = smol.chat.completions.create(**body).usage
    assert 0 < again.prompt_tokens_details.cached_tokens < again.prompt_tokens
    *_, last = smol.chat.completions.create(**body, stream=True,
                                            stream_options={"include_usage": True})
    assert last.choices == []
    assert last.usage.prompt_tokens == again.prompt_tokens
    assert last.usage.prompt_tokens_details.cached_tokens == \
        again.prompt_tokens_details.cached_tokens


def test_a_cancelled_stream_leaves_nothing_behind(smollm2_listener, smol):
    """Their abort-then-reuse case: what a cancelled request cached never inflates the next
    request's count, nor changes its greedy reply."""
    body = {"model": "default_model", "max_tokens": 12, "temperature": 0.0,
            "messages": [{"role": "user", "content": "Tell me a story about a brave cat."}]}
    with httpx.stream("POST", f"{smollm2_listener.url}/chat/completions",
                      json={**body, "stream": True}, timeout=120,
                      headers={"Authorization": f"Bearer {smollm2_listener.token}"}) as reply:
        frames = 0
        for line in reply.iter_lines():
            frames += line.startswith("data: ")
            if frames == 2:
                break  # hang up mid-reply
    after = smol.chat.completions.create(**body)
    assert after.usage.prompt_tokens_details.cached_tokens < after.usage.prompt_tokens
    uninterrupted = smol.chat.completions.create(**body)
    assert after.choices[0].message.content == uninterrupted.choices[0].message.content


# -- test_streaming_detokenizer.py, test_server.py streaming cases --------------------------------
def test_streamed_multibyte_text_spells_the_whole_reply(smol):
    body = dict(model="default_model", max_tokens=10, temperature=0.0,
                messages=[{"role": "user", "content": "Say hello in Japanese."}])
    whole = smol.chat.completions.create(**body).choices[0].message.content
    assert any(ord(ch) > 0x2FFF for ch in whole)  # the reply is Japanese, several bytes each
    streamed = "".join(c.choices[0].delta.content or ""
                       for c in smol.chat.completions.create(**body, stream=True))
    assert streamed == whole and "\ufffd" not in streamed


def test_two_streams_at_once_keep_their_own_text(smol):
    bodies = [dict(model="default_model", max_tokens=8, temperature=0.0,
                   messages=[{"role": "user", "content": question}])
              for question in ("Say hello in Japanese.", "Name three fruits.")]
    wholes = [smol.chat.completions.create(**b).choices[0].message.content for b in bodies]

    def stream(body):
        return "".join(c.choices[0].delta.content or ""
                       for c in smol.chat.completions.create(**body, stream=True))

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(stream, bodies)) == wholes


def test_streamed_and_whole_requests_alternate_without_harm(smol):
    body = dict(model="default_model", max_tokens=20, temperature=0.0, messages=PARIS)

    def whole():
        return smol.chat.completions.create(**body).choices[0].message.content

    def streamed():
        return "".join(c.choices[0].delta.content or ""
                       for c in smol.chat.completions.create(**body, stream=True))

    texts = [whole(), streamed(), whole(), streamed()]
    assert texts == ["The capital of France is Paris."] * 4


def test_json_for_response_format_streams_as_content_after_free_reasoning(tiny_listener, scripts):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    body = {"messages": scripts["single_tool_call"]["messages"], "max_tokens": 40,
            "temperature": 0.0, "chat_template_kwargs": {"enable_thinking": True},
            "response_format": {"type": "json_schema", "json_schema": {"name": "c",
                                                                       "schema": schema}}}
    whole = _post(tiny_listener, "chat/completions", body).json()["choices"][0]["message"]
    _, lines = _frames(tiny_listener, "chat/completions", body)
    chunks = _chunks(lines)
    content, reasoning = _joined(chunks, "content"), _joined(chunks, "reasoning")
    assert content == whole["content"] and content.startswith('{"city": "')
    assert reasoning == whole["reasoning"] and "{" not in reasoning


def test_reasoning_survives_beside_tool_calls(tiny, scripts):
    script = scripts["single_tool_call"]
    body = dict(model="default_model", messages=script["messages"], tools=script["tools"],
                max_tokens=200, temperature=0.0)
    done = tiny.chat.completions.create(**body).choices[0]
    thought = script["reply"].split("<think>")[1].split("</think>")[0]
    assert done.finish_reason == "tool_calls" and done.message.content is None
    assert done.message.reasoning == thought
    assert done.message.tool_calls[0].function.name == "get_weather"
    chunks = list(tiny.chat.completions.create(**body, stream=True))
    assert "".join(getattr(c.choices[0].delta, "reasoning", None) or "" for c in chunks) == thought
    assert [c.choices[0].finish_reason for c in chunks if c.choices[0].finish_reason] == [
        "tool_calls"]
    assert not any(c.choices[0].delta.content for c in chunks)


def test_tool_calls_have_openais_shape(tiny_listener, script_body):
    """test_gemma4_openai_format.py's wire checks, on the tiny reasoner's parallel calls."""
    reply = _post(tiny_listener, "chat/completions",
                  script_body("parallel_tool_calls", temperature=0.0)).json()
    choice = reply["choices"][0]
    calls = choice["message"]["tool_calls"]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    assert len(calls) == 2 and len({c["id"] for c in calls}) == 2
    for call in calls:
        assert call["type"] == "function" and isinstance(call["id"], str) and call["id"]
        assert call["function"]["name"] == "get_weather"
        assert isinstance(call["function"]["arguments"], str)  # JSON text, not an object
        assert set(json.loads(call["function"]["arguments"])) == {"city"}


@pytest.mark.parametrize("stop, content", [
    ([" Paris"], "The capital of France is"),
    (["France is"], "The capital of "),  # the stop spans tokens
    (["The"], ""),  # at the very start
    (["xyz", "capital"], "The "),
])
def test_a_stop_string_cuts_the_same_streamed_or_not(smol, stop, content):
    body = dict(model="default_model", messages=PARIS, max_tokens=20, temperature=0.0, stop=stop)
    whole = smol.chat.completions.create(**body).choices[0]
    chunks = list(smol.chat.completions.create(**body, stream=True))
    assert (whole.message.content, whole.finish_reason) == (content, "stop")
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == content
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_a_stop_string_inside_the_reasoning_ends_the_reply_there(tiny, scripts):
    body = dict(model="default_model", messages=scripts["reason_then_answer"]["messages"],
                max_tokens=200, temperature=0.0, stop=["7 + 5"])
    whole = tiny.chat.completions.create(**body).choices[0]
    chunks = list(tiny.chat.completions.create(**body, stream=True))
    assert whole.finish_reason == "stop" and not whole.message.content
    assert whole.message.reasoning == "\nThe user asks for 17 + 25. "
    assert "".join(getattr(c.choices[0].delta, "reasoning", None) or ""
                   for c in chunks) == whole.message.reasoning
