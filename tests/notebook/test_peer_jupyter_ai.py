"""jupyter-ai's magic tests, ported as ours.

Ported from jupyterlab/jupyter-ai ``packages/jupyter-ai-magics/jupyter_ai_magics/tests/test_magics.py``
(the versions the index holds: configured aliases in ``%ai list``, the default model of a bare
``%%ai``, a model named on the line, ``%ai error``, the ``max_history`` window and the returned
Markdown with its metadata, ``%ai reset``) and jupyter-ai-contrib/jupyter-ai-magic-commands
``jupyter_ai_magic_commands/tests/test_magics.py`` (the same, plus an alias whose API key is read
from the environment). Their ``test_utils.py`` is skipped upstream and has no counterpart here;
jupyter-ai has no ``test_parsers.py``, so what ``parsers.py`` and ``magics.py`` do (help, bad
flags, ``--format``, ``{name}`` interpolation with ``In``/``Out``, an empty cell, an unknown model,
alias names) is ported from the behaviour those modules define.

Each test asserts what the user of our magics sees: the text a cell prints, the one-line error,
the request the model got and the reply the tiny reasoner gives to its scripted questions.
"""

from __future__ import annotations

import secrets

import pytest

from conftest import _shell, fails_with
from mlx_notebook.display import turn_mimebundle
from mlx_notebook.engine.models._store import ALIASES
from mlx_notebook.turn import Turn

QUESTION = "What is 17 + 25?"  # the tiny reasoner answers "17 + 25 = 42." (its scripts)
ANSWER = "17 + 25 = 42."
NO_TOOLS = "--tools none"  # the scripted prompts offer no tools, whatever another test registered


@pytest.fixture(scope="module")
def shell(tiny_reasoner_path):
    """A shell of this module's own (its %mlx config and cell numbers are touched here)."""
    shell = _shell()
    result = shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress")
    assert result.success, result.error_in_exec
    yield shell
    shell.run_line_magic("unload_ext", "mlx_notebook")


def run(shell, source: str, capsys):
    """Run a cell as a notebook does (numbered, in ``In``/``Out``); return (result, stdout)."""
    capsys.readouterr()
    result = shell.run_cell(source, store_history=True)
    return result, capsys.readouterr().out


def ok(shell, source: str, capsys):
    result, out = run(shell, source, capsys)
    assert result.success, result.error_in_exec
    return result.result, out


def model_name(shell) -> str:
    return shell.magics_manager.registry["MlxMagics"].engine.model_info.name


def sent(turn) -> str:
    """The user message the model got."""
    return turn.request["messages"][-1]["content"]


# ------------------------------------------------------------------ test_magics.py, test by test

def test_models_loaded_under_a_name_are_listed_beside_the_default(shell, tiny_reasoner_path, capsys):
    # Theirs: a configured alias shows in %ai list. Ours: a model loaded under a name shows
    # in %mlx status; loading the name again replaces it (their %ai update), %mlx unload
    # NAME frees it (their %ai delete).
    for _ in range(2):
        ok(shell, f"%load_model {tiny_reasoner_path} --no-progress --name helper", capsys)
    _, out = ok(shell, "%mlx status", capsys)
    name = shell.magics_manager.registry["MlxMagics"].named_engines["helper"].model_info.name
    assert out.endswith("named models (%%chat --compare model=NAME):\n"
                        f"  helper: {name}, healthy, 0 active requests\n")
    _, out = ok(shell, "%mlx unload helper", capsys)
    assert out == f"Unloaded {name} ('helper').\n"
    _, out = ok(shell, "%mlx status", capsys)
    assert "named models" not in out and "engine: healthy" in out


def test_the_help_names_every_model_alias_the_unknown_model_error_offers(shell, capsys):
    # Theirs: an unknown model ID says "run %ai list" to see the models. Ours: %load_model?
    # and the error both name the aliases, and the loaded model is kept.
    capsys.readouterr()
    shell.run_cell("%load_model?")
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(alias in help_text for alias in ALIASES)
    fails_with(shell, "%load_model gpt-4o --no-progress",
               f"%load_model: unknown model 'gpt-4o': use an alias ({', '.join(ALIASES)}), a "
               ".gguf file, an mlx-lm model directory or a Hugging Face repo id.", capsys)
    turn, _ = ok(shell, f"%%chat --new --session jai-kept {NO_TOOLS}\n{QUESTION}", capsys)
    assert turn.text == ANSWER


