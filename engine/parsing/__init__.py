"""Reasoning and tool-call parsing: the one ``StreamFilter`` every path splits output with.

Public surface: ``StreamFilter`` (streaming), ``parse_output`` (the buffered oracle),
``Event``/``ParsedOutput`` (results), ``Family``/``FAMILIES``/``get_family`` (formats),
``trace``/``Trace`` (the parser debugger: one row per chunk, ``diff()`` against the oracle).
"""

from ._event import Event, merge_events
from ._families import FAMILIES, Family, ToolMarker, family_names, get_family
from ._stream_filter import ParsedOutput, StreamFilter, parse_output
from ._tokenizer_family import (
    family_for_tokenizer, per_tokenizer, prompt_ends_reasoning, prompt_starts_in_reasoning,
)
from ._trace import Trace, TraceDifference, TraceRow, trace

__all__ = [
    "FAMILIES",
    "Event",
    "Family",
    "ParsedOutput",
    "StreamFilter",
    "ToolMarker",
    "Trace",
    "TraceDifference",
    "TraceRow",
    "family_for_tokenizer",
    "family_names",
    "get_family",
    "merge_events",
    "parse_output",
    "per_tokenizer",
    "prompt_ends_reasoning",
    "prompt_starts_in_reasoning",
    "trace",
]

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and isinstance(_obj, type):
        _obj.__module__ = __name__
