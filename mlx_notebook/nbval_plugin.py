"""A pytest plugin that lets stock ``pytest --nbval`` validate notebooks with ``%%chat`` cells.

Installed with mlx-notebook and registered through the ``pytest11`` entry point, so
``pip install mlx-notebook nbval`` then ``pytest --nbval my.ipynb`` needs no flag. It does
nothing unless nbval is installed and ``--nbval``/``--nbval-lax`` is given, and it only
touches outputs that carry one of our records (a turn, ``application/vnd.mlx-notebook.turn+json``,
or a ``%%chat --compare`` comparison, ``application/vnd.mlx-notebook.compare+json``):

- A ``%%chat`` cell first shows a live widget, then replaces it with the finished turn
  through its display id (``update_display_data``), as JupyterLab and nbclient apply it.
  nbval 0.11 ignores the update ("unhandled iopub msg") and then misses the turn ("Missing
  output fields"). Here an update that carries a turn replaces what that display id showed.
- A turn output is compared by its record alone: the HTML, Markdown and plain-text copies
  are rendered from it, so they add only noise (timings in the footer). Volatile fields
  (timings, ids, reasoning seconds) are blanked, and numbers are compared within
  ``LOGPROB_TOLERANCE`` or ``LOGPROB_RELATIVE_TOLERANCE`` of their size, whichever is larger:
  logprobs depend on the hardware's arithmetic (OpenBLAS and mlx's bundled BLAS differ in the
  sixth digit, and two x86 CPUs' OpenBLAS kernels by up to 4e-3 on a tail token's -7.7;
  Metal differs more). A logprob is a logit minus the log-sum, so a logit's rounding error
  grows with its size, and the far tail's large negative logprobs carry the largest.

- The token view (``%%chat --tokens``, HTML starting ``<div class="mlxnb-tokens"``) is
  compared by its tokens: its probabilities and colours are the turn record's logprobs,
  which are compared above at ``LOGPROB_TOLERANCE``; as text they would differ in the last
  digit between machines.

Switch it off with ``-p no:mlx_notebook``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["LOGPROB_TOLERANCE", "LOGPROB_RELATIVE_TOLERANCE", "TURN_MIME_TYPE", "COMPARE_MIME_TYPE",
           "comparable_record", "records_match", "comparable_token_view"]

# Our display package imports widgets and the engine; the plugin loads in every pytest run
# of the environment, so the MIME type is repeated here (a test checks they agree).
TURN_MIME_TYPE = "application/vnd.mlx-notebook.turn+json"
COMPARE_MIME_TYPE = "application/vnd.mlx-notebook.compare+json"
_RECORD_MIME_TYPES = (TURN_MIME_TYPE, COMPARE_MIME_TYPE)
LOGPROB_TOLERANCE = 2e-3
LOGPROB_RELATIVE_TOLERANCE = 1e-3
# Fields that change from run to run of the same notebook on the same machine.
_VOLATILE_KEYS = frozenset({"timings", "seconds", "id", "tool_call_ids", "created", "system_fingerprint",
                            "peak_memory"})


def comparable_record(record: Any) -> Any:
    """``record`` with its volatile fields replaced by ``"<volatile>"``."""
    if isinstance(record, dict):
        return {key: "<volatile>" if key in _VOLATILE_KEYS else comparable_record(value)
                for key, value in record.items()}
    if isinstance(record, list):
        return [comparable_record(item) for item in record]
    return record


def records_match(test: Any, ref: Any, tolerance: float = LOGPROB_TOLERANCE,
                  relative: float = LOGPROB_RELATIVE_TOLERANCE) -> bool:
    """Whether two comparable records are equal, floats within ``tolerance`` of each other or
    ``relative`` of their size."""
    if isinstance(test, dict) and isinstance(ref, dict):
        return test.keys() == ref.keys() and all(
            records_match(test[k], ref[k], tolerance, relative) for k in test)
    if isinstance(test, list) and isinstance(ref, list):
        return len(test) == len(ref) and all(
            records_match(a, b, tolerance, relative) for a, b in zip(test, ref))
    if isinstance(test, float) or isinstance(ref, float):
        if isinstance(test, (int, float)) and isinstance(ref, (int, float)) and not isinstance(test, bool):
            return math.isclose(test, ref, rel_tol=relative, abs_tol=tolerance)
        return False
    return test == ref


def _record_type(data: Any) -> str | None:
    """Which of our records ``data`` (an output's MIME bundle) carries, if any."""
    return next((mime for mime in _RECORD_MIME_TYPES if mime in (data or {})), None)


_TOKEN_VIEW = '<div class="mlxnb-tokens'
# Numbers the token view derives from logprobs: percentages, data-p, and the hsla() shading.
_TOKEN_VIEW_NUMBERS = re.compile(r'[0-9]+(?:\.[0-9]+)?%|data-p="[^"]*"|hsla\([^)]*\)')


def comparable_token_view(html: str) -> str:
    """The token view's HTML with the numbers derived from logprobs blanked."""
    return _TOKEN_VIEW_NUMBERS.sub("<n>", html)


def _without_token_view_numbers(outputs: list) -> list:
    reduced = []
    for out in outputs:
        html = (out.get("data") or {}).get("text/html")
        if isinstance(html, list):  # nbformat may keep multi-line strings as lists of lines
            html = "".join(html)
        if isinstance(html, str) and html.startswith(_TOKEN_VIEW):
            out = out.copy()
            out["data"] = out["data"].copy()
            out["data"]["text/html"] = comparable_token_view(html)
            out["data"].pop("text/plain", None)  # the same probabilities, as text
        reduced.append(out)
    return reduced


def _is_turn(output: dict) -> bool:
    return _record_type(output.get("data")) is not None


def _record_text(record: Any) -> str:
    return json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False)


