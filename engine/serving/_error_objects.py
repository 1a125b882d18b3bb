"""OpenAI error objects for the listener's answers, and the HTTP status each one gets."""

from __future__ import annotations

from .._errors import EngineDeadError, EngineError, EngineRequestError

__all__ = ["error_object", "engine_error", "http_status", "cut"]


def error_object(error: EngineError) -> dict:
    """``error`` as the body of an OpenAI error answer; any error but a request's own is a
    server error."""
    if isinstance(error, EngineRequestError):
        return {"error": dict(error.error)}
    return {"error": {"message": str(error), "type": "server_error", "param": None, "code": None}}


def engine_error(exc: Exception) -> EngineError:
    # Anything else is a bug in the engine; the client still gets an answer, not a hang.
    if isinstance(exc, EngineError):
        return exc
    return EngineRequestError(f"The engine failed on this request: {exc}", type="server_error")


def http_status(error: EngineError) -> int:
    """The status of an answer that carries ``error_object(error)``."""
    obj = error_object(error)["error"]
    if isinstance(error, EngineDeadError):
        return 503
    if obj["code"] == "model_not_found":
        return 404
    if obj["type"] == "server_error":
        return 500
    return 400


def cut(text: str, limit: int = 200) -> str:
    """``text`` as an error message quotes it: a 500 kB path is not echoed whole."""
    return text if len(text) <= limit else f"{text[:limit]}…"
