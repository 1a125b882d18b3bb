"""The mlx-notebook inference engine: model store, request path and engine thread.

Installed as ``mlx_notebook.engine``. Nothing here imports IPython, ipywidgets, anywidget or
the notebook layer above it (a test enforces it).
"""

from .errors import EngineDeadError, EngineError, EngineRequestError, ModelStoreError
from .model_store import DEFAULT_MODEL, cache_dir, resolve_model

__all__ = [
    "DEFAULT_MODEL",
    "EngineDeadError",
    "EngineError",
    "EngineRequestError",
    "ModelStoreError",
    "cache_dir",
    "resolve_model",
]
