"""``RemoteEngine`` against a deliberately broken peer: a loopback socket server writes crafted
bytes (SSE cut at odd places, chunks of wrong shapes, bodies that are no event stream, JSON
nested past the parser's depth, connections held open), and the user gets the reply or one
sentence naming what the server did, with the connection closed and the engine still working.
"""

from __future__ import annotations

import gzip
import json
import socketserver
import threading
import time

import pytest

import mlx_notebook.engine.remote._remote_engine as remote_engine_module
from mlx_notebook.engine import (
    ContentDelta, EngineError, Error, Finished, ParseProblem, ReasoningDelta, RemoteEngine, ToolCall,
    Usage,
)

BODY = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 20}
DEEP = b"[" * 100_000 + b"]" * 100_000  # past json's recursion limit
ENDLESS = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"  # no length: to the close


def chunk(delta=None, finish=None, **extra) -> dict:
    return {"id": "c1", "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
            **extra}


def sse(*items, done: bool = True) -> bytes:
    text = "".join(f"data: {i if isinstance(i, str) else json.dumps(i)}\n\n" for i in items)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def http(status: int = 200, body: bytes = b"", content_type: str | None = "text/event-stream",
         extra: str = "") -> bytes:
    kind = f"Content-Type: {content_type}\r\n" if content_type else ""
    return (f"HTTP/1.1 {status} X\r\n{kind}Content-Length: {len(body)}\r\n{extra}"
            "Connection: close\r\n\r\n").encode() + body


class HostileServer:
    """``GET /v1/models`` answers ``models`` (raw HTTP bytes); each POST takes the next of
    ``answers``: raw bytes to send, or ``answer(sock)`` to write them as it likes. ``bodies``:
    the POSTs' bodies, as received."""

    def __init__(self, *answers, models: bytes | None = None):
        self._answers = list(answers)
        self.bodies: list[bytes] = []
        self.closed_by_client = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                reader = self.request.makefile("rb")
                method = reader.readline().split(b" ")[0]
                length = 0
                while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = reader.read(length)
                if method == b"GET":
                    self.request.sendall(models or http(body=b'{"data": [{"id": "m"}]}',
                                                        content_type="application/json"))
                    return
                outer.bodies.append(body)
                answer = outer._answers.pop(0) if len(outer._answers) > 1 else outer._answers[0]
                try:
                    answer(self.request) if callable(answer) else self.request.sendall(answer)
                except OSError:
                    outer.closed_by_client.set()

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(*answers, **kwargs) -> HostileServer:
        servers.append(HostileServer(*answers, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def reply(server: HostileServer) -> list:
    with RemoteEngine(server.url, timeout=5) as engine:
        return list(engine.submit(BODY).events())


def text(events) -> str:
    return "".join(e.text for e in events if type(e) is ContentDelta)


def end(events) -> str:
    return events[-1].reason if type(events[-1]) is Finished else events[-1].message


def held_open(data: bytes):
    """Send ``data`` after the head of an endless response, then wait for the client to close."""
    def answer(sock):
        sock.sendall(ENDLESS + data)
        sock.settimeout(10)
        while sock.recv(1):
            pass
        raise ConnectionResetError  # the client closed it
    return answer


def reader_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "mlx-notebook-remote" and t.is_alive()}


# -- streams cut anywhere ---------------------------------------------------------------------
def test_sse_cut_at_every_byte_is_read_as_sent(serve):
    stream = (b"event: message\r\nid: 1\r\nretry: 100\r\n: keepalive\r\n\r\n"
              + b'data:{"choices": [{"index": 0, "delta": {"content": "h\xc3\xa9llo "}}]}\r\n\r\n'
              + b"data: \n\n" + sse(chunk({"content": "\U0001f600 w\xf6rld"}, "stop")))

    def one_byte_at_a_time(sock):
        sock.sendall(ENDLESS)
        for i in range(len(stream)):
            sock.sendall(stream[i:i + 1])
            time.sleep(0.0005)

    events = reply(serve(one_byte_at_a_time))
    assert (text(events), end(events)) == ("héllo \U0001f600 wörld", "stop")


# -- chunks of the wrong shape ------------------------------------------------------------------
def test_content_parts_and_a_null_choice_index_are_kept(serve):
    parts = {"content": [{"type": "text", "text": "Hel"}, {"type": "image_url"}]}
    sloppy = {"choices": [{"index": None, "delta": {"content": "lo"}}]}
    assert text(reply(serve(http(body=sse(chunk(parts), sloppy, chunk({}, "stop")))))) == "Hello"
    whole = {"choices": [{"index": 0, "finish_reason": "stop",
                          "message": {"content": [{"type": "text", "text": "Parts."}]}}]}
    events = reply(serve(http(body=json.dumps(whole).encode(), content_type="application/json")))
    assert text(events) == "Parts."


def test_mistral_thinking_parts_are_reasoning(serve):
    thinking = {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Two "},
                                                               {"type": "text", "text": "apples."}]}]}
    answer = {"content": [{"type": "thinking", "thinking": "Sum."}, {"type": "text", "text": "2"}]}
    events = reply(serve(http(body=sse(chunk(thinking), chunk(answer), chunk({}, "stop")))))
    assert "".join(e.text for e in events if type(e) is ReasoningDelta) == "Two apples.Sum."
    assert (text(events), end(events)) == ("2", "stop")


