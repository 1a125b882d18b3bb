"""The grammar of a GLM 4.7 (or LongCat, ``prefix`` ``longcat_``) body's argument pairs, as
``parsers.glm47.arg_pairs`` reads them: written once as a pattern for the tests that check our
scanner against it and against mlx-lm's reading."""

from __future__ import annotations

import regex

__all__ = ["pairs_well_formed"]


def pairs_well_formed(body: str, prefix: str = "") -> bool | None:
    """Whether ``body``'s pairs are all whole (the grammar of ``arg_pairs``'s docstring,
    written as one pattern): None when it has no ``<arg_key>`` at all."""
    key, key_end, value, value_end = (regex.escape(f"<{end}{prefix}arg_{kind}>")
                                      for kind in ("key", "value") for end in ("", "/"))
    first = body.find(f"<{prefix}arg_key>")
    if first == -1:
        return None
    gap = r"(?:\\n|\s)*"
    pair = (rf"{gap}{key}(?:(?!{key_end}|{key}|{value}|{value_end}).)*{key_end}{gap}{value}"
            rf"(?:(?!{value_end}).)*{value_end}")
    return regex.fullmatch(rf"(?:{pair})*{gap}", body[first:], regex.DOTALL) is not None
