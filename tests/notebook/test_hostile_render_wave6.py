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


def test_log_probabilities_a_server_sent_out_of_range_show_as_probabilities_not_a_crash():
    """A remote server's log-probability is any number: above ~709 ``exp`` overflowed and the
    token view (``show_tokens``, a comparison) failed; ``+inf`` read "inf%"; its text said
    "nan%"; a reloaded record's None (how JSON keeps NaN) failed the text view."""
    from mlx_notebook.display import token_view_html
    from mlx_notebook.widgets import TokenView

    items = [{"token": f"t{i}", "logprob": value, "top_logprobs": [{"token": "alt", "logprob": value}]}
             for i, value in enumerate([1000.0, 1e308, float("inf"), float("nan"), None, 0.5])]
    shown = token_view_html(items)
    assert all(f"t{i}" in shown for i in range(len(items)))
    assert "inf" not in shown and "nan" not in shown.lower()
    assert "<b>100.0%</b>" in shown and "<b>0.0%</b>" in shown
    text = TokenView(items).plain_text()
    assert "inf" not in text and "nan" not in text.lower() and text.count("%") == len(items)


def test_a_code_block_a_lexer_reads_slowly_is_shown_plain_in_bounded_time():
    """Many Pygments lexers take time growing as the square of the code (C over blank lines:
    3 s for 24,000 characters, 13 s for 48,000), and a model picks the language: past a time
    budget the block is shown as plain text, every character of it."""
    from mlx_notebook.display import code_html

    code = ("\n" * 3000 + "x = 1;") * 16
    start = time.perf_counter()
    shown = code_html(code, "c")
    assert time.perf_counter() - start < 3.0
    assert shown.count("x = 1;") == 16


def test_a_language_whose_lexer_can_backtrack_forever_is_shown_plain():
    """Pygments' Maple lexer never returns on a string of 200 characters of backslash pairs:
    a model that wrote such a block hung the cell. Only well-known languages are highlighted."""
    from mlx_notebook.display import code_html

    code = '"' + "\\a" * 100
    start = time.perf_counter()
    shown = code_html(code, "maple")
    assert time.perf_counter() - start < 3.0
    assert "\\a" * 100 in shown and 'data-lang="maple"' in shown
    assert "color:" in code_html("def f(x):\n    return x\n", "python")  # still highlighted



def test_text_reprs_show_a_names_escape_sequences_as_symbols():
    """A session or model name (a remote server names its model) reaches the one-line reprs a
    terminal prints and a list of turns shows: ESC clearing the screen, a right-to-left
    override or a lone surrogate (which no output can send) is shown, not acted on."""
    from IPython.lib.pretty import pretty
    from jupyter_client.session import json_packer

    from mlx_notebook.widgets import ChatView

    hostile = "x\x1b[2J\x1b]0;owned\x07\u202e\ud800"
    turn = _reply_turn("hi")
    turn.session = hostile
    for shown in (pretty(turn), pretty([turn]), repr(ChatView(hostile, hostile))):
        assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown, shown
        assert "␛[2J" in shown
        json_packer({"text/plain": shown})  # a lone surrogate would fail the whole output
