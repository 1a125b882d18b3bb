"""Static renderings of chat turns: the mimebundle a saved notebook keeps, and the token view."""

from ._footer import footer_items, format_bytes, status_label
from ._markdown import code_html, markdown_html
from ._mimebundle import turn_mimebundle
from ._token_view import probability_colour, token_view_html
from ._turn_html import pretty_json, reasoning_summary, reasoning_text, turn_css, turn_html
from ._turn_record import TURN_MIME_TYPE, TURN_SCHEMA_VERSION, json_safe, turn_record
from ._turn_text import turn_markdown, turn_plain_text

__all__ = [
    "turn_mimebundle", "turn_record", "TURN_MIME_TYPE", "TURN_SCHEMA_VERSION", "turn_html",
    "turn_markdown", "turn_plain_text", "turn_css", "token_view_html", "markdown_html",
    "code_html", "footer_items", "format_bytes", "status_label", "reasoning_summary",
    "reasoning_text", "pretty_json", "probability_colour", "json_safe",
]
