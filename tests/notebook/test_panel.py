"""The engine panel's kernel side: ``%mlx status --json`` and the ``mlx_notebook.panel`` comm.

The comm is driven the way JupyterLab drives it (open, then ``refresh``/``stop``/
``clear_cache`` messages), through a comm object that records what the kernel sends.
"""

from __future__ import annotations

import json
import threading

from IPython.utils.capture import capture_output

from conftest import magics_of
from mlx_notebook.panel import COMM_TARGET


class RecordingComm:
    """The front end's end of one panel comm: keeps every snapshot, signals each one."""

    def __init__(self, wanted=lambda snapshot: True):
        self.snapshots: list[dict] = []
        self.wanted = wanted
        self.arrived = threading.Event()
        self.handlers = {}

    def send(self, data):
        assert data["kind"] == "snapshot"
        self.snapshots.append(data["snapshot"])
        if self.wanted(data["snapshot"]):
            self.arrived.set()

    def on_msg(self, callback):
        self.handlers["msg"] = callback

    def on_close(self, callback):
        self.handlers["close"] = callback

    def message(self, **data):
        self.handlers["msg"]({"content": {"data": data}})
        return self.snapshots[-1]


def status_json(shell, capsys) -> dict:
    capsys.readouterr()
    result = shell.run_cell("%mlx status --json")
    assert result.success, result.error_in_exec
    return json.loads(capsys.readouterr().out)


def test_status_json_without_a_model_says_no_engine(bare_shell, capsys):
    assert status_json(bare_shell, capsys) == {"version": 1, "engine": None, "live": [], "recent": []}


def test_panel_subcommand_needs_jupyterlab(bare_shell):
    result = bare_shell.run_cell("%mlx panel")
    assert str(result.error_in_exec) == "%mlx panel: the engine panel is part of JupyterLab; use %mlx status here."


def test_the_comm_target_is_documented_under_its_name():
    import mlx_notebook.panel as panel

    assert COMM_TARGET == "mlx_notebook.panel" and COMM_TARGET in panel.__doc__


def test_status_json_shows_the_model_the_cache_entry_and_the_recent_request(reasoner_shell, capsys):
    result = reasoner_shell.run_cell("%%chat --session panel-recent --no-stream\nWhat is 17 + 25?")
    assert result.success, result.error_in_exec
    turn = result.result
    state = status_json(reasoner_shell, capsys)
    engine = state["engine"]
    assert engine["model"]["name"] == turn.model and engine["model"]["name"].startswith("tiny-reasoner") and engine["model"]["parameters"] > 0
    assert engine["health"] == {"alive": True, "error": None}
    assert engine["cache"]["entries"] >= 1 and engine["cache"]["bytes"] > 0
    filed = [p for p in engine["cache"]["prompts"] if p["session"] == "panel-recent"]
    assert len(filed) == 1 and filed[0]["bytes"] > 0 and filed[0]["age_seconds"] >= 0, engine["cache"]["prompts"]
    assert filed[0]["tokens"] in (turn.usage.prompt_tokens + turn.usage.completion_tokens - 1,
                                  turn.usage.prompt_tokens + turn.usage.completion_tokens)
    recent = state["recent"][0]
    assert (recent["session"], recent["prompt_tokens"], recent["completion_tokens"], recent["finish_reason"]) == (
        "panel-recent", turn.usage.prompt_tokens, turn.usage.completion_tokens, "stop")
    assert recent["request_id"] == turn.rounds[-1].request_id
    assert recent["time_to_first_token"] > 0
    assert state["live"] == []


def test_clear_cache_over_the_comm_empties_the_prompt_cache(reasoner_shell):
    assert reasoner_shell.run_cell("%%chat --session panel-cache --no-stream\nWhat is 17 + 25?").success
    comm = RecordingComm()
    magics_of(reasoner_shell).panel._open(comm, {})
    assert comm.snapshots[0]["engine"]["cache"]["entries"] >= 1
    after = comm.message(kind="clear_cache")
    assert (after["engine"]["cache"]["entries"], after["engine"]["cache"]["bytes"]) == (0, 0)
    # Another front end's message, not an object: answered with a snapshot, nothing raised.
    comm.handlers["msg"]({"content": {"data": ["clear_cache"]}})
    comm.handlers["msg"]({"content": None})
    assert len(comm.snapshots) == 4
    comm.handlers["close"]({})
    assert comm not in magics_of(reasoner_shell).panel.comms


def test_a_streaming_request_is_listed_live_and_stop_over_the_comm_ends_it(smollm2_shell):
    panel = magics_of(smollm2_shell).panel
    comm = RecordingComm(wanted=lambda snapshot: any(row["tokens"] >= 3 for row in snapshot["live"]))
    panel._open(comm, {})
    results = []
    cell = threading.Thread(target=lambda: results.append(smollm2_shell.run_cell(
        "%%chat --session panel-stop --no-stream --max-tokens 2000 --temperature 1.0 --seed 1\n"
        "Write a very long story about a lighthouse keeper.")))
    try:
        with capture_output():
            cell.start()
            assert comm.arrived.wait(120), comm.snapshots[-3:]
            live = next(row for row in comm.snapshots[-1]["live"] if row["tokens"] >= 3)
            assert live["session"] == "panel-stop" and live["request_id"].startswith("chatcmpl-")
            comm.message(kind="stop", id=live["id"])
            cell.join(2.0)
        assert not cell.is_alive(), "Stop did not end the request within 2 s"
    finally:
        panel.stop()
        cell.join()
        comm.handlers["close"]({})
    turn = results[0].result
    assert turn.interrupted and turn.usage.completion_tokens < 2000
    last = panel.snapshot()
    assert last["live"] == [] and last["recent"][0]["finish_reason"] == "stopped"
