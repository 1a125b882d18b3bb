"""Reading a call's tool schema, shared by the parsers that type or name calls by it."""

from __future__ import annotations

from typing import Any

__all__ = ["functions", "parameter_schemas", "properties"]


def functions(tools: Any) -> list[dict[str, Any]]:
    """The functions of OpenAI-style ``tools`` (nested or flat) that have a name."""
    out = []
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            out.append(function)
    return out


def properties(function: dict[str, Any]) -> dict[str, Any]:
    """A function's parameter schemas by name (empty when it declares none readably)."""
    parameters = function.get("parameters")
    found = parameters.get("properties") if isinstance(parameters, dict) else None
    return found if isinstance(found, dict) else {}


def parameter_schemas(tools: Any, name: str) -> dict[str, Any]:
    """The parameter schemas of tool ``name`` (empty when it is not offered)."""
    return next((properties(f) for f in functions(tools) if f["name"] == name), {})
