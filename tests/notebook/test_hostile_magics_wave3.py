"""The magics given what a newcomer types wrong: each mistake fails with the one line that
names the fix (no traceback), and the line fits the case (a completion, a model loaded only
under a name, a ``--json`` type the line's splitting took apart)."""

from __future__ import annotations

import pytest

from conftest import fails_with
from mlx_notebook.tools import ToolError, answer_schema

pytestmark = pytest.mark.model

TOO_LONG = "x " * 3000  # about 6,000 tokens: past the tiny reasoner's 2,048


# -- a prompt past the context: the advice fits what the cell can cut -------------------------

def test_a_completion_past_the_context_speaks_of_the_cell_not_a_conversation(reasoner_shell, capsys):
    fails_with(reasoner_shell, f"%%complete\n{TOO_LONG}",
               "%%complete: the prompt of 6000 tokens is longer than the model's context length "
               "of 2048 tokens; shorten the cell's text.", capsys)


# -- a model loaded only under a name ---------------------------------------------------------

@pytest.fixture
def named_only_shell(bare_shell, tiny_reasoner_path):
    result = bare_shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress --name b")
    assert result.success, result.error_in_exec
    return bare_shell


def test_a_cell_with_only_a_named_model_says_there_is_no_default_rather_than_no_model(
        named_only_shell, capsys):
    # %mlx status lists 'b': "no model is loaded" would contradict it.
    fails_with(named_only_shell, "%%chat\nhi",
               "%%chat: no default model is loaded, only 'b' (for %%chat --compare model=NAME); "
               "run %load_model SPEC without --name to load the default.", capsys)
    fails_with(named_only_shell, "%mlx cache",
               "%mlx cache: no default model is loaded, only 'b' (for %%chat --compare "
               "model=NAME); run %load_model SPEC without --name to load the default.", capsys)


def test_unloading_with_only_a_named_model_names_the_one_to_free(named_only_shell, capsys):
    fails_with(named_only_shell, "%mlx unload",
               "%mlx unload: no default model is loaded; name the one to free, e.g. "
               "%mlx unload b (loaded with --name: b).", capsys)
    assert named_only_shell.run_cell("%mlx unload b").success  # and that line works


# -- --json TYPE written as Python, on a line split the shell's way ---------------------------

@pytest.mark.parametrize("written", ["tuple[int, str]", "Literal[1, 'a', None]"])
def test_a_json_type_with_a_space_says_to_quote_it(reasoner_shell, written, capsys):
    reasoner_shell.run_cell("from typing import Literal")
    quoted = f'"{written}"'
    fails_with(reasoner_shell, f"%%chat --json {written} --max-tokens 5 --new --session w3-json\nhi",
               f"%%chat: --json {written}: the line splits at spaces, so the type needs quotes: "
               f"--json {quoted}.", capsys)


def test_a_json_type_whose_quotes_the_line_took_off_says_to_quote_the_whole_type(
        reasoner_shell, capsys):
    reasoner_shell.run_cell("from typing import Literal")
    fails_with(reasoner_shell, "%%chat --json Literal['a','b'] --max-tokens 5 --new --session w3-json\nhi",
               "%%chat: --json Literal[a,b]: NameError: name 'a' is not defined; the line's "
               "quotes come off, so quote the whole type: --json \"Literal['a','b']\".", capsys)


def test_the_quoted_json_type_then_works(reasoner_shell):
    reasoner_shell.run_cell("from typing import Literal")
    result = reasoner_shell.run_cell(
        "%%chat --json \"Literal['a', 'b']\" --no-think --max-tokens 10 --new --session w3-json\nhi")
    assert result.success, result.error_in_exec
    assert reasoner_shell.user_ns["_"].parsed in ("a", "b")


def test_a_schema_dict_written_on_the_line_without_its_quotes_is_refused_by_what_went_wrong(
        reasoner_shell, capsys):
    # {'type':'object'} arrives as {type:object}: a dict keyed by the builtin ``type``.
    fails_with(reasoner_shell, "%%chat --json {'type':'object'} --max-tokens 5 --new --session w3-json\nhi",
               "%%chat: --json {type:object}: the schema dict is not JSON (keys must be str, int, "
               "float, bool or None, not type); the line's quotes come off, so quote the whole "
               "type: --json \"{'type':'object'}\".", capsys)


