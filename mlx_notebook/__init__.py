"""mlx-notebook: run and study local LLMs with MLX inside Jupyter.

``%load_ext mlx_notebook`` registers ``%load_model``, ``%%chat``, ``%%complete`` and ``%mlx``;
``@mlx_notebook.tool`` offers a Python function to the model.
"""

from __future__ import annotations

from .sessions import Session
from .tools import Tool, make_tool, tool
from .turn import Round, Timings, TokenLogprob, ToolCallRecord, TopLogprob, Turn, Usage

__all__ = ["tool", "make_tool", "Tool", "Turn", "Round", "Usage", "Timings", "ToolCallRecord",
           "TokenLogprob", "TopLogprob", "Session", "load_ipython_extension",
           "unload_ipython_extension"]

for _export in (tool, make_tool, Tool, Turn, Round, Usage, Timings, ToolCallRecord, TokenLogprob,
                TopLogprob, Session):
    _export.__module__ = "mlx_notebook"  # documented and shown as mlx_notebook.X
del _export


def load_ipython_extension(ipython) -> None:
    """Register the magics; the engine starts with ``%load_model``."""
    from .magics import MlxMagics

    ipython.register_magics(MlxMagics)


def unload_ipython_extension(ipython) -> None:
    """Close the engine cleanly and remove the magics."""
    from .magics import MlxMagics

    magics = ipython.magics_manager.registry.pop(MlxMagics.__name__, None)
    if magics is None:
        return
    closed = magics.closing_summary()
    magics.close()
    if closed:  # (%reload_ext too: what the reload dropped is said, not found out later)
        print(f"mlx_notebook unloaded: {closed}; %load_model starts again.")
    for kind, names in ipython.magics_manager.magics.items():
        for name in magics.magics.get(kind, {}):  # the names @magics_class registered
            if names.get(name) is not None and getattr(names[name], "__self__", None) is magics:
                del names[name]