def test_tool_call_arguments_json_cannot_read_are_a_problem_shown(serve):
    calls = [{"index": i, "id": f"c{i}", "function": {"name": "f", "arguments": args}}
             for i, args in enumerate(['{"n": ' + "9" * 5000 + "}", "[" * 5000 + "]" * 5000])]
    events = reply(serve(http(body=sse(chunk({"tool_calls": calls}), chunk({}, "tool_calls")))))
    problems = [e.message for e in events if type(e) is ParseProblem]
    assert problems == ["the server sent tool call 'f' with arguments that are not JSON "
                        f"({why})" for why in ("a number of more than 4300 digits",
                                               "nested too deeply")]


def test_a_tool_call_field_that_does_not_read_is_not_glued_to_the_answer(serve):
    """Arguments cut by the server's max_tokens were never content: the answer, the turn and
    the history sent next keep only what the server sent as content; the problem says why."""
    from mlx_notebook.display import TURN_MIME_TYPE
    from mlx_notebook.engine.request._responses import collect
    from mlx_notebook.turn import Turn

    call = {"index": 0, "id": "c0", "function": {"name": "get_weather", "arguments": '{"city": "Pa'}}
    events = reply(serve(http(body=sse(chunk({"content": "Let me check."}),
                                       chunk({"tool_calls": [call]}), chunk({}, "length")))))
    (problem,) = [e for e in events if type(e) is ParseProblem]
    assert (problem.text, problem.in_reply) == ('{"city": "Pa', False)
    assert collect(events).content == "Let me check."
    turn = Turn(model="remote", session="s", request={"messages": []})
    for event in events:
        turn.apply(event)
    assert turn.content == "Let me check."
    assert turn.rounds[-1].problems == [{"message": problem.message, "text": '{"city": "Pa',
                                         "in_reply": False}]
    assert turn.rounds[-1].messages()[0]["content"] == "Let me check."
    # the saved card keeps what the content does not: the field, on the problem's line
    bundle = turn._mimebundle()[0]
    record, plain = bundle[TURN_MIME_TYPE], bundle["text/plain"]
    assert record["rounds"][-1]["problems"][0]["in_reply"] is False
    assert f'[warning] unparsed markup: {problem.message}: {{"city": "Pa' in plain


