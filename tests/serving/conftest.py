"""Engines and listeners for the serving tests: one engine per model per session, each served
by one listener on a free loopback port (tests read its ``url`` and ``token``)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest

from mlx_notebook.engine import Engine
from mlx_notebook.engine.serving import Listener


@pytest.fixture(scope="session")
def tiny_engine(tiny_reasoner_path):
    engine = Engine(str(tiny_reasoner_path), progress=False)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def smollm2_engine(smollm2_path):
    engine = Engine(str(smollm2_path), progress=False)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def tiny_listener(tiny_engine):
    with Listener(tiny_engine, port=0) as listener:
        yield listener


@pytest.fixture(scope="session")
def smollm2_listener(smollm2_engine):
    with Listener(smollm2_engine, port=0) as listener:
        yield listener


def _wait_until(condition, seconds: float = 30.0) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass; True if it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


@contextmanager
def _engine_thread_held(engine):
    """The engine thread waits inside a call until the block ends: what is submitted meanwhile
    is admitted but not generated (no sleeps: the thread signals when it waits)."""
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
def wait_until():
    """``wait_until(condition, seconds=30)``: poll until it holds; True if it did."""
    return _wait_until


@pytest.fixture
def engine_thread_held():
    """``with engine_thread_held(engine): ...`` holds that engine's thread for the block."""
    return _engine_thread_held
