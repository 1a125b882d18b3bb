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
# mlx's CUDA backend counts every miss of its kernel caches (CUDA graphs, cuDNN attention plans)
# over the process's life and, past twice a cache's size, raises "Cache thrashing is happening"
# from inside an evaluation. Each new prompt length can miss, so a kernel that serves prompts
# for hours would reach it and fail every request after; past the count the caches still
# evict as before, only the raise is gone. mlx's own test runner turns it off the same way.
os.environ.setdefault("MLX_ENABLE_CACHE_THRASHING_CHECK", "0")

from ._byte_count import fixed as format_fixed
from ._byte_count import format_bytes
from ._config import SWITCH_HELP, EngineConfig
from ._errors import EngineDeadError, EngineError, EngineRequestError, ModelStoreError
from ._events import (
    ContentDelta, EngineEvent, Error, Finished, ParseProblem, PrefillProgress, ReasoningDelta,
    Started, TokenLogprobs, ToolCall, UnreadToolCall, Usage,
)
from .request._admission import GenerationRequest, admit

# Names whose modules import mlx, mlx-lm or transformers (about a second): they load on first
# use, so ``%load_ext mlx_notebook`` costs milliseconds and the engine's import is paid at
# ``%load_model``. Name -> (module, attribute).
_LAZY = {
    "Engine": ("._engine", "Engine"),
    "ModelInfo": (".models._info", "ModelInfo"),
    "DEFAULT_MODEL": (".models._store", "DEFAULT_MODEL"),
    "cache_dir": (".models._store", "cache_dir"),
    "resolve_model": (".models._store", "resolve_model"),
    "trace_text": (".parsing", "trace"),
    "Trace": (".parsing", "Trace"),
    "ParseEvent": (".parsing", "Event"),
    "Family": (".parsing", "Family"),
    "ToolMarker": (".parsing", "ToolMarker"),
    "get_family": (".parsing", "get_family"),
    "RequestHandle": (".request._handle", "RequestHandle"),
    "TOOLS_NOT_RENDERED": (".request._inspection", "TOOLS_NOT_RENDERED"),
    "Inspection": (".request._inspection", "Inspection"),
    "CacheInfo": (".request._prompt_cache", "CacheInfo"),
    "CacheLookup": (".request._prompt_cache", "CacheLookup"),
    "CacheEntry": (".request._prompt_cache", "CacheEntry"),
    "chat_chunks": (".request._responses", "chat_chunks"),
    "completion_chunks": (".request._responses", "completion_chunks"),
    "Listener": (".serving", "Listener"),
    "ServedRequest": (".serving", "ServedRequest"),
    "RemoteEngine": (".remote", "RemoteEngine"),
    # Also keeps ``python -m mlx_notebook.engine.blas`` (which tests/run.sh runs) from finding
    # the module imported before it runs.
    "slow_blas_note": (".blas", "slow_blas_note"),
    "at_least_one": (".cli", "at_least_one"),
}

__all__ = [
    # the engine and its settings
    "Engine", "EngineConfig", "SWITCH_HELP", "GenerationRequest", "admit", "RequestHandle", "Inspection",
    "TOOLS_NOT_RENDERED", "ModelInfo", "CacheInfo", "CacheLookup", "CacheEntry",
    # errors
    "EngineError", "EngineRequestError", "EngineDeadError", "ModelStoreError",
    # the events a request's handle yields, and the OpenAI chunks built from them
    "EngineEvent", "Started", "PrefillProgress", "ReasoningDelta", "ContentDelta", "ToolCall",
    "ParseProblem", "UnreadToolCall", "TokenLogprobs", "Usage", "Finished", "Error",
    "chat_chunks", "completion_chunks",
    # the HTTP listener and what it is serving
    "Listener", "ServedRequest",
    # an OpenAI-compatible server behind the engine's surface
    "RemoteEngine",
    # models and the machine
    "DEFAULT_MODEL", "cache_dir", "resolve_model", "slow_blas_note",
    # the parser debugger, numbers as people read and type them
    "trace_text", "format_bytes", "format_fixed", "at_least_one",
    # a recorded reply replayed as a parser test (mlx_notebook.testing)
    "Trace", "ParseEvent", "Family", "ToolMarker", "get_family",
]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module, __name__), attribute)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
