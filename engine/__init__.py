"""The mlx-notebook inference engine: model store, request path and engine thread.

Installed as ``mlx_notebook.engine``; this module is its one public face. The folders show the
layout: ``request/`` is the request path top to bottom, ``parsing/`` the one stream filter and
its family parsers, ``models/`` where models come from; modules with a leading underscore are
private (their names are exported here). Nothing here imports IPython, ipywidgets, anywidget
or the notebook layer above it (a test enforces it).
"""

import os

# mlx-lm imports transformers, which prints an advisory "PyTorch was not found" line on
# import; mlx needs no PyTorch, and in a notebook that line lands in every cell's output.
# Only advisory warnings are silenced, and only when the user has not chosen otherwise.
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

from ._byte_count import fixed as format_fixed
from ._byte_count import format_bytes
from ._config import EngineConfig
from ._engine import Engine
from ._errors import EngineDeadError, EngineError, EngineRequestError, ModelStoreError
from ._events import (
    ContentDelta, EngineEvent, Error, Finished, ParseProblem, PrefillProgress, ReasoningDelta,
    Started, TokenLogprobs, ToolCall, Usage,
)
from .models._info import ModelInfo
from .models._store import DEFAULT_MODEL, cache_dir, resolve_model
from .parsing import trace as trace_text
from .request._admission import GenerationRequest
from .request._handle import RequestHandle
from .request._inspection import TOOLS_NOT_RENDERED, Inspection
from .request._prompt_cache import CacheInfo, CacheLookup
from .request._responses import chat_chunks, completion_chunks

__all__ = [
    # the engine and its settings
    "Engine", "EngineConfig", "GenerationRequest", "RequestHandle", "Inspection",
    "TOOLS_NOT_RENDERED", "ModelInfo", "CacheInfo", "CacheLookup",
    # errors
    "EngineError", "EngineRequestError", "EngineDeadError", "ModelStoreError",
    # the events a request's handle yields, and the OpenAI chunks built from them
    "EngineEvent", "Started", "PrefillProgress", "ReasoningDelta", "ContentDelta", "ToolCall",
    "ParseProblem", "TokenLogprobs", "Usage", "Finished", "Error", "chat_chunks",
    "completion_chunks",
    # models and the machine
    "DEFAULT_MODEL", "cache_dir", "resolve_model", "slow_blas_note",
    # the parser debugger, and numbers as people read them
    "trace_text", "format_bytes", "format_fixed",
]


def __getattr__(name: str):
    # Loaded on first use, not with the package: ``python -m mlx_notebook.engine.blas`` (which
    # tests/run.sh runs) would otherwise find the module imported before it runs.
    if name == "slow_blas_note":
        from .blas import slow_blas_note

        return slow_blas_note
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
