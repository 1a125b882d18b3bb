"""``%load_model --remote``: ``%%chat`` against our own listener and against ``mlx_lm.server``.

The tiny reasoner's scripted replies come back through HTTP with their reasoning and tool
calls, the tool loop runs a notebook function, and failures read as one sentence.
"""

from __future__ import annotations

import random
import socket
import time

import numpy
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from mlx_notebook.engine import EngineError, RemoteEngine
from mlx_notebook.engine.parity import _Server as MlxLmServer
from mlx_notebook.engine.remote import guess_family

pytestmark = pytest.mark.model

WEATHER_TOOL = '''
def get_weather(city: str):
    """{description}"""
    return {{"city": city, "temperature_c": 18, "condition": "sunny"}}
'''


@pytest.fixture(scope="module")
def shell(scripts):
    shell = InteractiveShell()
    shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "mlx_notebook")
    description = scripts["single_tool_call"]["tools"][0]["function"]["description"]
    shell.run_cell(WEATHER_TOOL.format(description=description))
    yield shell
    shell.run_line_magic("unload_ext", "mlx_notebook")


@pytest.fixture(scope="module")
def mlx_lm_server(tiny_reasoner_path):
    server = MlxLmServer(str(tiny_reasoner_path))
    yield server
    server.close()


def _run(shell, cell: str) -> str:
    with capture_output() as out:
        result = shell.run_cell(cell)
    assert result.success, result.error_in_exec or result.error_before_exec
    return out.stdout + "".join(str(o.data.get("text/plain", "")) for o in out.outputs)


def _error(shell, cell: str) -> str:
    with capture_output():
        result = shell.run_cell(cell)
    assert not result.success
    return str(result.error_in_exec or result.error_before_exec)


def _answer(reply: str) -> str:
    return reply.split("</think>")[-1].strip()


def _chat_scripts_through(shell, scripts) -> None:
    """Reasoning, an answer, a tool call run by the tool loop, and the history, as locally."""
    question = scripts["reason_then_answer"]["messages"][-1]["content"]
    _run(shell, f"%%chat --new --session remote --tools none\n{question}")
    turn = shell.user_ns["_"]
    expected = scripts["reason_then_answer"]["reply"]
    assert turn.text == _answer(expected)
    assert turn.reasoning.strip() == expected.split("<think>")[1].split("</think>")[0].strip()
    assert turn.usage.completion_tokens > 0 and turn.usage.prompt_tokens > 0

    question = scripts["single_tool_call"]["messages"][-1]["content"]
    shown = _run(shell, f"%%chat --new --session weather --tools get_weather\n{question}")
    turn = shell.user_ns["_"]
    (call,) = turn.tool_calls
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
    assert '[tool call] get_weather({"city": "Paris"})' in shown
    assert [r.finish_reason for r in turn.rounds] == ["tool_calls", "stop"]
    assert turn.text == _answer(scripts["answer_from_tool_result"]["reply"])
    assert "It is sunny in Paris" in _run(shell, "%mlx history weather")


def test_chat_against_our_own_listener(shell, tiny_listener, scripts):
    shown = _run(shell, f"%load_model --remote {tiny_listener.url} --api-key {tiny_listener.token}")
    assert f"at {tiny_listener.url}" in shown and "as qwen3" in shown
    _chat_scripts_through(shell, scripts)
    # The listener reports the prompt cache: a follow-up turn reads cached tokens.
    question = scripts["follow_up_turn"]["messages"][-1]["content"]
    first = scripts["reason_then_answer"]["messages"][-1]["content"]
    _run(shell, f"%%chat --new --session cached --tools none\n{first}")
    _run(shell, f"%%chat --session cached --tools none\n{question}")
    assert shell.user_ns["_"].usage.cached_tokens > 0


@pytest.mark.slow
def test_chat_against_mlx_lm_server(shell, mlx_lm_server, scripts):
    shown = _run(shell, f"%load_model --remote {mlx_lm_server.url} --family qwen3")
    assert "as qwen3, given" in shown
    _chat_scripts_through(shell, scripts)


def test_stop_closes_the_stream_and_frees_the_served_engine(
        tiny_listener, tiny_engine, script_body, wait_until):
    with RemoteEngine(tiny_listener.url, api_key=tiny_listener.token) as remote:
        handle = remote.submit(script_body("long_story"))
        events = handle.events()
        next(e for e in events if type(e).__name__ == "ContentDelta")
        handle.cancel()
        rest = list(events)
        assert type(rest[-1]).__name__ == "Finished" and rest[-1].reason == "cancelled"
        assert remote.active_requests == 0
        assert wait_until(lambda: tiny_engine.active_requests == 0)
        assert wait_until(lambda: tiny_listener.served() == ())


