"""Markdown that runs nothing in any Markdown renderer: the turn's ``text/markdown`` copy.

``text/html`` renders a reply with ``html=False`` and markdown-it's link validator, so the
reply's raw HTML is text and a ``javascript:`` link no link. The Markdown copy goes to
renderers we do not control (JupyterLab's marked, nbconvert, pandoc, Quarto, a trusted
``IPython.display.Markdown``), which honour raw HTML and often check no scheme, and which
disagree about where a code block ends (marked closes a fence on "```~", CommonMark does not;
CommonMark closes one on "```" and a tab, marked does not). So nothing here depends on one
parser's idea of what is code:

- every top-level fenced code block is written again, with a fence of backticks longer than
  any backtick run inside it and an info string (a line with an info string never closes a
  fence), between blank lines, so every parser finds the same code, however the reply
  spelled it;
- every other line (indented code and code in lists too) gets a zero-width space after each
  ``<`` that could open a tag, comment or autolink, and between ``!`` and ``[``: it shows as
  nothing, and no tag or image starts with it;
- and one before the colon of a ``javascript:``, ``vbscript:`` or ``data:`` scheme, found
  as a browser reads a link: character references and backslash escapes decoded (twice, for
  a renderer that decodes once more), whitespace and control characters left out.

Example::

    >>> inert_markdown("<b>hi</b> [x](&#106;avascript:alert(1))")
    '<\\u200bb>hi<\\u200b/b> [x](&#106;avascript\\u200b:alert(1))'
"""

from __future__ import annotations

import html
import re

from ._markdown import markdown_tokens, normalized_markdown

__all__ = ["inert_markdown", "inert_line", "fenced"]

_ZERO_WIDTH_SPACE = "\u200b"
_OPENINGS = re.compile(r"<(?=[A-Za-z/!?])|!(?=\[)")
_FENCE_MARKERS = ("```", "~~~")


def fenced(text: str, info: str = "text") -> str:
    """``text`` as a fenced code block that no line inside can close, in any parser: the
    fence is longer than any backtick run in it, and its info string keeps the opening line
    from closing a fence some renderer left open before it."""
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{ticks}{_info_word(info)}\n{text}\n{ticks}"


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall("`+", text)), default=0)


def _info_word(info: str) -> str:
    """The language of a fence, kept only if it is a plain word (an info string of a tilde
    fence may hold backticks, which a backtick fence's may not)."""
    word = info.strip().split()[0] if info.strip() else ""
    return word if re.fullmatch(r"[\w+#.-]+", word) else "text"


def inert_line(line: str) -> str:
    """One line outside code: no tag, image or script link can start in it."""
    return _OPENINGS.sub(f"\\g<0>{_ZERO_WIDTH_SPACE}", _without_script_schemes(line))


def inert_markdown(text: str) -> str:
    """The reply's Markdown, rendering as it does, with nothing in it a renderer would run."""
    text = normalized_markdown(text)
    lines = text.split("\n")
    if not any(marker in text for marker in _FENCE_MARKERS):
        return "\n".join(inert_line(line) for line in lines)
    # Only the fences markdown-it finds at the top level are rewritten; a fence in a list or
    # quote is left to the line rule, so a renderer that ends that container elsewhere still
    # finds no HTML in it.
    fences = {token.map[0]: token for token in markdown_tokens(text)
              if token.type == "fence" and token.level == 0 and token.map}
    out, number = [], 0
    while number < len(lines):
        fence = fences.get(number)
        if fence is None:
            out.append(inert_line(lines[number]))
            number += 1
            continue
        body = fence.content[:-1] if fence.content.endswith("\n") else fence.content
        out.append(f"\n{fenced(body, fence.info)}\n")
        number = fence.map[1]
    return "\n".join(out)


# One character as Markdown and then a browser may read it: a character reference (with or
# without its semicolon, as browsers accept), a backslash escape, or the character itself.
_UNIT = re.compile(r"&#[0-9]+;?|&#[xX][0-9a-fA-F]+;?|&[A-Za-z0-9]+;?|\\[!-/:-@\[-`{-~]|.", re.DOTALL)
# A browser drops tabs and newlines anywhere in a URL, and spaces and controls at its ends.
_IGNORED = re.compile(r"[\x00-\x20\x7f-\x9f]")
_SCRIPT_SCHEME = re.compile(r"(?i)(?<![a-z0-9+.\-])(?:javascript|vbscript|data):")


def _decoded(chars: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """``chars`` (each with where it began in the line) with references and escapes decoded."""
    text = "".join(char for char, _ in chars)
    out = []
    for unit in _UNIT.finditer(text):
        value = unit[0][1] if unit[0][0] == "\\" and len(unit[0]) == 2 else html.unescape(unit[0])
        out.extend((char, chars[unit.start()][1]) for char in value)
    return out


def _without_script_schemes(line: str) -> str:
    """``line`` with a zero-width space before the colon of each script scheme a link in it
    could carry, however it is spelled (``&#106;avascript&#58``, ``java&#9;script:``)."""
    if ":" not in line and "&" not in line and "\\" not in line:
        return line
    chars = _decoded(_decoded([(char, i) for i, char in enumerate(line)]))
    kept = [(char, origin) for char, origin in chars if not _IGNORED.match(char)]
    seen = "".join(char for char, _ in kept)
    colons = sorted({kept[match.end() - 1][1] for match in _SCRIPT_SCHEME.finditer(seen)})
    return _inserted_before(line, colons, _ZERO_WIDTH_SPACE)


def _inserted_before(line: str, positions: list[int], mark: str) -> str:
    """``line`` with ``mark`` before each of the ascending ``positions``, built in one pass:
    inserting them one at a time copied the line each time, and a 1 MB line of
    ``javascript:`` took 21 s."""
    pieces, start = [], 0
    for position in positions:
        pieces += [line[start:position], mark]
        start = position
    pieces.append(line[start:])
    return "".join(pieces)
