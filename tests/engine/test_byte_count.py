"""Byte counts read the same everywhere: decimal units, labelled as such."""

import pytest

from mlx_notebook.engine._byte_count import format_bytes


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1_000, "1.0 kB"),
        (530_176, "530.2 kB"),
        (999_960, "1.0 MB"),
        (562_284_672, "562.3 MB"),  # the bytes: one answer, not 536.2 and 562.3
        (93_900_000, "93.9 MB"),
        (8_000_000_000, "8.0 GB"),
    ],
)
def test_bytes_are_written_in_powers_of_1000(count, text):
    assert format_bytes(count) == text
