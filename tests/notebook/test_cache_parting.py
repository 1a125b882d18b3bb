"""A turn whose prompt-cache lookup missed shows where its prompt left the cache tree.

The tiny reasoner answers one conversation, then a different one: the second prompt shares
only the chat template's opening with the first, so its card (live and saved) says how many
tokens it shared, the text where it parted and what the cached branch said there. A follow-up
turn of the same conversation extends the cached entry: a hit, and no such line.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import jsonschema
import pytest

from mlx_notebook import display
from mlx_notebook.cache_tree import cache_parting, watch_cache
from mlx_notebook.display import TURN_MIME_TYPE, cache_parting_lines, turn_mimebundle
from mlx_notebook.runner import run_turn
from mlx_notebook.turn import Turn

SCHEMA = json.loads((Path(display.__file__).parent / "turn.schema.json").read_text())
SUM, GREET, DOUBLE = "What is 17 + 25?", "Greet me.", "Now double it."
PIRATE = "You are a terse pirate."  # the tiny reasoner's scripted system prompt


def _engine(shell):
    return shell.magics_manager.registry["MlxMagics"].engine


def _chat(shell, line, text):
    result = shell.run_cell(f"%%chat {line}\n{text}")
    assert result.success, result.error_in_exec
    return shell.user_ns["_"]


def _expected(engine, turn):
    """(tokens shared, the prompt's tokens) as the engine's own lookup record and renderer say."""
    round_ = turn.rounds[0]
    lookup = next(item for item in engine.cache_info().lookups if item.request_id == round_.request_id)
    return lookup.diverged_at, engine.inspect(round_.request).token_ids


@pytest.mark.model
def test_a_missed_lookup_shows_where_it_parted_and_a_hit_shows_nothing(reasoner_shell):
    engine = _engine(reasoner_shell)
    engine.clear_prompt_cache()
    first = _chat(reasoner_shell, "--new --session part-a --max-tokens 200", SUM)
    assert first.rounds[0].cache_parting is None  # an empty cache: nothing to leave
    # A follow-up turn extends its conversation's cached entry: a hit, no line.
    follow = _chat(reasoner_shell, "--session part-a --max-tokens 200", DOUBLE)
    assert follow.usage.cached_tokens >= first.usage.prompt_tokens + 1
    assert follow.rounds[0].cache_parting is None
    assert "mlxnb-cache-parting" not in turn_mimebundle(follow)[0]["text/html"]
    # Another conversation (the pirate script, with a system prompt) leaves that branch.
    other = _chat(reasoner_shell, f'--new --session part-b --system "{PIRATE}" --max-tokens 200', GREET)
    parting = other.rounds[0].cache_parting
    shared, prompt = _expected(engine, other)
    decode = engine.tokenizer.decode
    assert 0 < parting.shared_tokens == shared < parting.prompt_tokens == len(prompt)
    assert parting.prompt_tokens == other.usage.prompt_tokens
    assert decode(list(prompt[:shared])).endswith(parting.shared_text)
    assert decode(list(prompt[shared:])).startswith(parting.prompt_text)
    assert parting.prompt_text.startswith("system") and parting.cached_text.startswith("user")
    assert parting.branch_entries >= 1 and parting.branch_start <= shared
    data, _ = turn_mimebundle(other)
    record = data[TURN_MIME_TYPE]
    jsonschema.validate(record, SCHEMA)
    html = data["text/html"]
    assert html.count('class="mlxnb-cache-parting"') == 1
    assert f"prompt cache: shared {shared} of {len(prompt)} prompt tokens" in html
    assert escape(f"after “{parting.shared_text}” this prompt has “system⏎{PIRATE[:10]}") in html
    assert "where the cache has “user⏎What is 17" in html


@pytest.mark.model
def test_the_live_card_shows_the_parting_while_the_reply_streams(reasoner_shell):
    from mlx_notebook.widgets import ChatView

    engine = _engine(reasoner_shell)
    engine.clear_prompt_cache()
    _chat(reasoner_shell, "--new --session live-a --max-tokens 200", SUM)
    turn = Turn(model="tiny", session="live-b", request={"max_tokens": 200, "messages": [
        {"role": "system", "content": PIRATE}, {"role": "user", "content": GREET}]})
    view = ChatView("tiny", "live-b", turn=turn)
    view.comm.publish_msg = lambda *args, **kwargs: None
    notices_while_streaming = []
    original = view._on_text

    def watched_text(kind, text):  # what the card shows as the reply's text arrives
        notices_while_streaming.append(view.notices)
        original(kind, text)

    view._on_text = watched_text
    run_turn(engine, turn, watch_cache(engine, turn, view))
    shared, prompt = _expected(engine, turn)
    line = f"prompt cache: shared {shared} of {len(prompt)} prompt tokens"
    assert notices_while_streaming and all(line in html for html in notices_while_streaming)
    assert f"this prompt has “system⏎{PIRATE[:10]}" in notices_while_streaming[0]
    view.finish(turn)  # the saved card says the same
    assert line in view.notices and line in view.mimebundle[0]["text/html"]


def test_the_parting_names_the_branch_of_the_tree_it_left():
    from types import SimpleNamespace as NS

    def entry(tokens):
        return NS(tokens=tuple(tokens), bytes=1, kind="assistant", hits=0, created=0.0, last_used=None)

    # Two cached conversations share [1, 2]; one goes on [3, 4, 5], the other [3, 9, 9].
    entries = (entry([1, 2, 3, 4, 5]), entry([1, 2, 3, 9, 9]), entry([7, 7]))
    lookup = NS(request_id="r", diverged_at=4, miss_reason="The prompt diverged at token 4 of 6.")
    info = NS(prompts=entries, lookups=(lookup,))
    words = {1: "A", 2: "B", 3: "C", 4: "D", 5: "E", 6: "F", 9: "Z", 7: "Q"}
    parting = cache_parting(info, "r", [1, 2, 3, 4, 6, 6], lambda ids: "".join(words[i] for i in ids))
    assert (parting.shared_tokens, parting.shared_text, parting.prompt_text, parting.cached_text) == (
        4, "ABCD", "FF", "E")
    assert (parting.branch_start, parting.branch_entries) == (3, 1)  # the node [4, 5] from token 3
    # Parting at a branch point: it left both branches below [1, 2, 3].
    lookup = NS(request_id="s", diverged_at=3, miss_reason=None)
    parting = cache_parting(NS(prompts=entries, lookups=(lookup,)), "s", [1, 2, 3, 6],
                            lambda ids: "".join(words[i] for i in ids))
    assert (parting.branch_start, parting.branch_entries) == (3, 2)
    (line, _), = cache_parting_lines({"rounds": [{"cache_parting": {
        **{f: getattr(parting, f) for f in parting.__slots__}}}]})
    assert line == ("prompt cache: shared 3 of 4 prompt tokens, then left a cached branch (2 entries "
                    "from token 3): after “ABC” this prompt has “F” where the cache has “ZZ”")
    # A prompt that only extends an entry left nothing behind.
    lookup = NS(request_id="t", diverged_at=5, miss_reason=None)
    assert cache_parting(NS(prompts=entries, lookups=(lookup,)), "t", [1, 2, 3, 4, 5, 8],
                         lambda ids: "") is None


@pytest.mark.model
def test_each_compare_pane_shows_where_its_own_prompt_parted(reasoner_shell):
    from mlx_notebook.compare import run_comparison
    from mlx_notebook.widgets import ChatView

    engine = _engine(reasoner_shell)
    engine.clear_prompt_cache()
    _chat(reasoner_shell, "--new --session pane-a --max-tokens 200", SUM)
    messages = [{"role": "system", "content": PIRATE}, {"role": "user", "content": GREET}]
    sides = [Turn(model="tiny", session="pane-b", request={"messages": messages, "max_tokens": 200,
                                                           "temperature": 0, "logprobs": True})
             for _ in range(2)]
    views = [ChatView("tiny", "pane-b", turn=side) for side in sides]
    live: list[list[str]] = [[], []]
    for view, seen in zip(views, live):
        view.comm.publish_msg = lambda *args, **kwargs: None
        view._on_text = (lambda original, view, seen: lambda kind, text: (
            seen.append(view.notices), original(kind, text)))(view._on_text, view, seen)
    run_comparison(engine, sides, ["a", "b"], views)
    # The sides run together, so the second may reuse what the first just cached: each pane
    # shows the parting its own lookup found, and the first side to look up found one.
    assert any(side.rounds[0].cache_parting is not None for side in sides)
    for side, seen in zip(sides, live):
        parting = side.rounds[0].cache_parting
        assert seen and all(("mlxnb-cache-parting" in html) == (parting is not None) for html in seen)
        if parting is not None:
            assert f"shared {parting.shared_tokens} of {parting.prompt_tokens} prompt tokens" in seen[-1]