def test_a_bare_cell_runs_on_the_loaded_model_with_the_configured_defaults(shell, capsys):
    # Theirs: %%ai with an empty line uses default_language_model from the config. Ours: the
    # loaded model, with %mlx config's defaults; a flag on the cell wins over its default.
    ok(shell, "%mlx config max_tokens=200 temperature=0", capsys)
    try:
        turn, _ = ok(shell, f"%%chat --new --session jai-default {NO_TOOLS}\n{QUESTION}", capsys)
        assert (turn.model, turn.text) == (model_name(shell), ANSWER)
        assert turn.request["max_tokens"] == 200 and turn.request["temperature"] == 0
        assert turn.metadata()["model"] == model_name(shell)
        turn, _ = ok(shell, f"%%chat --session jai-default --max-tokens 2 {NO_TOOLS}\nHi", capsys)
        assert turn.request["max_tokens"] == 2 and turn.usage.completion_tokens == 2
    finally:
        ok(shell, "%mlx config max_tokens= temperature=", capsys)


def test_every_earlier_exchange_is_sent_and_the_reply_is_markdown_with_its_metadata(shell, capsys):
    # Theirs: max_history keeps the last N exchanges. Ours on purpose: the whole session is
    # sent (the prompt cache makes the resent part cheap; past the context, the error says
    # --new or %mlx reset).
    first, _ = ok(shell, f"%%chat --new --session jai-history {NO_TOOLS}\n{QUESTION}", capsys)
    second, _ = ok(shell, f"%%chat --session jai-history {NO_TOOLS}\nNow double it.", capsys)
    assert (first.text, second.text) == (ANSWER, "Doubled, it is 84.")  # it read the first turn
    assert second.usage.cached_tokens > 0
    third, _ = ok(shell, f"%%chat --session jai-history --max-tokens 2 {NO_TOOLS}\nAgain.", capsys)
    assert [m["role"] for m in third.request["messages"]] == ["user", "assistant"] * 2 + ["user"]
    assert [m["content"] for m in third.request["messages"][::2]] == [QUESTION, "Now double it.",
                                                                      "Again."]
    # Theirs returns Markdown(reply, metadata={"jupyter_ai": {model_id, provider_id}}).
    data, metadata = turn_mimebundle(second)
    assert "Doubled, it is 84." in data["text/markdown"]
    assert "<p>Doubled, it is 84.</p>" in data["text/html"]
    assert data["text/plain"].splitlines()[-2:] == [
        "Doubled, it is 84.",
        f"[stop, {second.usage.prompt_tokens} prompt tokens ({second.usage.cached_tokens} cached), "
        f"{second.usage.completion_tokens} completion tokens]"]
    assert (metadata["mlx_notebook"]["model"], metadata["mlx_notebook"]["session"]) == (
        model_name(shell), "jai-history")


def test_reset_forgets_the_turns_and_the_system_prompt(shell, capsys):
    # Theirs: %ai reset empties the transcript (and %%ai -r did for one cell). Ours: %mlx
    # reset SESSION, and --new for one cell.
    turn, _ = ok(shell, f"%%chat --new --session jai-reset --system 'You are a terse pirate.' "
                        f"{NO_TOOLS}\nGreet me.", capsys)
    assert turn.text == "Ahoy, matey!"
    _, out = ok(shell, "%mlx reset jai-reset", capsys)
    assert out == "Session 'jai-reset' is empty again.\n"
    _, out = ok(shell, "%mlx history jai-reset", capsys)
    assert out == "session 'jai-reset'\n"
    turn, _ = ok(shell, f"%%chat --session jai-reset --max-tokens 1 {NO_TOOLS}\nGreet me.", capsys)
    assert turn.request["messages"] == [{"role": "user", "content": "Greet me."}]
    turn, _ = ok(shell, f"%%chat --session jai-reset --new --max-tokens 1 {NO_TOOLS}\nHi", capsys)
    assert turn.request["messages"] == [{"role": "user", "content": "Hi"}]