def weather_turn(url: str):
    """A notebook turn offering get_weather against the server at ``url``, run through the
    tool loop; with the cities the tool ran for."""
    from mlx_notebook.runner import run_turn
    from mlx_notebook.tools import make_tool
    from mlx_notebook.turn import Turn

    ran = []

    def get_weather(city: str):
        ran.append(city)
        return {"city": city, "condition": "sunny"}

    with RemoteEngine(url, timeout=5) as engine:
        turn = Turn(model="remote", session="s", request=BODY, user_message=BODY["messages"][-1],
                    tools_offered=["get_weather"])
        return run_turn(engine, turn, None, tools=[make_tool(get_weather)]), ran


# A proxy passes on what it cannot read: an agent loop told "tool_calls" iterates the calls.
CUT = (sse(chunk({"content": "Let me check."}),
           chunk({"tool_calls": [{"index": 0, "id": "c0", "function": {
               "name": "get_weather", "arguments": '{"city": "Par'}}]}), chunk({}, "length")),
       "Let me check.", "length", [("c0", '{"city": "Par')], ['{"city": "Par'])
BAD_JSON = (sse(chunk({"tool_calls": [
    {"index": 0, "id": "c0", "function": {"arguments": '{"city": "Oslo"}'}},  # no name: no entry
    {"index": 1, "id": "c1", "function": {"name": "get_weather", "arguments": '{"city": Paris}'}},
    {"index": 2, "id": "c2", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}},
]}), chunk({}, "tool_calls")), None, "tool_calls",
    [("c1", '{"city": Paris}'), ("c2", '{"city": "Rome"}')], ['{"city": "Oslo"}', '{"city": Paris}'])


@pytest.mark.parametrize("stream, content, finish, calls, problems", [CUT, BAD_JSON],
                         ids=["cut by max_tokens", "bad JSON beside a good call"])
def test_a_tool_call_whose_arguments_do_not_read_reaches_api_clients_as_sent(
        serve, stream, content, finish, calls, problems):
    import openai

    from mlx_notebook.engine.serving import Listener

    entries = [{"id": i, "type": "function", "function": {"name": "get_weather", "arguments": a}}
               for i, a in calls]
    server = serve(http(body=stream))
    with RemoteEngine(server.url, timeout=5) as engine:
        (choice,) = engine.chat_completions(BODY)["choices"]
        assert choice == {"index": 0, "finish_reason": finish, "message": {
            "role": "assistant", "content": content, "tool_calls": entries}}

        chunks = [c["choices"][0] for c in engine.chat_completions({**BODY, "stream": True})]
        deltas = [d for c in chunks for d in c["delta"].get("tool_calls", [])]
        assert deltas == [{**entry, "index": n} for n, entry in enumerate(entries)]
        assert "".join(c["delta"].get("content") or "" for c in chunks) == (content or "")
        assert [c["finish_reason"] for c in chunks if c["finish_reason"]] == [finish]

        with Listener(engine, port=0) as listener:
            client = openai.OpenAI(base_url=listener.url, api_key=listener.token, max_retries=0)
            message = client.chat.completions.create(model="m", messages=BODY["messages"]
                                                     ).choices[0].message
            assert [(c.id, c.function.name, c.function.arguments)
                    for c in message.tool_calls] == [(i, "get_weather", a) for i, a in calls]
            whole = client.responses.create(model="m", input="Hi")
            with client.responses.stream(model="m", input="Hi") as events:
                streamed = list(events)[-1].response  # (completed, or incomplete when cut)
            for response in (whole, streamed):
                assert response.status == ("incomplete" if finish == "length" else "completed")
                assert [(item.call_id, item.name, item.arguments, item.status)
                        for item in response.output if item.type == "function_call"] == [
                    (i, "get_weather", a, "completed" if i == "c2" else "incomplete")
                    for i, a in calls]

            # The loop's next request sends the calls back, as it got them, with their
            # results: forwarded to the server, which judges its own arguments.
            answers = [{"role": "tool", "tool_call_id": i, "content": "sunny"} for i, _ in calls]
            client.chat.completions.create(model="m", messages=[
                *BODY["messages"], message.model_dump(exclude_none=True), *answers])
            sent = json.loads(server.bodies[-1])["messages"][1]["tool_calls"]
            assert [c["function"]["arguments"] for c in sent] == [a for _, a in calls]
            items = [item.model_dump(exclude_none=True) for item in whole.output
                     if item.type == "function_call"]
            client.responses.create(model="m", input=[
                {"role": "user", "content": "Hi"}, *items,
                *({"type": "function_call_output", "call_id": i, "output": "sunny"}
                  for i, _ in calls)])
            sent = json.loads(server.bodies[-1])["messages"]
            assert [c["function"]["arguments"] for m in sent for c in m.get("tool_calls") or []
                    ] == [a for _, a in calls]

    # The notebook runs only what reads; the turn shows the rest as a problem, not as content.
    turn, ran = weather_turn(serve(http(body=stream), http(body=sse(chunk({"content": "Sunny."},
                                                                         "stop")))).url)
    first = turn.rounds[0]
    assert ran == (["Rome"] if finish == "tool_calls" else [])
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("get_weather", {"city": city})
                                                                 for city in ran]
    assert [(p["text"], p["in_reply"]) for p in first.problems] == [(t, False) for t in problems]
    assert (first.content, first.finish_reason) == (content or "", finish)


