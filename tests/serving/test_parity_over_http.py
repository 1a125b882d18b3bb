"""The parity harness through our HTTP listener: what HTTP clients get equals mlx_lm.server."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]


def test_the_listener_over_http_equals_mlx_lm_server_on_the_tiny_reasoner(tiny_reasoner_path):
    done = subprocess.run(
        [sys.executable, "-m", "mlx_notebook.engine.parity", str(tiny_reasoner_path),
         "--max-tokens", "200", "--over-http"],
        capture_output=True, text=True, timeout=1500, env=dict(os.environ))
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " 0 differ" in done.stdout
    assert "script parallel_tool_calls" in done.stdout  # the tools request ran
