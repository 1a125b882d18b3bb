"""Fixtures only the engine tests use (``tiny_engine``, ``smollm2_engine``,
``drafting_tiny_engine`` and ``engine_thread_held`` are in tests/conftest.py, shared with the
serving tests)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mlx_notebook.engine.models._store import fetch_default_gguf


@pytest.fixture
def empty_store(tmp_path, monkeypatch) -> Path:
    """A model store of its own (``MLX_NOTEBOOK_CACHE``), empty."""
    store = tmp_path / "store"
    monkeypatch.setenv("MLX_NOTEBOOK_CACHE", str(store))
    return store


@pytest.fixture(scope="session")
def smollm2_gguf(smollm2_path) -> Path:
    """The default model's GGUF file, as the store fetched it."""
    return fetch_default_gguf(progress=False)


@pytest.fixture
def broken(tmp_path, tiny_reasoner_path) -> Path:
    """A fresh copy of the tiny reasoner to damage."""
    copy = tmp_path / "model"
    shutil.copytree(tiny_reasoner_path, copy)
    return copy
