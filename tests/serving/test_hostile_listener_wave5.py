"""The listener under a fifth round of hostile requests, written byte by byte as clients that
no library tidies send them: an HTTP/1.0 client that asks for keep-alive, a request HTTP itself
refuses (no Host, a body framed two ways), a method nobody serves on a path nobody serves.

Each must get an answer a person can read, as JSON with a sentence that names the problem,
and a connection that ends where the answer says it ends: a client must never wait on a reply
that is complete, nor read a bare "400 Bad Request" with nothing to say why.
"""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

pytestmark = pytest.mark.model


def _exchange(listener, data: bytes, seconds: float = 20.0) -> tuple[bytes, float]:
    """What the listener answers ``data`` sent on one connection until it closes it, and how
    long that took; a connection still open after ``seconds`` fails the test."""
    started = time.monotonic()
    with socket.create_connection((listener.host, listener.port), timeout=seconds) as sock:
        sock.sendall(data)
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except socket.timeout:
            pytest.fail(f"the listener kept the connection open after {out[-200:]!r}")
    return out, time.monotonic() - started


def _request(method: str, path: str, headers: list[str], body: bytes = b"",
             version: str = "HTTP/1.1") -> bytes:
    return ("\r\n".join([f"{method} {path} {version}", *headers]) + "\r\n\r\n").encode() + body


def _chat(stream: bool) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3,
                       "stream": stream}).encode()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses", "/v1/completions"])
def test_an_http10_keep_alive_stream_ends_with_its_connection(tiny_listener, path):
    """ApacheBench (``ab -k``) and old proxies speak HTTP/1.0 and ask for keep-alive. A stream
    has no length and HTTP/1.0 no chunks, so only the connection's close ends it: it must
    close, and not promise keep-alive (the client would wait for the end forever)."""
    body = {"/v1/chat/completions": _chat(True),
            "/v1/responses": b'{"input": "Hi", "max_output_tokens": 3, "stream": true}',
            "/v1/completions": b'{"prompt": ["Hi", "Ho"], "max_tokens": 3, "stream": true}'}[path]
    answer, seconds = _exchange(tiny_listener, _request(
        "POST", path, ["Host: 127.0.0.1", f"Authorization: Bearer {tiny_listener.token}",
                       "Connection: keep-alive", f"Content-Length: {len(body)}"],
        body, version="HTTP/1.0"))
    head, _, events = answer.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
    assert b"connection: close" in head.lower() and b"keep-alive" not in head.lower()
    assert (b"data: [DONE]" if "responses" not in path else b"event: response.incomplete"
            ) in events  # (the end: 3 tokens are max_output_tokens)
    assert seconds < 10


@pytest.fixture
def small_send_buffers(monkeypatch):
    """The listener's new connections send through 8 KiB kernel buffers: a reply of a few MB
    then waits in the listener, as it does on any machine for a client that stopped reading
    (left to the kernel, which grows its buffers to some MB, the tiny reasoner's longest reply
    can fit in them whole, and the server never sees the client stall)."""
    from mlx_notebook.engine.serving import _listener

    accept = _listener._CappedServer.handle_stream

    async def handle_stream(server, stream, address):
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
        await accept(server, stream, address)

    monkeypatch.setattr(_listener._CappedServer, "handle_stream", handle_stream)


def _long_stream(listener, max_tokens: int, headers: tuple[str, ...] = (),
                 version: str = "HTTP/1.1") -> socket.socket:
    """A connection with a small receive buffer that has asked ``listener`` for a stream of
    ``max_tokens`` heavy chunks (20 logprobs a token, the end token barred)."""
    body = json.dumps({"messages": [{"role": "user", "content": "Count to ten."}],
                       "stream": True, "max_tokens": max_tokens, "logprobs": True,
                       "top_logprobs": 20, "logit_bias": {"2": -100}}).encode()  # 2: the end
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.connect((listener.host, listener.port))
    sock.sendall(_request("POST", "/v1/chat/completions", [
        "Host: 127.0.0.1", f"Authorization: Bearer {listener.token}",
        f"Content-Length: {len(body)}", *headers], body, version=version))
    return sock


