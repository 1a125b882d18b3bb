"""Session fixtures shared by every test folder: the two offline models, resolved once and
loaded once (``tiny_engine``, ``smollm2_engine``, ``drafting_tiny_engine``), ``engine_thread_held``, and the tiny
reasoner's scripted conversations (``scripts``, ``script_body``), loaded one way.

Model-backed tests use the real SmolLM2 (imported as float32: with OpenBLAS preloaded by
``tests/run.sh`` that is the fast path on Linux CPUs) and the tiny reasoner. Both live in the
user's model store (``MLX_NOTEBOOK_CACHE``), so a second run reuses them.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

from mlx_notebook.engine import Engine
from mlx_notebook.engine.models._store import resolve_model
from mlx_notebook.engine.models.tiny_reasoner import load_scripts

SCRIPTS = {script["name"]: script for script in load_scripts()}

# A suite started in the background by a shell without job control (``nohup ... &``) inherits
# SIGINT ignored, and so would every Python it starts: the tests that interrupt a subprocess
# (Ctrl-C on `mlx-notebook serve`, an interrupt while a model loads) would then see nothing.
# Caught here, it is back to the default in the processes the tests start.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _script_body(name: str, **extra) -> dict:
    script = SCRIPTS[name]
    body = {"messages": script["messages"], "max_tokens": 200}
    for key in ("tools", "chat_template_kwargs"):
        if key in script:
            body[key] = script[key]
    return {**body, **extra}


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    return resolve_model("smollm2-135m-instruct", dtype="float32", progress=False)


@pytest.fixture(scope="session")
def smollm2_4bit_path() -> Path:
    """SmolLM2 as its GGUF ships it: 4-bit layers, an 8-bit embedding."""
    return resolve_model("smollm2-135m-instruct", dtype="keep", progress=False)


@pytest.fixture(scope="session")
def tiny_reasoner_path() -> Path:
    return resolve_model("tiny-reasoner", progress=False)


@pytest.fixture(scope="session")
def scripts():
    """The tiny reasoner's scripted conversations by name."""
    return SCRIPTS


@pytest.fixture(scope="session")
def script_body():
    """``script_body(name, **extra)``: a chat body replaying a scripted conversation."""
    return _script_body


@pytest.fixture(scope="session")
def tiny_engine(tiny_reasoner_path):
    # 64-token prefill chunks, the CPU's default for a float32 model, on every device: the
    # chunking and arrival tests count chunks (a GPU's default is 2,048, the model's context).
    engine = Engine(str(tiny_reasoner_path), progress=False, prefill_step_size=64)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def smollm2_engine(smollm2_path):
    engine = Engine(str(smollm2_path), progress=False)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def drafting_tiny_engine(tiny_reasoner_path):
    """The tiny reasoner drafting for itself: the speculative path, all guesses kept."""
    engine = Engine(str(tiny_reasoner_path), draft_model=str(tiny_reasoner_path), progress=False)
    yield engine
    engine.close()


@contextmanager
def _engine_thread_held(engine):
    """The engine thread waits inside a call until the block ends, so whatever is submitted
    or queued meanwhile is taken in one pass, in order (no sleeps: it signals when it waits)."""
    waiting, release = threading.Event(), threading.Event()

    def hold() -> None:
        waiting.set()
        release.wait(60)

    engine._thread.call_soon(hold)
    assert waiting.wait(60), "the engine thread never reached the hold"
    try:
        yield
    finally:
        release.set()


@pytest.fixture
def engine_thread_held():
    """``with engine_thread_held(engine): ...`` holds that engine's thread for the block."""
    return _engine_thread_held


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory) -> Path:
    """This checkout built as a wheel, once per session (the packaging tests read it)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
         str(Path(__file__).resolve().parents[1])],
        check=True, capture_output=True,
    )
    return next(out.glob("mlx_notebook-*.whl"))
