"""``turn.branch(at, token)``: resume a reply from one of its tokens with another token forced."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.model

PARIS = "What is the capital of France? Answer in one sentence."


def _turn_with_tokens(shell, session: str):
    result = shell.run_cell(f"%%chat --new --session {session} --temp 0 --max-tokens 12 --tokens 3\n{PARIS}")
    assert result.success, result.error_in_exec
    return shell.user_ns["_"]


def test_a_branch_continues_from_the_forced_token_and_reuses_the_cached_prefix(smollm2_shell):
    engine = smollm2_shell.magics_manager.registry["MlxMagics"].engine
    turn = _turn_with_tokens(smollm2_shell, "branch")
    at = 4
    alternative = next(t["token"] for t in turn.logprobs[at]["top_logprobs"]
                       if t["token"] != turn.logprobs[at]["token"])
    branch = turn.branch(at, alternative)

    prompt_ids = list(engine.inspect(turn.request).token_ids)
    generated = [t["token_id"] for t in turn.logprobs]
    forced = engine.tokenizer.encode(alternative, add_special_tokens=False)
    assert branch.request["prompt"] == prompt_ids + generated[:at] + forced
    assert branch.branched_from["turn"] is turn and branch.branched_from["at"] == at
    assert branch.branched_from["replaced"] == turn.logprobs[at]["token"]
    assert branch.branched_from["forced"] == alternative
    # The prompt cache kept the original turn: it serves the prompt and the reply up to the branch.
    assert branch.usage["cached_tokens"] >= len(prompt_ids) + at - 1
    assert branch.content and branch.request["max_tokens"] == 12 - at - 1
    # The continuation is what a fresh request with that prefix gives.
    engine.clear_prompt_cache()
    fresh = engine.completions({**branch.request, "logprobs": False})
    assert fresh["choices"][0]["text"] == branch.content
    assert fresh["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_branch_errors_are_one_sentence(smollm2_shell):
    turn = _turn_with_tokens(smollm2_shell, "branch-errors")
    last = len(turn.logprobs) - 1
    with pytest.raises(ValueError, match=rf"at must be a token position from 0 to {last}\."):
        turn.branch(last + 1, " Lyon")
    with pytest.raises(ValueError, match=r"is \d+ tokens, not one; pick one token, e.g. one of the alternatives"):
        turn.branch(2, " Lyon is the capital")
    with pytest.raises(ValueError, match=r"holds a lone surrogate, which is no text"):
        turn.branch(2, "\ud800")
    result = smollm2_shell.run_cell(f"%%chat --new --session branch-plain --max-tokens 3\n{PARIS}")
    assert result.success
    with pytest.raises(ValueError, match="run the cell with %%chat --tokens"):
        smollm2_shell.user_ns["_"].branch(0, " Lyon")


def test_the_branch_note_shows_control_characters_of_the_tokens_as_symbols():
    """The tokens are the model's: an escape sequence in them must not drive the terminal
    the note is printed to, nor a lone surrogate fail the output."""
    from jupyter_client.session import json_packer

    from mlx_notebook.branch import branch_note

    note = branch_note({"at": 2, "replaced": "\x1b[2J", "forced": "\x1b]0;pwned\x07",
                        "forced_id": 5, "prefix": "Hi \u202e\ud83d"})
    json_packer(note)
    assert "\x1b" not in note["text/plain"] and "\u202e" not in note["text/plain"]
    assert note["text/plain"].startswith("Branch at token 2: Hi \\u202e\\ud83d[␛]0;pwned␇]")
