"""One tree of engine errors; front ends map them to their own user-facing form in one place."""

from __future__ import annotations

import json
import sys

__all__ = ["EngineError", "ModelStoreError", "EngineRequestError", "EngineDeadError",
           "json_failure"]


def json_failure(exc: ValueError | RecursionError) -> str:
    """Why ``json.loads`` refused outside text, in words. Catch ``(ValueError, RecursionError)``
    around it: a number past Python's digit limit is a plain ValueError, not a JSONDecodeError,
    and deep nesting a RecursionError."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
        return str(exc)
    return f"a number of more than {sys.get_int_max_str_digits()} digits"


class EngineError(Exception):
    """Base of every error the engine raises on purpose; the message is one sentence for a user."""


class ModelStoreError(EngineError):
    """A model spec could not be resolved, fetched or imported."""


class EngineRequestError(EngineError):
    """A request was rejected or failed; ``error`` is the OpenAI-style error object.

    ``error`` holds ``message``, ``type`` (``invalid_request_error``, ``server_error``, ...),
    ``param`` (the offending field, or None) and ``code``.
    """

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        type: str = "invalid_request_error",
        code: str | None = None,
    ):
        super().__init__(message)
        self.error = {"message": message, "type": type, "param": param, "code": code}

    @property
    def message(self) -> str:
        return self.error["message"]

    @property
    def param(self) -> str | None:
        return self.error["param"]


class EngineDeadError(EngineError):
    """The engine thread has stopped (closed or crashed); start a new Engine."""
