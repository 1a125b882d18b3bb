"""mlx-lm's own HTTP server tests (ml-explore/mlx-lm ``tests/test_server.py``), ported to our
listener with the real SmolLM2 and the tiny reasoner: what a client of ``mlx_lm.server`` checks
there must hold here too, as a client sees it (status, JSON fields, stream framing, text,
token counts).

Ported (their test → ours):
- ``test_handle_completions`` → the same seeded, sampled completion twice gives the same text.
- ``test_handle_chat_completions`` → a sampled chat with their extensions is answered.
- ``..._with_content_fragments`` → text parts are read as the string they spell.
- ``..._with_null_tool_content`` → an assistant turn of tool calls with ``content: null``.
- ``test_handle_models`` → ``/v1/models`` lists the loaded model.
- ``test_sequence_overlap`` (their stop-word matcher) → a stop sequence that spans tokens cuts
  the reply before it, streamed or not.
- ``TestServerWithDraftModel`` (four cases) → the same four against the tiny reasoner drafting
  for itself; the prompt-cache case also checks the second request reports cached tokens.
- ``TestKeepalive`` (their callback alone) → a streamed reply whose prompt is read in several
  chunks sends ``: keepalive`` comments meanwhile, and clients still parse the stream.
- ``TestLRUPromptCache`` (their cache class) → the user-visible point: a request sharing a
  prefix reports it in ``cached_tokens``, and reuse never changes a greedy reply.

Skipped:
- ``TestErrorStatusCodes``: a Metal out-of-memory error mapped to 503 needs their failing mock
  generator and comes from mlx-lm newer than the 0.32 we pin; an engine failure answering
  500 is ``test_listener.py``'s failing-writer test.
- ``TestKVBudgeting``, ``TestBatchability``, ``TestKVQuantModelCompatibility``: their internals
  (KV byte projection, batchability with ``--kv-bits``), nothing a client sees.
- ``TestCLIValidation``, ``TestPromptTokenLimit``: ``--kv-bits``, ``--max-kv-size``,
  ``--max-prompt-tokens`` are options of their CLI that ``mlx-notebook serve`` does not have.
"""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from mlx_notebook.engine.serving import Listener

pytestmark = pytest.mark.model

PARIS = {"messages": [{"role": "user",
                       "content": "What is the capital of France? Answer in one sentence."}],
         "max_tokens": 20, "temperature": 0.0}
"""DESIGN.md's greedy SmolLM2 exchange: the reply is "The capital of France is Paris." """


@pytest.fixture(scope="module")
def drafting_listener(drafting_tiny_engine):
    with Listener(drafting_tiny_engine, port=0) as listener:
        yield listener


def _post(listener, path: str, body: dict) -> httpx.Response:
    return httpx.post(f"{listener.url}/{path}", json=body, timeout=120,
                      headers={"Authorization": f"Bearer {listener.token}"})