def test_a_stream_dropped_half_way_frees_the_served_engine(
        tiny_listener, tiny_engine, script_body, wait_until):
    """Only ``handle.cancel()`` reached the server: a chunk iterator closed after five
    chunks left it generating the rest for nobody."""
    with RemoteEngine(tiny_listener.url, api_key=tiny_listener.token) as remote:
        chunks = remote.chat_completions({**script_body("long_story"), "stream": True})
        for _ in range(5):
            next(chunks)
        chunks.close()
        assert wait_until(lambda: tiny_engine.active_requests == 0)
        assert wait_until(lambda: remote.active_requests == 0)


def test_a_list_of_prompts_is_one_choice_each_through_a_server(tiny_listener, tiny_engine):
    body = {"prompt": ["Hello", "Bye"], "max_tokens": 2, "temperature": 0}
    with RemoteEngine(tiny_listener.url, api_key=tiny_listener.token) as remote:
        remote_choices = remote.completions(body)["choices"]
    local = tiny_engine.completions(body)["choices"]
    assert [c["index"] for c in remote_choices] == [0, 1]
    assert [c["text"] for c in remote_choices] == [c["text"] for c in local]


def test_a_body_naming_another_model_is_refused_as_locally(tiny_listener, script_body):
    with RemoteEngine(tiny_listener.url, api_key=tiny_listener.token) as remote:
        with pytest.raises(EngineError) as caught:
            remote.chat_completions({**script_body("reason_then_answer"), "model": "nope"})
        assert str(caught.value) == (f"The model 'nope' is not loaded in this engine; use "
                                     f"{remote.model!r} or omit 'model'.")
        named = remote.chat_completions({**script_body("reason_then_answer"),
                                         "model": remote.model})
        assert named["model"] == remote.model and named["choices"][0]["message"]["content"]


def test_a_remote_reply_read_to_its_end_is_not_read_again(tiny_listener, script_body):
    """Read a second time, a remote reply waited for ever on its emptied queue."""
    with RemoteEngine(tiny_listener.url, api_key=tiny_listener.token) as remote:
        handle = remote.submit(script_body("reason_then_answer"))
        events = handle.events()
        started = next(events)  # an iterator dropped half-way is taken up, not restarted
        rest = list(handle.events())
        assert type(started).__name__ == "Started" and "Started" not in {
            type(e).__name__ for e in rest}
        assert type(rest[-1]).__name__ == "Finished"
        with pytest.raises(EngineError) as caught:
            list(handle.events())
        assert str(caught.value).endswith("was read to its end already; keep the events the "
                                          "first read gave (events = list(handle.events())) "
                                          "to go over them again.")


# -- failures as one sentence ---------------------------------------------------------------------
def test_a_refused_connection_is_one_sentence(shell):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    message = _error(shell, f"%load_model --remote http://127.0.0.1:{port}")
    assert message == (f"%load_model: cannot connect to http://127.0.0.1:{port}/v1 (connection "
                       "refused); check the URL and that the server is running.")


def test_a_server_that_never_answers_times_out_in_one_sentence():
    with socket.socket() as s:  # listens, never accepts: the request waits for an answer
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(EngineError) as caught:
            RemoteEngine(f"http://127.0.0.1:{port}/v1", timeout=0.5)
    assert str(caught.value) == (f"The server at http://127.0.0.1:{port}/v1 did not answer "
                                 "within 0.5 s; check that it is running and not overloaded.")


def test_load_model_takes_the_timeout_to_wait(shell):
    with socket.socket() as s:  # listens, never accepts
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        port = s.getsockname()[1]
        started = time.monotonic()
        message = _error(shell, f"%load_model --remote http://127.0.0.1:{port} --timeout 0.5")
        assert message == (f"%load_model: the server at http://127.0.0.1:{port}/v1 did not answer "
                           "within 0.5 s; check that it is running and not overloaded.")
        assert time.monotonic() - started < 5
        for bad in ("0", "-1", "nan", "inf", "soon"):
            assert _error(shell, f"%load_model --remote http://127.0.0.1:{port} --timeout {bad}") == (
                f"%load_model: argument --timeout: must be a number of seconds above 0, not "
                f"'{bad}'; see %load_model? for the options.")
        for bad, kind in (("5", TypeError), (0, ValueError), (float("nan"), ValueError)):
            with pytest.raises(kind, match="timeout must be a number of seconds"):
                RemoteEngine(f"http://127.0.0.1:{port}/v1", timeout=bad)
        with pytest.raises(EngineError, match="did not answer within 0.5 s"):
            RemoteEngine(f"http://127.0.0.1:{port}/v1", timeout=numpy.float32(0.5))


