"""What the %mlx reports print: status, cache, render, history, sessions, --show-request."""

from __future__ import annotations

from types import SimpleNamespace

from mlx_notebook import reports
from mlx_notebook.display import footer_items
from mlx_notebook.engine.request._prompt_cache import CacheInfo, CacheLookup
from mlx_notebook.sessions import Session
from mlx_notebook.turn import Round, Turn

SMOLLM2_BYTES = 562_284_672


def finished_turn(user: str, answer: str, **overrides) -> Turn:
    values = dict(model="m", session="s", request={}, user_message={"role": "user", "content": user},
                  content=answer, finish_reason="stop",
                  rounds=[Round(request={}, content=answer, finish_reason="stop")])
    values.update(overrides)
    return Turn(**values)


def test_status_and_the_footer_say_the_same_size_for_the_same_bytes():
    engine = SimpleNamespace(model_info={"name": "smollm2", "model_type": "llama", "path": "/m",
                                         "memory_bytes": SMOLLM2_BYTES},
                             healthy=True, active_requests=0)
    status = reports.status(engine).plain
    record = {"usage": {"prompt_tokens": 1, "cached_tokens": 0, "completion_tokens": 1},
              "timings": {"peak_memory": SMOLLM2_BYTES}, "finish_reason": "stop"}
    assert "memory: 562.3 MB of weights" in status
    assert ("peak memory", "562.3 MB") in footer_items(record)
    summary = reports.model_summary({"name": "smollm2", "parameters": 134_515_008,
                                     "memory_bytes": SMOLLM2_BYTES, "context_length": 8192}).plain
    assert ", 562.3 MB, " in summary


def test_a_cache_miss_reason_reads_as_its_own_sentence():
    info = CacheInfo(entries=1, tokens=40, bytes=2_500, budget_bytes=1_000_000_000, lookups=(
        CacheLookup("req-1", 42, 0, "The prompt diverged from the nearest cached entry at token 3 of 42."),
        CacheLookup("req-2", 1, 1, None),
    ))
    plain = reports.cache(info).plain
    assert "bytes: 2.5 kB of 1.0 GB" in plain
    assert ("  req-1 miss: 0 of 42 prompt tokens cached. The prompt diverged from the nearest "
            "cached entry at token 3 of 42.") in plain.splitlines()
    assert "  req-2 hit: 1 of 1 prompt token cached." in plain.splitlines()
    assert "(The" not in plain


def rendered(tools_rendered=None, miss_reason="The prompt diverged from the nearest cached entry at token 3 of 4."):
    inspection = SimpleNamespace(
        token_ids=[1, 72, 105, 2], cache=CacheLookup("", 4, 3, miss_reason),
        tools_rendered=tools_rendered,
        request=SimpleNamespace(tools=({"type": "function", "function": {"name": "get_time"}},)))
    names = {1: "<|im_start|>", 2: "<|im_end|>"}
    return reports.rendered_prompt(inspection, {1, 2}, lambda ids: "".join(names.get(i, chr(i)) for i in ids))


def test_render_has_no_leading_blank_line_or_indent_and_a_capitalised_reason_starts_a_sentence():
    report = rendered()
    assert report.plain == ("[[<|im_start|>]]Hi[[<|im_end|>]]\n[4 tokens, 3 would come from the "
                            "prompt cache. The prompt diverged from the nearest cached entry at token 3 of 4.]")
    # JupyterLab gives a top-level <pre> in HTML output a 1.5em/2em margin: a blank line, an indent.
    assert report.html.startswith('<pre style="margin:0;padding:0;')
    assert "(The prompt" not in report.html
    assert rendered(miss_reason=None).plain.endswith("[4 tokens, 3 would come from the prompt cache.]")


def test_render_warns_when_the_template_leaves_the_tools_out():
    warning = "This model's chat template cannot show tools: the model never saw get_time."
    report = rendered(tools_rendered=False)
    assert report.plain.splitlines()[-1] == f"[warning] {warning}"
    assert "never saw get_time" in report.html
    assert "never saw" not in rendered(tools_rendered=True).plain


def test_show_request_json_starts_at_the_left_edge():
    report = reports.request({"messages": [{"role": "user", "content": "Hi"}]})
    assert report.plain.startswith('{\n  "messages"')
    assert report.html.startswith('<pre style="margin:0;padding:0;')


def test_history_wraps_at_spaces_not_mid_word():
    session = Session("default")
    session.add(finished_turn("What is the capital of France? Answer in one sentence.",
                              "The capital of France is Paris."))
    failed = finished_turn("And Italy?", "Rome", error="The engine stopped.")
    session.add(failed)
    report = reports.history(session)
    assert report.plain.splitlines()[-1] == "   assistant: Rome  (not sent as history)"
    # JupyterLab's text/plain output breaks lines anywhere (word-break: break-all); the HTML
    # form wraps at spaces.
    assert "word-break:normal" in report.html and "white-space:pre-wrap" in report.html
    assert "(not sent as history)" in report.html


def test_history_shows_a_tool_result_as_the_model_read_it():
    """A set reached the model (and the card) as a JSON list; history showed its repr."""
    from mlx_notebook.turn import ToolCallRecord

    call = ToolCallRecord("c1", "primes", {"below": 6}, result={2, 3, 5}, returned=True)
    session = Session("tools")
    session.add(finished_turn("Primes below 6?", "2, 3 and 5.", tool_calls=[call]))
    assert "   tool: primes({\"below\": 6}) -> [2, 3, 5]" in reports.history(session).plain.splitlines()


def test_counts_are_singular_for_one():
    one = Session("one")
    one.add(finished_turn("Hi", "Hello"))
    assert reports.sessions([one, Session("none")]).plain == (
        "one: 1 turn, 1 sent as history\nnone: 0 turns, 0 sent as history")


def test_load_model_summary_says_which_dtype_auto_chose_and_why():
    from mlx_notebook.engine import ModelInfo

    base = dict(name="m", path="/m", model_type="llama", parameters=134_515_008, quantization="float32",
                memory_bytes=538_060_032, context_length=8192, thinking=False, tool_calling=False)
    auto = ModelInfo(**base, dtype="float32", dtype_reason="auto: float32 on a CPU (BLAS makes it the fast path)")
    assert str(reports.model_summary(auto)) == (
        "Loaded m: 134.5M parameters, float32 [auto: float32 on a CPU (BLAS makes it the fast path)], "
        "538.1 MB, context 8192 tokens, thinking: no, tool calls: no.")
    chosen = ModelInfo(**base, dtype="float32", dtype_reason="dtype='float32' asked for float32")
    assert "[" not in str(reports.model_summary(chosen))


def test_reports_show_a_replys_terminal_escapes_as_symbols():
    """``%mlx history`` quotes replies: an escape that would retitle the terminal, write the
    clipboard or clear the screen, and a bidi override, are shown, not sent raw."""
    turn = Turn(model="m", session="s", request={"messages": []},
                content="Sure.\x1b]0;pwned\x07\x1b[2J\u202eevil", finish_reason="stop",
                user_message={"role": "user", "content": "hi"})
    session = Session("s")
    session.turns.append(turn)
    report = reports.history(session)
    for shown in (str(report), *report._repr_mimebundle_().values()):
        assert "\x1b" not in shown and "\u202e" not in shown and "evil" in shown
