"""``%%chat --compare``: two option sets, two replies, decoded together, and where they part."""

from __future__ import annotations

import argparse
import re
import threading

import pytest
from IPython.core.error import UsageError

from mlx_notebook.engine import ContentDelta, TokenLogprobs
from mlx_notebook.compare import Comparison, comparison_mimebundle, first_divergence
from mlx_notebook.options import option_set
from mlx_notebook.turn import Turn

PARIS = "What is the capital of France? Answer in one sentence."


def tokens(*pairs):
    return [{"token_id": i, "token": t} for i, t in pairs]


@pytest.mark.parametrize("a, b, expected", [
    (tokens((1, "The"), (2, " capital")), tokens((1, "The"), (2, " capital")), None),
    (tokens((1, "The"), (2, " capital")), tokens((1, "The"), (3, " city")), 1),
    (tokens((1, "The")), tokens((1, "The"), (2, " capital")), 1),  # one reply ended there
    ([], tokens((5, "Paris")), 0),
    (None, None, None),
])
def test_first_divergence(a, b, expected):
    assert first_divergence(a, b) == expected


def test_an_empty_side_is_labelled_as_the_cells_flags():
    from mlx_notebook.options import compare_side

    assert compare_side(" ").label == "the cell's flags" and compare_side("").fields == {}
    assert compare_side("temperature=0").label == "temperature=0"


def test_an_option_set_reads_like_the_flags():
    assert option_set("temperature=1.2 seed=3") == {"temperature": 1.2, "seed": 3}
    assert option_set("temp=0 max-tokens=40 stop='\\n' stop=.") == {
        "temperature": 0.0, "max_tokens": 40, "stop": ["\n", "."]}
    assert option_set("logit_bias=1234=-100") == {"logit_bias": {"1234": -100.0}}
    with pytest.raises(argparse.ArgumentTypeError, match="'warmth=3' is not an option setting"
                                                         ".* one of .*max_tokens, min_p, model,"):
        option_set("warmth=3")
    with pytest.raises(argparse.ArgumentTypeError, match="'seed=x': 'x' is not a valid seed"):
        option_set("seed=x")


def _run(shell, source):
    result = shell.run_cell(source)
    return result


@pytest.mark.model
def test_both_sides_equal_their_solo_replies_and_the_divergence_is_the_first_differing_token(smollm2_shell):
    engine = smollm2_shell.magics_manager.registry["MlxMagics"].engine
    body = {"messages": [{"role": "user", "content": PARIS}], "max_tokens": 8, "logprobs": True}
    events = list(engine.submit(body).events())
    generated = [e.token_id for e in events if isinstance(e, TokenLogprobs)]
    text = "".join(e.text for e in events if isinstance(e, ContentDelta))
    # Side B may not say the greedy third token: it matches A for two tokens, then parts.
    third = generated[2]
    result = _run(smollm2_shell, f'%%chat --new --session cmp --max-tokens 8 --compare "temperature=0" '
                                 f'"temperature=0 logit_bias={third}=-100"\n{PARIS}')
    assert result.success, result.error_in_exec
    comparison = smollm2_shell.user_ns["_"]
    assert isinstance(comparison, Comparison)
    a, b = comparison.sides
    assert a.content == text  # the same reply it gives alone
    assert [t["token_id"] for t in a.logprobs] == generated
    assert comparison.diverges_at == 2
    assert b.logprobs[2]["token_id"] != third
    # Side B's reply is the one it gives alone, too.
    alone = engine.chat_completions({"messages": [{"role": "user", "content": PARIS}], "max_tokens": 8,
                                     "temperature": 0, "logit_bias": {str(third): -100}})
    assert b.content == alone["choices"][0]["message"]["content"]
    # Neither reply joined the session until one is chosen.
    magics = smollm2_shell.magics_manager.registry["MlxMagics"]
    session = next(s for s in magics.sessions if s.name == "cmp")
    assert session.turns == []
    assert comparison.choose(1) is b and session.turns == [b]
    data, _ = comparison_mimebundle(comparison)
    record = data["application/vnd.mlx-notebook.compare+json"]
    assert record["diverges_at"] == 2 and [s["content"] for s in record["sides"]] == [a.content, b.content]
    assert data["text/plain"].startswith("They diverge at token 2: ")
    assert data["text/html"].count("mlxnb-token mlxnb-diverge") == 2  # marked in both panes
    assert data["text/html"].count('class="mlxnb-turn mlxnb-static"') == 2