def test_reset_before_any_chat_succeeds(bare_shell, capsys):
    # Theirs: %ai reset always works. A notebook that opens with %mlx reset must run on a
    # fresh kernel, where the default session exists only once a cell has chatted.
    _, out = ok(bare_shell, "%mlx reset", capsys)
    assert out == "Session 'default' is empty: nothing has been said in it yet.\n"
    _, out = ok(bare_shell, "%mlx history", capsys)
    assert out == "session 'default'\n"
    _, out = ok(bare_shell, "%mlx sessions", capsys)
    assert out == "No sessions yet; %%chat starts 'default'.\n"  # reading it made none
    # A session named on the line is not the default: a typo still says so.
    fails_with(bare_shell, "%mlx reset defualt",
               "%mlx reset: there is no session named 'defualt' (sessions: none yet).", capsys)
    # The session %mlx config names is, before its first cell, as empty as 'default' is.
    ok(bare_shell, "%mlx config session=notes", capsys)
    try:
        _, out = ok(bare_shell, "%mlx reset", capsys)
        assert out == "Session 'notes' is empty: nothing has been said in it yet.\n"
        _, out = ok(bare_shell, "%mlx history", capsys)
        assert out == "session 'notes'\n"
    finally:
        ok(bare_shell, "%mlx config session=", capsys)


def test_an_api_key_held_in_a_variable_reaches_the_server(shell, bare_shell, capsys):
    # Theirs: an alias names the environment variable its API key is read from. Ours: the
    # key goes to %load_model --remote, whose line expands $name, so the notebook need not
    # hold the key itself; no output shows it.
    token = secrets.token_hex(16)
    listener, _ = ok(shell, f"%mlx serve --port 0 --token {token}", capsys)
    try:
        bare_shell.user_ns["key_from_env"] = token
        _, out = ok(bare_shell, f"%load_model --remote {listener.url} --api-key $key_from_env", capsys)
        turn, shown = ok(bare_shell, f"%%chat --new --session jai-remote {NO_TOOLS}\n{QUESTION}", capsys)
        assert turn.text == ANSWER
        _, status = ok(bare_shell, "%mlx status", capsys)
        assert token not in out + shown + status
        bare_shell.user_ns["key_from_env"] = "wrong"
        fails_with(bare_shell, f"%load_model --remote {listener.url} --api-key $key_from_env",
                   f"%load_model: the server at {listener.url} refused the API key (HTTP 401); "
                   "pass the right one with --api-key.", capsys)
    finally:
        ok(shell, "%mlx serve --stop", capsys)


# Not ported from test_magics.py: %ai error (explain the last error; we have no counterpart),
# and the model named on a %%ai line (ours is %%chat --compare model=NAME, tested in
# test_compare_models.py, as is an unknown name there).


# ---------------------------------------------- parsers.py and magics.py: what a user types wrong

@pytest.mark.parametrize("source, message", [
    # Their -f/--format picks a display; ours has no such flag (--json asks for JSON).
    ("%%chat -f json\nHi", "%%chat: unrecognized arguments: -f json; see %%chat? for the options."),
    # Their --help prints the help; ours on purpose keeps IPython's ?, and says so.
    ("%%chat --help\nHi", "%%chat: unrecognized arguments: --help; see %%chat? for the options."),
    # Their click.Choice for --format; ours for --dtype.
    ("%load_model --dtype float8", "%load_model: argument --dtype: invalid choice: 'float8' "
                                   "(choose from 'auto', 'keep', 'float32', 'bfloat16'); see "
                                   "%load_model? for the options."),
    # Their --model-parameters must be valid JSON; ours --logit-bias must be biases.
    ("%%chat --logit-bias '{\"1\": oops}'\nHi",
     "%%chat: argument --logit-bias: '{\"1\": oops}' is not a logit bias; write TOKEN_ID=BIAS "
     "pairs like 1234=-100,42=5; see %%chat? for the options."),
    # Their %ai list: ours has no list subcommand, and the error lists the ones there are.
    ("%mlx list", "%mlx: unknown subcommand 'list'; use one of status, serve, unload, cache, "
                  "render, trace, sessions, history, reset, config, tools, panel, help."),
    ("%mlx reset a b", "%mlx reset: unrecognized arguments: b; see %mlx help reset for the options."),
    # Their alias names: ASCII letters, digits, - _ . and no command name. Ours: a Python name.
    ("%load_model tiny-reasoner --name 'a b'", "%load_model: 'a b' cannot name a model; use a "
                                               "Python-style name other than 'default' (e.g. --name b)."),
    # Their %ai delete of a missing alias: "There is no alias called x".
    ("%mlx unload helper", "%mlx unload: no model is loaded as 'helper'; %mlx status lists the "
                           "loaded ones."),
    # Their %%ai without a loaded provider's key: ours without a model.
    ("%%chat\nHi", "%%chat: no model is loaded; run %load_model first (no argument loads the "
                   "default model)."),
])
def test_mistakes_fail_the_cell_with_one_sentence(bare_shell, capsys, source, message):
    # Theirs print a ValueError and the cell succeeds; ours fail it, so Run All stops there.
    fails_with(bare_shell, source, message, capsys)


