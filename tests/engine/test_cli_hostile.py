"""The ``mlx-notebook`` command line as a newcomer types it: options after the command, a reply
length of zero, a folder or a GGUF file under another name to import, a port in use, a host
that is not this machine's, Ctrl-C while a model loads. Each answer is one line, at once."""

from __future__ import annotations

import socket
import subprocess
import sys

import mlx.core as mx
import pytest

from mlx_notebook.engine import blas
from mlx_notebook.engine.cli import main as cli_main


@pytest.fixture
def no_restart(monkeypatch):
    """demo and serve restart themselves with a faster BLAS: not the test process."""
    monkeypatch.setattr(blas, "reexec_with_fast_blas", lambda: None)


@pytest.mark.model
def test_quiet_is_taken_after_the_command_too(tiny_reasoner_path, capsys):
    assert cli_main(["fetch", str(tiny_reasoner_path), "-q"]) == 0
    assert capsys.readouterr().out.strip() == str(tiny_reasoner_path)


def test_a_reply_length_below_one_is_refused_before_any_model_loads(capsys):
    with pytest.raises(SystemExit) as exited:
        cli_main(["demo", "--max-tokens", "0", "no-such-model"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().endswith(
        "mlx-notebook demo: error: argument --max-tokens: must be a whole number of at least 1, not '0'")


def test_importing_a_folder_says_it_is_a_folder(tmp_path, capsys):
    assert cli_main(["import", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"mlx-notebook import: {tmp_path} is a directory, not a GGUF file: give the .gguf file to import.")


def test_a_gguf_file_named_otherwise_is_read_as_gguf(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLX_NOTEBOOK_CACHE", str(tmp_path / "store"))
    gguf = tmp_path / "falcon.gguf"
    mx.save_gguf(str(gguf), {"token_embd.weight": mx.zeros((4, 4))}, {"general.architecture": "falcon"})
    renamed = gguf.rename(tmp_path / "falcon.bin")
    # Was "the GGUF file is corrupt or truncated ([load] Could not infer file format from extension)".
    assert cli_main(["-q", "import", str(renamed), str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err.strip() == ("mlx-notebook import: Cannot import falcon.bin: GGUF "
                                               "architecture 'falcon' is not supported (supported: llama).")
    assert not (tmp_path / "out").exists()


def test_a_port_in_use_or_a_host_not_of_this_machine_is_refused_before_the_model_loads():
    # The spec names no model: before, the load failed first ("Unknown model"), and with a
    # real model the port in use was found only once it had loaded, minutes later for a big one.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for options, message in [
            (["--port", str(port)], f"Cannot listen on 127.0.0.1:{port} (Address already in use); "
                                    "pick another port with --port."),
            (["--host", "192.0.2.1", "--port", "0", "--token", "t0ken"],  # TEST-NET-1: nobody's
             "Cannot listen on 192.0.2.1 (Cannot assign requested address): give --host an "
             "address of this machine, e.g. 127.0.0.1."),
        ]:
            done = subprocess.run([sys.executable, "-m", "mlx_notebook.engine.cli", "-q", "serve",
                                   "no-such-model", *options],
                                  capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
            assert (done.returncode, done.stdout) == (1, "")
            assert done.stderr.strip() == f"mlx-notebook serve: {message}"


@pytest.mark.parametrize("command", ["demo", "serve"])
def test_ctrl_c_while_a_model_loads_is_one_line_and_status_130(monkeypatch, no_restart, capsys, command):
    import mlx_notebook.engine as engine

    def interrupted_load(*args, **kwargs):
        raise KeyboardInterrupt  # what Ctrl-C raises in the thread waiting for the load

    monkeypatch.setattr(engine, "Engine", interrupted_load)
    assert cli_main([command, "tiny-reasoner", *(["--port", "0"] if command == "serve" else [])]) == 130
    assert capsys.readouterr().err == f"mlx-notebook {command}: interrupted.\n"


@pytest.mark.model
def test_a_demo_cut_short_while_reasoning_shows_its_reasoning(tiny_reasoner_path, no_restart, capsys):
    assert cli_main(["-q", "demo", str(tiny_reasoner_path), "--max-tokens", "4",
                     "--prompt", "What is 17 + 25?"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "> What is 17 + 25?" and out[1].startswith("(reasoning) ") and out[1] != "(reasoning) "


def test_a_listener_started_from_python_on_a_foreign_host_says_so():
    from mlx_notebook.engine import EngineError
    from mlx_notebook.engine.serving import Listener

    listener = Listener(None, host="192.0.2.1", port=0, token="t0ken")
    with pytest.raises(EngineError) as caught:
        listener.start()
    assert str(caught.value) == ("Cannot listen on 192.0.2.1 (Cannot assign requested address): "
                                 "give --host an address of this machine, e.g. 127.0.0.1.")


def test_output_cut_short_or_unwritable_is_no_traceback(tmp_path):
    listing = [sys.executable, "-m", "mlx_notebook.engine.cli", "models"]
    piped = subprocess.run(f"{' '.join(listing)} | head -c 0", shell=True, capture_output=True,
                           text=True, timeout=60)
    assert piped.stderr == ""  # (a BrokenPipeError traceback before)
    with open("/dev/full", "w") as full:
        done = subprocess.run(listing, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (1, "mlx-notebook models: No space left on device.\n")
