"""The magics in real IPython shells: errors by their exact text, then SmolLM2 and the tiny reasoner.

Model-backed tests run real models through the engine (no mocks): SmolLM2 answers "Paris",
a follow-up reuses the prompt cache, the tiny reasoner's scripted tool conversation calls a
real Python function, and a KeyboardInterrupt raised into the cell's thread cancels a reply.
"""

from __future__ import annotations

import ctypes
import io
import html
import json
import threading
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from conftest import fails_with, magics_of, run
from mlx_notebook.engine import ContentDelta
from mlx_notebook.engine._errors import EngineDeadError
from mlx_notebook.magics import _parse
from mlx_notebook.options import split_line
from mlx_notebook.runner import ToolRoundsExceeded
from mlx_notebook.tools import make_tool
from mlx_notebook.turn import Turn

SCRIPTS = Path(__file__).parents[2] / "engine" / "models" / "tiny_reasoner" / "scripts.json"
PARIS = "What is the capital of France? Answer in one sentence."


def script(name: str) -> dict:
    return next(s for s in json.loads(SCRIPTS.read_text()) if s["name"] == name)


def answer(reply: str) -> str:
    return reply.split("</think>")[-1].strip()


# --------------------------------------------------------------------------- no model


@pytest.mark.parametrize(
    "source, message",
    [
        ("%%chat\nHello", "%%chat: no model is loaded; run %load_model first (no argument loads "
                          "the default model)."),
        ("%%complete\nOnce", "%%complete: no model is loaded; run %load_model first (no argument "
                             "loads the default model)."),
        ("%mlx cache", "%mlx cache: no model is loaded; run %load_model first (no argument loads "
                       "the default model)."),
        ("%mlx unload", "%mlx unload: no model is loaded, so there is nothing to unload."),
        ("%%chat --tempp 1\nHi", "%%chat: unrecognized arguments: --tempp 1; see %%chat? for the options."),
        ("%%chat --temperature hot\nHi", "%%chat: argument --temperature/--temp: invalid float "
                                         "value: 'hot'; see %%chat? for the options."),
        ('%%chat --system "unclosed\nHi', "%%chat: cannot split the options (No closing "
                                          "quotation); check the quotes."),
        ("%mlx history poetry", "%mlx history: there is no session named 'poetry' (sessions: none yet)."),
        ("%mlx reset poetry", "%mlx reset: there is no session named 'poetry' (sessions: none yet)."),
        ("%mlx frobnicate", "%mlx: unknown subcommand 'frobnicate'; use one of status, serve, unload, "
                            "cache, render, trace, sessions, history, reset, config, tools, panel, help."),
        ("%%chat --max-rounds 0\nHi", "%%chat: argument --max-rounds: must be a whole number "
                                       "of at least 1, not '0'; see %%chat? for the options."),
        ("%%chat --tokens 0\nHi", "%%chat: argument --tokens: must be a whole number of at "
                                   "least 1, not '0'; see %%chat? for the options."),
        ("%%chat --session ''\nHi", "%%chat: --session needs a name, e.g. --session notes."),
        ("%mlx status extra", "%mlx status: unrecognized arguments: extra; see %mlx help status "
                              "for the options."),
        ("%mlx help chat", "%mlx help: chat is a magic of its own, not an %mlx subcommand; "
                           "%%chat? shows its options."),
        ("%mlx config temperature", "%mlx config: 'temperature' is not KEY=VALUE; e.g. temperature=0.7."),
        ("%mlx config tempurature=1", "%mlx config: unknown key 'tempurature'; use one of "
                                      "confirm, frequency_penalty, logit_bias, max_rounds, max_tokens, "
                                      "min_p, no_interpolate, no_stream, presence_penalty, raw, "
                                      "repetition_penalty, seed, session, show_request, stop, system, "
                                      "temperature, think, think_budget, tokens, tools, top_k, top_p."),
        ("%mlx config top_k=many", "%mlx config top_k: argument --top-k: invalid int value: 'many'; "
                                   "see %mlx help config for the options."),
        ("%mlx trace", "%mlx trace: give text, a turn, or --fixture PATH (one of them)."),
        ("%mlx trace '<think>x'", "%mlx trace: give the parser family to trace text, e.g. --family qwen3."),
        ("%mlx trace x --family qwen3 --chunking 0", "%mlx trace: argument --chunking: '0' is not "
         "tokens, random, a size or a list like 1,3,7; see %mlx help trace for the options."),
        ("%mlx trace x --family qwen3 --chunking tokens", "%mlx trace: no model is loaded; run "
         "%load_model first (no argument loads the default model)."),
        ("%load_model no-such-model --no-progress",
         "%load_model: unknown model 'no-such-model': use an alias (smollm2-135m-instruct, "
         "tiny-reasoner), a .gguf file, an mlx-lm model directory or a Hugging Face repo id."),
        ("%load_model --chat-template /nonexistent.jinja",
         "%load_model: cannot read the chat template file /nonexistent.jinja (No such file or directory)."),
        ("%load_model --draft-model tiny-reasoner --max-kv-size 64",
         "%load_model: --draft-model cannot be combined with --max-kv-size: speculative decoding "
         "cuts rejected draft tokens back out of the KV cache, which a rotating cache cannot do."),
        ("%load_model --prompt-cache-bytes lots",
         "%load_model: argument --prompt-cache-bytes: 'lots' is not a size; write e.g. 512MB or "
         "2GiB; see %load_model? for the options."),
    ],
)
def test_mistakes_fail_the_cell_with_one_sentence(bare_shell, capsys, source, message):
    fails_with(bare_shell, source, message, capsys)


def test_chat_help_lists_every_flag(bare_shell, capsys):
    _, out, _ = run(bare_shell, "%%chat?", capsys)
    for flag in ["--temperature", "--temp", "--top-p", "--top-k", "--min-p", "--repetition-penalty",
                 "--presence-penalty", "--frequency-penalty", "--seed", "--max-tokens", "--stop",
                 "--logit-bias", "--system", "--think", "--no-think", "--tools", "--session",
                 "--new", "--no-stream", "--show-request", "--raw", "--no-interpolate",
                 "--confirm", "--tokens"]:
        assert f"  {flag}" in out or f", {flag}" in out, flag
    assert "%%chat [--system TEXT]" in out


def test_every_mlx_subcommand_has_help(bare_shell, capsys):
    _, out, _ = run(bare_shell, "%mlx help", capsys)
    for sub in ["status", "unload", "cache", "render", "trace", "sessions", "history", "reset",
                "config", "tools", "help"]:
        assert f"%mlx {sub}" in out
    _, out, _ = run(bare_shell, "%mlx help trace", capsys)
    assert out.startswith("%mlx trace [--family FAMILY]")
    _, out, _ = run(bare_shell, "%mlx status", capsys)
    assert out == "No model is loaded; run %load_model.\n"


def test_help_is_one_overview_of_every_magic_without_markup(bare_shell, capsys):
    _, overview, _ = run(bare_shell, "%mlx help", capsys)
    lines = overview.splitlines()
    for magic in ["%load_model", "%%chat", "%%complete", "%mlx status", "%mlx tools"]:
        (line,) = [line for line in lines if line.strip().startswith(magic + " ")]
        assert len(line.split(None, 2 if magic.startswith("%mlx") else 1)[-1]) > 20  # a summary
    assert "@mlx_notebook.tool" in overview and "def get_weather(city: str)" in overview
    # %mlx? shows the same overview; no magic's help shows reST markup.
    magics = magics_of(bare_shell)
    assert magics.mlx.__doc__ == overview.rstrip("\n") or magics.mlx.__doc__.strip() == overview.strip()
    for name in ["load_model", "chat", "complete", "mlx"]:
        doc = getattr(magics, name).__doc__
        assert "::" not in doc and "``" not in doc, name
    for sub in magics.subcommands:
        _, out, _ = run(bare_shell, f"%mlx help {sub}", capsys)
        assert "::" not in out and "``" not in out, sub


