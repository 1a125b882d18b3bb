"""Model replies as HTML: markdown-it-py (CommonMark, tables, strikethrough, math) and Pygments.

This is the one Markdown renderer: the static ``text/html`` a saved notebook keeps and the
live widget (which receives these fragments from the kernel) both come from here.

Safe by construction: raw HTML in a reply is escaped (``html=False``), link targets go
through markdown-it's validator (no ``javascript:``/``data:``), and images are not rendered,
so opening a notebook never fetches from a URL a model wrote. Code blocks are highlighted
with inline styles, which survive JupyterLab's sanitizer on untrusted notebooks. Math keeps
its ``\\(...\\)``/``\\[...\\]`` delimiters so a front end's MathJax can typeset it.

Example::

    >>> markdown_html("Use **`mx.eval`**.")
    '<p>Use <strong><code>mx.eval</code></strong>.</p>\\n'
"""

from __future__ import annotations

import html
import time
from functools import lru_cache

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import format as format_tokens
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.style import Style
from pygments.token import Comment, Keyword, Name, Number, Operator, String
from pygments.util import ClassNotFound

__all__ = ["markdown_html", "markdown_blocks", "MarkdownStream", "code_html", "markdown_tokens",
           "normalized_markdown"]


class _ReplyStyle(Style):
    """The card's code palette, as inline styles (classes would need a stylesheet that
    JupyterLab's sanitizer strips from untrusted notebooks)."""

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


_HIGHLIGHTED_CHARS = 100_000
"""Code longer than this is shown plain: inline styles make highlighted code ~9x larger
(a 1 MB block took 7 s and saved 9 MB of HTML)."""

_HIGHLIGHT_SECONDS = 0.5
"""Lexing time after which a block is shown plain. Many Pygments lexers take time growing as
the square of the code on some input (C over blank lines: 13 s for 48,000 characters), and
the model picks the language and writes the code; real code of 50,000 characters takes 0.1 s."""

_HIGHLIGHTED_LANGUAGES = frozenset("""
    python py python3 py3 javascript js node typescript ts jsx tsx json
    jsonc bash sh shell zsh c h cpp c++ cxx hpp objective-c objc csharp
    cs c# fsharp java go golang rust rs ruby rb php html xml svg css scss less sql mysql
    postgresql psql sqlite3 yaml yml toml diff patch udiff docker dockerfile kotlin kt
    swift r lua perl pl haskell hs julia jl latex tex powershell ps1 pwsh matlab octave
    markdown md dart elixir ex erlang clojure clj ocaml nim zig cuda cu fortran nix protobuf
    proto graphql vim cmake groovy gradle nginx text plaintext
""".split())
"""Languages highlighted: ones models write, whose lexers return (a deadline is checked
between tokens, so a lexer that hangs inside one match cannot be stopped: Pygments' Maple
lexer never returns on 200 characters of ``"\\a\\a...``, nor do those of Scala, Makefile,
systemd units, Zeek and shell sessions on a few thousand; INI's took 26 s on one line of ``a=a=...``).
Others are shown plain."""


def _highlighted(code: str, lexer) -> str | None:
    """``code`` as highlighted HTML, or None when lexing it takes over ``_HIGHLIGHT_SECONDS``."""
    deadline = time.monotonic() + _HIGHLIGHT_SECONDS
    tokens = []
    for token in lexer.get_tokens(code):
        if time.monotonic() > deadline:
            return None
        tokens.append(token)
    return format_tokens(tokens, _FORMATTER)


def code_html(code: str, language: str = "") -> str:
    """One highlighted ``<pre>`` block; unknown languages (and very long code, or code its
    lexer reads slowly) come out as escaped plain text."""
    language = language.strip().split()[0] if language.strip() else ""
    lexer = None
    if language.lower() in _HIGHLIGHTED_LANGUAGES and len(code) <= _HIGHLIGHTED_CHARS:
        try:
            lexer = get_lexer_by_name(language)
        except ClassNotFound:
            pass
    body = (_highlighted(code, lexer) if lexer else None) or _plain_html(code)
    lang = f' data-lang="{html.escape(language)}"' if language else ""
    return f'<pre class="mlxnb-code"{lang}><code>{body.rstrip(chr(10))}</code></pre>'


def _plain_html(code: str) -> str:
    """``code`` escaped, as the formatter writes plain text."""
    return format_tokens(TextLexer().get_tokens(code), _FORMATTER) if code else ""


