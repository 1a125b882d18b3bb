"""``%%chat --compare model=A model=B``: two loaded models answer one message side by side.

SmolLM2 is the default model of the shell; the tiny reasoner is loaded beside it with
``%load_model SPEC --name tiny``. Each side must say what its model says alone, the card must
name both models, and the replies part where their *texts* first differ (the two tokenizers cut
the same text differently, so token ids cannot be compared).
"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from mlx_notebook.compare import COMPARE_MIME_TYPE, comparison_mimebundle, first_text_divergence

PARIS = "What is the capital of France? Answer in one sentence."
SUM = "What is 17 + 25?"  # a scripted question of the tiny reasoner

pytestmark = pytest.mark.model


def _magics(shell):
    return shell.magics_manager.registry["MlxMagics"]


@pytest.fixture
def two_models(smollm2_shell, tiny_reasoner_path):
    """SmolLM2 as the default model and the tiny reasoner loaded beside it as 'tiny'."""
    result = smollm2_shell.run_cell(f"%load_model {tiny_reasoner_path} --name tiny --no-progress")
    assert result.success, result.error_in_exec
    yield smollm2_shell
    if "tiny" in _magics(smollm2_shell).named_engines:
        smollm2_shell.run_line_magic("mlx", "unload tiny")


def _solo(engine, text, max_tokens):
    body = {"messages": [{"role": "user", "content": text}], "max_tokens": max_tokens, "temperature": 0}
    return engine.chat_completions(body)["choices"][0]["message"]


def _tokens(*texts):
    return [{"token_id": i, "token": t} for i, t in enumerate(texts)]


@pytest.mark.parametrize("a, b, expected", [
    (_tokens("The", " cap", "ital"), _tokens("The", " capital"), (None, (None, None))),
    (_tokens("The", " cap", "ital", " is"), _tokens("The", " capital", " was"), (12, (3, 2))),
    (_tokens("Hi"), _tokens("Hi", "!"), (2, (None, 1))),  # one reply ended there
], ids=["same text, other tokens", "parts inside a token", "one ended"])
def test_two_tokenizers_part_where_the_text_differs(a, b, expected):
    assert first_text_divergence(a, b) == expected


def test_each_side_equals_its_model_alone_and_the_card_names_both(two_models):
    magics = _magics(two_models)
    default, tiny = magics.engine, magics.named_engines["tiny"]
    result = two_models.run_cell(f'%%chat --new --session cmp-models --max-tokens 120 '
                                 f'--compare "model=default temperature=0" "model=tiny temperature=0"\n{SUM}')
    assert result.success, result.error_in_exec
    comparison = two_models.user_ns["_"]
    a, b = comparison.sides
    assert a.content == _solo(default, SUM, 120)["content"]
    alone = _solo(tiny, SUM, 120)
    assert (b.reasoning.strip(), b.content) == (alone["reasoning"].strip(), alone["content"])
    assert b.reasoning and "42" in b.content  # the tiny reasoner reasons, then answers
    assert "smollm2" in a.model.lower()
    assert "tiny" in b.model.lower() and a.model != b.model
    # Two tokenizers: compared by text, each pane marks its own token.
    assert comparison.by == "text"
    joined = ["".join(t["token"] for t in side.logprobs) for side in comparison.sides]
    at = comparison.diverges_at
    assert joined[0][:at] == joined[1][:at] and joined[0][at:at + 1] != joined[1][at:at + 1]
    data, _ = comparison_mimebundle(comparison)
    assert a.model in data["text/html"] and b.model in data["text/html"]
    assert data["text/plain"].startswith(
        f"{a.model} and {b.model} cut text into different tokens, so the replies are compared by "
        f"text: they diverge at character {at}: token {comparison.marks[0]} ")
    assert data["text/html"].count("mlxnb-token mlxnb-diverge") == 2
    record = data[COMPARE_MIME_TYPE]
    assert record["by"] == "text" and record["marks"] == list(comparison.marks)
    assert [s["model"] for s in record["sides"]] == [a.model, b.model]


def test_a_side_branches_on_its_own_model(two_models):
    result = two_models.run_cell(f'%%chat --new --session cmp-branch --max-tokens 30 '
                                 f'--compare model=default model=tiny\n{SUM}')
    assert result.success, result.error_in_exec
    side = two_models.user_ns["_"].sides[1]
    other = next(t for t in side.logprobs[4].top_logprobs if t.token != side.logprobs[4].token).token
    branch = side.branch(4, other, max_tokens=5)
    assert branch.model == side.model  # the tiny reasoner's, not the default SmolLM2
    # Its engine kept the side's prompt and reply: everything before the branch point is cached.
    assert branch.usage.cached_tokens >= side.usage.prompt_tokens + 4


def test_the_same_model_on_both_sides_still_compares_tokens(two_models):
    result = two_models.run_cell('%%chat --new --session cmp-same --max-tokens 6 '
                                 f'--compare model=tiny "model=tiny temperature=0"\n{SUM}')
    assert result.success, result.error_in_exec
    comparison = two_models.user_ns["_"]
    assert comparison.by == "token" and comparison.diverges_at is None
    assert {side.model for side in comparison.sides} == {comparison.sides[0].model}


def test_an_unknown_model_name_is_one_sentence_naming_the_loaded_ones(two_models):
    result = two_models.run_cell(f'%%chat --compare model=default model=big\n{PARIS}')
    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec) == (
        "%%chat: no model is loaded as 'big' (loaded: default, tiny); "
        "load one with %load_model SPEC --name big.")


def test_a_named_model_leaves_the_default_answering(two_models, capsys):
    magics = _magics(two_models)
    result = two_models.run_cell(
        f"%%chat --new --session cmp-default --max-tokens 12 --temperature 0\n{PARIS}")
    assert result.success, result.error_in_exec
    turn = two_models.user_ns["_"]
    assert turn is result.result and "smollm2" in turn.model.lower()
    assert turn.text == "The capital of France is Paris."
    two_models.run_line_magic("mlx", "status")
    out = capsys.readouterr().out
    assert "named models" in out and "tiny:" in out
    # Loading the name again replaces that engine (the old one is closed), not the default.
    old = magics.named_engines["tiny"]
    default = magics.engine
    assert two_models.run_cell(f"%load_model {old.model_info.path} --name tiny --no-progress").success
    assert magics.named_engines["tiny"] is not old and not old.healthy
    assert magics.engine is default and default.healthy
    two_models.run_line_magic("mlx", "unload tiny")
    assert "tiny" not in magics.named_engines and magics.engine is default
    result = two_models.run_cell("%mlx unload tiny")
    assert isinstance(result.error_in_exec, UsageError)
    assert "no model is loaded as 'tiny'" in str(result.error_in_exec)


def test_default_cannot_be_a_loaded_name(two_models):
    result = two_models.run_cell("%load_model tiny-reasoner --name default")
    assert isinstance(result.error_in_exec, UsageError)
    assert "'default' cannot name a model" in str(result.error_in_exec)


def test_unloading_the_extension_closes_every_model(tiny_reasoner_path):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell()
    shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "mlx_notebook")
    for line in (f"{tiny_reasoner_path} --no-progress", f"{tiny_reasoner_path} --name b --no-progress"):
        assert shell.run_cell(f"%load_model {line}").success
    magics = _magics(shell)
    engines = [magics.engine, magics.named_engines["b"]]
    assert all(engine.healthy for engine in engines)
    shell.run_line_magic("unload_ext", "mlx_notebook")
    assert not any(engine.healthy for engine in engines)


def test_one_model_loaded_twice_is_compared_by_tokens(tiny_reasoner_path):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell()
    shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "mlx_notebook")
    try:
        for line in (f"{tiny_reasoner_path} --no-progress", f"{tiny_reasoner_path} --name b --no-progress"):
            assert shell.run_cell(f"%load_model {line}").success
        result = shell.run_cell(f"%%chat --max-tokens 6 --compare model=default model=b\n{SUM}")
        assert result.success, result.error_in_exec
        comparison = shell.user_ns["_"]
        assert comparison.by == "token" and comparison.diverges_at is None
        assert "cut text into different tokens" not in comparison_mimebundle(comparison)[0]["text/plain"]
    finally:
        shell.run_line_magic("unload_ext", "mlx_notebook")