@pytest.mark.parametrize("keep_alive", [True, False])
def test_an_http10_stream_read_late_comes_whole_before_its_close(tiny_listener, keep_alive,
                                                                 small_send_buffers):
    """The close that ends an HTTP/1.0 stream waits for everything before it to be sent: a
    client that read late (~3 MB waiting in the server) still gets the end of its reply."""
    headers = ("Connection: keep-alive",) if keep_alive else ()
    with _long_stream(tiny_listener, 1900, headers, version="HTTP/1.0") as sock:
        sock.settimeout(30)
        time.sleep(4)  # the reply is made and waits in the server's buffers
        answer = b""
        while chunk := sock.recv(1 << 20):
            answer += chunk
    assert answer.endswith(b"data: [DONE]\n\n")
    assert answer.count(b'"finish_reason": "length"') == 1


def test_an_http10_keep_alive_request_without_a_stream_keeps_its_connection(tiny_listener):
    """A reply with a Content-Length can be kept alive: two requests on one connection."""
    body = _chat(False)
    one = _request("POST", "/v1/chat/completions",
                   ["Authorization: Bearer " + tiny_listener.token, "Connection: keep-alive",
                    f"Content-Length: {len(body)}"], body, version="HTTP/1.0")
    last = _request("GET", "/health", [], version="HTTP/1.0")
    answer, _ = _exchange(tiny_listener, one + last)
    assert answer.count(b"HTTP/1.1 200 OK") == 2 and answer.endswith(b'{"status": "ok"}')


def _refusal(answer: bytes) -> tuple[bytes, dict]:
    """The status line and the error object of an answer that must be the only one sent."""
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")))
    assert len(payload) == length, f"more came after the answer: {payload[length:]!r}"
    return head.split(b"\r\n")[0], json.loads(payload)["error"]


_BODY = _chat(False)


@pytest.mark.parametrize("method, path, headers, body, said", [
    ("GET", "/v1/models", [], b"", "The request has no Host header, which HTTP/1.1 requires; "
     "send one with the host and port of the listener's URL (every HTTP client does)."),
    ("GET", "/health", ["Host: 127.0.0.1", "Host: evil.example"], b"", "The Host header "
     "'127.0.0.1,evil.example' is not one host name or address; send one, with the host and "
     "port of the listener's URL."),
    ("POST", "/v1/chat/completions", ["Host: 127.0.0.1", "Transfer-Encoding: chunked",
                                      f"Content-Length: {len(_BODY)}"],
     b"%x\r\n%s\r\n0\r\n\r\n" % (len(_BODY), _BODY), "The request has both a "
     "Transfer-Encoding and a Content-Length header, which HTTP forbids; send only one of them."),
    ("POST", "/v1/chat/completions", ["Host: 127.0.0.1", "Transfer-Encoding: gzip"], _BODY,
     "The request's Transfer-Encoding 'gzip' is not read here; send the body with a "
     "Content-Length or chunked (compressed, it takes Content-Encoding: gzip)."),
    ("GET", "/v1/models", ["Host: 127.0.0.1", "Content-Length: -1"], b"",
     "The Content-Length header ('-1') is not a byte count; send the body's length in bytes."),
    ("GET", "/v1/models?" + "a=1&" * 5000, ["Host: 127.0.0.1"], b"",
     "The request's query string cannot be read (Max number of fields exceeded); the listener "
     "reads a request's fields from its JSON body, not its URL."),
], ids=["no Host", "two Hosts", "chunked and a length", "gzip transfer coding",
        "a length on a GET", "ten thousand query fields"])
def test_a_request_http_refuses_is_answered_with_the_header_named(tiny_listener, method, path,
                                                                  headers, body, said):
    """tornado answered these with a bare "400 Bad Request" and no body."""
    sent = _request(method, path, [*headers, f"Authorization: Bearer {tiny_listener.token}"],
                    body)
    status, error = _refusal(_exchange(tiny_listener, sent)[0])
    assert status == b"HTTP/1.1 400 Bad Request"
    assert error == {"message": said, "type": "invalid_request_error", "param": None,
                     "code": None}
    # The listener goes on serving.
    assert httpx.get(f"{tiny_listener.url}/models", timeout=60,
                     headers={"Authorization": f"Bearer {tiny_listener.token}"}
                     ).status_code == 200


@pytest.mark.parametrize("method", ["GET", "POST", "PROPFIND", "TRACE", "FOO"])
def test_a_path_nobody_serves_is_a_404_whatever_the_method(tiny_listener, method):
    reply = httpx.request(method, f"{tiny_listener.url}/nope", timeout=60,
                          headers={"Authorization": f"Bearer {tiny_listener.token}"})
    assert reply.status_code == 404, reply.text
    assert reply.json()["error"]["message"] == (
        "There is no endpoint /v1/nope; use /v1/chat/completions, /v1/responses, "
        "/v1/completions, /v1/models or /health.")


