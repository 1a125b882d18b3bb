"""Reading a call's tool schema, shared by the parsers that type or name calls by it."""

from __future__ import annotations

from typing import Any

__all__ = ["functions", "parameter_schemas", "properties", "schema_types"]


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


def schema_types(schema: Any) -> set[str]:
    """JSON-schema types a parameter allows (``type``, type lists, ``enum`` values,
    ``anyOf``/``oneOf``/``allOf``); empty when the schema does not say."""
    if not isinstance(schema, dict):
        return set()
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(_listed(declared))
    for value in _listed(schema.get("enum")):
        types.add(_JSON_TYPE_NAMES.get(type(value), "string"))
    for choice in ("anyOf", "oneOf", "allOf"):
        for option in _listed(schema.get(choice)):
            types |= schema_types(option)
    return {t for t in types if isinstance(t, str)}


def _listed(value: Any) -> list:
    """``value`` when a schema gave the list it should, else nothing (a client's schema is
    not checked that deep at admission)."""
    return list(value) if isinstance(value, (list, tuple)) else []


_JSON_TYPE_NAMES = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}
