"""One way to write a byte count for people: decimal units (1 MB = 10^6 bytes), as disks are sold."""

from __future__ import annotations

__all__ = ["format_bytes"]

_UNITS = ("kB", "MB", "GB", "TB")


def format_bytes(count: int | float) -> str:
    """``93_900_000`` -> ``'93.9 MB'``; ``512`` -> ``'512 B'`` (SI prefixes, powers of 1000)."""
    value = float(count)
    if abs(value) < 1000:
        return f"{value:.0f} B"
    for unit in _UNITS:
        value /= 1000
        if abs(value) < 999.95 or unit == _UNITS[-1]:  # 999.96 kB would print as 1000.0 kB
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable: the loop returns at the last unit")