def _comparable_outputs(test: list, ref: list) -> tuple[list, list]:
    """Copies of the outputs where each turn holds only its comparable record, as JSON text.

    When the n-th turn of the run matches the n-th saved turn within tolerance, both get the
    saved text (nbval compares strings); otherwise each keeps its own, so nbval's diff shows
    where they differ.
    """
    saved = [comparable_record(out["data"][_record_type(out["data"])]) for out in ref if _is_turn(out)]
    turns_seen = 0

    def reduce(out: dict, is_test: bool) -> dict:
        nonlocal turns_seen
        if not _is_turn(out):
            return out
        mime = _record_type(out["data"])
        record = comparable_record(out["data"][mime])
        if is_test:
            if turns_seen < len(saved) and records_match(record, saved[turns_seen]):
                record = saved[turns_seen]
            turns_seen += 1
        reduced = out.copy()  # a NotebookNode: nbval reads attributes
        reduced["data"] = type(out["data"])({mime: _record_text(record)})
        return reduced

    return [reduce(out, True) for out in test], [reduce(out, False) for out in ref]


def _display_id(msg: dict) -> str | None:
    return (msg.get("content", {}).get("transient") or {}).get("display_id")


def _patch_nbval() -> None:
    from nbval.plugin import IPyNbCell, IPyNbFile

    if getattr(IPyNbFile, "_mlx_notebook_patched", False):
        return
    get_kernel_message, runtest, compare_outputs = (
        IPyNbFile.get_kernel_message, IPyNbCell.runtest, IPyNbCell.compare_outputs)

    def get_kernel_message_applying_turn_updates(self, timeout=None, stream="iopub"):
        msg = get_kernel_message(self, timeout=timeout, stream=stream)
        if stream != "iopub":
            return msg
        shown = self.__dict__.setdefault("_mlx_notebook_shown", {})
        kind, display_id = msg["msg_type"], _display_id(msg)
        if kind in ("display_data", "execute_result") and display_id:
            # Remember what this id showed, to find its output when an update comes.
            shown.setdefault(display_id, []).append(msg["content"]["data"])
        elif kind == "update_display_data" and _record_type(msg["content"].get("data")):
            cell = self.__dict__.get("_mlx_notebook_cell")
            outputs = getattr(cell, "test_outputs", None) or []
            new = msg["content"]
            before = shown.get(display_id, [])
            for out in outputs:
                if any(out.get("data") is data or out.get("data") == data for data in before):
                    out["data"] = new["data"]
                    out["metadata"] = new.get("metadata", {})
            shown[display_id] = [new["data"]]
            # Handled: hand nbval a message it skips silently instead of printing "unhandled".
            msg = dict(msg, msg_type="comm_msg")
        return msg

    def runtest_tracking_cell(self):
        self.parent.__dict__["_mlx_notebook_cell"] = self
        return runtest(self)

    def compare_outputs_by_record(self, test, ref, skip_compare=None):
        if any(map(_is_turn, test)) or any(map(_is_turn, ref)):
            test, ref = _comparable_outputs(test, ref)
        test, ref = _without_token_view_numbers(test), _without_token_view_numbers(ref)
        return compare_outputs(self, test, ref, skip_compare)

    IPyNbFile.get_kernel_message = get_kernel_message_applying_turn_updates
    IPyNbCell.runtest = runtest_tracking_cell
    IPyNbCell.compare_outputs = compare_outputs_by_record
    IPyNbFile._mlx_notebook_patched = True


def pytest_configure(config) -> None:
    """Patch nbval's collector only in runs that validate notebooks."""
    if not (getattr(config.option, "nbval", False) or getattr(config.option, "nbval_lax", False)):
        return
    try:
        _patch_nbval()
    except ImportError:  # --nbval without nbval cannot happen; a renamed nbval module can
        return