@pytest.mark.model
def test_both_sides_start_together_so_neither_reuses_the_others_prompt(smollm2_shell):
    for i in range(6):
        result = _run(smollm2_shell, f'%%chat --new --session together{i} --max-tokens 3 '
                                     f'--compare "temperature=0" "temperature=0 seed=1"\n'
                                     f'Name {i + 2} colours of the sea, number {i}.')
        assert result.success, result.error_in_exec
        a, b = smollm2_shell.user_ns["_"].sides
        assert a.usage.cached_tokens == b.usage.cached_tokens < a.usage.prompt_tokens - 5, i


@pytest.mark.model
def test_two_sides_sampled_with_one_seed_say_the_same_and_say_it_again(smollm2_shell):
    """The sides run together, batched: with mlx's one global random key each drew the other's
    numbers, and a seed meant nothing in a comparison. Each side now draws from its own key.
    (Against the same request run alone the batch's logits can differ in the last bits, which
    at this temperature may change a late draw, as it may a greedy near-tie.)"""
    runs = []
    for _ in range(2):
        result = _run(smollm2_shell, f'%%chat --new --session seeded --max-tokens 24 --compare '
                                     f'"temperature=1.3 seed=5" "temperature=1.3 seed=5"\n{PARIS}')
        assert result.success, result.error_in_exec
        comparison = smollm2_shell.user_ns["_"]
        runs.append([side.content for side in comparison.sides])
        assert comparison.diverges_at is None
    assert runs[0][0] == runs[0][1] == runs[1][0] == runs[1][1] != ""


def test_a_bad_option_set_is_one_line(smollm2_shell, capsys):
    result = smollm2_shell.run_cell(f'%%chat --compare "temperature=0" "warmth=3"\n{PARIS}')
    assert isinstance(result.error_in_exec, UsageError)
    assert "'warmth=3' is not an option setting" in str(result.error_in_exec)


def test_the_nbval_plugin_knows_the_comparison_record():
    from mlx_notebook import compare, nbval_plugin

    assert nbval_plugin.COMPARE_MIME_TYPE == compare.COMPARE_MIME_TYPE


WEATHER = '''
weather_calls = []

def get_weather(city: str):
    """Get the weather in a city."""
    weather_calls.append(city)
    return {"city": city, "temperature_c": 18, "condition": "sunny"}
'''


@pytest.mark.model
def test_each_side_reasons_and_runs_its_own_tool_loop(reasoner_shell):
    reasoner_shell.run_cell(WEATHER)
    result = reasoner_shell.run_cell('%%chat --new --session cmp-tools --tools get_weather '
                                     '--compare "temperature=0" "temperature=0 max_tokens=200"\n'
                                     "What's the weather in Paris?")
    assert result.success, result.error_in_exec
    comparison = reasoner_shell.user_ns["_"]
    assert reasoner_shell.user_ns["weather_calls"] == ["Paris", "Paris"]  # one call per side
    for side in comparison.sides:
        assert [r.finish_reason for r in side.rounds] == ["tool_calls", "stop"]
        assert "get_weather" in side.reasoning and side.tool_calls[0]["result"]["condition"] == "sunny"
        assert "sunny" in side.content.lower()
    assert comparison.sides[0].content == comparison.sides[1].content
    assert comparison.diverges_at is None  # the same tokens on both sides, both rounds


@pytest.mark.model
def test_show_request_and_raw_show_each_side(reasoner_shell, capsys):
    """Both flags were read by a one-reply cell only: --compare showed neither."""
    capsys.readouterr()
    result = reasoner_shell.run_cell('%%chat --new --session cmp-flags --show-request --raw '
                                     '--compare "temperature=0" "temperature=0 max_tokens=3"\n'
                                     "What is 17 + 25?")
    assert result.success, result.error_in_exec
    out = capsys.readouterr().out
    assert out.count('"max_tokens": 3') == 1 and out.count('"messages": [') == 2
    assert len(re.findall(r"^#\s+delta\s+finish_reason$", out, re.M)) == 2  # two chunk tables
    assert out.index("temperature=0 max_tokens=3:") < out.index('"max_tokens": 3')


def test_choosing_a_side_that_is_not_there_names_the_sides_and_adds_nothing():
    from mlx_notebook.sessions import SessionStore
    from mlx_notebook.turn import Turn

    store = SessionStore()
    session = store.open("cmp")
    sides = [Turn(model="m", session="s", request={}), Turn(model="m", session="s", request={})]
    comparison = Comparison(sides, ["temperature=0", "temperature=1.2 seed=3"], _session=session)
    for side in (5, -1, "1", True):
        with pytest.raises(ValueError) as error:
            comparison.choose(side)
        assert str(error.value) == (f"choose({side!r}): there is no such side; choose 0 "
                                    "('temperature=0') or 1 ('temperature=1.2 seed=3').")
    assert session.turns == []
    assert comparison.choose(1) is sides[1] and session.turns == [sides[1]]
    # Choosing again replaces the first choice: the message is in the history once.
    assert comparison.choose(0) is sides[0] and session.turns == [sides[0]]
    # Once %%chat --new has started the session afresh, a choice would join a conversation no
    # cell continues (it did, without a word).
    store.open("cmp", new=True)
    with pytest.raises(ValueError) as error:
        comparison.choose(1)
    assert str(error.value) == ("Session 'cmp' was started anew (%%chat --new) after this "
                                "comparison; its turns are gone, so there is nothing to continue.")
    assert store.open("cmp").turns == []