def _chunked_post(token: str, chunks: bytes) -> bytes:
    return _request("POST", "/v1/chat/completions", [
        "Host: 127.0.0.1", f"Authorization: Bearer {token}", "Transfer-Encoding: chunked"],
        chunks)


@pytest.mark.parametrize("chunks, said", [
    (b"zz\r\n" + _BODY + b"\r\n0\r\n\r\n", "A chunk-size line of the chunked body is not a "
     "hexadecimal byte count (chunk extensions are not read); send each chunk as its size in "
     "hex, CRLF, its bytes, CRLF, or the body with a Content-Length."),
    (b"%x;name=value\r\n%s\r\n0\r\n\r\n" % (len(_BODY), _BODY), "A chunk-size line of the "
     "chunked body is not a hexadecimal byte count (chunk extensions are not read); send each "
     "chunk as its size in hex, CRLF, its bytes, CRLF, or the body with a Content-Length."),
    (b"%x\r\n%s\r\n0\r\nX-Checksum: 1\r\n\r\n" % (len(_BODY), _BODY), "The chunked body does "
     "not end with a zero-size chunk and an empty line (trailer fields are not read); end it "
     "so, or send the body with a Content-Length."),
    (b"5\r\n" + _BODY + b"\r\n0\r\n\r\n", "A chunk of the chunked body is longer than its "
     "size line says; send each chunk's size in hex, or the body with a Content-Length."),
], ids=["not hex", "a chunk extension", "a trailer", "a chunk past its size"])
def test_a_chunked_body_whose_framing_breaks_is_a_400_that_says_where(tiny_listener, chunks,
                                                                      said):
    status, error = _refusal(_exchange(tiny_listener,
                                       _chunked_post(tiny_listener.token, chunks))[0])
    assert (status, error["message"]) == (b"HTTP/1.1 400 Bad Request", said)


@pytest.mark.parametrize("sent, reason", [
    (b"GET /health\r\n\r\n", "Malformed HTTP request line"),
    (b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: 1\r\n\r\n",
     "Invalid header name 'Bad Header'"),
    (b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: a\r\n b\r\n\r\n",
     "header line cannot start with whitespace, folding not supported"),
], ids=["HTTP/0.9", "a space in a header name", "a folded header"])
def test_a_request_that_is_not_http11_is_a_400_that_quotes_why(tiny_listener, sent, reason):
    status, error = _refusal(_exchange(tiny_listener, sent)[0])
    assert status == b"HTTP/1.1 400 Bad Request"
    assert error["message"] == (f"The request is not valid HTTP/1.1 ({reason}); send it with an "
                                "HTTP client library, or as one request line, header lines and "
                                "an empty line, each ending in CRLF.")
    assert httpx.get(f"{tiny_listener.url.removesuffix('/v1')}/health", timeout=60
                     ).status_code == 200


@pytest.mark.parametrize("framing, sent, said", [
    (f"Content-Length: {len(_BODY) + 10}", _BODY,
     f"The request body stopped coming after {len(_BODY)} of the {len(_BODY) + 10} bytes its "
     "Content-Length announced (1 s); send them all, or a Content-Length that counts the "
     "body's bytes."),
    ("Transfer-Encoding: chunked", b"%x\r\n%s\r\n" % (len(_BODY), _BODY),
     f"The chunked request body stopped coming after {len(_BODY)} bytes (1 s) without its "
     "last, zero-size chunk; end the body with one."),
], ids=["a Content-Length past the body", "a chunked body never ended"])
def test_a_body_that_stops_coming_is_a_408_that_says_how_much_came(tiny_engine, framing, sent,
                                                                   said):
    """A client that announced more than it sent waits for its reply: it gets one, saying
    why (tornado closed the connection without a word after two minutes)."""
    from mlx_notebook.engine.serving import Listener

    listener = Listener(tiny_engine, port=0, token="")
    listener.body_timeout = 1.0
    with listener:
        answer, seconds = _exchange(listener, _request(
            "POST", "/v1/chat/completions", ["Host: 127.0.0.1", framing], sent))
        status, error = _refusal(answer)
        assert status == b"HTTP/1.1 408 Request Timeout" and seconds < 5
        assert error == {"message": said, "type": "invalid_request_error", "param": None,
                         "code": "request_timeout"}
        reply = httpx.post(f"{listener.url}/chat/completions", content=_BODY, timeout=60)
        assert reply.status_code == 200, reply.text


