"""Turn records saved before the turn became typed still validate, load and render the same.

The two records were written by the tutorials' saved outputs (a plain answer from
notebooks/01-quickstart.ipynb and a tool loop from notebooks/02-reasoning-and-tools.ipynb)
and are kept here as they were saved, so a later re-run of the tutorials cannot hide a break.
Only a copy we changed on purpose is written again: the tool loop's Markdown, whose reasoning
fences carry an info string since 2026-12 (so no renderer can read one as a closing fence).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import mlx_notebook.display as display
from mlx_notebook.display import (
    TURN_MIME_TYPE,
    turn_html,
    turn_markdown,
    turn_mimebundle,
    turn_plain_text,
)
from mlx_notebook.turn import Round, ToolCallRecord, Turn, Usage

DATA = Path(__file__).with_name("data")
SAVED = ["turn_v1_quickstart.json", "turn_v1_tool_loop.json"]
SCHEMA = json.loads((Path(display.__file__).parent / "turn.schema.json").read_text())


def saved(name: str) -> tuple[dict, dict]:
    output = json.loads((DATA / name).read_text(encoding="utf-8"))
    return output["data"], output["metadata"]


def typed_turn(record: dict, options: dict) -> Turn:
    """The typed turn a saved record describes (what the runner would have folded)."""
    calls = {call["id"]: ToolCallRecord.from_mapping(call) for call in record["tool_calls"]}
    rounds = [Round(request={}, content=r["content"], reasoning=r["reasoning"],
                    tool_calls=[calls[i] for i in r["tool_call_ids"]], usage=Usage.from_mapping(r["usage"]),
                    finish_reason=r["finish_reason"])
              for r in record["rounds"]]
    turn = Turn(model=record["model"], session=record["session"], request=record["request"],
                timings=record["timings"], interrupted=record["interrupted"], error=record["error"],
                rounds=rounds, logprobs=record["logprobs"], options=options,
                tools_offered=record["tools_offered"], tools_unsupported=record["tools_unsupported"],
                model_dtype=record["model_dtype"])
    turn.refresh()
    return turn


@pytest.mark.parametrize("name", SAVED)
def test_a_saved_record_still_matches_the_schema(name):
    data, _ = saved(name)
    jsonschema.validate(data[TURN_MIME_TYPE], SCHEMA)


@pytest.mark.parametrize("name", SAVED)
def test_a_saved_record_renders_the_text_it_was_saved_with(name):
    data, _ = saved(name)
    record = data[TURN_MIME_TYPE]
    assert turn_plain_text(record) == data["text/plain"]
    assert turn_markdown(record) == data["text/markdown"]
    # The HTML's markup may change with the renderer; what it says may not.
    html = turn_html(record)
    assert record["content"].strip().split()[-1] in html
    assert f"{record['usage']['prompt_tokens']} tokens" in html


@pytest.mark.parametrize("name", SAVED)
def test_the_typed_turn_writes_the_record_and_metadata_saved_before_it(name):
    data, metadata = saved(name)
    record = data[TURN_MIME_TYPE]
    stats = record["reasoning_stats"]
    turn = typed_turn(record, metadata["mlx_notebook"]["options"])
    rebuilt, rebuilt_metadata = turn_mimebundle(
        turn, reasoning_tokens=stats["tokens"], reasoning_seconds=stats["seconds"],
        round_reasoning_stats=[r.get("reasoning_stats") for r in record["rounds"]])
    assert rebuilt[TURN_MIME_TYPE] == record
    assert rebuilt_metadata == metadata
    assert turn.metadata() == metadata["mlx_notebook"]