def test_mlx_tools_lists_and_removes_registered_tools(bare_shell, capsys):
    from mlx_notebook.tools import registered_tools, unregister_tools

    before = set(registered_tools())
    try:
        run(bare_shell, "import mlx_notebook\n@mlx_notebook.tool\ndef clock_time(city: str) -> str:\n"
                        "    \"\"\"The time in a city.\"\"\"\n    return '12:00'\n", capsys)
        _, out, _ = run(bare_shell, "%mlx tools", capsys)
        assert "  clock_time(city): The time in a city." in out.splitlines()
        fails_with(bare_shell, "%mlx tools --clear --remove clock_time",
                   "%mlx tools: give --clear (every tool) or --remove NAME ..., not both.", capsys)
        assert "clock_time" in registered_tools()  # nothing removed by the refused line
        fails_with(bare_shell, "%mlx tools --remove nope",
                   f"%mlx tools: no tool named 'nope' is registered (registered: "
                   f"{', '.join(sorted(before | {'clock_time'}))}).", capsys)
        _, out, _ = run(bare_shell, "%mlx tools --remove clock_time", capsys)
        left = len(before)
        assert out == f"Removed clock_time; {left} tool{'' if left == 1 else 's'} still offered.\n"
        assert "clock_time" not in registered_tools()
    finally:
        unregister_tools([name for name in registered_tools() if name not in before])


def test_config_sets_defaults_that_cell_flags_override(bare_shell, capsys):
    _, out, _ = run(bare_shell, '%mlx config temp=0.5 system="Be terse." think=false', capsys)
    assert out == "temperature: --temperature 0.5\nsystem: --system 'Be terse.'\nthink: --no-think\n"
    magics = magics_of(bare_shell)
    args = magics._chat_args("--temp 0.1", "%%chat", magics.chat)
    assert (args.temperature, args.system, args.think) == (0.1, "Be terse.", False)
    _, out, _ = run(bare_shell, "%mlx config temperature= system= think=", capsys)
    assert out == "No defaults set; every flag keeps the engine's default.\n"


def test_mlx_trace_runs_the_parser_debugger_on_a_variable(bare_shell, capsys):
    bare_shell.user_ns["reply"] = "<think>plan</think>Hi <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>"
    result, _, _ = run(bare_shell, "%mlx trace reply --family qwen3 --chunking 3", capsys)
    assert result.success, result.error_in_exec
    trace = result.result
    assert trace.family == "qwen3"
    error = _trace_error("klingon")
    assert error.startswith("Unknown parser family 'klingon'")
    fails_with(bare_shell, "%mlx trace reply --family klingon",
               "%mlx trace: u" + error[1:], capsys)  # (a sentence after the colon)
    # A name that is no variable is traced as text, and the cell says so (a typo went unseen).
    result, out, _ = run(bare_shell, "%mlx trace replly --family qwen3", capsys)
    assert result.success and result.result.text == "replly"
    assert out.startswith("'replly' is no variable in the notebook: traced as the text itself.\n")
    assert "is no variable" not in run(bare_shell, "%mlx trace reply --family qwen3", capsys)[1]
    fails_with(bare_shell, "%mlx trace reply --family qwen3 --chunking -1,2",
               "%mlx trace: argument --chunking: '-1,2' is not tokens, random, a size or a list "
               "like 1,3,7; see %mlx help trace for the options.", capsys)


def _trace_error(family: str) -> str:
    from mlx_notebook.engine import trace_text

    try:
        trace_text("x", family)
    except (KeyError, ValueError) as exc:
        return str(exc).strip("'")
    raise AssertionError("expected an unknown family to fail")


# --------------------------------------------------------------------------- SmolLM2


@pytest.mark.model
def test_chat_answers_paris_and_sends_only_the_flags_set(smollm2_shell, capsys):
    result, out, err = run(smollm2_shell, f"%%chat --session paris\n{PARIS}", capsys)
    assert result.success, err
    turn = result.result
    assert smollm2_shell.user_ns["_"] is turn
    assert "Paris" in turn.content
    assert out.startswith(turn.content.strip())  # streamed as plain text in a terminal shell
    # Unset flags stay out of the body: the engine's defaults apply.
    assert turn.request == {"messages": [{"role": "user", "content": PARIS}]}
    assert turn.finish_reason == "stop" and not turn.interrupted and turn.error is None
    assert turn.usage["prompt_tokens"] > 0 and turn.usage["completion_tokens"] > 0
    assert turn.timings["time_to_first_token"] > 0 and turn.timings["total_seconds"] > 0
    assert turn.chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in turn.chunks) == turn.content


@pytest.mark.model
def test_follow_up_sends_history_and_reuses_the_prompt_cache(smollm2_shell, capsys):
    run(smollm2_shell, f"%%chat --session cache --new --max-tokens 12\n{PARIS}", capsys)
    result, _, err = run(smollm2_shell, "%%chat --session cache --max-tokens 8\nAnd Germany?", capsys)
    assert result.success, err
    turn = result.result
    assert [m["role"] for m in turn.request["messages"]] == ["user", "assistant", "user"]
    assert turn.usage["cached_tokens"] > 0
    _, out, _ = run(smollm2_shell, "%mlx cache", capsys)
    assert f"hit: {turn.usage['cached_tokens']} of {turn.usage['prompt_tokens']} prompt tokens cached" in out
    _, out, _ = run(smollm2_shell, "%mlx history cache", capsys)
    assert "1. user: What is the capital of France?" in out and "2. user: And Germany?" in out


@pytest.mark.model
def test_interpolation_replaces_names_once_and_can_be_turned_off(smollm2_shell, capsys):
    smollm2_shell.user_ns.update(country="France", doc='{"a": {b}}')
    result, _, _ = run(smollm2_shell, "%%chat --new --session interp --max-tokens 1\n"
                                      "Capital of {country}? {{raw}} {doc}", capsys)
    assert result.result.request["messages"][-1]["content"] == 'Capital of France? {raw} {"a": {b}}'
    result, _, _ = run(smollm2_shell, "%%chat --new --session interp --max-tokens 1 --no-interpolate\n"
                                      "Capital of {country}?", capsys)
    assert result.result.request["messages"][-1]["content"] == "Capital of {country}?"
    fails_with(smollm2_shell, "%%chat --session interp\nCapital of {kountry}?",
               "%%chat: name 'kountry' in '{kountry}' is not defined in the notebook; define it, "
               "write '{{kountry}}' for literal braces, or use --no-interpolate.", capsys)