def _stream_frames(listener, path: str, body: dict) -> list[str]:
    """The raw SSE frames of a streamed reply, as sent (``data:`` lines and comments)."""
    with httpx.stream("POST", f"{listener.url}/{path}", json={**body, "stream": True},
                      timeout=120, headers={"Authorization": f"Bearer {listener.token}"}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        text = r.read().decode()
    return [frame for frame in text.split("\n\n") if frame]


def _chunks(frames: list[str]) -> list[dict]:
    """The JSON chunks of a stream, as an SSE client reads them (comments skipped)."""
    assert frames[-1] == "data: [DONE]"
    return [json.loads(f.removeprefix("data: ")) for f in frames[:-1] if f.startswith("data: ")]


# -- TestServer ------------------------------------------------------------------------------------
def test_a_seeded_sampled_completion_with_their_extensions_repeats_its_text(smollm2_listener):
    body = {"model": "default_model", "prompt": "Once upon a time", "max_tokens": 10,
            "temperature": 0.5, "top_p": 0.9, "repetition_penalty": 1.1,
            "repetition_context_size": 20, "seed": 999, "stop": "stop sequence"}
    first, second = (_post(smollm2_listener, "completions", body) for _ in range(2))
    assert [first.status_code, second.status_code] == [200, 200]
    reply = first.json()
    assert reply["id"].startswith("cmpl-") and reply["object"] == "text_completion"
    assert reply["choices"][0]["text"] == second.json()["choices"][0]["text"]
    assert reply["choices"][0]["text"]
    assert reply["usage"]["completion_tokens"] <= 10
    assert reply["usage"]["total_tokens"] == (reply["usage"]["prompt_tokens"]
                                              + reply["usage"]["completion_tokens"])


CHAT = {"model": "default_model", "max_tokens": 10, "temperature": 0.7, "top_p": 0.85,
        "repetition_penalty": 1.2,
        "messages": [{"role": "system", "content": "You are a helpful assistant."},
                     {"role": "user", "content": "Hello!"}]}


def test_a_sampled_chat_with_their_extensions_is_answered(smollm2_listener):
    reply = _post(smollm2_listener, "chat/completions", CHAT)
    assert reply.status_code == 200
    body = reply.json()
    assert body["id"].startswith("chatcmpl-") and body["object"] == "chat.completion"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"]
    assert choice["finish_reason"] in ("stop", "length")
    assert 0 < body["usage"]["completion_tokens"] <= 10


def test_their_model_name_chat_model_is_refused_naming_the_loaded_model(smollm2_listener,
                                                                         smollm2_engine):
    """A deliberate difference: their test server loads whatever ``model`` names ("chat_model"
    is a name their fake provider maps); ours serves the one loaded model, so another name is a
    404 ``model_not_found`` (docs/openai-fields.md), as mlx_lm.server answers a name it
    cannot load."""
    reply = _post(smollm2_listener, "chat/completions", {**CHAT, "model": "chat_model"})
    assert reply.status_code == 404
    error = reply.json()["error"]
    assert (error["code"], error["param"]) == ("model_not_found", "model")
    assert smollm2_engine.model_info.name in error["message"]


def test_content_fragments_are_read_as_the_text_they_spell(smollm2_listener):
    parts = {**PARIS, "messages": [
        {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]},
        {"role": "user", "content": [{"type": "text", "text": PARIS["messages"][0]["content"]}]}]}
    plain = {**PARIS, "messages": [{"role": "system", "content": "You are a helpful assistant."},
                                   *PARIS["messages"]]}
    replies = [_post(smollm2_listener, "chat/completions", b) for b in (parts, plain)]
    assert [r.status_code for r in replies] == [200, 200]
    messages = [r.json()["choices"][0]["message"]["content"] for r in replies]
    assert messages[0] == messages[1]
    assert "Paris" in messages[0]


def test_an_assistant_turn_of_tool_calls_with_null_content_is_answered(smollm2_listener):
    body = {**CHAT, "messages": [
        {"role": "user", "content": "what is 2+3?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "id": "123",
             "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]},
        {"role": "tool", "content": "5", "tool_call_id": "123"}]}
    reply = _post(smollm2_listener, "chat/completions", body)
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"]


def test_models_lists_the_loaded_model(smollm2_listener, smollm2_engine):
    reply = httpx.get(f"{smollm2_listener.url}/models",
                      headers={"Authorization": f"Bearer {smollm2_listener.token}"})
    assert reply.status_code == 200
    body = reply.json()
    assert body["object"] == "list" and len(body["data"]) == 1
    model = body["data"][0]
    assert (model["id"], model["object"]) == (smollm2_engine.model_info.name, "model")
    assert isinstance(model["created"], int)


@pytest.mark.parametrize("stop, expected", [
    (" Paris", "The capital of France is"),          # one token
    ("France is", "The capital of "),                # several tokens
    (["nowhere", "is Paris"], "The capital of France "),
])
def test_a_stop_sequence_cuts_the_reply_before_it(smollm2_listener, stop, expected):
    body = {**PARIS, "stop": stop}
    whole = _post(smollm2_listener, "chat/completions", body).json()["choices"][0]
    assert (whole["message"]["content"], whole["finish_reason"]) == (expected, "stop")
    chunks = _chunks(_stream_frames(smollm2_listener, "chat/completions", body))
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == expected
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_greedy_logprobs_list_each_token_with_its_top_alternatives(smollm2_listener):
    """Their server lists ``{"id", "logprob"}`` (and the top token's dict with
    ``top_logprobs``); ours lists OpenAI's shape, which the SDKs parse: ``token``,
    ``logprob``, ``bytes`` and ``top_logprobs`` of ``top_logprobs`` entries, one per token."""
    body = {**PARIS, "max_tokens": 4, "logprobs": True, "top_logprobs": 3}
    reply = _post(smollm2_listener, "chat/completions", body).json()
    content = reply["choices"][0]["logprobs"]["content"]
    assert len(content) == reply["usage"]["completion_tokens"] == 4
    assert "".join(t["token"] for t in content) == reply["choices"][0]["message"]["content"]
    for token in content:
        assert len(token["top_logprobs"]) == 3
        assert token["top_logprobs"][0]["token"] == token["token"]  # greedy: the likeliest
        assert token["logprob"] <= 0


# -- TestServerWithDraftModel ----------------------------------------------------------------------
def test_a_completion_with_a_draft_model_counts_its_tokens(drafting_listener):
    body = {"model": "default_model", "prompt": "Once upon a time", "max_tokens": 10,
            "temperature": 0.0, "top_p": 1.0}
    reply = _post(drafting_listener, "completions", body)
    assert reply.status_code == 200
    assert 0 < reply.json()["usage"]["completion_tokens"] <= 10
    assert reply.json()["id"].startswith("cmpl-")


def test_a_chat_with_a_draft_model_gives_the_scripted_reply(drafting_listener, script_body,
                                                            scripts):
    reply = _post(drafting_listener, "chat/completions",
                  script_body("thinking_disabled", temperature=0.0))
    assert reply.status_code == 200
    body = reply.json()
    assert body["choices"][0]["message"]["content"] == scripts["thinking_disabled"]["reply"]
    assert body["usage"]["completion_tokens"] > 0


def test_a_stream_with_a_draft_model_sends_one_choice_deltas(drafting_listener, script_body,
                                                             scripts):
    frames = _stream_frames(drafting_listener, "chat/completions",
                            script_body("thinking_disabled", temperature=0.0))
    chunks = _chunks(frames)
    assert chunks and all(len(c["choices"]) == 1 and "delta" in c["choices"][0] for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == scripts["thinking_disabled"]["reply"]


def test_a_draft_model_follow_up_sharing_a_prefix_is_answered_from_the_cache(drafting_listener):
    first = {"model": "default_model", "max_tokens": 5, "temperature": 0.0, "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Tell me a story about"}]}
    second = {**first, "messages": [first["messages"][0],
                                    {"role": "user", "content": "Tell me a story about dragons."}]}
    replies = [_post(drafting_listener, "chat/completions", b) for b in (first, second)]
    assert [r.status_code for r in replies] == [200, 200]
    for reply in replies:
        assert reply.json()["choices"][0]["message"]["content"] is not None
    assert replies[1].json()["usage"]["prompt_tokens_details"]["cached_tokens"] > 0


