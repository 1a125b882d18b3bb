"""Opt-out ``{name}`` interpolation of a cell body from the user namespace, in one pass.

One left-to-right scan replaces each placeholder with the value's text and never looks at
that text again, so braces inside a value (JSON, code) are sent verbatim; jupyter-ai formats
twice and leaves unknown names in silently, which is what this avoids. The rules follow
``str.format`` so they need no teaching: ``{{`` and ``}}`` are literal braces, a placeholder
is a name with optional ``.attribute``s, ``!r``/``!s``/``!a`` and a ``:format_spec``, and any
other brace is an error that names the fix (escape it or pass ``--no-interpolate``).

Example::

    >>> interpolate("Capital of {country}? {{json}}", {"country": "{France}"})
    'Capital of {France}? {json}'
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from IPython.core.error import UsageError

__all__ = ["interpolate"]

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
# A name is a Python identifier in any script (``{é}``, ``{数}``), as the notebook's own
# variables may be: a letter or ``_``, then word characters.
_FIELD = re.compile(
    r"(?P<name>[^\W\d]\w*)(?P<attrs>(?:\.[^\W\d]\w*)*)(?:!(?P<conv>[rsa]))?(?::(?P<spec>.*))?",
    re.DOTALL,
)
_INDEXED = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*\s*[\[(]")
_HISTORY = re.compile(r"(?P<kind>In|Out)\[\s*(?P<n>\d+)\s*\]")
_CONVERSIONS = {"r": repr, "s": str, "a": ascii}


def interpolate(text: str, namespace: Mapping[str, Any], *, magic: str = "%%chat") -> str:
    """Return ``text`` with each ``{name}`` replaced from ``namespace``; raise UsageError on a bad brace."""
    out: list[str] = []
    position = 0
    for match in _TOKEN.finditer(text):
        out.append(text[position:match.start()])
        position = match.end()
        token = match.group(0)
        if token in ("{{", "}}"):
            out.append(token[0])
        elif match.group(1) is None:
            raise UsageError(
                f"{magic}: unmatched '{token}' at {_where(text, match.start())}; write "
                f"'{token}{token}' for a literal brace, or use --no-interpolate."
            )
        else:
            out.append(_render(match.group(1), namespace, text, match.start(), magic))
    out.append(text[position:])
    return "".join(out)


def _render(field: str, namespace: Mapping[str, Any], text: str, offset: int, magic: str) -> str:
    parsed = _FIELD.fullmatch(field.strip())
    history = _HISTORY.fullmatch(field.strip())
    if history:
        # {In[3]} and {Out[3]}, as jupyter-ai writes them: IPython names each cell's input
        # and output (_i3, _3), and those are placeholders here.
        name = ("_i" if history["kind"] == "In" else "_") + str(int(history["n"]))
        raise UsageError(
            f"{magic}: '{{{field}}}' at {_where(text, offset)} indexes, and a placeholder is a "
            f"name; write {{{name}}}, IPython's name for {field.strip()}, or use --no-interpolate."
        )
    if parsed is None and _INDEXED.match(field.strip()):
        # str.format would index ({items[0]}) and jupyter-ai evaluates; here a placeholder is
        # only a name, so say what to do instead of "not a variable name".
        raise UsageError(
            f"{magic}: '{{{field}}}' at {_where(text, offset)} indexes or calls, and a "
            f"placeholder is a name with .attributes only; set a variable to it in a cell "
            f"before and write {{that name}}, write '{{{{' and '}}}}' for literal braces, or "
            f"use --no-interpolate."
        )
    if parsed is None:
        raise UsageError(
            f"{magic}: '{{{field}}}' at {_where(text, offset)} is not a variable name; write "
            f"'{{{{' and '}}}}' for literal braces, or use --no-interpolate."
        )
    name = parsed["name"]
    if name not in namespace:
        raise UsageError(
            f"{magic}: name '{name}' in '{{{field}}}' is not defined in the notebook; define it, "
            f"write '{{{{{field}}}}}' for literal braces, or use --no-interpolate."
        )
    value = namespace[name]
    for attribute in filter(None, parsed["attrs"].split(".")):
        try:
            value = getattr(value, attribute)
        except AttributeError:
            raise UsageError(
                f"{magic}: '{{{field}}}' failed: {type(value).__name__!s} object has no "
                f"attribute '{attribute}'."
            ) from None
        except Exception as exc:  # a property of the user's own class raised
            raise UsageError(f"{magic}: '{{{field}}}' failed: reading .{attribute} raised "
                             f"{_said(exc)}") from None
    try:
        if parsed["conv"]:
            value = _CONVERSIONS[parsed["conv"]](value)
        return format(value, parsed["spec"] or "")
    except (TypeError, ValueError) as exc:  # mostly a spec that does not fit the value
        raise UsageError(f"{magic}: '{{{field}}}' could not be formatted: {exc}.") from None
    except Exception as exc:  # the value's own __format__, __str__ or __repr__ raised
        raise UsageError(f"{magic}: '{{{field}}}' could not be formatted: its "
                         f"{type(value).__name__} raised {_said(exc)}") from None


def _said(exc: Exception) -> str:
    """An exception as the end of a one-line message: ``KeyError: 'x'.``."""
    text = str(exc).strip().rstrip(".")
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__) + "."


def _where(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"