def test_a_schema_dict_from_the_notebook_that_is_not_json_says_so(reasoner_shell, capsys):
    reasoner_shell.run_cell("w3_schema = {'type': 'number', 'minimum': float('nan')}")
    fails_with(reasoner_shell, "%%chat --json w3_schema --max-tokens 5 --new --session w3-json\nhi",
               "%%chat: --json w3_schema: the schema dict is not JSON (Out of range float values "
               "are not JSON compliant).", capsys)


def test_answer_schema_refuses_a_dict_that_is_not_json():
    with pytest.raises(ToolError, match=r"^the schema dict is not JSON \(Object of type type is "
                                        r"not JSON serializable\)$"):
        answer_schema({"type": object})


# -- --tools NAMES -------------------------------------------------------------------------------

def test_tools_that_name_nothing_fail_rather_than_offer_none(reasoner_shell, capsys):
    for written in ("','", "''", "' , '"):
        shown = repr(written.strip("'"))
        fails_with(reasoner_shell, f"%%chat --tools {written} --max-tokens 4\nhi",
                   f"%%chat: --tools {shown} names no function; write --tools f,g (or --tools "
                   "none to offer no tools).", capsys)


def test_a_dotted_tool_name_is_looked_up_and_offered_under_the_functions_own_name(
        reasoner_shell, capsys):
    reasoner_shell.run_cell(
        "class Kit:\n"
        "    def add(self, a: int, b: int) -> int:\n"
        "        '''Add two numbers.'''\n"
        "        return a + b\n"
        "    @staticmethod\n"
        "    def twice(x: int) -> int:\n"
        "        '''Double a number.'''\n"
        "        return 2 * x\n"
        "kit = Kit()")
    result = reasoner_shell.run_cell("%%chat --tools kit.add,Kit.twice --max-tokens 4 "
                                     "--new --session w3-tools\nhi")
    assert result.success, result.error_in_exec
    offered = [t["function"]["name"] for t in result.result.request["tools"]]
    assert offered == ["add", "twice"]
    fails_with(reasoner_shell, "%%chat --tools kit.nope --max-tokens 4\nhi",
               "%%chat: there is no function named 'kit.nope' in the notebook; define it or "
               "decorate it with @mlx_notebook.tool.", capsys)


# -- --think on a model whose template has no thinking switch ------------------------------------

def test_think_on_a_model_without_the_switch_says_once_that_it_changes_nothing(
        smollm2_shell, reasoner_shell, capsys):
    capsys.readouterr()
    for _ in range(2):
        result = smollm2_shell.run_cell("%%chat --no-think --max-tokens 2 --new --session w3-think\nHi.")
        assert result.success, result.error_in_exec
    out = capsys.readouterr().out
    assert out.count("chat template does not read enable_thinking, so --no-think changes "
                     "nothing for this model.") == 1
    # The tiny reasoner's template reads it: no note.
    assert reasoner_shell.run_cell("%%chat --think --max-tokens 2 --new --session w3-think\nHi.").success
    assert "enable_thinking" not in capsys.readouterr().out


# -- %reload_ext / %unload_ext -------------------------------------------------------------------

def test_reloading_the_extension_says_what_it_closed_and_dropped(bare_shell, tiny_reasoner_path,
                                                                 capsys):
    shell = bare_shell
    assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
    assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress --name b").success
    assert shell.run_cell("%%chat --max-tokens 2 --session one\nHi.").success
    assert shell.run_cell("%%chat --max-tokens 2 --session two\nHi.").success
    capsys.readouterr()
    shell.run_line_magic("reload_ext", "mlx_notebook")
    out = capsys.readouterr().out
    assert out.startswith("mlx_notebook unloaded: closed tiny-reasoner")
    assert out.endswith(" and 'b', dropped 2 chat sessions; %load_model starts again.\n")
    capsys.readouterr()
    shell.run_line_magic("unload_ext", "mlx_notebook")  # nothing loaded: nothing said
    assert capsys.readouterr().out == ""
