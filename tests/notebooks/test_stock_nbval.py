"""A user's own notebook with ``%%chat`` cells passes stock ``pytest --nbval``.

The installed ``pytest11`` plugin (``mlx_notebook.nbval_plugin``) is the only help nbval
gets: no ``-p``, no sanitize file, no ``PYTHONPATH``. The notebook is written by the test,
executed with nbclient (as saving it from JupyterLab would), then validated in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import nbformat
import pytest
from nbclient import NotebookClient

from mlx_notebook.display import TURN_MIME_TYPE
from mlx_notebook.nbval_plugin import TURN_MIME_TYPE as PLUGIN_MIME_TYPE
from mlx_notebook.display import token_view_html
from mlx_notebook.nbval_plugin import comparable_record, comparable_token_view, records_match

CELLS = [
    "%load_ext mlx_notebook",
    "%load_model tiny-reasoner --no-progress",
    "%%chat\nWhat is 17 + 25?",
    "%%chat --tokens 3\nWhat is 17 + 25?",
    "print(_.content.strip())",
]


def test_the_plugin_is_registered_for_pytest_and_knows_our_mime_type():
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("mlx_notebook") == "mlx_notebook.nbval_plugin"
    assert PLUGIN_MIME_TYPE == TURN_MIME_TYPE


def test_turn_records_compare_without_volatile_fields_and_at_logprob_precision():
    saved = {"content": "42", "timings": {"total_seconds": 0.15}, "reasoning_stats": {"seconds": 0.06, "tokens": 39},
             "tool_calls": [{"id": "call_abc", "name": "add"}], "logprobs": [{"token": "4", "logprob": -0.1234567}]}
    rerun = json.loads(json.dumps(saved))
    rerun["timings"]["total_seconds"] = 9.0
    rerun["reasoning_stats"]["seconds"] = 1.0
    rerun["tool_calls"][0]["id"] = "call_xyz"
    rerun["logprobs"][0]["logprob"] = -0.1234612  # OpenBLAS vs the bundled BLAS
    assert records_match(comparable_record(rerun), comparable_record(saved))
    rerun["logprobs"][0]["logprob"] = -0.2
    assert not records_match(comparable_record(rerun), comparable_record(saved))
    # A tail token's logprob moves with its size: two x86 CPUs' OpenBLAS kernels, one model.
    saved["logprobs"][0]["logprob"], rerun["logprobs"][0]["logprob"] = -7.687055, -7.690756
    assert records_match(comparable_record(rerun), comparable_record(saved))
    rerun["logprobs"][0]["logprob"] = -7.71
    assert not records_match(comparable_record(rerun), comparable_record(saved))
    rerun["logprobs"][0]["logprob"] = saved["logprobs"][0]["logprob"]
    rerun["reasoning_stats"]["tokens"] = 40
    assert not records_match(comparable_record(rerun), comparable_record(saved))


def test_the_token_view_compares_by_its_tokens_not_its_last_digits():
    def view(token, logprob):
        return token_view_html([{"token": token, "logprob": logprob,
                                 "top_logprobs": [{"token": token, "logprob": logprob}, {"token": "x", "logprob": -3.0}]}])

    saved = view("Paris", -0.25019)
    assert comparable_token_view(view("Paris", -0.25021)) == comparable_token_view(saved)
    assert view("Paris", -0.25021) != saved  # the HTML itself differs in the last digit
    assert comparable_token_view(view("Lyon", -0.25019)) != comparable_token_view(saved)


def _stock_nbval(path, cwd, *options):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "-o", "timeout=0", *options,
         "--rootdir", str(cwd), str(path)],
        cwd=cwd, env=env, capture_output=True, text=True,
    )


@pytest.mark.model
@pytest.mark.slow
def test_stock_nbval_validates_a_fresh_chat_notebook(tmp_path, tiny_reasoner_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    turns = [out for cell in nb.cells for out in cell.outputs if TURN_MIME_TYPE in out.get("data", {})]
    assert len(turns) == 2 and turns[1]["data"][TURN_MIME_TYPE]["logprobs"], "the saved notebook lacks its turns"
    path = tmp_path / "my-chat.ipynb"
    nbformat.write(nb, path)

    result = _stock_nbval(path, tmp_path)
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    assert f"{len(CELLS)} passed" in result.stdout, report
    assert "unhandled iopub msg" not in result.stdout, report

    # Without the plugin, stock nbval fails on every chat cell, as the issue reported.
    result = _stock_nbval(path, tmp_path, "-p", "no:mlx_notebook")
    assert result.returncode == 1 and "2 failed" in result.stdout, result.stdout[-4000:]

    # And with it, a changed answer still fails.
    turns[0]["data"][TURN_MIME_TYPE]["content"] = "\n\n17 + 25 = 43."
    nbformat.write(nb, path)
    result = _stock_nbval(path, tmp_path)
    assert result.returncode == 1 and "1 failed" in result.stdout, result.stdout[-4000:]
