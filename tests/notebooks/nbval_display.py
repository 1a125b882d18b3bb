"""Our suite's one nbval rule on top of the installed plugin: a stream output that sanitizes
to nothing is not an output.

What a ``%%chat`` cell needs (display updates applied, turn records compared without their
volatile fields and at logprob precision) ships with mlx-notebook as a ``pytest11`` plugin,
``mlx_notebook/nbval_plugin.py``, which stock ``pytest --nbval`` loads by itself. This rule
stays here because it depends on ``nbval_sanitize.cfg``: a library's notice on stderr or a
progress bar, which that file blanks, appears or not depending on import order and on the
terminal, not on the notebook.

Load it with ``-p nbval_display`` (``tests/notebooks`` on ``PYTHONPATH``).
"""

from __future__ import annotations

from nbval.plugin import IPyNbCell

_compare_outputs = IPyNbCell.compare_outputs


def _compare_outputs_without_noise(self, test, ref, skip_compare=None):
    def meaningful(outputs):
        return [
            out for out in outputs
            if not (out.get("output_type") == "stream" and not self.sanitize(out.get("text", "")).strip())
        ]

    return _compare_outputs(self, meaningful(test), meaningful(ref), skip_compare)


IPyNbCell.compare_outputs = _compare_outputs_without_noise