def test_chat_help_is_ipythons_question_mark(bare_shell, capsys):
    capsys.readouterr()
    bare_shell.run_cell("%%chat?")
    out = capsys.readouterr().out
    assert "%%chat [--system TEXT]" in out and "Send the cell as the next user message" in out
    assert "--json [TYPE]" in out and "Sampling (unset flags keep the engine's defaults)" in out


@pytest.mark.parametrize("magic", ["%%chat", "%%complete"])
def test_a_cell_of_only_whitespace_is_refused_and_starts_no_session(shell, capsys, magic):
    # Theirs: a %%ai with no prompt falls through to the line magic and its error.
    fails_with(shell, f"{magic} --session jai-empty\n  \n\t\n" if magic == "%%chat" else f"{magic}\n \n",
               f"{magic}: the cell is empty; write the message below the {magic} line.", capsys)
    assert "jai-empty" not in shell.magics_manager.registry["MlxMagics"].sessions


# ---------------------------------------------------------- the format options (their -f FORMAT)

def test_json_asks_the_engine_for_json_and_reads_the_answer(shell, capsys):
    # Theirs: -f json parses the reply with json.loads into a JSON display. Ours: --json
    # constrains decoding to JSON (a type's schema) and _.parsed reads the answer as it.
    turn, _ = ok(shell, f"%%chat --new --session jai-json --json bool --no-think --max-tokens 8 "
                        f"{NO_TOOLS}\nIs 17 + 25 = 42?", capsys)
    assert turn.request["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "bool", "schema": {"type": "boolean"}}}
    assert turn.parsed in (True, False) and turn.content.strip() in ("true", "false")
    turn, _ = ok(shell, f"%%chat --new --session jai-json --json --max-tokens 1 {NO_TOOLS}\nHi", capsys)
    assert turn.request["response_format"] == {"type": "json_object"}


def test_html_in_a_reply_is_shown_as_text_and_math_is_left_for_mathjax():
    # Theirs: -f html displays the reply as HTML, -f math as LaTeX. Ours on purpose: a reply
    # is Markdown; HTML a model wrote is shown, not run; math keeps delimiters MathJax reads.
    turn = Turn(model="tiny-reasoner", session="jai-html", request={}, reasoning="", tool_calls=[],
                content="<b onclick=alert(1)>bold</b> and $x^2$", finish_reason="stop")
    data, _ = turn_mimebundle(turn)
    assert "&lt;b onclick=alert(1)&gt;bold&lt;/b&gt;" in data["text/html"] and "<b " not in data["text/html"]
    assert '<span class="math inline">\\(x^2\\)</span>' in data["text/html"]
    assert "<b " not in data["text/markdown"] and "bold" in data["text/markdown"]
    assert "$x^2$" in data["text/markdown"]


# Not ported: -f code (the reply into a new cell), -f image, --region-name/--request-schema/
# --response-path (SageMaker), %ai register of a LangChain chain, %ai version, the provider
# table with its environment variables, and --eval (jupyter-ai-magic-commands).


# ------------------------------------------------ {name} interpolation, In and Out

def test_names_are_replaced_once_and_only_in_the_cell(shell, capsys):
    shell.user_ns.update(a=17, b=25, doc='{"sum": "{a}"}')
    turn, _ = ok(shell, f"%%chat --new --session jai-interp {NO_TOOLS}\nWhat is {{a}} + {{b}}?", capsys)
    assert (sent(turn), turn.text) == (QUESTION, ANSWER)
    # Theirs formats twice (a value's own braces expand) and IPython expands their line.
    # Ours: one pass over the cell; the line is sent verbatim.
    turn, _ = ok(shell, f"%%chat --new --session jai-interp --system {{a}} --max-tokens 1 {NO_TOOLS}\n"
                        "{doc} {{a}}", capsys)
    assert sent(turn) == '{"sum": "{a}"} {a}'
    assert turn.request["messages"][0] == {"role": "system", "content": "{a}"}
    turn, _ = ok(shell, "%%complete --max-tokens 1\n{a} + {b} =", capsys)
    assert turn.request["prompt"] == "17 + 25 ="


def test_an_unknown_name_fails_where_theirs_is_sent_as_written(shell, capsys):
    # Theirs leaves an undefined {c} in the prompt without a word; ours on purpose names
    # the fix, and --no-interpolate (on the cell or in %mlx config) sends braces as written.
    fails_with(shell, "%%chat --session jai-unknown\nWhat is {c}?",
               "%%chat: name 'c' in '{c}' is not defined in the notebook; define it, write "
               "'{{c}}' for literal braces, or use --no-interpolate.", capsys)
    turn, _ = ok(shell, f"%%chat --new --session jai-unknown --no-interpolate --max-tokens 1 "
                        f"{NO_TOOLS}\nWhat is {{c}}?", capsys)
    assert sent(turn) == "What is {c}?"
    ok(shell, "%mlx config no_interpolate=true", capsys)
    try:
        turn, _ = ok(shell, f"%%chat --session jai-unknown --max-tokens 1 {NO_TOOLS}\n{{c}} }}", capsys)
        assert sent(turn) == "{c} }"
    finally:
        ok(shell, "%mlx config no_interpolate=", capsys)


def test_earlier_cells_input_and_output_are_reachable_by_ipythons_names(shell, capsys):
    # Theirs: {In[3]} and {Out[3]}. Ours: IPython's own names for them, {_i3} and {_3}.
    ok(shell, f"question = {QUESTION!r}", capsys)
    asked = shell.execution_count - 1
    ok(shell, "question", capsys)
    shown = shell.execution_count - 1
    turn, _ = ok(shell, f"%%chat --new --session jai-io {NO_TOOLS}\n{{_{shown}}}", capsys)
    assert (sent(turn), turn.text) == (QUESTION, ANSWER)
    chatted = shell.execution_count - 1
    turn, _ = ok(shell, f"%%chat --new --session jai-io --max-tokens 1 {NO_TOOLS}\n"
                        f"{{_i{asked}}} gave: {{_{chatted}}}", capsys)
    # A %%chat cell's output is its reply: that is what goes.
    assert sent(turn) == f"question = {QUESTION!r} gave: {ANSWER}"
    # {_i} and {_}: the cell before, as IPython names it.
    before = f"%%chat --new --session jai-io --max-tokens 1 {NO_TOOLS}\nHi"
    previous, _ = ok(shell, before, capsys)
    turn, _ = ok(shell, f"%%chat --new --session jai-io --max-tokens 1 {NO_TOOLS}\n{{_i}} | {{_}}", capsys)
    assert sent(turn) == f"{before} | {previous.text}"


@pytest.mark.parametrize("field, name", [("In[{n}]", "_i{n}"), ("Out[{n}]", "_{n}")])
def test_their_in_and_out_references_name_ours(shell, capsys, field, name):
    ok(shell, "6 * 7", capsys)
    n = shell.execution_count - 1
    field, name = field.format(n=n), name.format(n=n)
    fails_with(shell, f"%%chat --session jai-io\nAs before: {{{field}}}",
               f"%%chat: '{{{field}}}' at line 1, column 12 indexes, and a placeholder is a name; "
               f"write {{{name}}}, IPython's name for {field}, or use --no-interpolate.", capsys)
    turn, _ = ok(shell, f"%%chat --new --session jai-io --max-tokens 1 {NO_TOOLS}\n{{{name}}}", capsys)
    assert sent(turn) == ("6 * 7" if field.startswith("In") else "42")


def test_a_comparison_interpolates_as_both_replies_under_their_labels(shell, capsys):
    comparison, _ = ok(shell, f"%%chat --new --session jai-cmp --compare max_tokens=200 "
                              f"'max_tokens=200 seed=1' {NO_TOOLS}\n{QUESTION}", capsys)
    assert [side.text for side in comparison.sides] == [ANSWER, ANSWER]
    turn, _ = ok(shell, f"%%chat --new --session jai-cmp --max-tokens 1 {NO_TOOLS}\nWhich is right? {{_}}",
                 capsys)
    assert sent(turn) == (f"Which is right? --- max_tokens=200 ---\n{ANSWER}\n\n"
                          f"--- max_tokens=200 seed=1 ---\n{ANSWER}")
    assert str(comparison) == sent(turn).removeprefix("Which is right? ")
