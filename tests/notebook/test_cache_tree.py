"""``%mlx cache --tree``: the cached prompts as a tree whose entries are the engine's."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mlx_notebook.cache_tree import cache_tree, tree_report
from mlx_notebook.display import format_bytes
from mlx_notebook.engine.models.tiny_reasoner import load_scripts

SCRIPTS = {s["name"]: s for s in load_scripts()}


def _entry(tokens, nbytes=100, hits=0):
    return SimpleNamespace(tokens=tuple(tokens), bytes=nbytes, kind="assistant", hits=hits,
                           created=0.0, last_used=None)


def test_shared_prefixes_merge_and_every_entry_is_one_node():
    entries = [_entry([1, 2, 3, 4]), _entry([1, 2, 3, 9, 9]), _entry([1, 2]), _entry([7])]
    root = cache_tree(entries)
    shape = [(n.start, n.tokens, n.entry is not None) for n in root.walk()][1:]
    assert shape == [
        (0, (1, 2), True),         # an entry, and the trunk of two more
        (2, (3,), False),          # where [1,2,3,4] and [1,2,3,9,9] part ways
        (3, (4,), True),
        (3, (9, 9), True),
        (0, (7,), True),
    ]


def test_the_report_elides_long_prefixes_in_the_middle():
    info = SimpleNamespace(prompts=(_entry(range(200), 2048, hits=3),), entries=1, bytes=2048,
                           budget_bytes=10**6)
    report = tree_report(info, lambda ids: "".join(chr(97 + i % 26) for i in ids), now=5.0)
    head, line = report.plain.splitlines()
    assert head == "prompt cache: 1 entry, 2.0 kB of 1.0 MB"
    assert " … " in line and "200 tokens from 0, 2.0 kB, assistant, 3 hits, filed 5.00 s ago" in line
    assert "mlxnb-cache-tree" in report.html


@pytest.mark.model
def test_the_tree_matches_the_engines_cache_info(reasoner_shell, capsys):
    engine = reasoner_shell.magics_manager.registry["MlxMagics"].engine
    engine.clear_prompt_cache()
    for name in ("reason_then_answer", "follow_up_turn", "system_prompt"):
        body = {"messages": SCRIPTS[name]["messages"], "max_tokens": 200}
        list(engine.submit(body).events())
    info = engine.cache_info()
    root = cache_tree(info.prompts)
    entries = [n.entry for n in root.walk() if n.entry is not None]
    assert len(entries) == info.entries == len(info.prompts) >= 2
    assert sum(e.bytes for e in entries) == info.bytes
    assert sum(len(n.tokens) for n in root.walk()) <= info.tokens  # shared tokens drawn once
    # Every prompt opens with <|im_start|>: drawn once, where the conversations part ways.
    (trunk,) = root.children
    assert engine.tokenizer.decode(list(trunk.tokens)) == "<|im_start|>" and trunk.entry is None
    assert len(trunk.children) == 2

    capsys.readouterr()
    reasoner_shell.run_cell("%mlx cache --tree")
    plain = capsys.readouterr().out
    assert plain.splitlines()[0] == f"prompt cache: {info.entries} entries, " + \
        f"{format_bytes(info.bytes)} of {format_bytes(info.budget_bytes)}"
    assert plain.count(" hits,") + plain.count(" hit,") == info.entries
    assert "<ul" in tree_report(info, engine.tokenizer.decode).html


@pytest.mark.model
def test_the_tree_marks_the_branch_a_sessions_next_turn_reuses(reasoner_shell, capsys):
    question = SCRIPTS["reason_then_answer"]["messages"][-1]["content"]
    reasoner_shell.magics_manager.registry["MlxMagics"].engine.clear_prompt_cache()
    result = reasoner_shell.run_cell(f"%%chat --new --session tree-mark --no-stream\n{question}")
    assert result.success, result.error_in_exec
    turn = result.result
    capsys.readouterr()
    reasoner_shell.run_cell("%mlx cache --tree")
    (line,) = [l for l in capsys.readouterr().out.splitlines() if "session 'tree-mark'" in l]
    # The next turn reuses the whole conversation so far: this turn's prompt and reply.
    reused = turn.usage.prompt_tokens + turn.usage.completion_tokens
    assert line.endswith(f"← session 'tree-mark' next turn reuses {reused} tokens")
    assert "17 + 25 = 42.<|im_end|>" in line
