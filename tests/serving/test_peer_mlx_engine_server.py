"""LM Studio's mlx-engine HTTP server tests (lmstudio-ai/mlx-engine ``tests/server/test_http.py``),
ported to our listener with the tiny reasoner and the real SmolLM2. Theirs serves a fake
generator; ours the real engine, so each check is of what a client of the listener sees:
status, headers, the SSE framing, error objects, token counts, and whether the engine is
still working on a request. The engine-level ports are in tests/engine/test_peer_mlx_engine.py.

Ported (their test → ours):
- ``test_health_requires_auth_...`` → ``/health`` answers without a token (theirs asks for
  one: ours tells nothing but whether the engine runs, for uptime checkers, as mlx_lm.server's
  does) and ``/v1/models`` asks for one, with an OpenAI error object.
- ``test_rejected_post_closes_connection_...`` → a POST refused before its body is read closes
  the connection, so the body is never read as a second request.
- ``test_invalid_and_oversized_content_lengths_...`` → a Content-Length that is no byte count
  is a 400 that names the header, none a 400 that asks for a body, one past the limit a 413
  before any byte of the body is read.
- ``test_invalid_generation_settings_...`` → refused as JSON before any stream starts, naming
  the field; what they refuse and we honour (a stop ``""``, a ``seed``) is streamed.
- ``test_chat_stream_forwards_generation_settings_...`` → their body (sampling fields, a stop,
  a JSON schema, usage asked for) streams progress comments, content that fits the schema, a
  usage chunk and ``[DONE]``.
- ``test_batched_text_cache_hit_preserves_full_prompt_usage`` → a repeated request reports its
  whole prompt, and what the cache gave.
- ``test_tools_are_rejected_before_streaming`` → tools are served here (a difference).
- ``test_generation_errors_are_returned_inside_the_stream`` → an engine that fails mid-reply
  ends the stream with an error object and ``[DONE]``, and the listener says so after.
- ``test_client_disconnect_stops_the_active_mlx_request`` → a client gone before its first
  token cancels its request.
- ``test_stalled_sse_write_cancels_the_active_mlx_request`` → a difference: theirs serves one
  request at a time, so a client that stops reading would hold the model; ours batches, so it
  holds nothing but its own reply, which is decoded to its end and buffered.
- ``test_runtime_unloads_model`` → a closed engine is answered 503, and ``/health`` says so.

Skipped: ``test_vision_usage_uses_the_prepared_prompt_length`` (images); the session-level
cancels are engine tests (tests/engine/test_peer_mlx_engine.py).
"""

from __future__ import annotations

import json
import socket
import struct

import httpx
import jsonschema
import pytest

from mlx_notebook.engine import Engine
from mlx_notebook.engine.serving import Listener

pytestmark = pytest.mark.model

THEIR_BODY = {"model": "default_model", "stream": True, "stream_options": {"include_usage": True},
              "temperature": 0.6, "max_tokens": 32, "stop": ["END"], "top_p": 0.9, "top_k": 20,
              "min_p": 0.03, "repetition_penalty": 1.05, "seed": 0}
"""Their request's settings (``repeat_penalty`` by mlx_lm.server's name, which is ours), with
a seed so the sampled reply repeats."""


def _auth(listener) -> dict:
    return {"Authorization": f"Bearer {listener.token}"}


def _root(listener) -> str:
    return listener.url.removesuffix("/v1")


def _address(listener) -> tuple[str, int]:
    host, _, port = _root(listener).removeprefix("http://").rpartition(":")
    return host, int(port)


def _raw(listener, request: bytes) -> bytes:
    """Send ``request`` on a socket of its own; everything the listener answers, to its close."""
    with socket.create_connection(_address(listener), timeout=10) as client:
        client.sendall(request)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


