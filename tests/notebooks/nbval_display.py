"""An nbval plugin that compares notebooks the way a front end shows them.

nbval (0.11) drops two things a notebook front end honours, and our notebooks rely on both:

- ``update_display_data``: ``%%chat`` first shows a live widget, then replaces it with the
  turn's static mimebundle through its display id (nbclient and JupyterLab apply the update,
  so the saved reference holds the final turn). nbval ignores the update and would compare
  the widget placeholder against the final turn. Here an update replaces the data and
  metadata of the output shown under the same display id, as nbclient does.
- Structured mime data (our ``application/vnd.mlx-notebook.turn+json`` record is a dict):
  nbval sanitizes only strings, so a record's timings could never be sanitized. Here a dict
  or list is compared as sorted, indented JSON text, through the same sanitize regexes.

And one rule of ours: a stream output that sanitizes to nothing (a library's notice on
stderr, a progress bar) is not an output. Whether such notices appear depends on import
order and on the terminal, not on the notebook.

Load it with ``-p nbval_display`` (``tests/notebooks`` on ``PYTHONPATH``).
"""

from __future__ import annotations

import json

from nbval.plugin import IPyNbCell, IPyNbFile

_get_kernel_message = IPyNbFile.get_kernel_message
_runtest = IPyNbCell.runtest
_sanitize = IPyNbCell.sanitize
_compare_outputs = IPyNbCell.compare_outputs


def _display_id(msg: dict) -> str | None:
    return (msg.get("content", {}).get("transient") or {}).get("display_id")


def _get_kernel_message_with_updates(self, timeout=None, stream="iopub"):
    msg = _get_kernel_message(self, timeout=timeout, stream=stream)
    if stream != "iopub":
        return msg
    shown = self.__dict__.setdefault("_mlxnb_shown", {})
    kind, display_id = msg["msg_type"], _display_id(msg)
    if kind in ("display_data", "execute_result") and display_id:
        # Remember what this id showed, to find its output when an update comes.
        shown.setdefault(display_id, []).append(dict(msg["content"]["data"]))
    elif kind == "update_display_data" and display_id in shown:
        cell = self.__dict__.get("_mlxnb_cell")
        outputs = getattr(cell, "test_outputs", None) or []
        new = msg["content"]
        for i, before in enumerate(shown[display_id]):
            for out in outputs:
                if out.get("data") == before:
                    out["data"] = new["data"]
                    out["metadata"] = new.get("metadata", {})
            shown[display_id][i] = dict(new["data"])
        # Handled: hand nbval a message it skips silently instead of printing "unhandled".
        msg = dict(msg, msg_type="comm_msg")
    return msg


def _runtest_tracking_cell(self):
    self.parent.__dict__["_mlxnb_cell"] = self
    return _runtest(self)


def _sanitize_structured(self, s):
    if isinstance(s, (dict, list)):
        s = json.dumps(s, sort_keys=True, indent=1, ensure_ascii=False)
    return _sanitize(self, s)


def _compare_outputs_without_noise(self, test, ref, skip_compare=None):
    def meaningful(outputs):
        return [
            out for out in outputs
            if not (out.get("output_type") == "stream" and not self.sanitize(out.get("text", "")).strip())
        ]

    return _compare_outputs(self, meaningful(test), meaningful(ref), skip_compare)


IPyNbFile.get_kernel_message = _get_kernel_message_with_updates
IPyNbCell.runtest = _runtest_tracking_cell
IPyNbCell.sanitize = _sanitize_structured
IPyNbCell.compare_outputs = _compare_outputs_without_noise
