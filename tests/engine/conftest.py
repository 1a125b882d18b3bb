"""Engines shared by the engine tests: one per model per session (loading is the slow part)."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import pytest

from mlx_notebook.engine import Engine


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
def drafting_tiny_engine(tiny_reasoner_path):
    """The tiny reasoner drafting for itself: the speculative path, all guesses kept."""
    engine = Engine(str(tiny_reasoner_path), draft_model=str(tiny_reasoner_path), progress=False)
    yield engine
    engine.close()
