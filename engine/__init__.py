"""The mlx-notebook inference engine: model store, request path and engine thread.

Installed as ``mlx_notebook.engine``. Nothing here imports IPython, ipywidgets, anywidget or
the notebook layer above it (a test enforces it).
"""

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