@pytest.mark.parametrize("body, said", [
    (b"", "The request has no body; send the request's fields as a JSON object, e.g. "
          "{\"messages\": [...]}."),
    (b"[" + _BODY + b"]", "The request body must be a JSON object of the request's fields, "
                          "not an array."),
    (b'"Hi"', "The request body must be a JSON object of the request's fields, not a string."),
    (b"null", "The request body must be a JSON object of the request's fields, not null."),
    (b"false", "The request body must be a JSON object of the request's fields, not false."),
], ids=["none", "an array", "a string", "null", "false"])
@pytest.mark.parametrize("path", ["chat/completions", "responses"])
def test_a_body_that_is_no_json_object_is_named_for_what_it_is(tiny_listener, path, body, said):
    reply = httpx.post(f"{tiny_listener.url}/{path}", content=body, timeout=60,
                       headers={"Authorization": f"Bearer {tiny_listener.token}",
                                "Content-Type": "application/json"})
    assert (reply.status_code, reply.json()["error"]["message"]) == (400, said)


@pytest.mark.parametrize("token, length, headers", [
    ("wrong", None, []),
    (None, "99999999999", []),
    (None, "-1", []),
    (None, None, ["Cookie: " + "a" * 70_000]),
], ids=["a wrong token", "a body over the limit", "a length that is no count",
        "headers over the limit"])
def test_an_http10_keep_alive_request_refused_unread_says_the_connection_closes(
        tiny_listener, token, length, headers):
    """Refused before its body is read, a request's connection closes: an HTTP/1.0 client
    that asked for keep-alive (``ab -k``) must read "close", not "Keep-Alive", or it sends
    its next request into a closed connection."""
    body = _chat(False)
    sent = _request("POST", "/v1/chat/completions", [
        f"Authorization: Bearer {token or tiny_listener.token}", "Connection: keep-alive",
        f"Content-Length: {length or len(body)}", *headers], body, version="HTTP/1.0")
    answer, _ = _exchange(tiny_listener, sent + _request("GET", "/health", [],
                                                         version="HTTP/1.0"))
    status, _ = _refusal(answer)  # the one answer, saying close
    assert status.startswith(b"HTTP/1.1 4")
    assert b"keep-alive" not in answer.lower()


def test_a_request_naming_its_whole_url_is_served_as_its_path(tiny_listener):
    """RFC 9112 has a server accept the absolute form a client sends a proxy."""
    body = _chat(False)
    answer, _ = _exchange(tiny_listener, _request(
        "POST", f"http://127.0.0.1:{tiny_listener.port}/v1/chat/completions?x=1",
        ["Host: 127.0.0.1", f"Authorization: Bearer {tiny_listener.token}",
         f"Content-Length: {len(body)}", "Connection: close"], body))
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), answer
    assert json.loads(payload)["usage"]["completion_tokens"] == 3


def test_a_whole_url_naming_another_host_is_refused_without_a_token(tiny_engine):
    """Its host is the request's host: one that is no loopback name is refused, as the same
    name in a Host header is (a DNS-rebinding page)."""
    from mlx_notebook.engine.serving import Listener

    with Listener(tiny_engine, port=0, token="") as listener:
        answer, _ = _exchange(listener, _request(
            "GET", "http://evil.example/v1/models", ["Host: 127.0.0.1", "Connection: close"]))
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 403"), answer
    assert json.loads(payload)["error"]["code"] == "host_not_allowed"


