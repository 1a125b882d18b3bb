"""How numbers read under a turn and in the reports: bytes, seconds, rates, counted nouns.

One home for these (bytes come from the engine's ``byte_count``, which its CLI uses too), because the footer, the reports and the live widget disagreed
(``536.2 MB`` in one place, ``562.3 MB`` in another for the same bytes). The live widget
(``widgets/chat_view.js``) repeats these functions line for line; a test runs both on the
same values. Rounding is half-up on the scaled value in both languages (Python's format
rounds half-to-even, JavaScript's ``toFixed`` does not), so the two always agree.

Example::

    >>> format_bytes(562_284_672), format_seconds(0.04), plural(1, "token")
    ('562.3 MB', '0.04 s', '1 token')
"""

from __future__ import annotations

from mlx_notebook.engine import format_bytes as _format_byte_count
from mlx_notebook.engine import format_fixed as fixed

__all__ = ["format_bytes", "format_seconds", "fixed", "plural"]


def format_bytes(count: int | float | None) -> str | None:
    """Decimal units, labelled as such: ``562_284_672`` -> ``'562.3 MB'`` (10^6 bytes).

    The engine's formatter (its CLI lists the model store with it); None stays None.
    """
    return None if count is None else _format_byte_count(count)


def format_seconds(seconds: float | None) -> str | None:
    """A duration with the digits that matter: ``61.2 s``, ``1.23 s``, ``0.04 s``, ``0.004 s``.

    A nonzero duration never reads ``0.0 s``: below a millisecond it is shown in ms.
    """
    if seconds is None:
        return None
    value = float(seconds)
    if value == 0:
        return "0 s"
    size = abs(value)
    if size >= 100:
        return f"{fixed(value, 0)} s"
    if size >= 9.995:
        return f"{fixed(value, 1)} s"
    if size >= 0.00995:
        return f"{fixed(value, 2)} s"
    if size >= 0.0009995:
        return f"{fixed(value, 3)} s"
    return f"{fixed(value * 1000, 2)} ms"


def plural(count: int, noun: str, plural_noun: str | None = None) -> str:
    """``1 token``, ``2 tokens``, ``0 tokens``."""
    return f"{count} {noun if count == 1 else plural_noun or noun + 's'}"