def test_content_that_is_a_number_fails_in_a_sentence(serve):
    server = serve(http(body=sse(chunk({"content": "A"}), chunk({"content": 42}, "stop"))))
    events = reply(server)
    assert text(events) == "A" and end(events) == (
        f"The server at {server.url} sent a chunk of a shape no OpenAI API sends (its content is "
        "a number (42), not text); the reply is partial.")


@pytest.mark.parametrize("usage, completion_tokens", [
    ({"prompt_tokens": "12", "completion_tokens": "three"}, 2),  # counted here
    ([12, 3], 2),
    ({"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": [5]}, 3),
])
def test_usage_the_server_garbled_leaves_the_reply_whole(serve, usage, completion_tokens):
    events = reply(serve(http(body=sse(chunk({"content": "A"}), chunk({"content": "B"}, "stop"),
                                       {"choices": [], "usage": usage}))))
    assert (text(events), end(events)) == ("AB", "stop")
    (counted,) = [e for e in events if type(e) is Usage]
    assert counted.completion_tokens == completion_tokens


def test_a_notebook_turn_whose_only_call_does_not_read_ends_as_a_reply(serve):
    """An API client is told "tool_calls" (it gets the call, as sent); the notebook runs
    nothing, so its round ends as a reply does, with the problem shown."""
    stream = sse(chunk({"tool_calls": [{"index": 0, "id": "c0", "function": {
        "name": "get_weather", "arguments": '{"city": Paris}'}}]}), chunk({}, "stop"))
    with RemoteEngine(serve(http(body=stream)).url, timeout=5) as engine:
        assert engine.chat_completions(BODY)["choices"][0]["finish_reason"] == "tool_calls"
    turn, ran = weather_turn(serve(http(body=stream)).url)
    (first,) = turn.rounds
    assert (ran, first.tool_calls, first.finish_reason) == ([], [], "stop")
    assert [p["text"] for p in first.problems] == ['{"city": Paris}']


