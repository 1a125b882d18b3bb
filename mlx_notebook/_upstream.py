"""Every reach into transformers', argparse's and ipykernel's internals from the notebook layer,
in one place.

Checked against transformers 5.24.0, ipykernel 7.4.0 and CPython 3.10-3.13's argparse; when either changes,
this module is where the notebook layer breaks and the only place to fix. (The engine has
its own, ``mlx_notebook.engine._upstream``: layers do not share private helpers.)
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

__all__ = ["google_docstring", "json_schema_of_hint", "UnsupportedHint", "option_destinations",
           "keep_front_end_subshell"]


class UnsupportedHint(Exception):
    """A type hint with no JSON-schema form (transformers' ``TypeHintParsingException``)."""


def google_docstring(doc: str) -> tuple[str | None, dict, str | None]:
    """(summary, {argument: description}, returns) of a Google-style docstring, parsed by
    transformers' ``parse_google_format_docstring`` -- the parser chat templates are tested
    against. Imported on use: transformers takes seconds to import."""
    from transformers.utils.chat_template_utils import parse_google_format_docstring

    return parse_google_format_docstring(doc)


def json_schema_of_hint(hint: Any) -> dict:
    """transformers' private ``_parse_type_hint``: the JSON schema of one parameter's hint
    (its public ``get_json_schema`` refuses functions without full docstrings)."""
    from transformers.utils.chat_template_utils import TypeHintParsingException, _parse_type_hint

    try:
        return dict(_parse_type_hint(hint))
    except TypeHintParsingException as exc:
        raise UnsupportedHint(str(exc)) from None


def option_destinations(parser: argparse.ArgumentParser) -> set[str]:
    """Every option's ``dest`` (argparse keeps the actions in the private ``_actions``)."""
    return {action.dest for action in parser._actions}


def keep_front_end_subshell(comm: Any, wanted: Callable[[Any], bool]) -> None:
    """Route a comm's incoming custom messages that ``wanted(content)`` picks to the kernel
    subshell the front end sent them on.

    ipykernel 7.4 routes a comm's incoming messages to the shell that last *sent* on it
    (private ``BaseComm._reply_subshell_for``); for a widget streaming from a busy cell that
    is the cell's own main shell, so those messages wait until the cell ends. A comm without
    that hook (another kernel, an ipykernel without subshells) is left as it is.
    """
    route = getattr(comm, "_reply_subshell_for", None)
    if route is None:
        return

    def reply_subshell_for(data: Any, default: Any) -> Any:
        if isinstance(data, dict) and wanted(data.get("content")):
            return default
        return route(data, default)

    comm._reply_subshell_for = reply_subshell_for
