"""``%%chat --think-budget N``: reasoning ends after N tokens, the model answers, the footer says so."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from mlx_notebook import display
from mlx_notebook.display import footer_items, turn_record
from mlx_notebook.engine.models.tiny_reasoner import load_scripts

SCHEMA = json.loads((Path(display.__file__).parent / "turn.schema.json").read_text())
QUESTION = next(s for s in load_scripts() if s["name"] == "reason_then_answer")["messages"][-1]["content"]


def _chat(shell, flags: str):
    result = shell.run_cell(f"%%chat --new --session budget --no-stream {flags}\n{QUESTION}")
    assert result.success, result.error_in_exec
    return result.result


@pytest.mark.model
@pytest.mark.parametrize("budget", [0, 6])
def test_the_budget_cuts_reasoning_and_the_footer_says_so(reasoner_shell, budget):
    turn = _chat(reasoner_shell, f"--think-budget {budget}")
    assert turn.request["thinking_token_budget"] == budget
    assert turn.think_budget == {"budget": budget, "reasoning_tokens": [budget], "cut": True}
    assert turn.content.strip()  # the model answered after the cut
    record = turn_record(turn)
    jsonschema.validate(record, SCHEMA)
    assert ("think budget", f"cut reasoning at {budget} token{'' if budget == 1 else 's'}") in footer_items(record)
    data, _ = turn._mimebundle()  # the static output a saved notebook keeps
    assert f"cut reasoning at {budget} tokens" in data["text/html"]
    assert f"think budget cut reasoning at {budget} tokens" in data["text/markdown"]


@pytest.mark.model
def test_a_budget_the_reasoning_fits_in_is_reported_as_used_not_cut(reasoner_shell):
    turn = _chat(reasoner_shell, "--think-budget 500")
    (used,) = turn.think_budget["reasoning_tokens"]
    assert turn.think_budget["cut"] is False and 0 < used < 500
    assert turn.content.strip() == "17 + 25 = 42."
    assert ("think budget", f"{used} of 500 tokens") in footer_items(turn_record(turn))


@pytest.mark.model
def test_a_turn_without_a_budget_keeps_its_record_unchanged(reasoner_shell):
    turn = _chat(reasoner_shell, "")
    assert turn.think_budget is None
    record = turn_record(turn)
    assert "think_budget" not in record
    assert not any(label == "think budget" for label, _ in footer_items(record))


def test_the_budget_flag_is_in_the_chat_help(bare_shell, capsys):
    bare_shell.run_cell("%%chat?\n")
    out = capsys.readouterr().out
    assert "--think-budget N" in out and "End reasoning after N tokens" in out


def test_the_live_card_footer_says_when_the_budget_cut_reasoning():
    from mlx_notebook.engine import Finished, ReasoningDelta, Started, Usage
    from mlx_notebook.turn import Turn
    from mlx_notebook.widgets import ChatView

    turn = Turn(model="tiny", session="s", request={
        "messages": [{"role": "user", "content": QUESTION}], "thinking_token_budget": 4})
    view = ChatView("tiny", "s", turn=turn)
    view.comm.publish_msg = lambda *args, **kwargs: None
    for event in (Started("r1", prompt_tokens=16, cached_tokens=0), ReasoningDelta("The user"),
                  Usage(16, 0, 9, 0.1, 100.0, 50.0, 1 << 20, reasoning_tokens=4), Finished("stop")):
        turn.apply(event)  # as the runner folds each event before the view shows it
        view.handle(event)
    assert ["think budget", "cut reasoning at 4 tokens"] in view.footer
