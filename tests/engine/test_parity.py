"""Parity: the in-process engine gives mlx_lm.server's tokens, text, tool calls and usage."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]


def _run_parity(model_dir, max_tokens: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mlx_notebook.engine.parity", str(model_dir),
         "--max-tokens", str(max_tokens)],
        capture_output=True, text=True, timeout=1500, env=dict(os.environ),
    )


def test_parity_on_the_tiny_reasoner(tiny_reasoner_path):
    done = _run_parity(tiny_reasoner_path, 200)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " 0 differ" in done.stdout
    assert "script parallel_tool_calls" in done.stdout  # the tools request ran


def test_parity_on_smollm2(smollm2_path):
    done = _run_parity(smollm2_path, 24)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " 0 differ" in done.stdout
