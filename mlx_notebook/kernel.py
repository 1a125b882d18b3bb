"""The `mlx-notebook` kernel: an IPython kernel that starts with a fast BLAS preloaded.

The kernelspec this package installs (``share/jupyter/kernels/mlx-notebook``) runs
``python -m mlx_notebook.kernel -f {connection_file}``. On a Linux CPU, mlx's wheel links a
slow reference BLAS and only the loader can replace it, so the launcher first restarts itself
with an optimised one preloaded (``mlx_notebook.engine.blas`` decides which; the pid stays
the one the server started), then hands over to ipykernel. Elsewhere it is ipykernel as is.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["main"]

log = logging.getLogger(__name__)


def main() -> None:
    """Restart with the fast BLAS when one helps, then run ipykernel with this process's argv."""
    # As ipykernel_launcher does: the notebook's folder must not shadow what the kernel
    # imports (IPython puts it back on the path for the user's own imports).
    if sys.path and (sys.path[0] == "" or Path(sys.path[0]) == Path.cwd()):
        del sys.path[0]
    note = _blas_module().reexec_with_fast_blas()  # returns only when no restart is needed
    if note:
        log.warning(note)
    from ipykernel.kernelapp import launch_new_instance

    launch_new_instance()


def _blas_module() -> ModuleType:
    """``mlx_notebook.engine.blas`` without running the engine package's ``__init__``.

    That ``__init__`` imports mlx, which would load the reference BLAS into this process and
    cost seconds before a restart that throws it away; blas.py imports only the stdlib.
    """
    name = "mlx_notebook.engine.blas"
    if name in sys.modules:
        return sys.modules[name]
    engine = importlib.util.find_spec("mlx_notebook.engine")  # locates the folder, runs nothing
    folder = next(iter(engine.submodule_search_locations))
    spec = importlib.util.spec_from_file_location(name, f"{folder}/blas.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    main()
