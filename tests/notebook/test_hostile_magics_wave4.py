"""The magics given a fourth round of what a demanding notebook user does: Ctrl-C where no
earlier round pressed it (in a branch, under --no-stream, while a model loads), a cell far past
the context, %mlx asked for help the way a command line asks, and %reload_ext mid-session."""

from __future__ import annotations

import pytest

from mlx_notebook.engine import ContentDelta
from mlx_notebook.turn import Turn

ROBOT = "Tell me a long story about a robot."


def run(shell, source: str, capsys):
    """Run a cell; return (result, stdout)."""
    capsys.readouterr()
    result = shell.run_cell(source)
    return result, capsys.readouterr().out


@pytest.fixture
def ctrl_c_after(monkeypatch):
    """``ctrl_c_after(n)``: the next turn to stream gets a KeyboardInterrupt once its ``n``-th
    piece of answer has arrived, where Ctrl-C lands in a cell (the cell's thread, folding
    events); once only, so the engine's drain of the cancelled request goes on."""
    apply = Turn.apply

    def arm(deltas: int) -> None:
        seen = [0]

        def apply_then_interrupt(turn, event):
            apply(turn, event)
            if isinstance(event, ContentDelta):
                seen[0] += 1
                if seen[0] == deltas:
                    raise KeyboardInterrupt

        monkeypatch.setattr(Turn, "apply", apply_then_interrupt)

    return arm


# -- Ctrl-C in a branch: the card ends, the partial branch is kept ------------------------------

@pytest.mark.model
def test_an_interrupted_branch_ends_its_card_and_keeps_the_partial_branch(
        smollm2_shell, ctrl_c_after, capsys):
    result, _ = run(smollm2_shell, f"%%chat --new --session w4-branch --temp 0 --tokens 2 "
                                   f"--max-tokens 4\n{ROBOT}", capsys)
    assert result.success, result.error_in_exec
    smollm2_shell.user_ns["w4_turn"] = turn = result.result
    ctrl_c_after(3)
    result, out = run(smollm2_shell, "w4_branch = w4_turn.branch(1, w4_turn.logprobs[1]"
                                     "['top_logprobs'][1]['token'], max_tokens=300)", capsys)
    assert type(result.error_in_exec) is KeyboardInterrupt
    assert str(result.error_in_exec) == "turn.branch stopped; the partial branch is in _."
    branch = smollm2_shell.user_ns["_"]
    assert branch is not turn and branch.branched_from["turn"] is turn
    assert branch.interrupted and 3 <= branch.usage["completion_tokens"] < 300
    assert f" [stopped]\n[{branch.summary()}]\n" in out  # the card ended, not left streaming
    assert smollm2_shell.magics_manager.registry["MlxMagics"].engine.active_requests == 0


# -- Ctrl-C under --no-stream: the stopped turn is shown, as the cell promised ------------------

@pytest.mark.model
def test_an_interrupted_no_stream_turn_is_shown_stopped(smollm2_shell, ctrl_c_after, capsys):
    ctrl_c_after(3)
    result, out = run(smollm2_shell, f"%%chat --new --session w4-quiet --no-stream "
                                     f"--max-tokens 300\n{ROBOT}", capsys)
    assert type(result.error_in_exec) is KeyboardInterrupt
    turn = smollm2_shell.user_ns["_"]
    assert turn.interrupted and turn.content
    assert turn.plain_text() in out  # nothing streamed, so this is all the cell showed
    # The next turn goes on from the partial reply, as after an interrupted streamed one.
    result, _ = run(smollm2_shell, "%%chat --session w4-quiet --max-tokens 1\nGo on.", capsys)
    assert result.success, result.error_in_exec
    assert result.result.request["messages"][:-1] == turn.messages()


# -- Ctrl-C while a model loads: the cell says the old model is gone ----------------------------

@pytest.mark.model
def test_an_interrupted_load_says_the_model_before_was_unloaded_and_how_to_reload_it(
        bare_shell, tiny_reasoner_path, monkeypatch, capsys):
    import mlx_notebook.engine

    assert bare_shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success

    def ctrl_c_while_loading(*args, **kwargs):
        raise KeyboardInterrupt  # where Ctrl-C lands on a big model: inside the load

    monkeypatch.setattr(mlx_notebook.engine, "Engine", ctrl_c_while_loading)
    result, _ = run(bare_shell, "%load_model smollm2-135m-instruct --no-progress", capsys)
    assert type(result.error_in_exec) is KeyboardInterrupt
    assert str(result.error_in_exec) == (
        f"%load_model stopped; no model is loaded (the one before was unloaded to make room; "
        f"%load_model {tiny_reasoner_path} loads it again).")
    monkeypatch.undo()
    assert bare_shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
    assert bare_shell.run_cell("%%chat --max-tokens 2\nHi.").success