@pytest.mark.parametrize("expect", ["100-continue", "100-Continue", "100-CONTINUE"])
def test_expect_100_continue_is_answered_in_any_case(tiny_listener, expect):
    """Java's HttpClient sends "Expect: 100-Continue" and sends no body before the 100."""
    body = _chat(False)
    with socket.create_connection((tiny_listener.host, tiny_listener.port), timeout=5) as sock:
        sock.sendall(_request("POST", "/v1/chat/completions", [
            "Host: 127.0.0.1", f"Authorization: Bearer {tiny_listener.token}",
            f"Expect: {expect}", f"Content-Length: {len(body)}", "Connection: close"]))
        assert sock.recv(1024).startswith(b"HTTP/1.1 100 ")
        sock.sendall(body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 OK"), answer


def test_asking_for_a_stored_response_says_none_is_stored(tiny_listener):
    """The SDK's ``responses.retrieve`` was told there is no endpoint /v1/responses/..., "use
    /v1/responses": the endpoint it had just used."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=tiny_listener.url, api_key=tiny_listener.token,
                           max_retries=0)
    made = client.responses.create(model="default_model", input="Hi", max_output_tokens=2)
    said = (f"The response '{made.id}' is not stored: this server stores no responses (each "
            "says \"store\": false); keep the one you got, and send the whole conversation in "
            "'input'.")
    for ask in (client.responses.retrieve, client.responses.delete, client.responses.cancel,
                client.responses.input_items.list):
        with pytest.raises(openai.NotFoundError) as refused:
            ask(made.id)
        assert refused.value.body["message"] == said


def test_a_client_that_stops_reading_is_cancelled_and_closed(tiny_engine, caplog,
                                                            small_send_buffers):
    """A client that takes a stream and then reads nothing (hung, or a slow-loris on the way
    out) would hold its place in the batch until ``max_tokens``, its reply buffered in the
    server. Once it has left bytes unread for ``write_timeout``, its request is cancelled and
    its connection closed; another client is then served at once."""
    from mlx_notebook.engine.serving import Listener

    with Listener(tiny_engine, port=0) as listener:
        listener.write_timeout = 0.5
        with _long_stream(listener, 1900) as sock:
            deadline = time.monotonic() + 30
            while not listener.served() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert listener.served(), "the request was never admitted"
            while listener.served() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not listener.served(), "a client that read nothing kept its request going"
            sock.settimeout(10)
            received = b""
            while chunk := sock.recv(1 << 20):  # the connection ends: recv returns b""
                received += chunk
        assert b'"finish_reason": "length"' not in received  # cut off, not decoded to the end
        assert b"data: [DONE]" not in received
        assert "read nothing for 0.5 s; cancelled" in caplog.text
        answer = httpx.post(f"{listener.url}/chat/completions", timeout=30, json={
            "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3},
            headers={"Authorization": f"Bearer {listener.token}"})
        assert answer.status_code == 200
        assert answer.json()["usage"]["completion_tokens"] == 3


def _read_reply(sock: socket.socket, chunk: int = 1 << 16, pause: float = 0.0) -> bytes:
    """One chunked reply read whole from ``sock`` (``chunk`` bytes a read, ``pause`` s after
    each); a connection closed before the reply's end fails the test."""
    received = b""
    while not received.endswith(b"0\r\n\r\n"):
        data = sock.recv(chunk)
        assert data, f"the listener closed a client that was reading: {received[-200:]!r}"
        received += data
        time.sleep(pause)
    return received


def test_a_client_reading_slowly_but_steadily_is_served_whole(tiny_engine, caplog,
                                                              small_send_buffers):
    """The timeout counts from the client's last read, not from the request's start nor from
    the last time everything was sent: a client that reads steadily, but slower than the
    reply comes, gets all of it, though it stays behind for longer than ``write_timeout``."""
    from mlx_notebook.engine.serving import Listener

    with Listener(tiny_engine, port=0) as listener:
        listener.write_timeout = 0.3
        with _long_stream(listener, 1900) as sock:  # ~3 MB, past the sockets' buffers
            sock.settimeout(30)
            started = time.monotonic()
            received = _read_reply(sock, 8192, pause=0.002)
    assert time.monotonic() - started > 1.0  # behind for longer than the timeout
    assert b'"finish_reason": "length"' in received
    assert received.count(b"data: [DONE]") == 1
    assert "read nothing" not in caplog.text


def test_a_stream_read_late_leaves_its_keep_alive_connection_to_the_next_request(
        tiny_engine, caplog, small_send_buffers):
    """A client that fell behind for a while, under ``write_timeout``, then read its stream
    whole, sends its next requests on the same connection: none of them is cut off by the
    first one's watch."""
    from mlx_notebook.engine.serving import Listener

    with Listener(tiny_engine, port=0) as listener:
        listener.write_timeout = 3.0
        with _long_stream(listener, 1900) as sock:  # ~3 MB, past the sockets' buffers
            sock.settimeout(15)
            time.sleep(2.0)  # behind for a moment
            assert b"data: [DONE]" in _read_reply(sock)
            body = json.dumps({"messages": [{"role": "user", "content": "Count to ten."}],
                               "stream": True, "max_tokens": 400,
                               "logit_bias": {"2": -100}}).encode()
            started = time.monotonic()
            while time.monotonic() - started < 5:  # past the first stream's watch
                sock.sendall(_request("POST", "/v1/chat/completions", [
                    "Host: 127.0.0.1", f"Authorization: Bearer {listener.token}",
                    f"Content-Length: {len(body)}"], body))
                assert b"data: [DONE]" in _read_reply(sock)
    assert "read nothing" not in caplog.text