def test_a_local_model_still_refuses_tool_arguments_that_are_not_json(tiny_engine):
    from mlx_notebook.engine import EngineRequestError

    call = {"id": "c0", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Par'}}
    body = {"messages": [{"role": "user", "content": "Hi"},
                         {"role": "assistant", "content": None, "tool_calls": [call]}]}
    with pytest.raises(EngineRequestError, match=r"'messages\[1\]\.tool_calls\[0\]\.function"
                                                 r"\.arguments' is not valid JSON"):
        tiny_engine.admit(body)


def test_a_tool_call_without_a_name_is_shown_as_a_problem_not_run(serve):
    server = serve(http(body=sse(
        chunk({"tool_calls": [{"index": 0, "function": "get_weather"}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"}'}}]},
              "tool_calls"))))
    events = reply(server)
    assert [e for e in events if type(e) is ToolCall] == []
    (problem,) = [e for e in events if type(e) is ParseProblem]
    assert problem.message == "the server sent a tool call with no function name"
    assert problem.text == '{"city": "Paris"}'
    # Nothing a client could call: no tool_calls entry, so no "tool_calls" to look for one by.
    assert end(events) == "stop"
    with RemoteEngine(server.url, timeout=5) as engine:
        (choice,) = engine.chat_completions(BODY)["choices"]
    assert choice == {"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": ""}}


def test_a_finish_reason_that_is_not_text_still_finishes(serve):
    events = reply(serve(http(body=sse(chunk({"content": "A"}, 1)))))
    assert (text(events), end(events)) == ("A", "stop")


# -- bodies that are no event stream -----------------------------------------------------------
def test_a_body_that_is_no_event_stream_is_read_or_quoted(serve):
    whole = json.dumps({"choices": [{"index": 0, "message": {"content": "Whole."},
                                     "finish_reason": "stop"}]}).encode()
    for content_type in ("text/plain", None):  # a reply sent whole, labelled wrong or not at all
        events = reply(serve(http(body=whole, content_type=content_type)))
        assert (text(events), end(events)) == ("Whole.", "stop")
    server = serve(http(body=b'{"error": {"message": "model not loaded"}}'))
    assert end(reply(server)) == f"The server at {server.url}: model not loaded."
    server = serve(http(body=b"Internal error: the model crashed\n"))
    assert end(reply(server)) == (
        f"The server at {server.url} answered with text that is no OpenAI event stream "
        "('Internal error: the model crashed'); check the URL (a proxy or a login page?).")


def test_json_nested_past_the_parsers_depth_is_one_sentence(serve):
    server = serve(http(body=b"data: " + DEEP + b"\n\n"))
    assert end(reply(server)).startswith(f"The server at {server.url} sent a chunk that is not "
                                         "a JSON object ('[[[[")
    for answer, said in ((http(body=DEEP, content_type="application/json"),
                          "answered /chat/completions with application/json ('[[[["),
                         (http(500, DEEP, "application/json"),
                          "answered HTTP 500 to /chat/completions ('[[[[")):
        server = serve(answer)
        with RemoteEngine(server.url) as engine, pytest.raises(EngineError) as caught:
            engine.submit(BODY)
        assert str(caught.value).startswith(f"The server at {server.url} {said}")
    # A model list nested so deep is no list: the server's own model is asked for.
    with RemoteEngine(serve(http(body=b""), models=http(body=DEEP)).url) as engine:
        assert engine.model == "default_model"


# -- errors as one sentence -----------------------------------------------------------------------
def test_a_401_without_a_key_asks_for_one_and_a_403_says_why(serve):
    with pytest.raises(EngineError) as caught:
        RemoteEngine(serve(http(), models=http(401)).url)
    assert str(caught.value).endswith("needs an API key (HTTP 401); pass it with --api-key.")
    server = serve(http(401, b'{"error": {"message": "Missing bearer token"}}'))
    with RemoteEngine(server.url) as engine, pytest.raises(EngineError) as caught:
        engine.submit(BODY)
    assert str(caught.value) == (f"The server at {server.url} needs an API key (HTTP 401); pass "
                                 "it with --api-key.")
    # Our own listener's 403 for a host name is no wrong key; nor is a model the key may not use.
    server = serve(http(403, b'{"error": {"message": "This listener serves without a token, so '
                             b'only on loopback names."}}', "application/json"))
    with RemoteEngine(server.url) as engine, pytest.raises(EngineError) as caught:
        engine.submit(BODY)
    assert str(caught.value) == (f"The server at {server.url} (HTTP 403): This listener serves "
                                 "without a token, so only on loopback names.")


def test_a_model_list_with_stray_entries_still_names_the_model(serve):
    models = http(body=b'{"data": ["junk", 7, {"id": 3}, {"id": "qwen3-8b"}]}',
                  content_type="application/json")
    with RemoteEngine(serve(http(), models=models).url) as engine:
        assert (engine.model, engine.family) == ("qwen3-8b", "qwen3")


# -- connections closed, engine still working ----------------------------------------------------
def test_an_error_chunk_closes_a_connection_the_server_holds_open(serve):
    server = serve(held_open(sse(chunk({"content": "A"}), {"error": {"message": "overloaded"}},
                                 done=False)))
    with RemoteEngine(server.url, timeout=5) as engine:  # (closing the engine would close it)
        assert end(list(engine.submit(BODY).events())) == f"The server at {server.url}: overloaded."
        assert server.closed_by_client.wait(3)


@pytest.mark.parametrize("timeout", [30, 0.2])  # (the read timeout first, then the wait)
def test_a_finished_reply_on_a_connection_held_open_ends_as_finished(serve, monkeypatch, timeout):
    monkeypatch.setattr(remote_engine_module, "_AFTER_FINISH_SECONDS", 0.5)
    server = serve(held_open(sse(chunk({"content": "Done."}, "length"), done=False)))
    with RemoteEngine(server.url, timeout=timeout) as engine:
        started = time.monotonic()
        events = list(engine.submit(BODY).events())
        assert (text(events), end(events)) == ("Done.", "length")
        assert time.monotonic() - started < 5  # not the 30 s read timeout
        assert server.closed_by_client.wait(3)


def test_stop_ends_a_drip_of_keep_alives_and_closes_it(serve):
    def drip(sock):
        sock.sendall(ENDLESS)
        while True:
            sock.sendall(b": keepalive\n\n")
            time.sleep(0.05)

    server = serve(drip)
    with RemoteEngine(server.url, timeout=5) as engine:
        handle = engine.submit(BODY)
        threading.Timer(0.3, handle.cancel).start()
        started = time.monotonic()
        assert end(list(handle.events())) == "cancelled"
        assert time.monotonic() - started < 2
    assert server.closed_by_client.wait(3)


@pytest.mark.parametrize("answer, said", [
    (http(500, b"<html><h1>Internal Server Error</h1></html>", "text/html"),
     "answered HTTP 500 to /chat/completions ('Internal Server Error')."),
    (http(502, b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad "
               b"Gateway</h1></center><hr><center>nginx</center></body></html>", "text/html"),
     "answered HTTP 502 to /chat/completions ('502 Bad Gateway 502 Bad Gateway nginx')."),
    (http(404, b"Not Found", "text/plain"), "has no /chat/completions (HTTP 404)"),
    (http(body=b"", content_type="application/json"), "with application/json (''), not an"),
    (http(body=b"not gzip", extra="Content-Encoding: gzip\r\n"), "broke mid-reply (Error -3"),
    (http(body=sse(chunk({"content": "A"}), done=False) + b'data: {"choices": [{"ind'),
     "sent a chunk that is not a JSON object"),
    (held_open(b""), "stopped sending mid-reply (timed out)"),
], ids=["html 500", "nginx 502", "bare 404", "empty json", "bad gzip", "cut mid-json",
        "silent"])
def test_each_hostile_answer_is_one_sentence_and_the_next_reply_is_whole(serve, answer, said):
    good = http(body=gzip.compress(sse(chunk({"content": "Fine."}, "stop"))),
                extra="Content-Encoding: gzip\r\n")
    server, before = serve(answer, good), reader_threads()
    with RemoteEngine(server.url, timeout=0.5) as engine:
        try:
            message = end(list(engine.submit(BODY).events()))
        except EngineError as exc:
            message = str(exc)
        assert said in message and message.startswith("The ") and "\n" not in message
        events = list(engine.submit(BODY).events())
        assert (text(events), end(events)) == ("Fine.", "stop")
    deadline = time.monotonic() + 3
    while reader_threads() - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert reader_threads() - before == set()  # no reader left on a connection
