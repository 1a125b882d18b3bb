"""The Python API a researcher calls by hand, given wrong arguments and odd tools: one clear
sentence naming the argument, never a traceback from deep inside, and nothing that hangs."""

from __future__ import annotations

import pytest

from mlx_notebook import make_tool, tool
from mlx_notebook.tools import call_tool, registered_tools, unregister_tools


def _lookup(city: str) -> str:
    return city


# -- tools ------------------------------------------------------------------------------------

@pytest.mark.parametrize("argument", ["name", "description"])
def test_a_tool_name_or_description_that_is_not_text_is_refused_by_name(argument):
    with pytest.raises(TypeError) as error:
        tool(**{argument: 5})(_lookup)
    assert str(error.value) == f"tool({argument}=...) must be a string, not int."
    assert "_lookup" not in registered_tools()


def test_unregistering_one_name_given_as_text_removes_that_tool():
    tool(_lookup)
    assert unregister_tools("_lookup") == ["_lookup"]  # not its letters, one by one
    assert "_lookup" not in registered_tools()


def test_unregistering_something_that_is_not_names_says_what_it_takes():
    with pytest.raises(TypeError, match=r"^unregister_tools\(names\) takes a list of tool names "
                                        r"or None, not int\.$"):
        unregister_tools(5)


def test_a_generator_tool_gives_the_model_its_items_and_an_endless_one_does_not_hang():
    def countdown(n: int):
        yield from range(n, 0, -1)

    def forever():
        while True:
            yield "again"

    assert call_tool([make_tool(countdown)], "countdown", {"n": 3}) == ([3, 2, 1], None)
    result, error = call_tool([make_tool(forever)], "forever", {})
    assert error is None and len(result) == 1001
    assert result[-1] == "[forever yielded more than 1000 items; the rest were not read]"


def test_a_generator_tool_that_raises_midway_tells_the_model_why():
    def flaky():
        yield 1
        raise OSError("disk gone")

    assert call_tool([make_tool(flaky)], "flaky", {}) == (None, "OSError: disk gone")


# -- a turn's methods -------------------------------------------------------------------------

def _turn_with_tokens(shell, session: str):
    result = shell.run_cell(f"%%chat --new --session {session} --temp 0 --max-tokens 6 --tokens 2\nhello")
    assert result.success, result.error_in_exec
    return shell.user_ns["_"]


@pytest.fixture(scope="module")
def reasoner_turn(reasoner_shell):
    engine = reasoner_shell.magics_manager.registry["MlxMagics"].engine
    return _turn_with_tokens(reasoner_shell, "hostile-api"), engine


@pytest.mark.model
@pytest.mark.parametrize("token", [10**6, 2**40])
def test_branching_to_a_token_id_past_the_vocabulary_names_the_model_s_ids(reasoner_turn, token):
    turn, engine = reasoner_turn
    size = engine._limits.vocab_size
    with pytest.raises(ValueError) as error:
        turn.branch(0, token, engine=engine)
    assert str(error.value) == (f"token {token} is not a token id of this model: its ids run "
                                f"from 0 to {size - 1}.")


@pytest.mark.model
@pytest.mark.parametrize("max_tokens", [0, -1, "5", True, 2.5])
def test_a_branch_s_max_tokens_is_checked_by_its_python_name(reasoner_turn, max_tokens):
    turn, engine = reasoner_turn
    with pytest.raises(ValueError) as error:
        turn.branch(0, turn.logprobs[0]["token"], max_tokens=max_tokens, engine=engine)
    assert str(error.value) == (f"max_tokens must be a whole number of tokens, at least 1, not "
                                f"{max_tokens!r}.")


@pytest.mark.model
@pytest.mark.parametrize("path", [None, 5, ["a.json"]])
def test_a_fixture_path_that_is_not_a_path_is_refused_by_name(reasoner_turn, path):
    turn, _ = reasoner_turn
    with pytest.raises(TypeError) as error:
        turn.to_fixture(path)
    assert str(error.value) == (f"to_fixture(path): path must be a file path (a str or a Path), "
                                f"not {type(path).__name__}.")


@pytest.mark.model
def test_a_fixture_note_that_is_not_text_is_refused_by_name(reasoner_turn, tmp_path):
    turn, _ = reasoner_turn
    with pytest.raises(TypeError, match=r"^to_fixture\(note=\.\.\.\) must be a string, not int\.$"):
        turn.to_fixture(tmp_path / "x.json", note=5)
    assert not (tmp_path / "x.json").exists()