@pytest.mark.model
def test_flags_reach_the_body_under_their_server_names(smollm2_shell, capsys):
    source = ("%%chat --new --session flags --temp 0.7 --top-p 0.9 --top-k 40 --min-p 0.05 "
              "--repetition-penalty 1.1 --presence-penalty 0.2 --frequency-penalty 0.3 --seed 7 "
              "--max-tokens 2 --stop '. ' --stop '\\n' --logit-bias 504=-5 --system 'Be terse.' "
              "--show-request --raw --tokens 2\nName a fruit.")
    result, out, err = run(smollm2_shell, source, capsys)
    assert result.success, err
    turn = result.result
    assert turn.request == {
        "messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Name a fruit."}],
        "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1,
        "presence_penalty": 0.2, "frequency_penalty": 0.3, "seed": 7, "max_tokens": 2,
        "stop": [". ", "\n"], "logit_bias": {"504": -5.0}, "logprobs": True, "top_logprobs": 2,
    }
    assert out.startswith(json.dumps(turn.request, indent=2, ensure_ascii=False))  # --show-request
    assert "#  delta" in out and "finish_reason" in out  # --raw chunk table
    assert len(turn.logprobs) == turn.usage["completion_tokens"] == 2
    assert all(len(item["top_logprobs"]) == 2 for item in turn.logprobs)
    shown = turn.show_tokens()._repr_mimebundle_()["text/html"]
    assert all(html.escape(item["token"]) in shown for item in turn.logprobs)
    assert turn.metadata()["seed"] == 7
    fails_with(smollm2_shell, "%%chat --session flags --max-tokens 0\nHi",
               "%%chat: --max-tokens must be at least 1, got 0.", capsys)
    fails_with(smollm2_shell, "%%chat --session flags --tokens 30\nHi",
               "%%chat: --tokens must be at most 20, got 30.", capsys)


@pytest.mark.model
def test_no_stream_display_records_how_the_answer_was_made(smollm2_shell, capsys):
    with capture_output() as captured:
        result = smollm2_shell.run_cell("%%chat --new --session meta --no-stream --seed 3 --max-tokens 2\nHi")
    assert result.success, result.error_in_exec
    (output,) = [o for o in captured.outputs if "mlx_notebook" in (o.metadata or {})]
    meta = output.metadata["mlx_notebook"]
    turn = result.result
    assert meta["model"] == turn.model == magics_of(smollm2_shell).engine.model_info.name
    assert meta["options"]["seed"] == meta["seed"] == 3
    assert meta["usage"] == dict(turn.usage) and meta["timings"]["total_seconds"] > 0


@pytest.mark.model
def test_complete_continues_raw_text_without_a_template(smollm2_shell, capsys):
    result, out, err = run(smollm2_shell, "%%complete --max-tokens 3\nThe capital of France is", capsys)
    assert result.success, err
    turn = result.result
    assert turn.request == {"prompt": "The capital of France is", "max_tokens": 3}
    assert turn.usage["prompt_tokens"] == len(magics_of(smollm2_shell).engine.tokenizer.encode(
        "The capital of France is", add_special_tokens=False))
    assert turn.chunks[0]["object"] == "text_completion"
    assert turn.content.strip() and turn.content.strip() in out


@pytest.mark.model
def test_render_status_sessions_and_reset(smollm2_shell, capsys):
    run(smollm2_shell, "%%chat --new --session view --max-tokens 2\nHi", capsys)
    _, out, _ = run(smollm2_shell, "%mlx render view --message 'Next: 18 °C'", capsys)
    assert out.startswith("[[<|im_start|>]]")
    assert "Next: 18 °C[[<|im_end|>]]" in out and "tokens," in out  # a multi-byte character shows whole
    _, out, _ = run(smollm2_shell, "%mlx status", capsys)
    assert "engine: healthy" in out and "active requests: 0" in out
    _, out, _ = run(smollm2_shell, "%mlx sessions", capsys)
    assert "view: 1 turn, 1 sent as history" in out
    _, out, _ = run(smollm2_shell, "%mlx reset view", capsys)
    assert out == "Session 'view' is empty again.\n"
    fails_with(smollm2_shell, "%mlx render nosuch",
               "%mlx render: there is no session named 'nosuch' (sessions: "
               + ", ".join(sorted(s.name for s in magics_of(smollm2_shell).sessions)) + ").", capsys)


def _interrupt_after_tokens(monkeypatch, tokens: int, event_type=ContentDelta) -> threading.Thread:
    """Raise KeyboardInterrupt in the main thread, like a kernel interrupt, once the turn
    being streamed has shown ``tokens`` answer tokens (or events of ``event_type``)."""
    main = threading.main_thread().ident
    shown = threading.Event()
    apply = Turn.apply

    def counting_apply(turn, event):
        apply(turn, event)
        if isinstance(event, event_type):
            counting_apply.seen += 1
            if counting_apply.seen >= tokens:
                shown.set()

    counting_apply.seen = 0
    monkeypatch.setattr(Turn, "apply", counting_apply)

    def interrupt():
        if shown.wait(120):
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(main), ctypes.py_object(KeyboardInterrupt))

    thread = threading.Thread(target=interrupt, daemon=True)
    thread.start()
    return thread


@pytest.mark.model
def test_interrupt_cancels_the_reply_and_keeps_what_the_user_saw(smollm2_shell, capsys, monkeypatch):
    run(smollm2_shell, f"%%chat --new --session story --max-tokens 12\n{PARIS}", capsys)
    first = smollm2_shell.user_ns["_"]
    thread = _interrupt_after_tokens(monkeypatch, tokens=5)
    result, out, err = run(smollm2_shell, "%%chat --session story --max-tokens 400\n"
                                          "Tell me a very long story about a robot.", capsys)
    thread.join()
    # IPython's convention for an interrupt (the cell fails, Run All stops), no UsageError.
    assert type(result.error_in_exec) is KeyboardInterrupt
    assert str(result.error_in_exec) == ("%%chat stopped; the partial reply is kept (in _ and in "
                                         "the session's history; _.drop() removes it).")
    assert "UsageError" not in out + err
    turn = smollm2_shell.user_ns["_"]
    assert turn.interrupted and turn.finish_reason == "stopped" and turn.text.endswith("[stopped]")
    assert 0 < turn.usage["completion_tokens"] < 400 and turn.content.strip()
    # The terminal showed all the reply keeps, the text that came after the interrupt included.
    assert f"{turn.content.strip()} [stopped]" in out
    assert magics_of(smollm2_shell).engine.active_requests == 0
    # The next cell works and the whole conversation goes with it, the partial reply included.
    result, _, err = run(smollm2_shell, "%%chat --session story --max-tokens 2\nThanks.", capsys)
    assert result.success, err
    assert result.result.request["messages"][:-1] == [*first.messages(), *turn.messages()]
    assert {"role": "assistant", "content": turn.content} in result.result.request["messages"]
    # Dropped on purpose, the partial reply (and its question) leave the history.
    turn.drop()
    result, _, _ = run(smollm2_shell, "%%chat --session story --max-tokens 1\nGo on.", capsys)
    sent = result.result.request["messages"]
    assert {"role": "user", "content": "Tell me a very long story about a robot."} not in sent
    assert sent[:2] == first.messages()
    _, out, _ = run(smollm2_shell, "%mlx history story", capsys)
    assert "(not sent as history)" in out