def _post_head(listener, content_length: str, token: bool = True) -> bytes:
    lines = ["POST /v1/chat/completions HTTP/1.1", "Host: 127.0.0.1",
             "Content-Type: application/json", f"Content-Length: {content_length}"]
    if token:
        lines.append(f"Authorization: Bearer {listener.token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _stream(listener, body: dict) -> tuple[httpx.Response, list[str]]:
    """The response and its SSE frames as sent (``data:`` lines and comments)."""
    with httpx.stream("POST", f"{listener.url}/chat/completions", json=body, timeout=120,
                      headers=_auth(listener)) as response:
        text = response.read().decode()
    return response, [frame for frame in text.split("\n\n") if frame]


def _chunks(frames: list[str]) -> list[dict]:
    return [json.loads(f.removeprefix("data: ")) for f in frames
            if f.startswith("data: ") and f != "data: [DONE]"]


def _content(chunks: list[dict]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


# -- auth and the request's head ---------------------------------------------------------------
def test_health_answers_without_a_token_and_models_asks_for_one(tiny_listener):
    assert httpx.get(f"{_root(tiny_listener)}/health").json() == {"status": "ok"}
    refused = httpx.get(f"{tiny_listener.url}/models")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_api_key"
    assert httpx.get(f"{tiny_listener.url}/models", headers=_auth(tiny_listener)).status_code == 200


def test_a_post_refused_before_its_body_closes_so_the_body_is_never_a_request(tiny_listener):
    body = b'{"messages":[]}'
    smuggled = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answer = _raw(tiny_listener, _post_head(tiny_listener, str(len(body)), token=False)
                  + body + smuggled)
    assert answer.count(b"HTTP/1.1 ") == 1
    assert answer.startswith(b"HTTP/1.1 401 ")
    assert b"\r\nConnection: close\r\n" in answer


@pytest.mark.parametrize("length", ["invalid", "-1"])
def test_a_content_length_that_is_no_byte_count_is_a_400_naming_the_header(tiny_listener,
                                                                          length):
    head, _, body = _raw(tiny_listener, _post_head(tiny_listener, length)).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert "Content-Length" in json.loads(body)["error"]["message"]


def test_a_body_of_no_bytes_is_a_400_asking_for_one(tiny_listener):
    reply = httpx.post(f"{tiny_listener.url}/chat/completions", content=b"",
                       headers=_auth(tiny_listener))
    assert reply.status_code == 400
    assert "no body" in reply.json()["error"]["message"]


def test_a_body_past_the_limit_is_a_413_before_it_is_read(tiny_listener):
    # Their limit is 500 MiB; ours 8 MiB (MAX_BODY_BYTES). None of the body is sent.
    head, _, body = _raw(tiny_listener, _post_head(tiny_listener, str(500 * 2**20 + 1))
                         ).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ")
    assert json.loads(body)["error"]["code"] == "request_too_large"


# -- generation settings -----------------------------------------------------------------------
@pytest.mark.parametrize("field, value", [("temperature", -0.1), ("top_k", -1),
                                          ("max_tokens", 0)])
def test_a_setting_out_of_range_is_refused_before_any_stream(tiny_listener, field, value):
    body = {**THEIR_BODY, "messages": [{"role": "user", "content": "Hello"}], field: value}
    reply = httpx.post(f"{tiny_listener.url}/chat/completions", json=body,
                       headers=_auth(tiny_listener), timeout=60)
    assert reply.status_code == 400
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.json()["error"]["param"] == field


@pytest.mark.parametrize("extra", [{"stop": [""]}, {"seed": 7}], ids=["empty stop", "seed"])
def test_what_they_refuse_and_we_honour_is_streamed(tiny_listener, script_body, scripts, extra):
    body = script_body("thinking_disabled", **{**THEIR_BODY, "temperature": 0.0, **extra})
    response, frames = _stream(tiny_listener, body)
    assert response.status_code == 200
    assert _content(_chunks(frames)) == scripts["thinking_disabled"]["reply"]


def test_their_stream_sends_progress_schema_fitting_content_usage_and_done(smollm2_listener):
    schema = {"type": "object", "properties": {"answer": {"type": "string"}},
              "required": ["answer"], "additionalProperties": False}
    body = {**THEIR_BODY, "max_tokens": 40, "messages": [
        {"role": "user", "content": "What is the capital of France? Answer in JSON."}],
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "answer", "schema": schema}}}
    response, frames = _stream(smollm2_listener, body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    # Their ": prompt-progress" comments are mlx_lm.server's ": keepalive done/total" here.
    assert frames[0].startswith(": keepalive ")
    assert frames[-1] == "data: [DONE]"
    chunks = _chunks(frames)
    jsonschema.validate(json.loads(_content(chunks)), schema)
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    usage = chunks[-1]["usage"]
    assert chunks[-1]["choices"] == [] and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_a_repeated_request_reports_its_whole_prompt_and_what_the_cache_gave(tiny_listener,
                                                                            tiny_engine,
                                                                            script_body):
    body = script_body("system_prompt", max_tokens=8)
    tiny_engine.clear_prompt_cache()
    first, second = (httpx.post(f"{tiny_listener.url}/chat/completions", json=body, timeout=60,
                                headers=_auth(tiny_listener)).json()["usage"] for _ in range(2))
    assert first["prompt_tokens"] == second["prompt_tokens"]
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert second["prompt_tokens_details"]["cached_tokens"] == second["prompt_tokens"] - 1


def test_tools_are_served_with_the_calls_the_model_makes(tiny_listener, script_body):
    # Theirs answers 400 "Tools are not supported yet."
    reply = httpx.post(f"{tiny_listener.url}/chat/completions", timeout=60,
                       json=script_body("single_tool_call"), headers=_auth(tiny_listener))
    assert reply.status_code == 200
    choice = reply.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Paris"})


# -- failures, disconnects, unloading ----------------------------------------------------------
@pytest.fixture
def own_listener(tiny_reasoner_path):
    """A listener on an engine of its own, which a test may break or close."""
    engine = Engine(str(tiny_reasoner_path), progress=False)
    try:
        with Listener(engine, port=0) as listener:
            yield listener, engine
    finally:
        engine.close()


def test_an_engine_failing_mid_reply_ends_the_stream_with_an_error_object(own_listener,
                                                                          script_body):
    listener, engine = own_listener
    with httpx.stream("POST", f"{listener.url}/chat/completions", timeout=60,
                      json=script_body("long_story", max_tokens=2000, stream=True),
                      headers=_auth(listener)) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        next(line for line in lines if line.startswith("data: "))
        engine._crash_engine_thread("simulated MLX failure")
        rest = [line for line in lines if line]
    assert rest[-1] == "data: [DONE]"
    error = json.loads(rest[-2].removeprefix("data: "))["error"]
    assert "simulated MLX failure" in error["message"] and error["type"] == "server_error"
    health = httpx.get(f"{_root(listener)}/health")
    assert (health.status_code, health.json()) == (503, {"status": "unavailable"})


def test_a_closed_engine_is_answered_503_and_health_says_so(own_listener, script_body):
    listener, engine = own_listener
    engine.close()
    reply = httpx.post(f"{listener.url}/chat/completions", json=script_body("thinking_disabled"),
                       headers=_auth(listener), timeout=60)
    assert reply.status_code == 503
    assert reply.json()["error"]["code"] == "model_not_loaded"
    assert httpx.get(f"{_root(listener)}/health").status_code == 503


def test_a_client_gone_before_its_first_token_cancels_its_request(
        tiny_listener, tiny_engine, script_body, wait_until, engine_thread_held):
    request = json.dumps(script_body("long_story", stream=True)).encode()
    with engine_thread_held(tiny_engine):  # admitted and answered 200, not yet generated
        client = socket.create_connection(_address(tiny_listener), timeout=10)
        client.sendall(_post_head(tiny_listener, str(len(request))) + request)
        head = b""
        while b"\r\n\r\n" not in head:
            head += client.recv(4096)
        assert head.startswith(b"HTTP/1.1 200 ")
        assert wait_until(lambda: len(tiny_listener.served()) == 1)
        request_id = tiny_listener.served()[0].request_id
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # a reset, as a client killed mid-request leaves it
        assert wait_until(lambda: tiny_listener.served() == ())
    assert wait_until(lambda: tiny_engine.active_requests == 0)
    assert tiny_engine.trace(request_id).text == ""  # not one token of the story


def test_a_client_that_stops_reading_holds_the_engine_no_longer_than_its_reply(
        tiny_listener, tiny_engine, script_body, scripts, wait_until, engine_thread_held):
    request = json.dumps(script_body("long_story", max_tokens=600, stream=True)).encode()
    with socket.socket() as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.settimeout(10)
        with engine_thread_held(tiny_engine):
            client.connect(_address(tiny_listener))
            client.sendall(_post_head(tiny_listener, str(len(request))) + request)
            assert wait_until(lambda: len(tiny_listener.served()) == 1)
            request_id = tiny_listener.served()[0].request_id
        # Never read: the reply is decoded to its end and waits in the listener's buffer.
        assert wait_until(lambda: tiny_listener.served() == ()
                          and tiny_engine.active_requests == 0)
        assert tiny_engine.trace(request_id).text == scripts["long_story"]["reply"]
        other = httpx.post(f"{tiny_listener.url}/chat/completions", timeout=60,
                           json=script_body("thinking_disabled"), headers=_auth(tiny_listener))
        assert other.json()["choices"][0]["message"]["content"] == \
            scripts["thinking_disabled"]["reply"]
