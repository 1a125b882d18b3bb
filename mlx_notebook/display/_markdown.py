"""A small Markdown-to-HTML renderer for model replies, with Pygments-highlighted code blocks.

Why by hand: the static HTML must be self-contained and render the same way as the live
widget's ES module (``widgets/chat_view.js`` implements the same subset in JavaScript), and
neither may reach a CDN. The subset is what chat models write: ATX headings, paragraphs,
fenced code blocks, ``-``/``*``/``1.`` lists, ``>`` quotes, ``---`` rules, and inline
``code``, ``**bold**``, ``*italic*`` and ``[links](https://...)``. Everything else is escaped
text, so a reply can never inject markup.

Example::

    >>> markdown_html("Use **`mx.eval`**.")
    '<p>Use <strong><code>mx.eval</code></strong>.</p>'
"""

from __future__ import annotations

import html
import re

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.style import Style
from pygments.token import Comment, Keyword, Name, Number, Operator, String
from pygments.util import ClassNotFound

__all__ = ["markdown_html", "code_html"]


class _ReplyStyle(Style):
    """The live widget's palette (``mlxnb-tok-*`` in chat_view.css), as inline styles.

    Inline styles survive JupyterLab's sanitizer on untrusted notebooks; classes would need
    a stylesheet that the sanitizer strips.
    """

    styles = {
        Keyword: "#8839ef",
        Name.Builtin: "#1e66f5",
        Name.Function: "#1e66f5",
        Name.Class: "#1e66f5",
        String: "#40a02b",
        Number: "#fe640b",
        Comment: "italic #7c7f93",
        Operator: "#179299",
    }


_FORMATTER = HtmlFormatter(noclasses=True, nowrap=True, style=_ReplyStyle)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_ORDERED = re.compile(r"^\s{0,3}(\d{1,9})[.)]\s+(.*)$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_INLINE = re.compile(
    r"(?P<code>`+)(?P<code_text>.+?)(?P=code)"
    r"|\*\*(?P<strong>.+?)\*\*"
    r"|__(?P<strong2>.+?)__"
    r"|(?<![\w*])\*(?P<em>[^*\s](?:[^*]*[^*\s])?)\*(?!\w)"
    r"|(?<!\w)_(?P<em2>[^_\s](?:[^_]*[^_\s])?)_(?!\w)"
    r"|\[(?P<link_text>[^\]]+)\]\((?P<link_url>https?://[^\s)]+)\)"
)


def code_html(code: str, language: str = "") -> str:
    """One highlighted ``<pre>`` block; unknown languages come out as escaped plain text."""
    try:
        lexer = get_lexer_by_name(language) if language else TextLexer()
    except ClassNotFound:
        lexer = TextLexer()
    body = highlight(code, lexer, _FORMATTER) if code else ""
    lang = f' data-lang="{html.escape(language)}"' if language else ""
    return f'<pre class="mlxnb-code"{lang}><code>{body.rstrip(chr(10))}</code></pre>'


def _inline(text: str) -> str:
    out, pos = [], 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[pos:match.start()], quote=False))
        pos = match.end()
        if match["code"]:
            out.append(f"<code>{html.escape(match['code_text'].strip(), quote=False)}</code>")
        elif match["strong"] or match["strong2"]:
            out.append(f"<strong>{_inline(match['strong'] or match['strong2'])}</strong>")
        elif match["em"] or match["em2"]:
            out.append(f"<em>{_inline(match['em'] or match['em2'])}</em>")
        else:
            url = html.escape(match["link_url"])
            out.append(f'<a href="{url}" target="_blank" rel="noopener">'
                       f"{_inline(match['link_text'])}</a>")
    out.append(html.escape(text[pos:], quote=False))
    return "".join(out)


def _list_html(lines: list[str], start: int) -> tuple[str, int]:
    ordered = bool(_ORDERED.match(lines[start]))
    pattern = _ORDERED if ordered else _BULLET
    items: list[list[str]] = []
    i = start
    while i < len(lines):
        match = pattern.match(lines[i])
        if match:
            items.append([match.group(match.lastindex)])
        elif lines[i].strip() and lines[i][:1] in " \t" and items:
            items[-1].append(lines[i].strip())  # an indented continuation line
        else:
            break
        i += 1
    tag = "ol" if ordered else "ul"
    first = _ORDERED.match(lines[start])
    attr = f' start="{int(first.group(1))}"' if ordered and int(first.group(1)) != 1 else ""
    body = "".join(f"<li>{_inline(' '.join(item))}</li>" for item in items)
    return f"<{tag}{attr}>{body}</{tag}>", i


def markdown_html(text: str) -> str:
    """Render a reply's Markdown as HTML; an unclosed code fence runs to the end (streaming)."""
    lines = text.split("\n")
    blocks: list[str] = []
    paragraph: list[str] = []

    def close_paragraph() -> None:
        if paragraph:
            blocks.append(f"<p>{_inline(chr(10).join(paragraph))}</p>")
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            close_paragraph()
            marker, code = fence.group(1), []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                code.append(lines[i])
                i += 1
            blocks.append(code_html("\n".join(code), fence.group(2)))
            i += 1
            continue
        if not line.strip():
            close_paragraph()
        elif heading := _HEADING.match(line):
            close_paragraph()
            level = len(heading.group(1))
            blocks.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif _RULE.match(line):
            close_paragraph()
            blocks.append("<hr>")
        elif _BULLET.match(line) or _ORDERED.match(line):
            close_paragraph()
            block, i = _list_html(lines, i)
            blocks.append(block)
            continue
        elif _QUOTE.match(line):
            close_paragraph()
            quoted = []
            while i < len(lines) and (match := _QUOTE.match(lines[i])):
                quoted.append(match.group(1))
                i += 1
            blocks.append(f"<blockquote>{markdown_html(chr(10).join(quoted))}</blockquote>")
            continue
        else:
            paragraph.append(line)
        i += 1
    close_paragraph()
    return "".join(blocks)
