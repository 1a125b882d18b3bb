"""Static renderings of chat turns: the mimebundle a saved notebook keeps, and the token view."""

from ._footer import footer_items, status_label
from ._markdown import MarkdownStream, code_html, markdown_blocks, markdown_html
from ._mimebundle import turn_mimebundle
from ._numbers import fixed, format_bytes, format_seconds, plural
from ._token_view import probability_colour, token_probability, token_view_html
from ._turn_html import (
    notices_html,
    pretty_json,
    reasoning_summary,
    reasoning_text,
    tool_card_html,
    turn_css,
    turn_html,
)
from ._turn_parts import (
    cache_parting_lines, problem_lines, tools_offered_line, tools_unsupported_warning, turn_parts,
)
from ._turn_record import (
    TURN_MIME_TYPE,
    TURN_SCHEMA_VERSION,
    encodable,
    finish_reason_name,
    json_safe,
    turn_record,
)
from ._turn_text import turn_markdown, turn_plain_text, visible_text

__all__ = [
    "turn_mimebundle", "turn_record", "TURN_MIME_TYPE", "TURN_SCHEMA_VERSION", "turn_html",
    "turn_markdown", "turn_plain_text", "turn_css", "token_view_html", "markdown_html",
    "code_html", "markdown_blocks", "MarkdownStream", "notices_html", "tool_card_html", "footer_items", "format_bytes", "status_label", "reasoning_summary",
    "reasoning_text", "pretty_json", "probability_colour", "token_probability", "json_safe", "format_seconds",
    "fixed", "plural", "turn_parts", "tools_offered_line", "tools_unsupported_warning",
    "finish_reason_name", "cache_parting_lines", "problem_lines", "visible_text", "encodable",
]
