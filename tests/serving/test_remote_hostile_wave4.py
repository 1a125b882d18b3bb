"""``RemoteEngine`` against what a user types and what a server sends that earlier rounds left
out: an event pretty-printed over thousands of ``data:`` lines, an API key read with its line
break or pasted with a letter outside ASCII, a URL that does not parse, a ``user:password@``
URL. Each is a reply read at once or one sentence that quotes no secret."""

from __future__ import annotations

import base64
import json
import socketserver
import threading
import time

import pytest

from mlx_notebook.engine import ContentDelta, EngineError, Finished, RemoteEngine, TokenLogprobs

BODY = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 20}


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def http(body: bytes, content_type: str = "text/event-stream") -> bytes:
    return (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


class Server:
    """``GET /v1/models`` lists one model; each POST is answered with ``stream`` (SSE bytes),
    or with ``post_answer`` (a whole raw HTTP answer) once it is set. ``authorizations`` keeps
    each request's Authorization header."""

    def __init__(self, stream: bytes):
        self.authorizations: list[str | None] = []
        self.post_answer: bytes | None = None
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                reader = self.request.makefile("rb")
                method = reader.readline().split(b" ")[0]
                headers = {}
                while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
                    key, value = line.decode().split(":", 1)
                    headers[key.strip().lower()] = value.strip()
                reader.read(int(headers.get("content-length", 0)))
                outer.authorizations.append(headers.get("authorization"))
                self.request.sendall(http(b'{"data": [{"id": "m"}]}', "application/json")
                                     if method == b"GET" else outer.post_answer or http(stream))

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def server():
    server = Server(b"data: " + json.dumps(chunk({"content": "Fine."}, "stop")).encode()
                    + b"\n\ndata: [DONE]\n\n")
    yield server
    server.close()


def text(events) -> str:
    return "".join(e.text for e in events if type(e) is ContentDelta)


def test_an_event_pretty_printed_over_thousands_of_lines_is_read_at_once():
    # Each data: line is one more line of the same event. Before, the whole event so far was
    # parsed again at every line: 16,000 lines took about 25 s, 32,000 nearly two minutes.
    item = chunk({"content": "Fine."}, "stop")
    item["choices"][0]["logprobs"] = {"content": [{"token": "a", "logprob": -0.5}] * 4000}
    event = "\n".join(f"data: {line}" for line in json.dumps(item, indent=1).splitlines())
    server = Server(f"{event}\n\ndata: [DONE]\n\n".encode())
    try:
        started = time.monotonic()
        with RemoteEngine(server.url, timeout=60) as engine:
            events = list(engine.submit(BODY).events())
        assert time.monotonic() - started < 5
    finally:
        server.close()
    assert text(events) == "Fine." and type(events[-1]) is Finished
    assert sum(type(e) is TokenLogprobs for e in events) == 4000


def test_an_api_key_read_with_its_line_break_is_sent_without_it(server):
    # Before: "The connection to ... failed (Illegal header value b'Bearer sk-abc123\n');
    # check the server." It blamed the server and printed the key into the notebook.
    with RemoteEngine(server.url, api_key="sk-abc123\n", timeout=5) as engine:
        assert text(engine.submit(BODY).events()) == "Fine."
    assert server.authorizations == ["Bearer sk-abc123"] * 2


@pytest.mark.parametrize("key", ["sk-abc123\u2026", "sk-abc\n123", "\u201csk-abc123\u201d"])
def test_an_api_key_no_header_can_carry_is_one_sentence_that_does_not_quote_it(server, key):
    # Before: a UnicodeEncodeError traceback for a letter outside ASCII (a pasted ellipsis or
    # curly quotes), or the key quoted in "Illegal header value" for a line break inside it.
    with pytest.raises(EngineError) as caught:
        RemoteEngine(server.url, api_key=key, timeout=5)
    assert str(caught.value).startswith("The API key has a character an HTTP header cannot carry")
    assert "abc" not in str(caught.value) and server.authorizations == []


@pytest.mark.parametrize("url", ["http://[::1/v1", "http://127.0.0.1:abc/v1",
                                 "http://127.0.0.1:99999/v1"])
def test_a_url_that_does_not_parse_is_one_sentence(url):
    # Before: ValueError("Invalid IPv6 URL") and httpx's InvalidURL escaped as tracebacks (a
    # port past 65535 was "connection refused").
    with pytest.raises(EngineError) as caught:
        RemoteEngine(url, timeout=5)
    assert str(caught.value).startswith(f"'{url}' is not a URL (")
    assert str(caught.value).endswith("give one like http://127.0.0.1:8080/v1.")


def test_a_login_in_the_url_is_sent_but_never_shown(server):
    # Before: the password stayed in the engine's URL, so every error sentence and the
    # %load_model summary (saved with the notebook) showed it.
    with RemoteEngine(f"http://me:s3cr%40t@127.0.0.1:{server.port}/v1", timeout=5) as engine:
        assert text(engine.submit(BODY).events()) == "Fine."
        shown = [engine.url, engine.summary(), engine.model_info.path, repr(engine)]
    login = "Basic " + base64.b64encode(b"me:s3cr@t").decode()
    assert server.authorizations == [login, login]
    assert engine.url == server.url and not any("s3cr" in s or "me:" in s for s in shown)
    with pytest.raises(EngineError) as caught:
        RemoteEngine("http://me:s3cr%40t@127.0.0.1:1/v1", timeout=5)
    assert str(caught.value).startswith("Cannot connect to http://127.0.0.1:1/v1 (")


def test_a_503_says_when_to_retry_as_a_429_does():
    # Before: "(HTTP 503): loading model." and the Retry-After header went unsaid.
    body = b'{"error": {"message": "loading model"}}'
    answer = (f"HTTP/1.1 503 X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
              "\r\nRetry-After: 5\r\nConnection: close\r\n\r\n").encode() + body
    server = Server(b"")
    try:
        with RemoteEngine(server.url, timeout=5) as engine:
            server.post_answer = answer
            with pytest.raises(EngineError) as caught:
                engine.submit(BODY)
    finally:
        server.close()
    assert str(caught.value) == f"The server at {server.url} (HTTP 503): loading model. Retry after 5 s."
