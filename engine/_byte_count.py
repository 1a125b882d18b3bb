"""One way to write a byte count for people: decimal units (1 MB = 10^6 bytes), as disks are sold.

The engine's CLI and the notebook layer both write byte counts; this is the one formatter they
share (the notebook imports it: the engine cannot import the notebook). Rounding is half-up on
the scaled value, as JavaScript's ``toFixed`` rounds, so the live widget's twin agrees.
"""

from __future__ import annotations

import math

__all__ = ["fixed", "format_bytes"]

_UNITS = ("kB", "MB", "GB", "TB")


def fixed(value: float, decimals: int) -> str:
    """``value`` with ``decimals`` digits after the point, rounded half-up."""
    scale = 10 ** decimals
    scaled = math.floor(abs(value) * scale + 0.5)
    sign = "-" if value < 0 and scaled else ""
    whole, part = divmod(scaled, scale)
    return f"{sign}{whole}.{part:0{decimals}d}" if decimals else f"{sign}{whole}"


def format_bytes(count: int | float) -> str:
    """``93_900_000`` -> ``'93.9 MB'``; ``512`` -> ``'512 B'`` (SI prefixes, powers of 1000)."""
    value = float(count)
    if abs(value) < 999.5:
        return f"{fixed(value, 0)} B"
    for unit in _UNITS[:-1]:
        value /= 1000
        if abs(value) < 999.95:  # 999,960 B is 1.0 MB, not 1000.0 kB
            return f"{fixed(value, 1)} {unit}"
    return f"{fixed(value / 1000, 1)} {_UNITS[-1]}"
