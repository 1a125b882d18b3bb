"""The HTTP listener driven by real clients: the openai SDK, curl and raw httpx streams.

Each reply is compared with the in-process engine's reply to the same body: the listener is
one more client of the one request path, so the two must be equal.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import json
import os
import socket
import subprocess
import threading
import time
import zlib

import httpx
import openai
import pytest

from mlx_notebook.engine import EngineError
from mlx_notebook.engine.serving import Listener
from mlx_notebook.engine.serving import _listener as listener_module


pytestmark = pytest.mark.model


def _client(listener, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=listener.url, api_key=listener.token, max_retries=0, **kw)


def _sdk(body: dict) -> dict:
    """A body as SDK arguments: a model name, and what the SDK has no argument for in
    ``extra_body`` (``chat_template_kwargs``)."""
    extra = {k: body[k] for k in ("chat_template_kwargs",) if k in body}
    kwargs = {k: v for k, v in body.items() if k not in extra}
    return {"model": "default_model", **kwargs, "extra_body": extra}


def _split(reply: str) -> tuple[str, str]:
    """(reasoning, answer) of a scripted reply."""
    if "<think>" not in reply:
        return "", reply
    thought, _, answer = reply.partition("</think>")
    return thought.split("<think>")[1], answer


# -- chat, completions, tools, logprobs through the SDK ----------------------------------------
def test_sdk_chat_reply_is_the_in_process_reply_with_reasoning_and_cached_tokens(
        tiny_listener, tiny_engine, script_body, scripts):
    body = script_body("reason_then_answer", temperature=0.0)
    reply = _client(tiny_listener).chat.completions.create(**_sdk(body))
    message = reply.choices[0].message
    thought, answer = _split(scripts["reason_then_answer"]["reply"])
    assert message.content == answer
    assert message.model_extra["reasoning"] == thought
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.prompt_tokens_details.cached_tokens is not None
    in_process = tiny_engine.chat_completions(body)
    assert in_process["choices"][0]["message"]["content"] == message.content
    # The same prompt again: the prompt cache served all but the last token.
    again = _client(tiny_listener).chat.completions.create(**_sdk(body))
    assert again.usage.prompt_tokens_details.cached_tokens >= again.usage.prompt_tokens - 1


def test_sdk_chat_stream_sends_reasoning_then_content_then_usage(
        tiny_listener, script_body, scripts):
    body = script_body("reason_then_answer", stream=True, stream_options={"include_usage": True})
    chunks = list(_client(tiny_listener).chat.completions.create(**_sdk(body)))
    reasoning = "".join(c.choices[0].delta.model_extra.get("reasoning") or ""
                        for c in chunks if c.choices)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    thought, answer = _split(scripts["reason_then_answer"]["reply"])
    assert (reasoning, content) == (thought, answer)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.completion_tokens > 0 and not chunks[-1].choices


@pytest.mark.parametrize("stream", [False, True])
def test_sdk_tool_calls_arrive_as_openai_tool_calls(tiny_listener, script_body, stream):
    body = script_body("parallel_tool_calls", stream=stream)
    result = _client(tiny_listener).chat.completions.create(**_sdk(body))
    if stream:
        chunks = list(result)
        calls = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
        assert [c.index for c in calls] == [0, 1]
        finish = chunks[-1].choices[0].finish_reason
    else:
        calls = result.choices[0].message.tool_calls
        finish = result.choices[0].finish_reason
    assert [c.function.name for c in calls] == ["get_weather", "get_weather"]
    assert [json.loads(c.function.arguments) for c in calls] == [{"city": "Tokyo"}, {"city": "Oslo"}]
    assert finish == "tool_calls"


def test_a_tool_result_without_its_call_id_is_answered_as_with_it(tiny_listener, script_body):
    """mlx_lm.server takes a tool message without ``tool_call_id`` (its own tests end a
    conversation with one); so do we, and the reply is the one the id would have given."""
    body = script_body("answer_from_tool_result")
    anonymous = {**body, "messages": [
        {k: v for k, v in m.items() if k != "tool_call_id"} for m in body["messages"]]}
    replies = [httpx.post(f"{tiny_listener.url}/chat/completions", json=b, timeout=60,
                          headers={"Authorization": f"Bearer {tiny_listener.token}"})
               for b in (body, anonymous)]
    assert [r.status_code for r in replies] == [200, 200]
    messages = [r.json()["choices"][0]["message"] for r in replies]
    assert messages[1] == messages[0]
    assert messages[0]["content"].strip() == "It is sunny in Paris, 18 °C."


def test_sdk_completions_stream_and_not_continue_the_prompt(smollm2_listener, smollm2_engine):
    client = _client(smollm2_listener)
    body = {"model": smollm2_engine.model_info.name, "prompt": "The capital of France is",
            "max_tokens": 3, "temperature": 0.0}
    whole = client.completions.create(**body)
    streamed = "".join(c.choices[0].text for c in client.completions.create(**body, stream=True)
                       if c.choices)
    assert whole.choices[0].text.startswith("Paris")
    assert streamed == whole.choices[0].text == smollm2_engine.completions(body)["choices"][0]["text"]
    assert whole.usage.completion_tokens == 3


def test_sdk_logprobs_equal_the_in_process_ones(tiny_listener, tiny_engine, script_body):
    body = script_body("thinking_disabled", logprobs=True, top_logprobs=2)
    over_http = _client(tiny_listener).chat.completions.create(**_sdk(body)).choices[0].logprobs.content
    in_process = tiny_engine.chat_completions(body)["choices"][0]["logprobs"]["content"]
    assert [t.token for t in over_http] == [t["token"] for t in in_process]
    assert [t.logprob for t in over_http] == pytest.approx([t["logprob"] for t in in_process],
                                                           abs=1e-4)
    assert all(len(t.top_logprobs) == 2 for t in over_http)


# -- errors as OpenAI error objects ---------------------------------------------------------------
def test_unknown_model_is_a_404_that_names_the_loaded_model(tiny_listener, tiny_engine):
    with pytest.raises(openai.NotFoundError) as caught:
        _client(tiny_listener).chat.completions.create(
            model="gpt-4", messages=[{"role": "user", "content": "Hi"}])
    error = caught.value.body
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert "'gpt-4' is not loaded" in error["message"]


def test_bad_parameter_is_a_400_naming_the_parameter(tiny_listener):
    with pytest.raises(openai.BadRequestError) as caught:
        _client(tiny_listener).chat.completions.create(
            model="default_model", messages=[{"role": "user", "content": "Hi"}], temperature=-1)
    assert caught.value.body["param"] == "temperature"
    assert caught.value.body["type"] == "invalid_request_error"


@pytest.mark.parametrize("token", ["wrong", None])
def test_a_wrong_or_missing_token_is_a_401_error_object(tiny_listener, token):
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    r = httpx.post(f"{tiny_listener.url}/chat/completions", headers=headers,
                   json={"messages": [{"role": "user", "content": "Hi"}]})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "invalid_api_key"
    assert "Authorization: Bearer" in r.json()["error"]["message"]
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=tiny_listener.url, api_key="wrong", max_retries=0).models.list()


def test_a_generated_token_never_begins_with_a_dash(monkeypatch):
    # Pasted after --api-key or --token, such a token reads as an option.
    from mlx_notebook.engine.serving import _listener

    drawn = iter(["-dash", "-again", "Kq-8_fine"])
    monkeypatch.setattr(_listener.secrets, "token_urlsafe", lambda n: next(drawn))
    listener = Listener(None, port=0)
    assert listener.token == "Kq-8_fine" and listener.token_generated


def test_bad_json_and_unknown_paths_answer_with_error_objects(tiny_listener):
    auth = {"Authorization": f"Bearer {tiny_listener.token}"}
    bad = httpx.post(f"{tiny_listener.url}/chat/completions", headers=auth, content=b"{nope")
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
    missing = httpx.get(f"{tiny_listener.url}/engines", headers=auth)
    assert missing.status_code == 404 and "/v1/chat/completions" in missing.json()["error"]["message"]


def test_every_endpoint_answers_without_v1_and_with_a_trailing_slash(tiny_listener):
    auth = {"Authorization": f"Bearer {tiny_listener.token}"}
    root = tiny_listener.url.removesuffix("/v1")
    for path in ("/models", "/v1/models/", "/models/default_model/"):
        assert httpx.get(root + path, headers=auth).json()["object"] in ("list", "model")
    answer = httpx.post(root + "/completions/", headers=auth, json={"prompt": "Hi", "max_tokens": 2})
    assert answer.json()["object"] == "text_completion"
    assert httpx.get(root + "/v2/models", headers=auth).status_code == 404


@pytest.mark.parametrize("body, reason", [
    (b'{"messages": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
    (b'{"max_tokens": ' + b"9" * 5000 + b"}", "(a number of more than 4300 digits); send a"),
    (b'{"a": "\xc3\x28"}', "can't decode"),
])
def test_a_body_json_cannot_read_is_a_400_not_a_server_error(tiny_listener, body, reason):
    auth = {"Authorization": f"Bearer {tiny_listener.token}"}
    r = httpx.post(f"{tiny_listener.url}/chat/completions", headers=auth, content=body)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and reason in error["message"]


def test_one_model_is_retrieved_by_its_id_and_another_is_a_404(tiny_listener, tiny_engine):
    client = _client(tiny_listener)
    name = tiny_engine.model_info.name
    model = client.models.retrieve(name)
    assert (model.id, model.object, model.owned_by) == (name, "model", "mlx-notebook")
    # The name a reply without 'model' carries is the loaded model too.
    answered = client.chat.completions.create(messages=[{"role": "user", "content": "Hi"}],
                                              model="default_model", max_tokens=1)
    assert client.models.retrieve(answered.model).id == "default_model"
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("gpt-4")
    assert caught.value.body["code"] == "model_not_found" and repr(name) in caught.value.body["message"]


def test_the_unknown_model_error_suggests_the_name_models_lists(tiny_listener, tiny_engine):
    r = httpx.post(f"{tiny_listener.url}/chat/completions",
                   headers={"Authorization": f"Bearer {tiny_listener.token}"},
                   json={"model": "gpt-4", "messages": [{"role": "user", "content": "Hi"}]})
    assert f"use {tiny_engine.model_info.name!r}" in r.json()["error"]["message"]


def test_a_completion_over_a_list_of_prompts_answers_each_over_http(smollm2_listener, smollm2_engine):
    body = {"prompt": ["The capital of France is", "One, two, three,"], "max_tokens": 3,
            "temperature": 0.0}
    expected = [c["text"] for c in smollm2_engine.completions(body)["choices"]]
    client = _client(smollm2_listener)
    whole = client.completions.create(model="default_model", **body)
    assert [c.text for c in sorted(whole.choices, key=lambda c: c.index)] == expected
    assert whole.usage.completion_tokens == 6
    texts = ["", ""]
    for chunk in client.completions.create(model="default_model", stream=True, **body):
        for choice in chunk.choices:
            texts[choice.index] += choice.text
    assert texts == expected


def test_cors_is_off_unless_origins_are_allowed(tiny_engine):
    preflight = {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"}
    with Listener(tiny_engine, port=0) as closed:
        r = httpx.options(f"{closed.url}/chat/completions", headers=preflight)
        assert r.status_code == 204 and "access-control-allow-origin" not in r.headers
    with Listener(tiny_engine, port=0, allowed_origins=["http://localhost:3000"]) as opened:
        r = httpx.options(f"{opened.url}/chat/completions", headers=preflight)
        assert r.status_code == 204
        assert r.headers["access-control-allow-origin"] == "http://localhost:3000"
        assert "authorization" in r.headers["access-control-allow-headers"].lower()
        # The openai JS SDK asks for its own x-stainless-* headers: they are allowed too.
        stainless = {**preflight, "Access-Control-Request-Headers":
                     "authorization,content-type,x-stainless-os,x-stainless-retry-count"}
        r = httpx.options(f"{opened.url}/chat/completions", headers=stainless)
        assert {"x-stainless-os", "x-stainless-retry-count", "authorization"} <= {
            h.strip().lower() for h in r.headers["access-control-allow-headers"].split(",")}
        # The answers themselves carry it too, errors included, so a page can read them.
        listed = httpx.get(f"{opened.url}/models", headers={
            "Origin": "http://localhost:3000", "Authorization": f"Bearer {opened.token}"})
        refused = httpx.get(f"{opened.url}/models", headers={"Origin": "http://localhost:3000"})
        other = httpx.get(f"{opened.url}/models", headers={
            "Origin": "http://evil.example", "Authorization": f"Bearer {opened.token}"})
        assert listed.headers["access-control-allow-origin"] == "http://localhost:3000"
        assert refused.status_code == 401
        assert refused.headers["access-control-allow-origin"] == "http://localhost:3000"
        assert "access-control-allow-origin" not in other.headers


def test_health_and_models_have_mlx_lm_server_shapes(tiny_listener, tiny_engine):
    root = tiny_listener.url.removesuffix("/v1")
    assert httpx.get(f"{root}/health").json() == {"status": "ok"}
    models = _client(tiny_listener).models.list()
    assert [m.id for m in models.data] == [tiny_engine.model_info.name]
    assert models.data[0].object == "model"


# -- curl ------------------------------------------------------------------------------------------
def test_curl_streams_sse_lines_ending_with_done(tiny_listener, script_body, scripts):
    body = json.dumps(script_body("thinking_disabled", stream=True))
    out = subprocess.run(
        ["curl", "-sN", f"{tiny_listener.url}/chat/completions",
         "-H", f"Authorization: Bearer {tiny_listener.token}",
         "-H", "Content-Type: application/json", "-d", body],
        capture_output=True, text=True, timeout=120, check=True).stdout
    events = [line for line in out.split("\n\n") if line]
    # Data lines, and the comments mlx_lm.server sends too while the prompt is read.
    assert all(e.startswith(("data: ", ": keepalive ")) for e in events)
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e[6:]) for e in events[:-1] if e.startswith("data: ")]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == scripts["thinking_disabled"]["reply"]


@pytest.mark.parametrize("path, body", [
    ("chat/completions", {"messages": [{"role": "user", "content": "What's the weather in Paris?"}]}),
    ("completions", {"prompt": "It is sunny in Paris, 18 °C"}),
])
def test_a_stream_names_its_charset_so_non_ascii_text_decodes(tiny_listener, script_body, path,
                                                              body):
    """A client that decodes by the declared charset (Python's requests takes ISO-8859-1 for
    text/* without one) reads "18 °C", not "18 Â°C"."""
    if path == "chat/completions":
        body = script_body("answer_from_tool_result")
    with httpx.stream("POST", f"{tiny_listener.url}/{path}", timeout=60,
                      json={"max_tokens": 40, **body, "stream": True},
                      headers={"Authorization": f"Bearer {tiny_listener.token}"}) as response:
        declared = response.headers["content-type"]
        raw = response.read()
    assert declared == "text/event-stream; charset=utf-8"
    if path == "chat/completions":
        text = raw.decode(declared.partition("charset=")[2])
        assert "18 °C" in "".join(json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                                  for line in text.split("\n\n") if line.startswith("data: {"))


def test_curl_body_over_the_limit_is_a_413(tiny_engine, tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    with Listener(tiny_engine, port=0, max_body_bytes=1024) as small:
        out = subprocess.run(
            ["curl", "-s", "-w", "\n%{http_code}", f"{small.url}/completions",
             "-H", f"Authorization: Bearer {small.token}", "-H", "Content-Type: application/json",
             "--data-binary", f"@{big}"],
            capture_output=True, text=True, timeout=60, check=True).stdout
    payload, status = out.rsplit("\n", 1)
    assert status == "413"
    assert json.loads(payload)["error"]["code"] == "request_too_large"


def _raw_post(url: str, head: str, body: bytes) -> bytes:
    """Send one request as written (no client fixes its headers) and read the whole answer."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _chunked(parts: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


@pytest.mark.parametrize("parts", [[b" " * 3000], [b" " * 200] * 8], ids=["one chunk", "many"])
def test_a_chunked_body_over_the_limit_is_a_413_not_a_dropped_connection(tiny_engine, parts):
    with Listener(tiny_engine, port=0, token="", max_body_bytes=1024) as small:
        answer = _raw_post(small.url, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Transfer-Encoding: chunked\r\nConnection: close", _chunked(parts))
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 413")
        assert json.loads(payload)["error"]["code"] == "request_too_large"
        # A chunked body under the limit is served.
        body = json.dumps({"prompt": "Hi", "max_tokens": 2}).encode()
        reply = httpx.post(f"{small.url}/completions", content=iter([body[:10], body[10:]]))
        assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] == 2


def _compressed(encoding: str, data: bytes) -> bytes:
    return gzip.compress(data) if encoding == "gzip" else zlib.compress(data)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compressed_body_is_served_as_the_same_body_uncompressed(tiny_listener, encoding):
    body = {"prompt": "Hi", "max_tokens": 3}
    headers = {"Authorization": f"Bearer {tiny_listener.token}",
               "Content-Type": "application/json"}
    plain = httpx.post(f"{tiny_listener.url}/completions", json=body, headers=headers,
                       timeout=60)
    packed = httpx.post(f"{tiny_listener.url}/completions", timeout=60,
                        content=_compressed(encoding, json.dumps(body).encode()),
                        headers={**headers, "Content-Encoding": encoding.upper()})
    assert packed.status_code == plain.status_code == 200
    assert packed.json()["choices"][0]["text"] == plain.json()["choices"][0]["text"]
    for count in ("prompt_tokens", "completion_tokens"):
        assert packed.json()["usage"][count] == plain.json()["usage"][count]


@pytest.mark.parametrize("pack", [
    lambda b: gzip.compress(b[:7]) + gzip.compress(b[7:]),  # two members, as `cat a.gz b.gz`
    lambda b: gzip.compress(b) + b"\0" * 8,  # zero padding after the member
], ids=["two members", "zero padding"])
def test_a_gzip_body_is_read_as_gzip_reads_it(tiny_listener, pack):
    body = json.dumps({"prompt": "Hi", "max_tokens": 2}).encode()
    assert gzip.decompress(pack(body)) == body
    reply = httpx.post(f"{tiny_listener.url}/completions", content=pack(body), timeout=60,
                       headers={"Authorization": f"Bearer {tiny_listener.token}",
                                "Content-Encoding": "gzip"})
    assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] == 2


def test_a_compressed_body_is_held_to_the_limit_once_decompressed(tiny_engine):
    """A few kilobytes of gzip that would expand to 50 MB (a zip bomb) are refused at the
    limit, counted as they expand, never held whole."""
    bomb = gzip.compress(b'{"prompt": "' + b" " * 50_000_000 + b'"}')
    assert len(bomb) < 100_000
    with Listener(tiny_engine, port=0, token="", max_body_bytes=1_000_000) as small:
        reply = httpx.post(f"{small.url}/completions", content=bomb, timeout=60,
                           headers={"Content-Encoding": "gzip"})
    assert reply.status_code == 413
    assert reply.json()["error"]["message"] == (
        "The request body, decompressed, is over the listener's limit of 1000000 bytes; send "
        "a shorter conversation.")


@pytest.mark.parametrize("encoding, content, message", [
    ("br", b"{}", "The request body is encoded as 'br'; send it uncompressed, or as gzip or "
                  "deflate."),
    ("gzip, br", b"{}", "The request body is encoded as 'gzip, br'; send it uncompressed, or "
                        "as gzip or deflate."),
    ("gzip", b'{"prompt": "Hi"}', "The request body is not valid gzip data, though its "
                                  "Content-Encoding says so; send it as gzip or uncompressed, "
                                  "without the header."),
    ("gzip", gzip.compress(b'{"prompt": "Hi"}')[:-6], "The request body is not valid gzip "
     "data, though its Content-Encoding says so; send it as gzip or uncompressed, without the "
     "header."),
    ("deflate", zlib.compress(b"{}") + b"{}", "The request body is not valid deflate data, "
     "though its Content-Encoding says so; send it as deflate or uncompressed, without the "
     "header."),
    ("gzip", gzip.compress(b"{}") + b"{}", "The request body is not valid gzip data, though "
     "its Content-Encoding says so; send it as gzip or uncompressed, without the header."),
], ids=["unknown", "two codings", "not gzip", "cut short", "bytes after the end",
        "bytes after the gzip member"])
def test_a_body_in_an_encoding_not_read_is_refused_with_the_encoding_named(
        tiny_listener, encoding, content, message):
    reply = httpx.post(f"{tiny_listener.url}/completions", content=content, timeout=60,
                       headers={"Authorization": f"Bearer {tiny_listener.token}",
                                "Content-Encoding": encoding})
    assert reply.status_code == (415 if "encoded as" in message else 400)
    assert reply.json()["error"]["message"] == message
    # The listener goes on serving.
    assert httpx.get(f"{tiny_listener.url}/models", timeout=60,
                     headers={"Authorization": f"Bearer {tiny_listener.token}"}).status_code == 200


@pytest.mark.parametrize("length", ["\u00b2", "abc", "-5", "1, 2", "0x10", "2 ,2"])
def test_a_malformed_content_length_is_a_400_that_names_the_header(tiny_listener, length):
    answer = _raw_post(tiny_listener.url, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       f"Authorization: Bearer {tiny_listener.token}\r\n"
                       f"Content-Length: {length}\r\nConnection: close", b"{}")
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert json.loads(payload)["error"]["message"].startswith("The Content-Length header")


def test_list_prompt_completions_never_keep_other_clients_from_being_admitted(tiny_engine,
                                                                              wait_until):
    """Non-streamed completions of a list of prompts read their whole generation while they
    wait: as many of them as the loop's executor has threads must not hold every thread, or
    a three-token chat would wait for them to end before it is even admitted."""
    threads = min(32, (os.cpu_count() or 1) + 4)  # asyncio's default executor
    ended: dict[str, float] = {}
    with Listener(tiny_engine, port=0, token="") as listener:
        def post(name: str, path: str, body: dict) -> None:
            reply = httpx.post(f"{listener.url}/{path}", json=body, timeout=300)
            assert reply.status_code == 200
            ended[name] = time.monotonic()

        long = [threading.Thread(target=post, args=(f"list {i}", "completions",
                                                    {"prompt": ["hi", "yo"], "max_tokens": 2000}))
                for i in range(threads)]
        for thread in long:
            thread.start()
        assert wait_until(lambda: len(listener.served()) == 2 * threads)
        post("chat", "chat/completions",
             {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3})
        for thread in long:
            thread.join()
    assert ended["chat"] < min(t for name, t in ended.items() if name != "chat")


def test_without_a_token_web_pages_and_rebound_host_names_are_refused(tiny_engine):
    """A token-less listener (loopback only): a page's form or no-cors fetch reaches it with
    no preflight, and a DNS-rebinding page would even read the reply; both are refused, while
    clients on this machine and allowed pages are served."""
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    with Listener(tiny_engine, port=0, token="",
                  allowed_origins=["http://localhost:3000"]) as listener:
        url = f"{listener.url}/chat/completions"
        page = httpx.post(url, content=json.dumps(body),
                          headers={"Origin": "http://evil.example", "Content-Type": "text/plain"})
        assert page.status_code == 403 and page.json()["error"]["code"] == "origin_not_allowed"
        rebound = httpx.post(url, json=body, headers={"Host": f"evil.example:{listener.port}"})
        assert rebound.status_code == 403
        assert rebound.json()["error"]["code"] == "host_not_allowed"
        for host in [f"localhost:{listener.port}", "127.0.0.1", f"[::1]:{listener.port}",
                     "app.localhost"]:
            assert httpx.post(url, json=body, headers={"Host": host}).status_code == 200
        allowed = httpx.post(url, json=body, headers={"Origin": "http://localhost:3000"})
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "http://localhost:3000"


def test_a_connection_that_never_sends_its_request_is_closed(tiny_engine, monkeypatch):
    """A client that connects and sends nothing, or half a request head (a slow-loris), is
    not held for tornado's default hour: the connection closes once the head has not come in
    time."""
    monkeypatch.setattr(listener_module, "_HEADER_TIMEOUT_S", 0.5)
    with Listener(tiny_engine, port=0) as listener:
        for sent in (b"", b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"):
            with socket.create_connection(("127.0.0.1", listener.port), timeout=30) as sock:
                sock.sendall(sent)
                started = time.monotonic()
                assert sock.recv(100) == b""
                assert time.monotonic() - started < 10


def test_headers_past_the_limit_are_answered_431_and_the_next_request_is_served(tiny_engine):
    """A client with 70 kB of cookies gets a sentence naming the headers, not a connection
    closed without a word (tornado's own answer past its 64 kB)."""
    with Listener(tiny_engine, port=0) as listener:
        url = f"http://127.0.0.1:{listener.port}/v1/models"
        auth = {"Authorization": f"Bearer {listener.token}"}
        refused = httpx.get(url, headers={**auth, "Cookie": "a=" + "b" * 70_000})
        assert refused.status_code == 431
        sent = len("/v1/models") + sum(len(k) + len(v) + 4 for k, v in refused.request.headers.raw)
        assert refused.json()["error"]["message"] == (
            f"The request's path and headers are {sent} bytes, over the listener's limit of "
            "65536; send fewer or shorter headers (cookies, say).")
        assert httpx.head(url, headers={**auth, "Cookie": "a=" + "b" * 70_000}).status_code == 431
        posted = httpx.post(f"{listener.url}/chat/completions", content=b"{}" * 500_000,
                            headers={**auth, "Cookie": "a=" + "b" * 70_000})
        assert posted.status_code == 431
        assert httpx.get(url, headers={**auth, "Cookie": "a=" + "b" * 60_000}).status_code == 200


def test_an_unknown_path_is_named_and_a_long_one_is_not_echoed_whole(tiny_engine):
    with Listener(tiny_engine, port=0) as listener:
        root, auth = listener.url.removesuffix("/v1"), {"Authorization": f"Bearer {listener.token}"}
        short = httpx.get(f"{root}/v1/chat", headers=auth)
        assert (short.status_code, short.json()["error"]["message"]) == (404, (
            "There is no endpoint /v1/chat; use /v1/chat/completions, /v1/responses, "
            "/v1/completions, /v1/models or /health."))
        long = httpx.get(f"{root}/{'a' * 60_000}", headers=auth)
        assert long.status_code == 404 and len(long.content) < 1000
        assert long.json()["error"]["message"].startswith(f"There is no endpoint /{'a' * 199}…;")
        garbled = httpx.get(f"{root}/v1/models/%ff", headers=auth)
        assert (garbled.status_code, garbled.json()["error"]["message"]) == (
            400, "The request's path is not UTF-8 once its %-escapes are decoded; percent-encode "
                 "the UTF-8 bytes of the name.")
        model = httpx.get(f"{root}/v1/models/{'m' * 5000}", headers=auth)
        assert model.status_code == 404 and len(model.content) < 1000


def test_an_https_client_fails_at_once_with_tls_named(tiny_engine):
    """An https:// URL for the plain-HTTP port: the TLS handshake is answered in plain HTTP at
    once, so the client fails in well under a second with the error that names the mix-up
    (the OpenAI SDK would otherwise wait for the 30 s header timeout, then retry twice)."""
    import ssl

    with Listener(tiny_engine, port=0) as listener:
        with socket.create_connection(("127.0.0.1", listener.port), timeout=30) as sock:
            sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello's start
            answer = sock.recv(1000)
        assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["message"] == (
            "This listener speaks plain HTTP, not TLS: use an http:// URL, not https://.")

        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", listener.port), timeout=30) as sock:
            with pytest.raises(ssl.SSLError, match="WRONG_VERSION_NUMBER|wrong version number"):
                context.wrap_socket(sock)
        assert time.monotonic() - started < 2
        with pytest.raises(openai.APIConnectionError):
            openai.OpenAI(base_url=listener.url.replace("http://", "https://"), api_key="x",
                          max_retries=0, timeout=5).models.list()
        assert time.monotonic() - started < 4
        assert httpx.get(f"{listener.url.removesuffix('/v1')}/health").status_code == 200


def test_connections_past_the_cap_are_closed_at_once_and_the_listener_goes_on(
        tiny_engine, monkeypatch, wait_until):
    """Connections that hold descriptors without sending anything: past the cap (half the
    process's descriptors) a new one is closed at once instead of the accept loop failing on
    every turn; once they go, clients are served again."""
    monkeypatch.setattr(listener_module, "_connection_cap", lambda: 3)
    with Listener(tiny_engine, port=0) as listener:
        idle = [socket.create_connection(("127.0.0.1", listener.port)) for _ in range(3)]
        assert wait_until(lambda: listener_connections(listener) == 3)
        with socket.create_connection(("127.0.0.1", listener.port), timeout=30) as extra:
            assert extra.recv(100) == b""
        for sock in idle:
            sock.close()
        assert wait_until(lambda: listener_connections(listener) == 0)
        assert httpx.get(f"{listener.url.removesuffix('/v1')}/health").status_code == 200


def listener_connections(listener) -> int:
    return listener._server.connections


# -- safety ----------------------------------------------------------------------------------------
def test_a_non_loopback_host_without_a_token_is_refused(tiny_engine):
    with pytest.raises(EngineError, match="without a token"):
        Listener(tiny_engine, host="0.0.0.0", token="")


@pytest.mark.parametrize("port", [-1, 65536, 70000, 10**20])
def test_a_port_out_of_range_is_refused_in_one_sentence(tiny_engine, port):
    with pytest.raises(EngineError, match=r"^The port must be a number from 0 to 65535"):
        Listener(tiny_engine, port=port)


@pytest.mark.parametrize("host", ["", "  "])
def test_an_empty_host_is_refused_rather_than_every_interface(tiny_engine, host):
    with pytest.raises(EngineError, match=r"^Give the address to listen on"):
        Listener(tiny_engine, host=host, port=0)


@pytest.mark.parametrize("token", ["with space", "smile🙂", "nul\x00"])
def test_a_token_no_http_client_could_send_is_refused(tiny_engine, token):
    with pytest.raises(EngineError, match="printable ASCII"):
        Listener(tiny_engine, port=0, token=token)


def test_a_token_is_generated_unless_given(tiny_engine):
    assert Listener(tiny_engine).token_generated and len(Listener(tiny_engine).token) >= 24
    given = Listener(tiny_engine, token="s3cret")
    assert given.token == "s3cret" and not given.token_generated


def test_a_port_in_use_is_one_sentence(tiny_listener, tiny_engine):
    with pytest.raises(EngineError, match=f"Cannot listen on 127.0.0.1:{tiny_listener.port}"):
        Listener(tiny_engine, port=tiny_listener.port).start()


# -- many clients ----------------------------------------------------------------------------------
QUESTIONS = ["What is the capital of France?", "Name a primary colour.", "What is 2 + 2?",
             "Say hello in Spanish.", "What is water made of?", "Name a planet.",
             "What colour is the sky?", "How many legs does a cat have?"]


@pytest.mark.slow
def test_eight_concurrent_sdk_clients_each_get_their_in_process_greedy_reply(
        smollm2_listener, smollm2_engine):
    bodies = [{"model": "default_model", "messages": [{"role": "user", "content": q}],
               "max_tokens": 16, "temperature": 0.0} for q in QUESTIONS]
    expected = [smollm2_engine.chat_completions(b)["choices"][0]["message"]["content"]
                for b in bodies]
    replies: list = [None] * len(bodies)

    def ask(i: int) -> None:
        replies[i] = _client(smollm2_listener).chat.completions.create(**_sdk(bodies[i]))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert [r.choices[0].message.content for r in replies] == expected
    assert len(set(expected)) > 4  # their own replies, not one shared


@pytest.mark.slow
def test_sixty_four_simultaneous_streaming_clients_are_all_served(
        tiny_listener, tiny_engine, script_body, scripts, wait_until):
    body = script_body("system_prompt", stream=True)
    expected = scripts["system_prompt"]["reply"].split("</think>")[-1]

    async def one(client: httpx.AsyncClient) -> str:
        text = []
        async with client.stream("POST", "/chat/completions", json=body) as r:
            assert r.status_code == 200
            async for line in r.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    delta = json.loads(line[6:])["choices"][0]["delta"]
                    text.append(delta.get("content") or "")
        return "".join(text)

    async def all_at_once() -> list:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=tiny_listener.url, limits=limits, timeout=300,
                                     headers={"Authorization": f"Bearer {tiny_listener.token}"}) as c:
            return await asyncio.gather(*(one(c) for _ in range(64)), return_exceptions=True)

    # On a thread of its own: a browser test's Playwright leaves an event loop set on this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        results = pool.submit(asyncio.run, all_at_once()).result()
    assert [r for r in results if not isinstance(r, str)] == []  # none refused or reset
    assert results == [expected] * 64
    assert wait_until(lambda: tiny_engine.active_requests == 0)


# -- a client that leaves --------------------------------------------------------------------------
@pytest.mark.slow
def test_a_client_leaving_mid_stream_cancels_its_request_and_frees_the_engine(
        smollm2_listener, smollm2_engine, wait_until):
    body = {"messages": [{"role": "user", "content": "Write a long story about a lighthouse."}],
            "max_tokens": 400, "temperature": 0.0, "stream": True}
    other = {"messages": [{"role": "user", "content": QUESTIONS[0]}], "max_tokens": 12,
             "temperature": 0.0}
    expected_other = smollm2_engine.chat_completions(other)["choices"][0]["message"]["content"]
    headers = {"Authorization": f"Bearer {smollm2_listener.token}"}
    with httpx.Client(base_url=smollm2_listener.url, headers=headers, timeout=120) as client:
        with client.stream("POST", "/chat/completions", json=body) as r:
            lines = r.iter_lines()
            first = [json.loads(next(line for line in lines if line.startswith("data: "))[6:])
                     for _ in range(3)]
            request_id = first[0]["id"]
        # The connection is closed: the engine drops the request long before 400 tokens.
        assert wait_until(lambda: smollm2_engine.active_requests == 0, 20)
        assert wait_until(lambda: smollm2_listener.served() == ())
        generated = smollm2_engine.trace(request_id).text
        assert len(smollm2_engine.tokenizer.encode(generated)) < 100
        # Other clients are unaffected.
        reply = client.post("/chat/completions", json=other).json()
    assert reply["choices"][0]["message"]["content"] == expected_other


def test_served_requests_are_listed_with_the_client_address(
        tiny_listener, tiny_engine, script_body, wait_until, engine_thread_held):
    body = script_body("long_story", stream=True)
    headers = {"Authorization": f"Bearer {tiny_listener.token}"}
    with httpx.Client(base_url=tiny_listener.url, headers=headers, timeout=120) as client:
        with engine_thread_held(tiny_engine):  # admitted, not yet generated
            with client.stream("POST", "/chat/completions", json=body) as response:
                assert response.status_code == 200  # headers go out before any token
                assert wait_until(lambda: len(tiny_listener.served()) == 1)
                served = tiny_listener.served()[0]
                assert served.client.startswith("127.0.0.1:")
                assert served.endpoint == "/v1/chat/completions" and served.stream
    assert wait_until(lambda: tiny_listener.served() == ())


# -- the command line --------------------------------------------------------------------------------
@pytest.mark.slow
def test_mlx_notebook_serve_prints_url_and_token_and_serves_until_interrupted(tiny_reasoner_path):
    import signal
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "mlx_notebook.engine.cli", "-q", "serve", str(tiny_reasoner_path),
         "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("Serving "), first + proc.stderr.read()
        url = first.split(" at ")[1].strip()
        token = proc.stdout.readline().rsplit(": ", 1)[1].strip()
        assert proc.stdout.readline().startswith("Press Ctrl-C")
        reply = openai.OpenAI(base_url=url, api_key=token, max_retries=0).completions.create(
            model="default_model", prompt="Hi", max_tokens=2)
        assert reply.usage.completion_tokens == 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        assert proc.stdout.read().strip() == "Stopped."
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_wrong_method_is_a_405_that_lists_the_allowed_ones_and_head_checks_health(
        tiny_listener):
    root = tiny_listener.url.removesuffix("/v1")
    auth = {"Authorization": f"Bearer {tiny_listener.token}"}
    for method, path, allow in [("GET", "/v1/chat/completions", "POST, OPTIONS"),
                                ("PUT", "/v1/models", "GET, HEAD, OPTIONS"),
                                ("POST", "/health", "GET, HEAD, OPTIONS")]:
        reply = httpx.request(method, root + path, headers=auth)
        assert (reply.status_code, reply.headers["allow"]) == (405, allow)
        assert reply.json()["error"]["message"] == f"{method} is not allowed on {path}."
    for path in ["/health", "/v1/models"]:
        reply = httpx.head(root + path, headers=auth)
        assert (reply.status_code, reply.content) == (200, b"")


def test_one_request_failing_to_write_never_drops_another_requests_events():
    """Events of every request reach the loop in one wake-up: a request whose events cannot
    be written is ended alone (``abort``); the others still get theirs."""
    from mlx_notebook.engine import ContentDelta
    from mlx_notebook.engine.serving._deliveries import Deliveries

    class Handler:
        request = type("Request", (), {"path": "/v1/chat/completions"})()

        def __init__(self, fails: bool):
            self.fails, self.got, self.aborted = fails, [], False

        def on_event(self, event):
            if self.fails:
                raise UnicodeEncodeError("utf-8", "\ud83d", 0, 1, "surrogates not allowed")
            self.got.append(event)

        def send(self):
            pass

        def abort(self):
            self.aborted = True

    loop = asyncio.new_event_loop()
    try:
        deliveries = Deliveries(loop)
        broken, fine = Handler(True), Handler(False)
        deliveries._items.extend([(broken, ContentDelta("x")), (fine, ContentDelta("B's")),
                                  (fine, ContentDelta(" text"))])
        deliveries._drain()
    finally:
        loop.close()
    assert broken.aborted and not fine.aborted
    assert fine.got == [ContentDelta("B's text")]


def test_a_stream_our_code_fails_to_write_ends_with_an_error_not_a_hang(tiny_listener,
                                                                       monkeypatch, script_body):
    from mlx_notebook.engine.serving import _completions

    real = _completions.sse

    def failing(obj):
        if any(c.get("delta", {}).get("content") for c in obj.get("choices", [])):
            raise RuntimeError("a bug in writing a chunk")
        return real(obj)

    monkeypatch.setattr(_completions, "sse", failing)
    body = script_body("thinking_disabled", stream=True)
    with httpx.stream("POST", f"{tiny_listener.url}/chat/completions", json=body, timeout=60,
                      headers={"Authorization": f"Bearer {tiny_listener.token}"}) as reply:
        lines = [line for line in reply.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    assert json.loads(lines[-2][6:])["error"]["type"] == "server_error"
    assert not any('"content": "Bonjour' in line for line in lines)