def test_labels_and_names_in_a_comparison_cannot_drive_a_terminal_or_fail_the_output():
    """A label or a model name is the user's or a server's: its escape sequences show as
    symbols in ``text/plain``, its lone surrogates as escapes everywhere."""
    from jupyter_client.session import json_packer

    from mlx_notebook.turn import Turn

    hostile = "\x1b]52;c;cGF5bG9hZA==\x07\x1b[2J\u202e\ud83d"
    sides = [Turn(model=f"a{hostile}", session="s", request={}, content=f"one {hostile}"),
             Turn(model=f"b{hostile}", session="s", request={}, content="two")]
    data, metadata = comparison_mimebundle(
        Comparison(sides, [f"left {hostile}", "right"], diverges_at=None, by="text"))
    json_packer([data, metadata])  # raised UnicodeEncodeError: the cell's output was lost
    plain = data["text/plain"]
    assert "\x1b" not in plain and "\u202e" not in plain
    assert "--- left ␛]52;c;cGF5bG9hZA==␇␛[2J\\u202e\\ud83d ---" in plain


def test_sides_without_tokens_are_compared_by_their_text_never_called_the_same():
    """A server that streams no log-probabilities (mlx_lm.server) left both token lists
    empty, and two different replies were "the same tokens"."""
    from mlx_notebook.compare import compare_turns
    from mlx_notebook.turn import Turn

    sides = [Turn(model="m", session="s", request={}, content="17 + 25 = 42."),
             Turn(model="m", session="s", request={}, content="17 + 25 is 42.")]
    comparison = compare_turns(sides, ["a", "b"], same_model=True)
    assert comparison.diverges_at == 8 and comparison.by == "reply"
    line = comparison_mimebundle(comparison)[0]["text/plain"].splitlines()[0]
    assert line == ("No token probabilities came back, so the replies are compared by their "
                    "text: they diverge at character 8.")
    sides[1].content = sides[0].content
    assert compare_turns(sides, ["a", "b"]).diverges_at is None


def _compare_interrupted_after_start(engine, monkeypatch) -> list[Turn]:
    """Run a comparison whose caller gets Ctrl-C right after the sides are started (before
    it waits for them); the sides, once ``run_comparison`` has raised KeyboardInterrupt."""
    import ctypes

    from mlx_notebook import compare as compare_module

    main = threading.main_thread().ident
    start = compare_module._start_together

    def start_then_interrupt(engines, threads):
        start(engines, threads)
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(main),
                                                   ctypes.py_object(KeyboardInterrupt))
        for _ in range(1000):  # the interrupt lands here, before the comparison waits
            pass

    monkeypatch.setattr(compare_module, "_start_together", start_then_interrupt)
    body = {"messages": [{"role": "user", "content": "Tell me a long story about a robot."}],
            "max_tokens": 400}
    sides = [Turn(model="m", session="s", request={**body, "temperature": t}) for t in (0, 1)]
    with pytest.raises(KeyboardInterrupt):
        compare_module.run_comparison(engine, sides, ["a", "b"], None)
    return sides


@pytest.mark.model
def test_an_interrupt_while_the_sides_start_stops_both(smollm2_engine, monkeypatch):
    """Ctrl-C may land before a side has sent its request (a long prompt renders meanwhile):
    no side goes on generating unseen after the cell has stopped."""
    sides = _compare_interrupted_after_start(smollm2_engine, monkeypatch)
    assert all(side.interrupted for side in sides)
    assert all(side.usage.completion_tokens < 400 for side in sides)
    assert smollm2_engine.active_requests == 0


@pytest.mark.model
def test_an_interrupt_waits_for_both_sides_even_where_join_would_not(smollm2_engine, monkeypatch):
    """On Python 3.11 an interrupt that lands in ``Thread.join(timeout)`` marks a running
    thread as stopped, so a later join returns at once (the CI flake of
    test_an_interrupted_compare_says_where_both_sides_are): here every join returns at once,
    and both sides must still be complete and stopped when the interrupt is raised again."""
    monkeypatch.setattr(threading.Thread, "join", lambda self, timeout=None: None)
    sides = _compare_interrupted_after_start(smollm2_engine, monkeypatch)
    assert [side.finish_reason for side in sides] == ["stopped", "stopped"]
    assert smollm2_engine.active_requests == 0