# -- TestKeepalive ---------------------------------------------------------------------------------
def test_a_long_prompt_streams_keepalive_comments_while_it_is_read(smollm2_listener):
    """mlx_lm.server writes ``: keepalive done/total`` as each prompt chunk is read, so a
    client with a read timeout shorter than a long prefill still sees bytes; SSE clients skip
    comments, and the openai SDK reads the same reply."""
    story = " ".join(f"Keepalive line {i}: the lighthouse keeper counted ships." for i in range(40))
    body = {"messages": [{"role": "user", "content": story}], "max_tokens": 2,
            "temperature": 0.0}
    frames = _stream_frames(smollm2_listener, "chat/completions", body)
    comments = [f for f in frames if f.startswith(":")]
    assert len(comments) >= 3  # the prompt is several 64-token chunks on a CPU
    for comment in comments:
        done, total = map(int, comment.removeprefix(": keepalive ").split("/"))
        assert 0 <= done <= total
    assert all(f.startswith(("data: ", ": keepalive ")) for f in frames)
    first_data = next(i for i, f in enumerate(frames) if f.startswith("data: "))
    assert frames[0].startswith(":") and first_data > 0
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in _chunks(frames))
    client = openai.OpenAI(base_url=smollm2_listener.url, api_key=smollm2_listener.token,
                           max_retries=0)
    streamed = client.chat.completions.create(model="default_model", stream=True, **body)
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == text


# -- TestLRUPromptCache ----------------------------------------------------------------------------
def test_a_shared_prefix_is_reported_cached_and_never_changes_a_greedy_reply(smollm2_listener):
    system = {"role": "system", "content": "You answer geography questions for a quiz."}
    ask = {**PARIS, "messages": [system, *PARIS["messages"]]}
    other = {**PARIS, "messages": [system, {"role": "user", "content": "Name a river in Spain."}]}
    cold, _, warm = (_post(smollm2_listener, "chat/completions", b).json()
                     for b in (ask, other, ask))
    assert warm["choices"][0]["message"] == cold["choices"][0]["message"]
    usage = warm["usage"]
    assert usage["prompt_tokens"] == cold["usage"]["prompt_tokens"]
    assert usage["prompt_tokens_details"]["cached_tokens"] >= usage["prompt_tokens"] - 1