@pytest.mark.model
def test_an_interrupted_compare_says_where_both_sides_are(smollm2_shell, capsys, monkeypatch):
    thread = _interrupt_after_tokens(monkeypatch, tokens=6)
    # Seeded, the sampled side runs past 150 tokens: unseeded, about one reply in fifteen
    # ends within 25 tokens, before a loaded machine's interrupt lands, and is not stopped.
    result, out, err = run(smollm2_shell, "%%chat --new --session duel --compare temperature=0 "
                                          "'temperature=1 seed=0' --max-tokens 400\nTell me a "
                                          "long story about a robot.", capsys)
    thread.join()
    assert type(result.error_in_exec) is KeyboardInterrupt
    assert str(result.error_in_exec) == (
        "%%chat --compare stopped; both partial replies are in _, and neither is in the "
        "session's history (_.choose(0) or _.choose(1) adds one).")
    comparison = smollm2_shell.user_ns["_"]
    assert all(side.interrupted for side in comparison.sides), [
        (side.error, side.finish_reason, side.interrupted, len(side.rounds)) for side in comparison.sides]
    assert magics_of(smollm2_shell).engine.active_requests == 0
    comparison.choose(0)  # and the conversation goes on from the side chosen
    result, _, err = run(smollm2_shell, "%%chat --session duel --max-tokens 2\nThanks.", capsys)
    assert result.success, err
    assert {"role": "assistant", "content": comparison.sides[0].content} in (
        result.result.request["messages"])


@pytest.mark.model
def test_interrupt_while_the_prompt_is_read_leaves_the_empty_turn_out_of_the_history(
        smollm2_shell, capsys, monkeypatch):
    from mlx_notebook.engine import PrefillProgress

    report = " ".join(f"Paragraph {i}: the harvest in valley {i} was {i * 7} tonnes." for i in range(150))
    thread = _interrupt_after_tokens(monkeypatch, tokens=1, event_type=PrefillProgress)
    result, _, _ = run(smollm2_shell, f"%%chat --new --session empty --max-tokens 50\n{report}", capsys)
    thread.join()
    assert type(result.error_in_exec) is KeyboardInterrupt
    assert str(result.error_in_exec) == ("%%chat stopped before the model wrote anything; the turn "
                                         "is in _ but not in the session's history (_.keep() adds it).")
    turn = smollm2_shell.user_ns["_"]
    assert turn.interrupted and turn.usage["completion_tokens"] == 0 and not turn.content
    monkeypatch.undo()
    result, _, err = run(smollm2_shell, "%%chat --session empty --max-tokens 1\nHi.", capsys)
    assert result.success, err
    assert result.result.request["messages"] == [{"role": "user", "content": "Hi."}]


@pytest.mark.model
def test_interrupted_completion_keeps_its_text_in_underscore_and_names_no_session(
        smollm2_shell, capsys, monkeypatch):
    thread = _interrupt_after_tokens(monkeypatch, tokens=3)
    result, _, _ = run(smollm2_shell, "%%complete --max-tokens 300\nOnce upon a time, a robot", capsys)
    thread.join()
    assert type(result.error_in_exec) is KeyboardInterrupt
    assert str(result.error_in_exec) == "%%complete stopped; the partial text is in _."
    turn = smollm2_shell.user_ns["_"]
    assert turn.interrupted and turn.content and turn.usage["completion_tokens"] < 300


class _StopAfter:
    """A terminal view whose user presses Stop after ``deltas`` pieces of the answer."""

    def __init__(self, view, deltas: int):
        self.view, self.deltas, self.stops = view, deltas, []

    def __getattr__(self, name):
        return getattr(self.view, name)

    def on_stop(self, callback):
        self.stops.append(callback)

    def handle(self, event):
        from mlx_notebook.engine import ContentDelta

        self.view.handle(event)
        if isinstance(event, ContentDelta):
            self.deltas -= 1
            if self.deltas == 0:
                for callback in self.stops:
                    # From another thread, as a comm message on a kernel subshell arrives.
                    threading.Thread(target=callback).start()


@pytest.mark.model
def test_stop_ends_the_cell_normally_and_keeps_the_partial_reply(smollm2_shell, capsys, monkeypatch):
    magics = magics_of(smollm2_shell)
    run(smollm2_shell, f"%%chat --new --session stopped --max-tokens 12\n{PARIS}", capsys)
    first = smollm2_shell.user_ns["_"]
    make_view = type(magics)._view
    monkeypatch.setattr(type(magics), "_view", lambda self, turn: _StopAfter(make_view(self, turn), 3))
    result, out, err = run(smollm2_shell, "%%chat --session stopped --max-tokens 300\n"
                                          "Tell me a very long story about a robot.", capsys)
    monkeypatch.undo()
    assert result.success and result.error_in_exec is None, err  # the user's choice, not a failure
    turn = result.result
    assert turn.interrupted and turn.finish_reason == "stopped" and turn.error is None
    assert 3 <= turn.usage["completion_tokens"] < 300 and turn.content.strip()
    assert "error" not in (out + err).lower() and "[stopped]" in out
    result, _, _ = run(smollm2_shell, "%%chat --session stopped --max-tokens 2\nGo on.", capsys)
    assert result.result.request["messages"][:-1] == [*first.messages(), *turn.messages()]


# --------------------------------------------------------------------------- tiny reasoner


WEATHER_TOOL = '''
calls = []

def get_weather(city: str):
    """{description}"""
    calls.append(city)
    if city not in ("Paris", "Tokyo", "Oslo", "Rome"):
        raise KeyError(city)
    return {{"city": city, "temperature_c": 18, "condition": "sunny"}}
'''


@pytest.fixture
def weather(reasoner_shell):
    tool = script("single_tool_call")["tools"][0]
    reasoner_shell.run_cell(WEATHER_TOOL.format(description=tool["function"]["description"]))
    # The schema from the signature and docstring is exactly the one the model was trained on.
    assert make_tool(reasoner_shell.user_ns["get_weather"]).schema() == tool
    return reasoner_shell.user_ns["calls"]


@pytest.mark.model
def test_tool_loop_calls_a_python_function_and_answers_from_its_result(reasoner_shell, weather, capsys):
    question = script("single_tool_call")["messages"][0]["content"]
    result, out, err = run(reasoner_shell, f"%%chat --new --session tools --tools get_weather\n{question}", capsys)
    assert result.success, err
    turn = result.result
    assert weather == ["Paris"]
    (call,) = turn.tool_calls
    assert (call["name"], call["arguments"], call["error"]) == ("get_weather", {"city": "Paris"}, None)
    assert call["result"] == {"city": "Paris", "temperature_c": 18, "condition": "sunny"}
    assert [r.finish_reason for r in turn.rounds] == ["tool_calls", "stop"]
    tool_message = turn.rounds[1].request["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": call["id"], "name": "get_weather",
                            "content": '{"city": "Paris", "temperature_c": 18, "condition": "sunny"}'}
    assert turn.content.strip() == answer(script("answer_from_tool_result")["reply"])
    assert '[tool call] get_weather({"city": "Paris"})' in out
    assert "[tool result] {'city': 'Paris', 'temperature_c': 18, 'condition': 'sunny'}" in out
    assert turn.usage["prompt_tokens"] == sum(r.usage["prompt_tokens"] for r in turn.rounds)
    assert turn.rounds[1].usage["cached_tokens"] > 0


