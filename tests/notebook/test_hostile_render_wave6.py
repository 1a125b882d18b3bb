"""Hostile input, round 6: what a user sees of untrusted text (a model's reply, a server's
tokens and log-probabilities, session and model names) in the saved output, the token view
and the text reprs: nothing runs, nothing hangs, nothing crashes, and the text stays shown."""

from __future__ import annotations

import time

from mlx_notebook.display import turn_mimebundle
from mlx_notebook.turn import Turn


def _reply_turn(content: str) -> Turn:
    return Turn(model="/models/tiny-reasoner", session="hostile", request={}, content=content,
                usage={"prompt_tokens": 3, "cached_tokens": 0, "completion_tokens": 5},
                finish_reason="stop")


def _render_seconds(content: str) -> tuple[float, dict]:
    start = time.perf_counter()
    data, _ = turn_mimebundle(_reply_turn(content))
    return time.perf_counter() - start, data


def test_a_line_full_of_script_schemes_renders_as_fast_as_the_same_text_on_many_lines():
    """Each ``javascript:`` in the Markdown copy gets a zero-width space; inserting them one
    by one copied the line each time, so one 1 MB line of them took 21 s (growing as the
    square of its length), where the same text on separate lines takes a second."""
    from mlx_notebook.display._inert_markdown import inert_markdown

    count = 40_000
    start = time.perf_counter()
    inert_markdown("javascript:\n" * count)
    many_lines = time.perf_counter() - start
    start = time.perf_counter()
    one_line = inert_markdown("javascript:" * count)
    assert time.perf_counter() - start < 2.5 * many_lines + 0.5, (time.perf_counter() - start, many_lines)
    assert one_line == "javascript\u200b:" * count  # each one inert, nothing else changed


def test_a_reply_of_script_schemes_is_shown_as_written_and_links_nowhere():
    hostile = "javascript:alert(1) " * 50
    data = turn_mimebundle(_reply_turn(hostile))[0]
    assert hostile.strip() in data["text/html"] and "href" not in data["text/html"]
    assert data["text/markdown"].count("javascript\u200b:") == 50
