"""The mlx-notebook inference engine: model store, request path and engine thread.

Installed as ``mlx_notebook.engine``. Nothing here imports IPython, ipywidgets, anywidget or
the notebook layer above it (a test enforces it).
"""

import os

# mlx-lm imports transformers, which prints an advisory "PyTorch was not found" line on
# import; mlx needs no PyTorch, and in a notebook that line lands in every cell's output.
# Only advisory warnings are silenced, and only when the user has not chosen otherwise.
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

from .errors import EngineDeadError, EngineError, EngineRequestError, ModelStoreError
from .model_store import DEFAULT_MODEL, cache_dir, resolve_model
from ._config import EngineConfig
from ._engine import Engine
from .admission import GenerationRequest
from .events import (
    ContentDelta, EngineEvent, Error, Finished, ParseProblem, PrefillProgress, ReasoningDelta,
    Started, TokenLogprobs, ToolCall, Usage,
)
from .inspection import Inspection
from .model_info import ModelInfo
from .prompt_cache import CacheInfo, CacheLookup
from .request_handle import RequestHandle

__all__ = [
    "DEFAULT_MODEL",
    "EngineDeadError",
    "EngineError",
    "EngineRequestError",
    "ModelStoreError",
    "cache_dir",
    "resolve_model",
    "Engine",
    "EngineConfig",
    "GenerationRequest",
    "RequestHandle",
    "Inspection",
    "ModelInfo",
    "CacheInfo",
    "CacheLookup",
    "EngineEvent",
    "Started",
    "PrefillProgress",
    "ReasoningDelta",
    "ContentDelta",
    "ToolCall",
    "ParseProblem",
    "TokenLogprobs",
    "Usage",
    "Finished",
    "Error",
]