@pytest.mark.model
def test_a_tool_result_past_the_context_names_the_tool_and_the_turn_stays_in_underscore(
        reasoner_shell, capsys):
    """The model ran and called a tool whose result (a short web page) does not fit the
    2,048-token context: the cell says which result did it (a fresh session would not help,
    the tool would run again) and the turn, its call and result included, is ``_``."""
    description = script("single_tool_call")["tools"][0]["function"]["description"]
    reasoner_shell.run_cell(
        f'def get_weather(city: str):\n    """{description}"""\n    return "sunny " * 2000')
    question = script("single_tool_call")["messages"][0]["content"]
    result, _, err = run(reasoner_shell, f"%%chat --new --session big --no-stream "
                                         f"--tools get_weather\n{question}", capsys)
    message = str(result.error_in_exec)
    assert message.startswith("%%chat: the prompt of ") and "longer than the model's context length" in message
    assert message.endswith(" once the tool results of round 1 were added (get_weather returned "
                            "12,000 characters); have the tools return less.")
    assert "--new" not in message and err == f"UsageError: {message}\n"
    turn = reasoner_shell.user_ns["_"]
    assert turn.error and turn.tool_calls[0]["result"] == "sunny " * 2000
    assert len(turn.rounds) == 1 and not turn.in_history


@pytest.mark.model
def test_decorated_tools_are_offered_without_naming_them(reasoner_shell, capsys, monkeypatch):
    import mlx_notebook.tools

    monkeypatch.setattr(mlx_notebook.tools, "_registry", {})  # @tool registers process-wide
    description = script("single_tool_call")["tools"][0]["function"]["description"]
    reasoner_shell.run_cell(
        "import mlx_notebook\nasked = []\n@mlx_notebook.tool\n"
        f'def get_weather(city: str):\n    """{description}"""\n    asked.append(city)\n'
        "    return {'city': city, 'temperature_c': 18, 'condition': 'sunny'}")
    question = script("single_tool_call")["messages"][0]["content"]
    result, _, err = run(reasoner_shell, f"%%chat --new --session deco\n{question}", capsys)
    assert result.success, err
    assert result.result.request["tools"] == script("single_tool_call")["tools"]
    assert reasoner_shell.user_ns["asked"] == ["Paris"]
    result, _, _ = run(reasoner_shell, "%%chat --new --session deco --tools none --max-tokens 4\nHi", capsys)
    assert "tools" not in result.result.request


@pytest.mark.model
def test_parallel_tool_calls_all_run(reasoner_shell, weather, capsys):
    question = script("parallel_tool_calls")["messages"][0]["content"]
    result, _, err = run(reasoner_shell, f"%%chat --new --session par --tools get_weather --max-rounds 1\n{question}",
                         capsys)
    # One round allowed: the calls are recorded, not run, and the cell says how to continue.
    assert str(result.error_in_exec) == ("%%chat: the model was still calling tools after 1 "
                                         "round; raise --max-rounds to let it continue.")
    stopped = reasoner_shell.user_ns["_"]
    assert isinstance(stopped.exception, ToolRoundsExceeded)
    assert result.error_in_exec.__cause__ is stopped.exception  # the turn's own, not a rebuilt one
    assert weather == []
    assert [c["error"] for c in stopped.tool_calls] == [
        "not run: the turn reached its limit of 1 round"] * 2  # not a null result
    result, _, err = run(reasoner_shell, f"%%chat --new --session par --tools get_weather\n{question}", capsys)
    assert weather == ["Tokyo", "Oslo"]
    assert [c["result"]["city"] for c in result.result.tool_calls] == ["Tokyo", "Oslo"]


@pytest.mark.model
def test_tool_errors_and_declined_calls_go_back_to_the_model(reasoner_shell, weather, capsys, monkeypatch):
    question = script("single_tool_call")["messages"][0]["content"]
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    result, out, _ = run(reasoner_shell, f"%%chat --new --session confirm --tools get_weather --confirm\n{question}",
                         capsys)
    assert weather == []
    assert result.result.tool_calls[0]["error"] == "the user declined to run this tool call"
    assert 'Run get_weather({"city": "Paris"})? [y/N]' in out
    assert result.result.rounds[1].request["messages"][-1]["content"] == (
        "Error: the user declined to run this tool call")
    description = script("single_tool_call")["tools"][0]["function"]["description"]
    reasoner_shell.run_cell(f'def get_weather(city: str):\n    """{description}"""\n'
                            "    raise ConnectionError('weather service down')")
    result, _, _ = run(reasoner_shell, f"%%chat --new --session broken --tools get_weather\n{question}", capsys)
    assert result.result.tool_calls[0]["error"] == "ConnectionError: weather service down"
    fails_with(reasoner_shell, "%%chat --tools get_wether\nHi",
               "%%chat: there is no function named 'get_wether' in the notebook; define it or decorate "
               "it with @mlx_notebook.tool.", capsys)


@pytest.mark.model
def test_think_flags_and_follow_up_on_the_reasoner(reasoner_shell, capsys):
    hello = script("thinking_disabled")
    result, _, _ = run(reasoner_shell, f"%%chat --new --session fr --no-think\n{hello['messages'][0]['content']}", capsys)
    turn = result.result
    assert turn.request["chat_template_kwargs"] == {"enable_thinking": False}
    assert (turn.reasoning, turn.content.strip()) == ("", answer(hello["reply"]))
    first, follow = script("reason_then_answer"), script("follow_up_turn")
    run(reasoner_shell, f"%%chat --new --session math\n{first['messages'][0]['content']}", capsys)
    result, out, _ = run(reasoner_shell, f"%%chat --session math\n{follow['messages'][-1]['content']}", capsys)
    turn = result.result
    assert turn.content.strip() == answer(follow["reply"])
    assert turn.reasoning.strip() == follow["reply"].split("</think>")[0].removeprefix("<think>").strip()
    assert out.startswith(f"[thinking] {turn.reasoning.strip()}\n{turn.content.strip()}\n")
    assert turn.usage["cached_tokens"] > 0
    # The parser debugger replays what the engine parsed for this very turn.
    result, _, err = run(reasoner_shell, "%mlx trace _", capsys)
    assert result.success, err
    assert result.result.family == "qwen3"


@pytest.mark.model
def test_system_prompt_and_config_defaults_reach_the_request(reasoner_shell, capsys):
    pirate = script("system_prompt")
    system, user = (m["content"] for m in pirate["messages"])
    result, _, err = run(reasoner_shell, f"%%chat --new --session pirate --system '{system}'\n{user}", capsys)
    assert result.success, err
    assert result.result.content.strip() == answer(pirate["reply"])
    run(reasoner_shell, "%mlx config max_tokens=3 seed=11", capsys)
    try:
        result, _, _ = run(reasoner_shell, "%%chat --session pirate\nAgain.", capsys)
        request = result.result.request
        assert request["messages"][0] == {"role": "system", "content": system}  # kept by the session
        assert (request["max_tokens"], request["seed"]) == (3, 11)
        assert result.result.options == {"session": "pirate", "max_tokens": 3, "seed": 11}
        result, _, _ = run(reasoner_shell, "%%chat --session pirate --max-tokens 2 --system ''\nAgain.", capsys)
        assert result.result.request["max_tokens"] == 2  # the cell's flag wins
        assert result.result.request["messages"][0]["role"] == "user"  # '' removed the system prompt
    finally:
        run(reasoner_shell, "%mlx config max_tokens= seed=", capsys)


