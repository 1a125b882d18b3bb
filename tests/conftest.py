"""Session fixtures shared by every test folder: the two offline models, resolved once.

Model-backed tests use the real SmolLM2 (imported as float32: with OpenBLAS preloaded by
``tests/run.sh`` that is the fast path on Linux CPUs) and the tiny reasoner. Both live in the
user's model store (``MLX_NOTEBOOK_CACHE``), so a second run reuses them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mlx_notebook.engine.model_store import resolve_model


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
