"""``%mlx serve`` in a real IPython shell: HTTP clients and ``%%chat`` share the engine."""

from __future__ import annotations

import threading

import httpx
import openai
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def shell(tiny_reasoner_path):
    shell = InteractiveShell()
    shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "mlx_notebook")
    assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
    yield shell
    shell.run_line_magic("unload_ext", "mlx_notebook")


def _magics(shell):
    return shell.magics_manager.registry["MlxMagics"]


def _run(shell, cell: str) -> str:
    with capture_output() as out:
        result = shell.run_cell(cell)
    assert result.success, result.error_in_exec or result.error_before_exec
    return out.stdout + "".join(str(o.data.get("text/plain", "")) for o in out.outputs)


def test_mlx_serve_shows_the_url_and_token_and_serves_while_chat_cells_run(
        shell, script_body, scripts, wait_until, engine_thread_held):
    shown = _run(shell, "%mlx serve --port 0")
    listener = _magics(shell).listener
    assert f"Serving {_magics(shell).engine.model_info.name} at {listener.url}" in shown
    assert f"Token, shown only now: {listener.token}" in shown
    client = openai.OpenAI(base_url=listener.url, api_key=listener.token, max_retries=0)

    # An HTTP client and a %%chat cell at the same time, each gets its scripted reply.
    body = script_body("thinking_disabled")
    over_http: list = []
    engine = _magics(shell).engine
    with engine_thread_held(engine):
        asker = threading.Thread(target=lambda: over_http.append(client.chat.completions.create(
            model="default_model", messages=body["messages"],
            extra_body={"chat_template_kwargs": body["chat_template_kwargs"]})))
        asker.start()
        assert wait_until(lambda: len(listener.served()) == 1)
        status = _run(shell, "%mlx status")
        served = listener.served()[0]
        assert f"{served.request_id} from 127.0.0.1:" in status
        assert f"serving: {listener.url}, 1 HTTP request:" in status
    cell = scripts["reason_then_answer"]["messages"][-1]["content"]
    _run(shell, f"%%chat --session served --no-stream\n{cell}")
    asker.join(60)
    assert over_http[0].choices[0].message.content == scripts["thinking_disabled"]["reply"]
    turn = shell.user_ns["_"]
    assert turn.content == scripts["reason_then_answer"]["reply"].split("</think>")[-1]

    assert "already serving" in _error(shell, "%mlx serve")
    assert _run(shell, "%mlx serve --stop").strip() == f"Stopped serving at {listener.url}."
    with pytest.raises(httpx.ConnectError):
        httpx.get(listener.url.removesuffix("/v1") + "/health")
    assert "nothing is being served" in _error(shell, "%mlx serve --stop")


def test_mlx_serve_refuses_a_public_host_without_a_token(shell):
    assert "without a token" in _error(shell, "%mlx serve --host 0.0.0.0 --token ''")
    assert _magics(shell).listener is None


def test_mlx_serve_allows_the_origins_it_is_given_and_the_shell_command_too(shell):
    _run(shell, "%mlx serve --port 0 --allowed-origins 'http://localhost:3000, https://app.example'")
    listener = _magics(shell).listener
    try:
        assert listener.allowed_origins == ("http://localhost:3000", "https://app.example")
        r = httpx.options(f"{listener.url}/chat/completions",
                          headers={"Origin": "https://app.example"})
        assert r.status_code == 204 and r.headers["access-control-allow-origin"] == "https://app.example"
    finally:
        _run(shell, "%mlx serve --stop")
    from mlx_notebook.engine import Listener
    from mlx_notebook.engine.cli import _parser

    args = _parser().parse_args(["serve", "--allowed-origins", "http://a.example,*"])
    assert Listener(None, allowed_origins=args.allowed_origins).allowed_origins == (
        "http://a.example", "*")


@pytest.mark.parametrize("origin", ["localhost:3000", "http://localhost:3000/app", "ftp://x",
                                    "http://", "http://a b"])
def test_an_origin_no_browser_sends_is_refused_by_name(shell, origin):
    error = _error(shell, f"%mlx serve --port 0 --allowed-origins 'https://ok.example,{origin}'")
    assert f"{origin!r} is not a web origin" in error and "scheme://host[:port]" in error
    assert _magics(shell).listener is None


@pytest.mark.parametrize("options, message", [
    ({"token": 5}, "The token must be text, not int."),
    ({"host": 5}, "The host must be text, not int."),
    ({"allowed_origins": 5}, "allowed_origins must be web origins: a list of texts, or one "
                             "comma-separated text."),
])
def test_listener_options_of_the_wrong_type_are_one_sentence(options, message):
    from mlx_notebook.engine import EngineError, Listener

    with pytest.raises(EngineError) as caught:
        Listener(None, **options)
    assert str(caught.value) == message


def test_the_serve_command_refuses_bad_options_before_loading_a_model(capsys):
    # The model does not exist: had it been looked for first, its error would show instead.
    from mlx_notebook.engine.cli import main

    assert main(["serve", "no-such/model-anywhere", "--allowed-origins", "localhost:3000"]) == 1
    assert "'localhost:3000' is not a web origin" in capsys.readouterr().err
    assert main(["serve", "no-such/model-anywhere", "--port", "70000"]) == 1
    assert "from 0 to 65535" in capsys.readouterr().err


def _error(shell, cell: str) -> str:
    with capture_output() as out:
        result = shell.run_cell(cell)
    assert not result.success
    return str(result.error_in_exec) + out.stderr + out.stdout


def test_a_reload_keeps_serving_the_new_model_and_unload_ext_stops_it(tiny_reasoner_path):
    shell = InteractiveShell()
    shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "mlx_notebook")
    try:
        assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
        _run(shell, "%mlx serve --port 0")
        listener = _magics(shell).listener
        first = _magics(shell).engine
        assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
        assert listener.engine is _magics(shell).engine is not first
        health = listener.url.removesuffix("/v1") + "/health"
        assert httpx.get(health).json() == {"status": "ok"}
    finally:
        shell.run_line_magic("unload_ext", "mlx_notebook")
    with pytest.raises(httpx.ConnectError):
        httpx.get(health)