@pytest.mark.model
def test_a_conversation_longer_than_the_context_says_how_to_go_on(reasoner_shell, capsys):
    context = magics_of(reasoner_shell).engine.model_info.context_length
    reasoner_shell.user_ns["long_text"] = "word " * context
    past = f"tokens is longer than the model's context length of {context} tokens; shorten "
    # A first message: only it (or the system prompt) can be cut; starting afresh cannot help.
    result, _, err = run(reasoner_shell, "%%chat --session long\n{long_text}", capsys)
    message = str(result.error_in_exec)
    assert message.startswith("%%chat: the prompt of ") and message.endswith(
        past + "the message.")
    assert err == f"UsageError: {message}\n"
    result, _, _ = run(reasoner_shell, "%%chat --session long --system 'Be brief.'\n{long_text}",
                       capsys)
    assert str(result.error_in_exec).endswith(past + "the message or the --system prompt.")
    _, out, _ = run(reasoner_shell, "%mlx sessions", capsys)
    assert "long: 0 turns" in out  # the rejected message did not enter the session
    # Later in a conversation, the session's history is what grew.
    run(reasoner_shell, "%%chat --session long --max-tokens 4\nHi.", capsys)
    reasoner_shell.user_ns["long_text"] = "word " * (context - 40)
    result, _, _ = run(reasoner_shell, "%%chat --session long\n{long_text}", capsys)
    assert str(result.error_in_exec).endswith(
        past + "the conversation, or start the session afresh with --new or %mlx reset.")


def test_a_failed_turn_fails_the_cell_with_the_exception_it_carries(bare_shell):
    turn = Turn(model="m", session="s", request={})
    dead = EngineDeadError("The engine thread died: out of memory.")
    turn.fail(dead)
    with pytest.raises(UsageError) as failure:
        magics_of(bare_shell)._result(turn, None, "%%chat")
    assert failure.value.__cause__ is dead
    assert str(failure.value) == "%%chat: the engine has stopped; run %load_model to start it again."
    assert bare_shell.user_ns["_"] is turn  # the failed turn stays reachable


@pytest.mark.model
def test_dead_engine_reload_and_unload(tiny_reasoner_path, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell()
    shell.run_line_magic("load_ext", "mlx_notebook")
    assert shell.run_cell(f"%load_model {tiny_reasoner_path} --no-progress").success
    engine = magics_of(shell).engine
    engine._crash_engine_thread()
    fails_with(shell, "%%chat\nHi", "%%chat: the engine has stopped; run %load_model to start it again.", capsys)
    result, out, _ = run(shell, f"%load_model {tiny_reasoner_path} --no-progress", capsys)
    assert out.startswith(f"Loaded {tiny_reasoner_path.name}: ") and "thinking: yes, tool calls: yes." in out
    engine = magics_of(shell).engine
    shell.run_line_magic("unload_ext", "mlx_notebook")
    assert not engine.healthy
    fails_with(shell, "%mlx status", "Line magic function `%mlx` not found.", capsys)


@pytest.mark.model
@pytest.mark.slow
def test_in_a_kernel_the_turn_is_shown_once_with_its_metadata(tiny_reasoner_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in [
        "%load_ext mlx_notebook",
        f"%load_model {tiny_reasoner_path} --no-progress",
        "%%chat --session m --seed 5\nWhat is 17 + 25?",
        "_.usage['completion_tokens']",
        "%%chat\n{undefined_name}",
        "never = 'run'",
    ]]
    client = NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=False)
    with pytest.raises(Exception) as failure:
        client.execute()
    assert "undefined_name" in str(failure.value)  # the failing cell stops Run All
    load, chat, usage, bad, never = (cell.outputs for cell in nb.cells[1:])
    assert [o.output_type for o in load] == ["display_data"]
    assert load[0].data["text/plain"].startswith(f"Loaded {tiny_reasoner_path.name}: ")
    (shown,) = chat  # the live view became the static turn; no second copy as Out[]
    assert shown.output_type == "display_data"
    assert "17 + 25 = 42." in shown.data["text/plain"]
    meta = shown.metadata["mlx_notebook"]
    assert (meta["model"], meta["session"], meta["seed"]) == (tiny_reasoner_path.name, "m", 5)
    assert meta["usage"]["completion_tokens"] > 0 and meta["timings"]["total_seconds"] > 0
    assert usage[0].data["text/plain"] == str(meta["usage"]["completion_tokens"])
    # One line on stderr, no traceback; the reply's status is still an error (Run All stops).
    assert [(o.output_type, o.name) for o in bad] == [("stream", "stderr")]
    assert bad[0].text == ("UsageError: %%chat: name 'undefined_name' in '{undefined_name}' is not "
                           "defined in the notebook; define it, write '{{undefined_name}}' for "
                           "literal braces, or use --no-interpolate.\n")
    assert never == []


@pytest.mark.model
@pytest.mark.slow
def test_terminal_ipython_streams_plain_text(tiny_reasoner_path):
    import subprocess
    import sys

    first = script("reason_then_answer")
    cells = (f"%load_ext mlx_notebook\n%load_model {tiny_reasoner_path} --no-progress\n"
             f"%%chat\n{first['messages'][0]['content']}\n\n\n_.content.strip()\n")
    ipython = [sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner", "--colors=nocolor"]
    done = subprocess.run(ipython, input=cells, capture_output=True, text=True, timeout=300)
    reasoning = first["reply"].split("</think>")[0].removeprefix("<think>").strip()
    assert f"[thinking] {reasoning}\n{answer(first['reply'])}\nOut[3]: [stop, " in done.stdout
    assert f"Out[4]: '{answer(first['reply'])}'" in done.stdout


@pytest.mark.model
@pytest.mark.slow
def test_kernel_interrupt_cancels_the_reply_and_the_next_cell_works(smollm2_path):
    from jupyter_client import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)

        def execute(code: str, *, interrupt_after_deltas: int | None = None) -> tuple[dict, list[dict]]:
            msg_id = client.execute(code)
            outputs, deltas = [], 0
            while True:
                msg = client.get_iopub_msg(timeout=300)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                # Text deltas only: the widget's first messages (its state, the prompt's
                # usage, prefill progress) come before the model has written anything.
                if (kind == "comm_msg" and interrupt_after_deltas is not None
                        and msg["content"]["data"].get("content", {}).get("kind") == "delta"):
                    deltas += 1
                    if deltas == interrupt_after_deltas:
                        manager.interrupt_kernel()
                if kind in ("stream", "display_data", "update_display_data", "execute_result"):
                    outputs.append(msg["content"])
                if kind == "status" and msg["content"]["execution_state"] == "idle":
                    break
            while True:
                reply = client.get_shell_msg(timeout=60)
                if reply["parent_header"].get("msg_id") == msg_id:
                    return reply["content"], outputs

        for code in ["%load_ext mlx_notebook", f"%load_model {smollm2_path} --no-progress"]:
            assert execute(code)[0]["status"] == "ok"
        reply, outputs = execute("%%chat --max-tokens 300\nTell me a very long story about a robot.",
                                 interrupt_after_deltas=3)
        assert (reply["status"], reply.get("ename")) == ("error", "KeyboardInterrupt"), (reply, outputs)
        assert reply["evalue"] == ("%%chat stopped; the partial reply is kept (in _ and in the "
                                   "session's history; _.drop() removes it).")
        # The live view ended as a static turn marked as interrupted.
        (final,) = [o for o in outputs if "application/vnd.mlx-notebook.turn+json" in o.get("data", {})]
        assert final["data"]["application/vnd.mlx-notebook.turn+json"]["interrupted"] is True
        reply, outputs = execute("print(_.interrupted, _.finish_reason, _.usage['completion_tokens'] < 300)")
        assert outputs[-1]["text"] == "True stopped True\n"
        reply, outputs = execute("%%chat --max-tokens 3\nHi")
        assert reply["status"] == "ok"
        reply, outputs = execute("print([m['role'] for m in _.request['messages']])")
        # What the user saw of the stopped turn goes with the next one.
        assert outputs[-1]["text"] == "['user', 'assistant', 'user']\n"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