def test_a_wrong_key_and_an_unknown_model_are_one_sentence_each(shell, tiny_listener, tiny_engine):
    url = tiny_listener.url
    assert _error(shell, f"%load_model --remote {url} --api-key wrong") == (
        f"%load_model: the server at {url} refused the API key (HTTP 401); pass the right one "
        "with --api-key.")
    assert _error(shell, f"%load_model --remote {url} --api-key {tiny_listener.token} "
                         "--model gpt-4") == (
        f"%load_model: the server at {url} has no model 'gpt-4' (HTTP 404); it serves "
        f"{tiny_engine.model_info.name}.")


def test_a_key_that_begins_with_a_dash_is_a_key(shell, tiny_listener):
    # token_urlsafe draws such a key one time in 64: argparse took it for an option.
    url = tiny_listener.url
    for line in (f"--api-key -Wx3_{tiny_listener.token}", f"--api-key=-Wx3_{tiny_listener.token}"):
        assert _error(shell, f"%load_model --remote {url} {line}") == (
            f"%load_model: the server at {url} refused the API key (HTTP 401); pass the right "
            "one with --api-key.")
    # A key left out before the next option is still said to be missing.
    assert _error(shell, f"%load_model --remote {url} --api-key --model gpt-4") == (
        "%load_model: argument --api-key: expected one argument; see %load_model? for the "
        "options.")


def test_what_needs_a_local_model_says_so(shell, tiny_listener):
    _run(shell, f"%load_model --remote {tiny_listener.url} --api-key {tiny_listener.token}")
    _run(shell, "%%chat --new --session local-only --tools none\nWhat is 17 + 25?")
    message = _error(shell, "%mlx render local-only")
    assert message == (f"%mlx render: inspect's tokenize and cache-lookup stages run on the "
                       f"server at {tiny_listener.url}, out of reach; load the model locally to "
                       "inspect them.")
    assert "remote" in _error(shell, "%mlx trace _")
    # The kernel's own MLX memory says nothing about the server's.
    status = _run(shell, "%mlx status")
    assert "memory: the server's own (remote)" in status and "MLX active" not in status


@pytest.mark.parametrize("name, family", [
    ("Qwen3-8B-4bit", "qwen3"), ("mlx-community/DeepSeek-R1-Distill-Qwen-7B", "deepseek_r1"),
    ("Qwen3-Coder-30B-A3B", "qwen3_coder"), ("gpt-oss-20b", None),
])
def test_the_family_is_guessed_from_the_model_name(name, family):
    assert guess_family(name) == family


# -- mlx's own distributed serving: the model sharded over two ranks -------------------------------
@pytest.fixture(scope="module")
def two_rank_server(tiny_reasoner_path, tmp_path_factory):
    """``mlx.launch --backend ring -n 2`` running ``mlx_lm.server``: the tiny reasoner's two
    attention heads split over two processes on loopback, rank 0 answering HTTP."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import httpx

    def free_ports(count: int, taken=()) -> int:
        """The first of ``count`` consecutive ports free on loopback (the ring's two ranks
        listen on a port each, from ``--starting-port`` up). Drawn below Linux's ephemeral
        range (32768 and up), where another process's outgoing connection cannot take one
        between this check and the ranks' bind (seen once: "Couldn't bind socket")."""
        rng = random.Random()
        while True:
            first = rng.randrange(20000, 32000)
            if any(p in taken for p in range(first, first + count)):
                continue
            held = []
            try:
                for p in range(first, first + count):
                    held.append(socket.socket())
                    held[-1].bind(("127.0.0.1", p))
                return first
            except OSError:
                continue
            finally:
                for sock in held:
                    sock.close()

    bin_dir = Path(sys.executable).parent
    ring = free_ports(2)
    port = free_ports(1, taken=(ring, ring + 1))
    log = tmp_path_factory.mktemp("ring") / "launch.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(bin_dir / "mlx.launch"), "--backend", "ring", "-n", "2", "--verbose",
             "--starting-port", str(ring), str(bin_dir / "mlx_lm.server"),
             "--model", str(tiny_reasoner_path), "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("the two-rank mlx_lm.server never became healthy:\n" + log.read_text()[-3000:])
        yield url, log
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # mlx.launch and the two ranks it started
        except ProcessLookupError:  # all of them had already exited (a rank failed to start)
            pass
        proc.wait(30)


@pytest.mark.slow
def test_chat_against_a_model_sharded_over_two_ranks(shell, two_rank_server, scripts):
    url, log = two_rank_server
    shown = _run(shell, f"%load_model --remote {url}/v1 --family qwen3")
    assert "as qwen3, given" in shown
    _chat_scripts_through(shell, scripts)
    text = log.read_text()
    assert "Rank 0" in text and "Rank 1" in text  # two processes took part
