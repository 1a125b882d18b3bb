"""``%load_ext mlx_notebook`` is quick: the engine's heavy imports wait for ``%load_model``.

Importing transformers and mlx-lm takes one to two seconds; a notebook that only loads the
extension (or never gets to ``%load_model``) should not pay it. Checked in a fresh process,
where nothing else has imported them yet.
"""

from __future__ import annotations

import json
import subprocess
import sys

_SCRIPT = r"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell

shell = InteractiveShell.instance()
shell.history_manager.enabled = False
shell.run_line_magic("load_ext", "mlx_notebook")
heavy = ("transformers", "mlx_lm")
after_load_ext = [name for name in heavy if name in sys.modules]
magics = sorted(shell.magics_manager.magics["line"])

import mlx_notebook.engine as engine
names = {name: type(getattr(engine, name)).__name__ for name in engine.__all__}
after_names = [name for name in heavy if name in sys.modules]
print(json.dumps({"after_load_ext": after_load_ext, "magics": magics, "names": names,
                  "after_names": after_names}))
"""


def _run() -> dict:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_load_ext_registers_the_magics_without_importing_transformers_or_mlx_lm():
    seen = _run()
    assert {"load_model", "mlx"} <= set(seen["magics"])
    assert seen["after_load_ext"] == []
    # Every public name still resolves, and the heavy imports happen then, on first use.
    assert seen["names"]["Engine"] == "type"
    assert seen["names"]["resolve_model"] == "function"
    assert seen["names"]["DEFAULT_MODEL"] == "str"
    assert set(seen["after_names"]) == {"transformers", "mlx_lm"}