@pytest.mark.model
def test_load_model_with_a_draft_model_names_it_and_chats(tiny_reasoner_path, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell()
    shell.run_line_magic("load_ext", "mlx_notebook")
    try:
        result, out, _ = run(
            shell, f"%load_model {tiny_reasoner_path} --draft-model {tiny_reasoner_path} "
                   "--no-progress", capsys)
        assert result.success
        assert out.rstrip().endswith(
            f"thinking: yes, tool calls: yes, drafting with {tiny_reasoner_path.name}.")
        result, _, _ = run(shell, "%%chat\nWhat is 17 + 25?", capsys)
        assert result.success and result.result.content == "\n\n17 + 25 = 42."
        usage = result.result.usage
        # Drafting for itself, the model keeps every guess: 3 of every 4 tokens.
        assert usage["accepted_draft_tokens"] == usage["completion_tokens"] * 3 // 4
    finally:
        shell.run_line_magic("unload_ext", "mlx_notebook")


@pytest.mark.model
def test_tools_a_template_cannot_show_are_flagged_on_the_turn_and_warned_once(smollm2_shell, capsys):
    run(smollm2_shell, "def get_time(city: str) -> str:\n    \"\"\"The time in a city.\"\"\"\n"
                       "    return '12:00'\n", capsys)
    result, out, _ = run(smollm2_shell, "%%chat --new --session clock --tools get_time --max-tokens 3\n"
                                        "What time is it in Paris?", capsys)
    turn = result.result
    assert turn.tools_offered == ["get_time"] and turn.tools_unsupported
    assert out.count("chat template cannot show tools") == 2  # the stream's line and the warning
    assert "never saw get_time" in out
    result, out, _ = run(smollm2_shell, "%%chat --session clock --tools get_time --max-tokens 3\nAnd Rome?", capsys)
    assert result.result.tools_unsupported
    assert "never saw get_time" not in out  # warned once per session
    result, _, _ = run(smollm2_shell, "%%chat --session clock --tools none --max-tokens 1\nThanks.", capsys)
    assert result.result.tools_offered == [] and not result.result.tools_unsupported


@pytest.mark.model
def test_a_bad_load_model_flag_keeps_the_loaded_engine(reasoner_shell, tiny_reasoner_path, capsys):
    engine = magics_of(reasoner_shell).engine
    fails_with(reasoner_shell, f"%load_model {tiny_reasoner_path} --max-kv-size 0 --no-progress",
               "%load_model: --max-kv-size must be a whole number of at least 8, not 0.", capsys)
    assert magics_of(reasoner_shell).engine is engine and engine.healthy


@pytest.mark.model
@pytest.mark.parametrize("spec", ["''", "'   '"])
def test_an_empty_model_spec_is_refused_and_keeps_the_loaded_engine(reasoner_shell, spec, capsys):
    engine = magics_of(reasoner_shell).engine
    fails_with(reasoner_shell, f"%load_model {spec}",
               "%load_model: the model spec is empty; name a model, e.g. %load_model "
               "tiny-reasoner, or leave it out for the default.", capsys)
    assert magics_of(reasoner_shell).engine is engine and engine.healthy


# --------------------------------------------------------------------------- hostile input


@pytest.mark.model
def test_confirm_without_stdin_declines_the_call_and_the_turn_completes(reasoner_shell, weather, capsys,
                                                                        monkeypatch):
    question = script("single_tool_call")["messages"][0]["content"]
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # as nbval or jupyter execute: no one answers
    result, out, err = run(reasoner_shell, f"%%chat --new --session nostdin --tools get_weather --confirm\n"
                                           f"{question}", capsys)
    assert result.success, err
    assert weather == []
    assert result.result.tool_calls[0]["error"] == "the user declined to run this tool call"
    assert "get_weather was not run: --confirm cannot ask here" in out
    assert [r.finish_reason for r in result.result.rounds][-1] == "stop"


def test_removing_a_tool_named_twice_removes_it_once(bare_shell, capsys):
    from mlx_notebook.tools import registered_tools, unregister_tools

    before = set(registered_tools())
    try:
        run(bare_shell, "import mlx_notebook\n@mlx_notebook.tool\ndef alarm(city: str) -> str:\n"
                        "    return 'ring'\n", capsys)
        result, out, err = run(bare_shell, "%mlx tools --remove alarm alarm", capsys)
        assert result.success, err
        assert out.startswith("Removed alarm; ")
        assert "alarm" not in registered_tools()
    finally:
        unregister_tools([name for name in registered_tools() if name not in before])


@pytest.mark.model
def test_a_tool_redefined_without_the_decorator_is_the_one_called(reasoner_shell, capsys, monkeypatch):
    import mlx_notebook.tools

    monkeypatch.setattr(mlx_notebook.tools, "_registry", {})  # @tool registers process-wide
    description = script("single_tool_call")["tools"][0]["function"]["description"]
    reasoner_shell.run_cell(
        "import mlx_notebook\nold_calls, new_calls = [], []\n@mlx_notebook.tool\n"
        f'def get_weather(city: str):\n    """{description}"""\n    old_calls.append(city)\n'
        "    return 'old'\n"
        f'def get_weather(city: str):\n    """{description}"""\n    new_calls.append(city)\n'
        "    return {'city': city, 'temperature_c': 18, 'condition': 'sunny'}\n")
    question = script("single_tool_call")["messages"][0]["content"]
    result, _, err = run(reasoner_shell, f"%%chat --new --session redefined --tools get_weather,get_weather\n"
                                         f"{question}", capsys)
    assert result.success, err
    assert (reasoner_shell.user_ns["old_calls"], reasoner_shell.user_ns["new_calls"]) == ([], ["Paris"])
    assert result.result.request["tools"] == script("single_tool_call")["tools"]  # offered once
    reasoner_shell.run_cell("class Forecast:\n    pass\n")
    fails_with(reasoner_shell, "%%chat --tools Forecast\nHi",
               "%%chat: 'Forecast' is a class, not a function, so it cannot be a tool.", capsys)


@pytest.mark.parametrize(
    "source, message",
    [
        ("%mlx config think=maybe", "%mlx config: think is true or false; write think=true or "
                                    "think=false, or think= to remove it."),
        ("%mlx config max_tokens=-5", "%mlx config: max_tokens must be at least 1, got -5."),
        ("%mlx config compare=x", "%mlx config: unknown key 'compare'; use one of confirm, "
                                  "frequency_penalty, logit_bias, max_rounds, max_tokens, min_p, "
                                  "no_interpolate, no_stream, presence_penalty, raw, "
                                  "repetition_penalty, seed, session, show_request, stop, system, "
                                  "temperature, think, think_budget, tokens, tools, top_k, top_p."),
        ('%mlx config session=" "', "%mlx config: session needs a name, e.g. session=notes "
                                    "(session= removes the default)."),
    ],
)
def test_config_refuses_what_no_cell_could_use_and_keeps_the_defaults(bare_shell, capsys, source, message):
    run(bare_shell, "%mlx config seed=1", capsys)
    fails_with(bare_shell, source, message, capsys)
    assert magics_of(bare_shell).defaults == {"seed": "--seed 1"}


@pytest.mark.model
def test_config_checks_values_against_the_loaded_models_limits(reasoner_shell, capsys):
    before = dict(magics_of(reasoner_shell).defaults)
    fails_with(reasoner_shell, "%mlx config max_tokens=10000000",
               "%mlx config: max_tokens must be at most 2048 (the model's context), got 10000000.",
               capsys)
    fails_with(reasoner_shell, "%mlx config logit_bias=999999=5",
               '%mlx config: logit_bias token id "999999" is out of vocabulary (ids run from 0 to 399; the vocabulary size is 400).', capsys)
    assert magics_of(reasoner_shell).defaults == before


def test_config_accepts_dashed_keys_as_the_flags_spell_them(bare_shell, capsys):
    result, out, err = run(bare_shell, "%mlx config max-tokens=3", capsys)
    assert result.success, err
    assert out == "max_tokens: --max-tokens 3\n"


def test_config_takes_settings_written_as_a_cells_flags(bare_shell, capsys):
    """``--max-tokens 5`` was 'unrecognized arguments: --max-tokens'."""
    result, out, err = run(bare_shell, "%mlx config --max-tokens 5 --temperature=0.5 --raw "
                                       "--no-think --stop '-x' seed=2 --confirm temp=0.5", capsys)
    assert result.success, err
    assert magics_of(bare_shell).defaults == {
        "max_tokens": "--max-tokens 5", "temperature": "--temperature 0.5", "raw": "--raw",
        "think": "--no-think", "stop": "--stop -x", "seed": "--seed 2", "confirm": "--confirm"}
    fails_with(bare_shell, "%mlx config --max-tokens -3",
               "%mlx config: max_tokens must be at least 1, got -3.", capsys)
    fails_with(bare_shell, "%mlx config --max-tokens",  # a switch's form: no value given
               "%mlx config: --max-tokens needs a value, e.g. --max-tokens VALUE or "
               "max-tokens=VALUE.", capsys)


def test_config_keeps_every_repeated_stop_and_an_unquoted_newline(bare_shell, capsys):
    """``--stop`` repeats for several strings (only the last was kept), and ``\\n`` typed
    without quotes is a newline, as the help says (shlex made it the letter n)."""
    result, out, err = run(bare_shell, "%mlx config --stop a --stop \\n stop=b", capsys)
    assert result.success, err
    stop = magics_of(bare_shell).defaults["stop"]
    assert split_line(stop) == ["--stop", "a", "--stop", "\\n", "--stop", "b"]
    assert _parse(magics_of(bare_shell).chat, stop, "%%chat").stop == ["a", "\n", "b"]


@pytest.mark.model
def test_a_missing_tool_set_by_config_says_it_came_from_config(reasoner_shell, capsys):
    """Every %%chat failed over a tool no cell named; the message now says where it is set."""
    assert run(reasoner_shell, "%mlx config tools=not_defined_yet", capsys)[0].success
    try:
        fails_with(reasoner_shell, "%%chat --new --session cfg-tools --max-tokens 2\nHi",
                   "%%chat: there is no function named 'not_defined_yet' in the notebook; define "
                   "it or decorate it with @mlx_notebook.tool. (The tools come from %mlx config: "
                   "--tools not_defined_yet; %mlx config tools= removes them.)", capsys)
    finally:
        assert run(reasoner_shell, "%mlx config tools=", capsys)[0].success


@pytest.mark.model
def test_an_unquoted_escape_in_a_cells_flag_is_decoded(reasoner_shell, capsys):
    result, _, err = run(reasoner_shell, "%%chat --new --session escapes --stop \\n --stop \\t "
                                         "--max-tokens 2\nHi", capsys)
    assert result.success, err
    assert result.result.request["stop"] == ["\n", "\t"]


@pytest.mark.model
def test_a_refused_think_budget_names_the_flag(reasoner_shell, capsys):
    fails_with(reasoner_shell, "%%chat --new --session budget --think-budget -1\nHi",
               "%%chat: --think-budget must be at least 0, got -1.", capsys)


@pytest.mark.model
def test_option_values_may_begin_with_a_dash(reasoner_shell, capsys):
    result, _, err = run(reasoner_shell, "%%chat --new --session dashes --system '- Be terse.' "
                                         "--stop '-x' --max-tokens 2\nHi", capsys)
    assert result.success, err
    request = result.result.request
    assert request["messages"][0] == {"role": "system", "content": "- Be terse."}
    assert request["stop"] == ["-x"]


@pytest.mark.model
def test_an_interrupted_reply_keeps_only_what_the_terminal_showed(reasoner_shell, capsys, monkeypatch):
    # The tiny reasoner writes a token a millisecond: when the interrupt lands, more of the
    # reply waits in the queue, and what the turn keeps of it is shown too.
    thread = _interrupt_after_tokens(monkeypatch, tokens=3)
    result, out, _ = run(reasoner_shell, "%%chat --new --session kept --max-tokens 200\n"
                                         + script("long_story")["messages"][0]["content"], capsys)
    thread.join()
    assert type(result.error_in_exec) is KeyboardInterrupt
    turn = reasoner_shell.user_ns["_"]
    assert turn.interrupted and turn.content.strip()
    assert f"{turn.content.strip()} [stopped]" in out


# -- %%chat --json ---------------------------------------------------------------------------------
@pytest.mark.model
def test_chat_json_decodes_the_answer_to_a_notebook_type_and_parsed_builds_it(smollm2_shell,
                                                                             capsys):
    smollm2_shell.run_cell("import dataclasses, pydantic\n"
                           "class Person(pydantic.BaseModel):\n    name: str\n    age: int\n"
                           "@dataclasses.dataclass\nclass City:\n    name: str\n    country: str")
    ask = "Describe a person as JSON with name and age."
    result, _, err = run(smollm2_shell, f"%%chat --new --session js --json Person --max-tokens 60\n"
                                        f"{ask}", capsys)
    assert result.success, err
    turn = smollm2_shell.user_ns["_"]
    assert turn.request["response_format"]["json_schema"]["name"] == "Person"
    person = turn.parsed
    assert type(person).__name__ == "Person" and isinstance(person.age, int)
    result, _, _ = run(smollm2_shell, "%%chat --new --session js --json City --max-tokens 60\n"
                                      "Describe Paris as JSON.", capsys)
    city = smollm2_shell.user_ns["_"].parsed
    assert type(city).__name__ == "City" and isinstance(city.country, str)
    run(smollm2_shell, "%%chat --new --session js --json --max-tokens 60\n" + ask, capsys)
    assert isinstance(smollm2_shell.user_ns["_"].parsed, dict)
    # Free text is no JSON, and parsed says so.
    run(smollm2_shell, "%%chat --new --session js --max-tokens 12\nSay hello.", capsys)
    with pytest.raises(ValueError, match="The answer is not whole JSON"):
        smollm2_shell.user_ns["_"].parsed


@pytest.mark.model
@pytest.mark.parametrize("flag, message", [
    ("--json Nowhere", "%%chat: --json Nowhere: NameError: name 'Nowhere' is not defined; define "
                       "the type in the notebook first."),
    ("--json len", "%%chat: --json len: len has no JSON form; use a pydantic model, a dataclass, "
                   "a TypedDict, a JSON schema dict, or a type such as list[int]."),
])
def test_chat_json_with_a_type_that_is_not_one_says_so(smollm2_shell, capsys, flag, message):
    fails_with(smollm2_shell, f"%%chat --new --session js2 {flag}\nHi.", message, capsys)
