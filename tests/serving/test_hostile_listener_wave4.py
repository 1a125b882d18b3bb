"""The listener under a fourth round of hostile and peer-suite requests: what reaches it that
is not JSON though Python's json reads it, and a refused request on a kept-alive connection.

A reply must stay JSON that every client parses: a Responses reply echoes ``tools`` (and so
their schemas) as sent, so a NaN or an Infinity in a body would come back as a token no JSON
parser but Python's reads (JavaScript's ``JSON.parse``, Go, serde). A refusal answered before
the body is read closes the connection: the answer must say so, or a client that reuses the
connection for its next request finds it reset.
"""

from __future__ import annotations

import json
import socket

import httpx
import pytest

pytestmark = pytest.mark.model


def _raw(listener, data: bytes, seconds: float = 30.0) -> bytes:
    """What the listener answers ``data`` sent on one connection, until it closes it."""
    with socket.create_connection((listener.host, listener.port), timeout=seconds) as sock:
        sock.sendall(data)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def _head(method: str, path: str, token: str, body: bytes = b"", close: bool = False) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {token}",
             "Content-Type: application/json", f"Content-Length: {len(body)}"]
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _strict(text: str | bytes):
    """``json.loads`` as other languages' parsers read JSON: no NaN, no Infinity."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("path, body, param, literal", [
    ("responses", b'{"input": "Hi", "max_output_tokens": 2, "tools": [{"type": "function", '
                  b'"name": "f", "parameters": {"type": "object", "properties": {"x": '
                  b'{"type": "number", "default": NaN}}}}]}',
     "tools[0].parameters.properties.x.default", "NaN"),
    ("responses", b'{"input": "Hi", "max_output_tokens": 2, "stream": true, "tools": [{"type": '
                  b'"function", "name": "f", "parameters": {"type": "number", "maximum": 1e999}}]}',
     "tools[0].parameters.maximum", "1e999"),
    ("chat/completions", b'{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, '
                         b'"temperature": -Infinity}', "temperature", "-Infinity"),
    ("completions", b'{"prompt": "Hi", "max_tokens": 2, "logit_bias": {"5": Infinity}}',
     "logit_bias.5", "Infinity"),
])
def test_a_number_json_has_not_is_a_400_naming_the_field(tiny_listener, path, body, param,
                                                          literal):
    reply = httpx.post(f"{tiny_listener.url}/{path}", content=body, timeout=60,
                       headers={"Authorization": f"Bearer {tiny_listener.token}"})
    assert reply.status_code == 400, reply.text
    assert _strict(reply.text)["error"] == {
        "message": f"'{param}' is {literal}, which is no JSON number; send a finite number.",
        "type": "invalid_request_error", "param": param, "code": None}


def test_a_schema_with_numbers_is_echoed_as_strict_json(tiny_listener):
    tools = [{"type": "function", "name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "number", "minimum": -1.5e300,
                                               "default": 0.25}}}}]
    reply = httpx.post(f"{tiny_listener.url}/responses", timeout=60,
                       json={"input": "Hi", "max_output_tokens": 2, "tools": tools},
                       headers={"Authorization": f"Bearer {tiny_listener.token}"})
    assert reply.status_code == 200, reply.text
    assert _strict(reply.text)["tools"] == tools


@pytest.mark.parametrize("token", ["wrong", None])
def test_a_refused_token_closes_the_connection_and_says_so(tiny_listener, token):
    body = json.dumps({"messages": [{"role": "user", "content": "Hi"}],
                       "max_tokens": 2}).encode()
    refused = _head("POST", "/v1/chat/completions", token or "", body)
    if token is None:
        refused = refused.replace(b"Authorization: Bearer \r\n", b"")
    answer = _raw(tiny_listener, refused + _head("GET", "/health", "", close=True))
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401 ")
    # The body was never read, so the connection ends after the 401: the answer says so
    # (a client then opens a new one), and the request after it is not half-answered.
    assert b"\r\nConnection: close\r\n" in head + b"\r\n"
    assert _strict(rest)["error"]["code"] == "invalid_api_key"


def test_a_client_reusing_its_connection_after_a_401_is_served(tiny_listener):
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    with httpx.Client(base_url=tiny_listener.url, timeout=60) as client:
        for _ in range(10):
            wrong = client.post("/chat/completions", json=body,
                                headers={"Authorization": "Bearer wrong"})
            right = client.post("/chat/completions", json=body,
                                headers={"Authorization": f"Bearer {tiny_listener.token}"})
            assert (wrong.status_code, right.status_code) == (401, 200)


def test_every_logit_bias_key_that_is_no_token_id_is_named_in_one_answer(tiny_listener):
    # (vLLM's test_chat_logit_bias_multiple_non_integer_keys: all of them, not the first)
    reply = httpx.post(f"{tiny_listener.url}/chat/completions", timeout=60,
                       json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2,
                             "logit_bias": {"bad1": 50.0, "7": 1, "bad2": 20.0}},
                       headers={"Authorization": f"Bearer {tiny_listener.token}"})
    assert reply.status_code == 400
    assert reply.json()["error"] == {
        "message": "'logit_bias' keys must be integer token ids, got \"bad1\", \"bad2\".",
        "type": "invalid_request_error", "param": "logit_bias", "code": None}


def test_a_huge_model_name_is_not_echoed_whole(tiny_listener):
    reply = httpx.post(f"{tiny_listener.url}/chat/completions", timeout=60,
                       json={"model": "m" * 200_000, "max_tokens": 2,
                             "messages": [{"role": "user", "content": "Hi"}]},
                       headers={"Authorization": f"Bearer {tiny_listener.token}"})
    error = reply.json()["error"]
    assert (reply.status_code, error["code"], error["param"]) == (404, "model_not_found", "model")
    assert error["message"].startswith("The model '" + "m" * 200 + "…' is not loaded in this "
                                       "engine; use ")
    assert len(reply.content) < 1000


@pytest.mark.parametrize("include, status, param", [
    (["bogus"], 400, "include[0]"),
    ("message.output_text.logprobs", 400, "include"),
    (["reasoning.encrypted_content"], 200, None),  # (Codex sends it: nothing to add here)
])
def test_include_takes_openais_values_only(tiny_listener, include, status, param):
    reply = httpx.post(f"{tiny_listener.url}/responses", timeout=60,
                       json={"input": "Hi", "max_output_tokens": 2, "include": include},
                       headers={"Authorization": f"Bearer {tiny_listener.token}"})
    assert reply.status_code == status, reply.text
    if param is not None:
        assert reply.json()["error"]["param"] == param
        assert "message.output_text.logprobs" in reply.json()["error"]["message"]