def _link_open(renderer, tokens, idx, options, env):
    tokens[idx].attrSet("target", "_blank")
    tokens[idx].attrSet("rel", "noopener noreferrer")
    return renderer.renderToken(tokens, idx, options, env)


def _math_inline(renderer, tokens, idx, options, env):
    return f'<span class="math inline">\\({html.escape(tokens[idx].content)}\\)</span>'


def _math_block(renderer, tokens, idx, options, env):
    return f'<div class="math block">\\[{html.escape(tokens[idx].content)}\\]</div>\n'


def _too_deep(state, start_line: int, end_line: int, silent: bool) -> bool:
    """Text nested near markdown-it's limit (quotes or lists 20 deep), as code, as written.

    Past the limit markdown-it drops the rest of the block, text and all; this rule runs
    first, two levels short of it (a list item opens two), and keeps every line."""
    if state.level < state.md.options["maxNesting"] - 2:
        return False
    if not silent:
        token = state.push("code_block", "code", 0)
        token.content = state.getLines(start_line, end_line, state.blkIndent, True)
        token.map = [start_line, end_line]
    state.line = end_line
    return True


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "highlight": lambda code, lang, _: code_html(code, lang)})
    # Pandoc's rule for inline math: no space inside the dollars, no digit right after the
    # closing one, so "It costs $5 and $10" stays prices, while $E=mc^2$ is math.
    md.enable(["table", "strikethrough"]).disable("image").use(
        dollarmath_plugin, allow_space=False, allow_digits=False)
    md.block.ruler.before("table", "too_deep", _too_deep)
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("math_inline", _math_inline)
    md.add_render_rule("math_block", _math_block)
    return md


def markdown_tokens(text: str) -> list:
    """markdown-it's block tokens for ``text``, as this renderer parses it."""
    return _parser().parse(text, {})


def _blocks_by_line(text: str) -> list[tuple[int, str]]:
    """Each top-level block (paragraph, list, code, table...) with the line it starts on."""
    md = _parser()
    env: dict = {}
    tokens = md.parse(text, env)
    blocks, start = [], 0
    for i, token in enumerate(tokens):
        if token.level == 0 and token.nesting <= 0:  # a top-level block closes here
            line = tokens[start].map[0] if tokens[start].map else 0
            blocks.append((line, md.renderer.render(tokens[start:i + 1], md.options, env)))
            start = i + 1
    return blocks


def markdown_blocks(text: str) -> list[str]:
    """The reply's top-level blocks, each as its HTML; an unclosed code fence runs to the end.

    While a reply streams only its last block or two change, so the live widget is sent the
    blocks that differ, not the whole reply each time.
    """
    return [html for _, html in _blocks_by_line(normalized_markdown(text))]


def markdown_html(text: str) -> str:
    """Render a reply's Markdown as one HTML string."""
    return "".join(markdown_blocks(text))


def normalized_markdown(text: str) -> str:
    """Line breaks as markdown-it counts them (``\\r\\n`` and a lone ``\\r`` are ``\\n``):
    MarkdownStream cuts by its line numbers, and so may any caller of ``markdown_tokens``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


class MarkdownStream:
    """Renders a growing reply again and again, re-parsing only its last two blocks.

    A block with two more after it no longer changes as text is appended (barring a link
    reference defined later, which ``render(final=True)`` settles), so re-rendering a long
    reply on every flush costs what its tail costs, not what the whole reply costs.
    """

    def __init__(self):
        self._settled: list[str] = []
        self._offset = 0

    def render(self, text: str, *, final: bool = False) -> list[str]:
        text = normalized_markdown(text)
        if final:
            self._settled, self._offset = [], 0
            return markdown_blocks(text)
        tail = text[self._offset:]
        blocks = _blocks_by_line(tail)
        if len(blocks) > 2:
            self._settled += [html for _, html in blocks[:-2]]
            cut = _line_offset(tail, blocks[-2][0])
            self._offset += cut
            blocks = _blocks_by_line(tail[cut:])
        return self._settled + [html for _, html in blocks]


def _line_offset(text: str, line: int) -> int:
    """Where ``line`` (0-based) starts in ``text``."""
    offset = 0
    for _ in range(line):
        offset = text.index("\n", offset) + 1
    return offset
