"""Engines only the engine tests use (``tiny_engine``, ``smollm2_engine`` and
``engine_thread_held`` are in tests/conftest.py, shared with the serving tests)."""

from __future__ import annotations

import pytest

from mlx_notebook.engine import Engine


@pytest.fixture(scope="session")
def drafting_tiny_engine(tiny_reasoner_path):
    """The tiny reasoner drafting for itself: the speculative path, all guesses kept."""
    engine = Engine(str(tiny_reasoner_path), draft_model=str(tiny_reasoner_path), progress=False)
    yield engine
    engine.close()