@pytest.mark.model
def test_a_named_model_replaced_by_a_load_that_fails_or_is_interrupted_says_it_is_gone(
        bare_shell, tiny_reasoner_path, monkeypatch, capsys):
    import mlx_notebook.engine

    assert bare_shell.run_cell(f"%load_model {tiny_reasoner_path} --name b2 "
                               "--no-progress").success
    again = f"%load_model {tiny_reasoner_path} --name b2"
    # (a default --max-tokens past the context is only known once the model has loaded)
    result, _ = run(bare_shell, f"%load_model {tiny_reasoner_path} --name b2 --max-tokens 99999 "
                                "--no-progress", capsys)
    assert str(result.error_in_exec).endswith(
        f" The model loaded as 'b2' before was unloaded to make room; {again} loads it again.")

    assert bare_shell.run_cell(f"%load_model {tiny_reasoner_path} --name b2 "
                               "--no-progress").success

    def ctrl_c_while_loading(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(mlx_notebook.engine, "Engine", ctrl_c_while_loading)
    result, _ = run(bare_shell, "%load_model smollm2-135m-instruct --name b2 --no-progress",
                    capsys)
    assert type(result.error_in_exec) is KeyboardInterrupt
    assert str(result.error_in_exec) == (
        "%load_model stopped; no model is loaded as 'b2' (the one before was unloaded to make "
        f"room; {again} loads it again).")
    monkeypatch.undo()
    result, out = run(bare_shell, "%mlx status", capsys)
    assert "b2" not in out  # the name is free, not held by a half-made engine


# -- a cell far past the context, refused by its characters before tokenizing -------------------

LONG = "word " * 20_000  # 100,000 characters: past the tiny reasoner's 2,048 tokens at any rate


def _refusal(shell, source: str) -> str:
    result = shell.run_cell(source)
    return str(result.error_in_exec)


@pytest.mark.model
def test_a_cell_refused_by_its_characters_gets_the_same_advice_as_one_refused_by_its_tokens(
        reasoner_shell):
    reasoner_shell.user_ns["w4_long"] = LONG
    assert _refusal(reasoner_shell, "%%complete\n{w4_long}").endswith(
        "longer than the model's context length of 2048 tokens; shorten the cell's text.")
    assert _refusal(reasoner_shell, "%%chat --new --session w4-long\n{w4_long}").endswith(
        "longer than the model's context length of 2048 tokens; shorten the message.")
    assert reasoner_shell.run_cell("%%chat --session w4-long --max-tokens 2\nHi.").success
    assert _refusal(reasoner_shell, "%%chat --session w4-long\n{w4_long}").endswith(
        "shorten the conversation, or start the session afresh with --new or %mlx reset.")


# -- %mlx asked for help as a command line is ---------------------------------------------------

@pytest.mark.parametrize("written, meant", [
    ("%mlx --help", "%mlx help"),
    ("%mlx -h", "%mlx help"),
    ("%mlx status --help", "%mlx help status"),
    ("%mlx config -h", "%mlx help config"),
    ("%mlx trace x --family qwen3 --help", "%mlx help trace"),
])
def test_help_flags_on_mlx_show_the_help(bare_shell, capsys, written, meant):
    result, out = run(bare_shell, written, capsys)
    assert result.success, result.error_in_exec
    assert out == run(bare_shell, meant, capsys)[1]


def test_a_subcommand_and_its_options_may_be_parted_by_a_tab(bare_shell, capsys):
    result, out = run(bare_shell, "%mlx status\t--json", capsys)
    assert result.success, result.error_in_exec
    assert out.startswith('{\n "version": 1,')


# -- %reload_ext mid-session: a comparison from before cannot choose into a dropped session ------

@pytest.mark.model
def test_a_comparison_from_before_a_reload_cannot_join_the_dropped_session(
        bare_shell, tiny_reasoner_path, capsys):
    assert bare_shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
    result, _ = run(bare_shell, "%%chat --session w4-cmp --compare temperature=0 'temperature=1 "
                                "seed=0' --max-tokens 3\nHi.", capsys)
    assert result.success, result.error_in_exec
    comparison = result.result
    bare_shell.run_line_magic("reload_ext", "mlx_notebook")
    with pytest.raises(ValueError) as error:  # it said nothing, and no later cell sent the side
        comparison.choose(0)
    assert str(error.value) == ("Session 'w4-cmp' was dropped when the extension was unloaded "
                                "(%reload_ext) after this comparison, so there is nothing to "
                                "continue.")
