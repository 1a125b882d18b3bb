"""``RemoteEngine`` against servers that misbehave or just differ: a real socket server writes
each scripted answer byte for byte (crashes, non-streamed or HTML bodies, error shapes of
mlx_lm.server, vLLM, llama.cpp and FastAPI, SSE corner cases), and the user gets a reply or
one sentence, never a traceback or a silently empty turn."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time

import pytest

from mlx_notebook.engine import (
    ContentDelta, EngineError, Error, Finished, ReasoningDelta, RemoteEngine, ToolCall, Usage,
)
from mlx_notebook.engine.remote._remote_engine import _api_root

BODY = {"messages": [{"role": "user", "content": "What is 17 + 25?"}], "max_tokens": 20}


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> dict:
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}], **extra}


def sse(*items, done: bool = True) -> bytes:
    text = "".join(f"data: {item if isinstance(item, str) else json.dumps(item)}\n\n" for item in items)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


class Server:
    """Answers ``GET /v1/models`` with one model and every POST with ``answer(conn, body)``,
    which writes raw bytes on the socket; the connection closes after it."""

    def __init__(self, answer, models: bytes | None = None):
        self.requests: list[tuple[str, str]] = []
        self.closed_by_client = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                reader = self.request.makefile("rb")
                method, path, _ = reader.readline().decode().split(" ", 2)
                headers = {}
                while (line := reader.readline().decode()) not in ("\r\n", "\n", ""):
                    key, value = line.split(":", 1)
                    headers[key.strip().lower()] = value.strip()
                body = reader.read(int(headers.get("content-length", 0)))
                outer.requests.append((method, path))
                if method == "GET" and models is not None and models.startswith(b"HTTP/"):
                    self.request.sendall(models)  # a whole raw answer (a redirect)
                    return
                if method == "GET":
                    data = models or json.dumps({"data": [{"id": "m"}]}).encode()
                    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
                    self.request.sendall(head.encode() + data)
                    return
                try:
                    answer(self.request, json.loads(body or b"{}"), path)
                except OSError:
                    outer.closed_by_client.set()

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self):
        self._server.shutdown()
        self._server.server_close()


def head(status: int = 200, content_type: str = "text/event-stream", length: int | None = None,
         extra: str = "") -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    return (f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n{size}{extra}"
            "Connection: close\r\n\r\n").encode()


def whole(status: int, body: bytes, content_type: str = "application/json", extra: str = ""):
    return lambda sock, _, __: sock.sendall(head(status, content_type, len(body), extra) + body)


def streamed(data: bytes):
    return lambda sock, _, __: sock.sendall(head() + data)


@pytest.fixture
def serve():
    servers = []

    def start(answer, **kwargs) -> Server:
        servers.append(Server(answer, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def reply(server: Server, body: dict = BODY, **engine_options) -> list:
    with RemoteEngine(server.url, **engine_options) as engine:
        return list(engine.submit(body).events())


def text(events, kind=ContentDelta) -> str:
    return "".join(e.text for e in events if type(e) is kind)


def test_a_server_that_dies_mid_reply_fails_the_reply_instead_of_finishing_it(serve):
    # mlx_lm.server's HTTP/1.0 stream ends when its socket closes, whether or not it crashed.
    server = serve(streamed(sse(chunk({"content": "Once upon"}), chunk({"content": " a time"}),
                                done=False)))
    events = reply(server)
    assert text(events) == "Once upon a time"
    assert type(events[-1]) is Error and not any(type(e) is Finished for e in events)
    assert events[-1].message == (f"The server at {server.url} closed the connection before "
                                  "the reply ended; the reply is partial.")
    # A finish reason without [DONE] is a whole reply.
    server = serve(streamed(sse(chunk({"content": "Hi."}, "stop"), done=False)))
    assert events_end(reply(server)) == "stop"


def events_end(events) -> str:
    return events[-1].reason if type(events[-1]) is Finished else events[-1].message


def test_a_reply_sent_whole_as_json_is_read_and_an_html_page_is_one_sentence(serve):
    body = json.dumps({"id": "c1", "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "42."}}],
                       "usage": {"prompt_tokens": 9, "completion_tokens": 2}}).encode()
    events = reply(serve(whole(200, body)))
    assert text(events) == "42." and events_end(events) == "stop"
    (usage,) = [e for e in events if type(e) is Usage]
    assert (usage.prompt_tokens, usage.completion_tokens) == (9, 2)

    server = serve(whole(200, b"<html><body>Please log in</body></html>", "text/html"))
    with RemoteEngine(server.url) as engine, pytest.raises(EngineError) as caught:
        engine.submit(BODY)
    assert str(caught.value) == (f"The server at {server.url} answered /chat/completions with "
                                 "text/html ('<html><body>Please log in</body></html>'), not an "
                                 "OpenAI event stream; check the URL (a proxy or a login page?).")


def test_error_lines_and_error_chunks_say_what_the_server_said(serve):
    llama_cpp = b'error: {"code": 400, "message": "the request exceeds the available context size"}\n\ndata: [DONE]\n\n'
    server = serve(streamed(llama_cpp))
    assert events_end(reply(server)) == (f"The server at {server.url}: the request exceeds the "
                                         "available context size.")
    # "error": null is no error.
    events = reply(serve(streamed(sse(chunk({"content": "Fine."}, "stop", error=None)))))
    assert text(events) == "Fine." and events_end(events) == "stop"
    # Data that is JSON but not an object fails the reply in a sentence.
    events = reply(serve(streamed(sse(chunk({"content": "A"}), "42"))))
    assert text(events) == "A" and "sent a chunk that is not a JSON object ('42')" in events_end(events)


@pytest.mark.parametrize("status, body, said", [
    (404, b'{"error": "Could not load model org/not-a-model"}', "Could not load model org/not-a-model"),
    (400, b'{"object": "error", "message": "temperature is too high"}', "temperature is too high"),
    (422, b'{"detail": "messages: field required"}', "messages: field required"),
    (500, b'{"error": {"message": "out of memory", "type": "server_error"}}', "out of memory"),
])
def test_each_servers_error_shape_reaches_the_user(serve, status, body, said):
    server = serve(whole(status, body))
    with RemoteEngine(server.url) as engine, pytest.raises(EngineError) as caught:
        engine.submit(BODY)
    assert str(caught.value) == f"The server at {server.url} (HTTP {status}): {said}."


def test_a_rate_limit_says_when_to_retry(serve):
    server = serve(whole(429, b"{}", extra="Retry-After: 7\r\n"))
    with RemoteEngine(server.url) as engine, pytest.raises(EngineError) as caught:
        engine.submit(BODY)
    assert str(caught.value) == (f"The server at {server.url} answered HTTP 429 to "
                                 "/chat/completions. Retry after 7 s.")
    assert caught.value.error["type"] == "rate_limit_error"


def test_sse_keep_alives_and_data_over_several_lines_are_read(serve):
    stream = (b"data:\n\n: ping\n\n" + b'data: {"id": "c1", "choices": [{"index": 0,\n'
              b'data:  "delta": {"content": "Hel"}}]}\n\n' + sse(chunk({"content": "lo"}, "stop")))
    events = reply(serve(streamed(stream)))
    assert text(events) == "Hello" and events_end(events) == "stop"
    # A byte-order mark before the first event is not part of it (the SSE spec skips it).
    bom = "\ufeff".encode() + sse(chunk({"content": "A"}), chunk({"content": "B"}, "stop"))
    assert text(reply(serve(streamed(bom)))) == "AB"


def test_stop_closes_a_connection_the_server_sends_nothing_on(serve):
    def silent(sock, _, __):
        sock.sendall(head())
        sock.settimeout(10)
        if sock.recv(1) == b"":  # the client closed it
            raise ConnectionResetError

    server = serve(silent)
    with RemoteEngine(server.url) as engine:
        handle = engine.submit(BODY)
        time.sleep(0.2)
        handle.cancel()
        assert events_end(list(handle.events())) == "cancelled"
        assert server.closed_by_client.wait(3)


def test_a_server_that_splits_reasoning_keeps_the_answer_content_for_an_r1_family(serve):
    server = serve(streamed(sse(chunk({"reasoning": "17 + 25 is 42."}),
                                chunk({"content": "\n\n17 + 25 = 42."}, "stop"))))
    events = reply(server, family="deepseek_r1")
    assert text(events, ReasoningDelta) == "17 + 25 is 42."
    assert text(events) == "\n\n17 + 25 = 42."
    # Once a server has split reasoning, a reply with none is content from its first token.
    answers = iter([sse(chunk({"reasoning": "Easy."}), chunk({"content": "42."}, "stop")),
                    sse(chunk({"content": "43."}, "stop"))])
    server = serve(lambda sock, _, __: sock.sendall(head() + next(answers)))
    with RemoteEngine(server.url, family="deepseek_r1") as engine:
        assert text(list(engine.submit(BODY).events())) == "42."
        assert text(list(engine.submit(BODY).events())) == "43."


def test_tool_call_only_rounds_time_their_first_token_and_report_no_memory(serve):
    def slow_call(sock, _, __):
        sock.sendall(head() + sse(chunk({"tool_calls": [{"index": 0, "id": "call_1", "function":
                                                          {"name": "get_weather", "arguments": ""}}]}),
                                  done=False))
        time.sleep(0.3)
        sock.sendall(sse(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"}'}}]}),
                         chunk({}, "tool_calls"),
                         {"id": "c1", "choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 12}}))

    events = reply(serve(slow_call))
    (call,) = [e for e in events if type(e) is ToolCall]
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
    (usage,) = [e for e in events if type(e) is Usage]
    assert usage.time_to_first_token < 0.25 and 12 < usage.decode_tokens_per_second < 100
    assert usage.peak_memory is None


def test_the_api_root_is_taken_as_given_but_for_a_bare_host():
    assert _api_root("http://box:8080") == ("http://box:8080/v1", [])
    assert _api_root("http://box:8080/v1/") == ("http://box:8080/v1", [])
    assert _api_root("http://box:8080/v1/chat/completions") == ("http://box:8080/v1", [])
    assert _api_root("http://box/v1/models") == ("http://box/v1", [])
    assert _api_root("https://g.example/v1beta/openai") == ("https://g.example/v1beta/openai", [])
    assert _api_root("https://a.example/openai/v1?api-version=2024-10") == (
        "https://a.example/openai/v1", [("api-version", "2024-10")])
    with pytest.raises(EngineError, match="is not an http"):
        _api_root("box:8080/v1")
    with pytest.raises(EngineError, match="must be text, like http://127.0.0.1:8080/v1, not int"):
        _api_root(8080)


def test_a_redirect_is_followed_and_model_ids_that_are_not_names_are_skipped(serve):
    target = serve(streamed(sse(chunk({"content": "Moved."}, "stop"))))
    hop = serve(whole(307, b"", extra=f"Location: {target.url}/chat/completions\r\n"),
                models=b'{"data": [{"id": 7}, {"id": "m"}]}')
    with RemoteEngine(hop.url) as engine:
        assert engine.model == "m"
        events = list(engine.submit(BODY).events())
    assert text(events) == "Moved."


def test_a_permanent_redirect_of_the_api_moves_every_request_there(serve):
    target = serve(streamed(sse(chunk({"content": "Moved."}, "stop"))))
    moved = (f"HTTP/1.1 301 Moved Permanently\r\nLocation: {target.url}/models\r\n"
             "Content-Length: 0\r\nConnection: close\r\n\r\n").encode()
    hop = serve(whole(404, b"{}"), models=moved)
    with RemoteEngine(hop.url) as engine:
        assert engine.url == target.url  # a POST sent to the old place would come back a GET
        assert text(list(engine.submit(BODY).events())) == "Moved."
    assert ("POST", "/v1/chat/completions") in target.requests


def test_thinking_turned_off_is_content_from_the_first_token(serve):
    server = serve(streamed(sse(chunk({"content": "42."}, "stop"))))
    events = reply(server, {**BODY, "chat_template_kwargs": {"enable_thinking": False}},
                   family="deepseek_r1")
    assert text(events) == "42." and text(events, ReasoningDelta) == ""


def test_chunks_of_an_unexpected_shape_and_bare_error_objects_are_one_sentence(serve):
    server = serve(streamed(sse(chunk({"content": "A"}), {"choices": ["x"]})))
    assert events_end(reply(server)) == (
        f"The server at {server.url} sent a chunk of a shape no OpenAI API sends (its choices "
        'are ["x"], not a list of objects); the reply is partial.')
    server = serve(streamed(sse(chunk({"content": "A"}), {"error": {"code": 503}})))
    assert events_end(reply(server)) == f"The server at {server.url}: 503."


def test_a_remote_callback_that_raises_cancels_only_its_request(serve):
    server = serve(streamed(sse(chunk({"content": "A"}), chunk({"content": "B"}, "stop"))))
    with RemoteEngine(server.url) as engine:
        with pytest.raises(EngineError, match="on_event must be a function"):
            engine.submit(BODY, on_event=5)

        def broken(event):
            raise ValueError("my bug")

        handle = engine.submit(BODY, on_event=broken)
        deadline = time.time() + 5
        while not handle.done and time.time() < deadline:
            time.sleep(0.02)
        assert handle.done and engine.active_requests == 0


def test_two_calls_with_neither_index_nor_id_stay_two():
    from mlx_notebook.engine.remote import ChunkReader

    reader = ChunkReader("qwen3")
    message = {"tool_calls": [{"function": {"name": "a", "arguments": "{}"}},
                              {"function": {"name": "b", "arguments": '{"x": 1}'}}]}
    events = reader.read({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]})
    events += reader.finish()
    assert [(e.name, e.arguments) for e in events if type(e) is ToolCall] == [("a", {}), ("b", {"x": 1})]
