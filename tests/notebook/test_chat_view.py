"""ChatView: what reaches the front end while a turn streams, fed with real engine events.

Messages are counted on the widget's own comm (the ``publish_msg`` every ipywidgets message
goes through), so the numbers are what a browser would receive.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from mlx_notebook.display import (
    TURN_MIME_TYPE,
    footer_items,
    markdown_blocks,
    markdown_html,
    notices_html,
    tool_card_html,
)
from mlx_notebook.engine._events import (
    ContentDelta,
    Error,
    Finished,
    ParseProblem,
    PrefillProgress,
    ReasoningDelta,
    Started,
    ToolCall,
    Usage,
)
from mlx_notebook.turn import Round, Turn
from mlx_notebook.widgets import MAX_MESSAGES_PER_SECOND, ChatView


class Clock:
    """A settable clock, so the test decides how fast tokens arrive."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def recording_view(clock=None):
    view = ChatView("smollm2", "default", **({"clock": clock} if clock else {}))
    sent: list[dict] = []

    def publish_msg(msg_type, data=None, metadata=None, buffers=None, **keys):
        sent.append(data)

    view.comm.publish_msg = publish_msg
    return view, sent


def deltas(sent):
    return [m["content"] for m in sent if m.get("method") == "custom" and m["content"]["kind"] == "delta"]


def front_end_blocks(sent) -> list[dict]:
    """The blocks a browser holds after these messages, applied as chat_view.js applies them."""
    blocks: list[dict] = []
    for d in deltas(sent):
        if d["block"] == len(blocks):
            blocks.append({"kind": d["channel"], "text": "", "html": []})
        block = blocks[d["block"]]
        if d["channel"] == "content":
            assert len(block["html"]) >= d["keep"]
            block["html"] = block["html"][:d["keep"]] + d["html"]
        else:
            assert d["offset"] == len(block["text"].encode("utf-16-le")) // 2
            block["text"] += d["text"]
    return blocks


def usage_event(**overrides):
    values = dict(prompt_tokens=20, cached_tokens=16, completion_tokens=300, time_to_first_token=0.12,
                  prefill_tokens_per_second=900.0, decode_tokens_per_second=42.5, peak_memory=600 << 20)
    values.update(overrides)
    return Usage(**values)


@pytest.mark.parametrize("seconds_per_token", [0.0, 0.001, 0.005, 0.02, 0.2])
def test_300_token_reply_stays_under_20_messages_per_second(seconds_per_token):
    clock = Clock()
    view, sent = recording_view(clock)
    view.handle(Started("r1", prompt_tokens=20, cached_tokens=16))
    start = len(sent)
    words = [f"w{i} " for i in range(300)]
    for word in words:
        clock.now += seconds_per_token
        view.handle(ContentDelta(word))
    view.handle(usage_event())
    view.handle(Finished("stop"))

    duration = 300 * seconds_per_token
    # 20/s over the stream, plus the first token (sent at once) and the final flush...
    assert len(deltas(sent)) <= MAX_MESSAGES_PER_SECOND * duration + 2
    # ...plus three state messages: the switch to content, usage and the finish.
    assert len(sent) - start <= MAX_MESSAGES_PER_SECOND * duration + 2 + 3
    [content] = front_end_blocks(sent)
    assert "".join(content["html"]) == markdown_html("".join(words))
    # One paragraph: each message carries the block that changed, never the whole history.
    assert all(len(d["html"]) == 1 for d in deltas(sent))
    if seconds_per_token >= 0.05:
        assert len(deltas(sent)) == 300  # slow models still update on every token


def test_reasoning_is_flushed_before_content_starts_even_within_one_tick():
    clock = Clock()
    view, sent = recording_view(clock)
    view.handle(Started("r1", prompt_tokens=5, cached_tokens=0))
    view.handle(ReasoningDelta("I should"))  # first text is sent at once
    view.handle(ReasoningDelta(" greet."))  # same instant: held back
    assert "".join(d["text"] for d in deltas(sent)) == "I should"
    view.handle(ContentDelta("Hello"))  # the switch flushes the held reasoning first
    sent_deltas = deltas(sent)
    assert [(d["channel"], d["text"]) for d in sent_deltas] == [
        ("reasoning", "I should"), ("reasoning", " greet.")]
    view.handle(ContentDelta("!"))
    view.handle(Finished("stop"))
    assert [(d["block"], d["channel"], d["keep"], d["html"]) for d in deltas(sent)[2:]] == [
        (1, "content", 0, ["<p>Hello!</p>\n"])]
    assert view.phase == "done"


def test_offsets_count_utf16_units_like_the_browser():
    clock = Clock()
    view, sent = recording_view(clock)
    view.handle(ReasoningDelta("🙂 ok"))
    clock.now += 1
    view.handle(ReasoningDelta(" fine"))
    first, second = deltas(sent)
    assert first["offset"] == 0
    assert second["offset"] == len("🙂 ok".encode("utf-16-le")) // 2 == 5


def test_reasoning_panel_counts_tokens_and_seconds():
    clock = Clock()
    view, sent = recording_view(clock)
    for i in range(4):
        view.handle(ReasoningDelta(f"step {i}. "))
        clock.now += 0.5
    view.handle(ContentDelta("Answer"))
    last_reasoning = [d for d in deltas(sent) if d["channel"] == "reasoning"][-1]
    assert last_reasoning["tokens"] == 4
    assert last_reasoning["seconds"] == pytest.approx(1.5)
    assert last_reasoning["summary"] == "Reasoning · 4 tokens · 1.50 s"


def test_tool_call_card_gets_its_result():
    view, sent = recording_view()
    view.handle(Started("r1", prompt_tokens=30, cached_tokens=0))
    view.handle(ToolCall(index=0, id="call_1", name="get_weather", arguments={"city": "Paris"},
                         text='<tool_call>{"name": "get_weather"}</tool_call>'))
    view.handle(Finished("tool_calls"))
    assert view.phase == "tool_calls"  # the tool loop goes on
    assert view.tool_calls == [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"},
                                "result": None, "error": None}]
    view.tool_result("call_1", result={"temperature": 21, "unit": "C"})
    assert view.tool_calls[0]["result"] == {"temperature": 21, "unit": "C"}
    assert view.tool_cards["call_1"] == tool_card_html(view.tool_calls[0], waiting=True)
    assert "waiting for the result" not in view.tool_cards["call_1"]
    view.tool_result("call_1", error="city not found")
    assert view.tool_calls[0]["error"] == "city not found"
    assert "city not found</pre>" in view.tool_cards["call_1"]
    states = [m["state"] for m in sent if m.get("method") == "update"]
    assert any("tool_calls" in s for s in states)


def test_a_reply_of_thousands_of_calls_sends_a_bounded_amount():
    """Each card change re-sends the synced cards: the live view draws the first 64 and
    counts the rest (the static output, once the turn ends, has them all)."""
    view, sent = recording_view()
    view.handle(Started("r1", prompt_tokens=30, cached_tokens=0))
    for i in range(1000):
        view.handle(ToolCall(index=i, id=f"call_{i}", name="f", arguments={"x": i}, text=""))
        view.tool_result(f"call_{i}", result={"ok": i})
    assert len(view.tool_calls) == len(view.tool_cards) == 64
    assert view.tool_calls[63]["result"] == {"ok": 63}
    assert "936 more tool calls: shown when the turn ends" in view.notices
    assert len(json.dumps(sent)) < 20_000_000  # 1 GB when every change re-sent every card


def test_arguments_nested_past_the_recursion_limit_still_render():
    """A parser reads JSON nested ~980 levels; the card and the saved turn cut it at 100."""
    deep = {}
    inner = deep
    for _ in range(900):
        inner["a"] = {}
        inner = inner["a"]
    view, _ = recording_view()
    view.handle(Started("r1", prompt_tokens=30, cached_tokens=0))
    view.handle(ToolCall(index=0, id="call_0", name="f", arguments=deep, text=""))
    view.tool_result("call_0", result=deep)
    view.handle(Finished("tool_calls"))
    # Indented 100 levels deep, it is longer than a card shows: cut, with the count.
    assert "more characters, not shown" in view.tool_cards["call_0"]
    turn = Turn(model="smollm2", session="default", request={},
                tool_calls=[{"id": "call_0", "name": "f", "arguments": deep, "result": deep,
                             "error": None}], finish_reason="stop")
    data, _ = view.finish(turn)
    assert "nested deeper than 100 levels" in json.dumps(data[TURN_MIME_TYPE]["tool_calls"])
    assert "more characters, not shown" in data["text/html"]
    assert "more characters, not shown" in data["text/markdown"]

def test_footer_numbers_follow_started_and_usage_across_rounds():
    view, _ = recording_view()
    view.handle(Started("r1", prompt_tokens=40, cached_tokens=0))
    assert view.usage == {"prompt_tokens": 40, "cached_tokens": 0, "completion_tokens": 0}
    view.handle(usage_event(prompt_tokens=40, cached_tokens=0, completion_tokens=10))
    view.handle(Started("r2", prompt_tokens=60, cached_tokens=50))
    assert view.usage == {"prompt_tokens": 100, "cached_tokens": 50, "completion_tokens": 10}
    view.handle(usage_event(prompt_tokens=60, cached_tokens=50, completion_tokens=5))
    assert view.usage == {"prompt_tokens": 100, "cached_tokens": 50, "completion_tokens": 15}
    assert view.timings["decode_tokens_per_second"] == 42.5


def test_accepted_drafts_add_up_across_rounds():
    view, _ = recording_view()
    view.handle(Started("r1", prompt_tokens=40, cached_tokens=0))
    view.handle(usage_event(prompt_tokens=40, cached_tokens=0, completion_tokens=10,
                            accepted_draft_tokens=6))
    view.handle(Started("r2", prompt_tokens=60, cached_tokens=50))
    assert view.usage["accepted_draft_tokens"] == 6
    view.handle(usage_event(prompt_tokens=60, cached_tokens=50, completion_tokens=5,
                            accepted_draft_tokens=3))
    assert view.usage == {"prompt_tokens": 100, "cached_tokens": 50, "completion_tokens": 15,
                          "accepted_draft_tokens": 9}


def test_prefill_progress_is_coalesced():
    clock = Clock()
    view, sent = recording_view(clock)
    view.handle(Started("r1", prompt_tokens=4096, cached_tokens=0))
    before = len(sent)
    for done in range(64, 4097, 64):
        clock.now += 0.001
        view.handle(PrefillProgress(done, 4096))
    view.handle(ContentDelta("Hi"))
    prefill_updates = [m for m in sent[before:] if m.get("method") == "update" and "prefill" in m["state"]]
    assert 1 <= len(prefill_updates) <= 3
    assert prefill_updates[-1]["state"]["prefill"] == {"processed": 4096, "total": 4096}


def test_error_and_parse_problems_are_shown():
    view, _ = recording_view()
    view.handle(ParseProblem(text="<tool_call>{oops", message="tool call JSON did not parse"))
    view.handle(Error("The model ran out of memory.", type="server_error"))
    assert view.phase == "error"
    assert view.error == "The model ran out of memory."
    assert view.problems == [{"message": "tool call JSON did not parse", "text": "<tool_call>{oops"}]


def test_stop_button_message_calls_the_stop_callbacks():
    view, _ = recording_view()
    stopped = []
    view.on_stop(lambda: stopped.append("cancel"))
    view.on_stop(lambda: 1 / 0)  # a broken callback does not stop the others
    view.on_stop(lambda: stopped.append("second"))
    # What ipywidgets hands the widget when the front end's model.send({kind: "stop"}) arrives.
    view._handle_msg({"content": {"data": {"method": "custom", "content": {"kind": "stop"}}}, "buffers": []})
    assert stopped == ["cancel", "second"]
    view.handle(Finished("cancelled"))
    assert view.phase == "stopped"
    assert view.finish_reason == "stopped"  # the engine's "cancelled" is the user's Stop


def test_a_stop_message_on_a_subshell_thread_ends_a_turn_streaming_on_the_cell_thread():
    # JupyterLab 4.6 delivers widget messages on a kernel subshell's thread while the cell's
    # thread is busy streaming: the callback (which only sets the cancel flag) runs there.
    view, _ = recording_view()
    cancel = threading.Event()
    callback_threads = []

    def cancel_request():
        callback_threads.append(threading.current_thread())
        cancel.set()

    view.on_stop(cancel_request)
    view.handle(Started("r1", prompt_tokens=5, cached_tokens=0))

    def subshell():
        view._handle_msg({"content": {"data": {"method": "custom", "content": {"kind": "stop"}}},
                          "buffers": []})

    stopper = threading.Thread(target=subshell)
    words = 0
    while not cancel.is_set() and words < 100_000:  # the cell's thread, streaming
        view.handle(ContentDelta("word "))
        words += 1
        if words == 50:
            stopper.start()
    stopper.join()
    view.handle(Finished("cancelled"))
    assert cancel.is_set() and callback_threads == [stopper]
    assert view.phase == "stopped" and view.finish_reason == "stopped"


def test_resync_request_sends_the_whole_text_once():
    view, sent = recording_view()
    view.handle(ReasoningDelta("hmm"))
    view.handle(ContentDelta("Paris."))
    view._handle_msg({"content": {"data": {"method": "custom", "content": {"kind": "resync"}}}, "buffers": []})
    snapshot = [m["state"]["blocks"] for m in sent if m.get("method") == "update" and "blocks" in m["state"]]
    assert snapshot[-1] == [
        {"kind": "reasoning", "text": "hmm", "tokens": 1, "seconds": 0.0, "summary": "Reasoning · 1 token"},
        {"kind": "content", "text": "Paris.", "html": ["<p>Paris.</p>\n"], "tokens": 1, "seconds": 0.0},
    ]


def test_only_the_kernel_thread_asks_the_front_end_to_interrupt_on_stop():
    view, _ = recording_view()
    worker = threading.Thread(target=view.handle, args=(ContentDelta("from a thread"),))
    worker.start()
    worker.join()
    assert view.stop_interrupts is False  # the kernel is free: the Stop message gets through
    view.handle(ContentDelta(" and from the cell"))
    assert view.stop_interrupts is True


def test_finish_gives_the_static_bundle_and_displays_it_from_then_on():
    view, _ = recording_view()
    view.handle(Started("r1", prompt_tokens=20, cached_tokens=16))
    view.handle(ReasoningDelta("Think."))
    view.handle(ContentDelta("The capital of France is Paris."))
    view.handle(usage_event(completion_tokens=9))
    view.handle(Finished("stop"))
    turn = Turn(model="smollm2", session="default", request={"messages": [], "seed": 7},
                content="The capital of France is Paris.", reasoning="Think.",
                usage={"prompt_tokens": 20, "cached_tokens": 16, "completion_tokens": 9},
                finish_reason="stop")
    data, metadata = view.finish(turn)
    assert data[TURN_MIME_TYPE]["content"] == "The capital of France is Paris."
    assert data[TURN_MIME_TYPE]["reasoning_stats"]["tokens"] == 1
    assert "Reasoning · 1 token<" in data["text/html"]
    assert metadata["mlx_notebook"]["seed"] == 7
    assert view._repr_mimebundle_() == (data, metadata)
    assert view.blocks[-1]["text"] == "The capital of France is Paris."


def test_tool_turn_blocks_keep_the_order_of_the_rounds_and_their_own_reasoning_numbers():
    clock = Clock()
    view, _ = recording_view(clock)
    view.offer_tools(["get_weather"])
    view.handle(Started("r1", prompt_tokens=30, cached_tokens=0))
    for word in ("I ", "call ", "it."):
        view.handle(ReasoningDelta(word))
        clock.now += 0.25
    view.handle(ToolCall(index=0, id="call_1", name="get_weather", arguments={"city": "Paris"}, text=""))
    view.handle(Finished("tool_calls"))
    view.tool_result("call_1", result={"condition": "sunny"})
    view.handle(Started("r2", prompt_tokens=60, cached_tokens=30))
    view.handle(ReasoningDelta("Sunny."))
    view.handle(ContentDelta("It is sunny."))
    view.handle(Finished("stop"))
    call = {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"},
            "result": {"condition": "sunny"}, "error": None}
    turn = Turn(model="m", session="s", request={}, tool_calls=[call], tools_offered=["get_weather"],
                rounds=[Round(request={}, reasoning="I call it.", tool_calls=[call], finish_reason="tool_calls"),
                        Round(request={}, reasoning="Sunny.", content="It is sunny.", finish_reason="stop")])
    turn.refresh()
    data, _ = view.finish(turn)
    assert [(b["kind"], b.get("text", b.get("id"))) for b in view.blocks] == [
        ("reasoning", "I call it."), ("tool", "call_1"), ("reasoning", "Sunny."), ("content", "It is sunny.")]
    rounds = data[TURN_MIME_TYPE]["rounds"]
    assert [r["reasoning_stats"] for r in rounds] == [{"tokens": 3, "seconds": 0.5},
                                                      {"tokens": 1, "seconds": 0.0}]
    html = data["text/html"]
    assert "Reasoning · 3 tokens · 0.50 s" in html and "Reasoning · 1 token<" in html
    assert html.index("Reasoning · 3 tokens") < html.index("get_weather</bdi></span>") < html.index("Reasoning · 1 token")
    assert view.tools_offered == ["get_weather"] and ">tools offered: get_weather</div>" in html


def test_offered_tools_and_dtype_reach_the_front_end_as_traits():
    view, sent = recording_view()
    view.offer_tools(["get_time"], unsupported=True)
    states = [m["state"] for m in sent if m.get("method") == "update"]
    [state] = states  # one message carries the names, the flag and the notices to show
    assert state["tools_offered"] == ["get_time"] and state["tools_unsupported"] is True
    assert state["notices"] == view.notices
    assert ChatView("m", "s", model_dtype="float32").model_dtype == "float32"


# -- the front end's own logic, run with node -------------------------------------------------

CHAT_VIEW_JS = Path(__file__).resolve().parents[2] / "mlx_notebook" / "widgets" / "chat_view.js"


def run_js(body: str):
    """Run ``body`` (which sets ``result``) with chat_view.js's exports as ``m``; return ``result``."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = (f"import * as m from {json.dumps(CHAT_VIEW_JS.as_uri())};\nlet result;\n{body}\n"
              "console.log(JSON.stringify(result));")
    done = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_live_footer_is_the_static_footer_with_the_tokens_counted_so_far():
    clock = Clock()
    view, sent = recording_view(clock)
    view.handle(Started("r1", prompt_tokens=20, cached_tokens=16))
    assert view.footer == [["prompt", "20 tokens"], ["cached", "16 (80%)"], ["completion", "0 tokens"]]
    for word in ("Paris ", "is ", "nice."):
        clock.now += 1
        view.handle(ContentDelta(word))
    assert deltas(sent)[-1]["footer"][2] == ["completion", "3 tokens"]  # no finish item yet
    view.handle(usage_event(completion_tokens=3))
    view.handle(Finished("length"))
    record = {"usage": view.usage, "timings": view.timings, "finish_reason": "length",
              "model_dtype": None}
    assert view.footer == [list(item) for item in footer_items(record)]
    assert view.footer[-1] == ["finish", "length"] and view.status == "length"
    assert ["peak memory", "629.1 MB"] in view.footer


def test_a_streaming_reply_renders_as_its_final_html_at_every_step():
    # A long reply whose earlier blocks settle: at every flush the front end holds exactly
    # what the static renderer makes of the text so far.
    clock = Clock()
    view, sent = recording_view(clock)
    reply = ("Intro with **bold**.\n\n- a\n- b\n\n```python\ndef f(x):\n    return x\n```\n\n"
             "| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n\nTail $x_1$ and [l](https://x.org).") * 3
    pieces = [reply[i:i + 7] for i in range(0, len(reply), 7)]
    text = ""
    for piece in pieces:
        clock.now += 1
        text += piece
        view.handle(ContentDelta(piece))
        [content] = front_end_blocks(sent)
        assert content["html"] == markdown_blocks(text)
    assert max(len(d["html"]) for d in deltas(sent)[1:]) <= 2  # only the tail travels


@pytest.mark.parametrize("kernel, busy, plan", [
    ({"supportsSubshells": True, "commsOverSubshells": "perCommTarget"}, True, "message-then-interrupt"),
    ({"supportsSubshells": True, "commsOverSubshells": "disabled"}, True, "interrupt"),
    ({"supportsSubshells": False}, True, "interrupt"),
    ({"supportsSubshells": True, "commsOverSubshells": "perCommTarget"}, False, "message"),
    (None, True, "message"),
])
def test_stop_interrupts_the_kernel_only_when_the_message_cannot_arrive(kernel, busy, plan):
    # Interrupting turns the user's Stop into a KeyboardInterrupt and a failed cell; with
    # subshells the message arrives while the cell is busy, and interrupting is the fallback.
    setup = "null" if kernel is None else f"{{...{json.dumps(kernel)}, interrupt: async () => null}}"
    assert run_js(f"result = m.stopPlan({setup}, {json.dumps(busy)});") == plan


def test_the_live_card_warns_when_the_template_cannot_show_the_tools():
    view, _ = recording_view()
    view.offer_tools(["get_weather", "get_time"], unsupported=True)
    record = {"tools_offered": ["get_weather", "get_time"], "tools_unsupported": True}
    assert view.notices == notices_html(record)
    assert "the model never saw get_weather, get_time" in view.notices


# -- in a real kernel ---------------------------------------------------------------------------

STREAM_IN_BACKGROUND = r'''
import threading, time
from mlx_notebook.engine._events import ContentDelta, Finished, Started
from mlx_notebook.turn import Turn
from mlx_notebook.widgets import ChatView

go = threading.Event()
def stream(view, text):
    go.wait()
    view.handle(Started("r", prompt_tokens=3, cached_tokens=0))
    for word in text.split():
        view.handle(ContentDelta(word + " "))
        time.sleep(0.01)
    view.handle(Finished("stop"))
    view.finish(Turn(model="m", session=view.session, request={}, content=text, finish_reason="stop"))

view_a = ChatView("m", "a"); view_a.display()
worker_a = threading.Thread(target=stream, args=(view_a, "answer for cell one"))
worker_a.start()
'''

SECOND_CELL = r'''
view_b = ChatView("m", "b"); view_b.display()
worker_b = threading.Thread(target=stream, args=(view_b, "answer for cell two"))
worker_b.start()
go.set()
worker_a.join(); worker_b.join()
'''


@pytest.fixture(scope="module")
def kernel():
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    yield client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def run_cell(client, code: str) -> tuple[str, list[dict]]:
    msg_id = client.execute(code)
    reply = client.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "ok", reply["content"]
    return msg_id, drain_iopub(client)


def drain_iopub(client) -> list[dict]:
    messages = []
    while True:
        try:
            messages.append(client.get_iopub_msg(timeout=1))
        except Exception:  # queue.Empty: nothing more for a second
            return messages


@pytest.mark.slow
def test_each_streaming_cell_gets_its_own_final_output(kernel):
    first, messages = run_cell(kernel, STREAM_IN_BACKGROUND)
    second, more = run_cell(kernel, SECOND_CELL)
    messages += more
    updates = {
        m["content"]["data"][TURN_MIME_TYPE]["session"]: m["parent_header"]["msg_id"]
        for m in messages if m["msg_type"] == "update_display_data"
    }
    # Both threads finished while the second cell ran; each final output still names its cell.
    assert updates == {"a": first, "b": second}
    displays = [m for m in messages if m["msg_type"] == "display_data"]
    assert [m["parent_header"]["msg_id"] for m in displays] == [first, second]


HEADLESS_NOTEBOOK_CELL = r'''
from mlx_notebook.engine._events import ContentDelta, Finished, ReasoningDelta, Started, Usage
from mlx_notebook.turn import Turn
from mlx_notebook.widgets import ChatView

view = ChatView("smollm2", "default")
view.display()
view.handle(Started("r", prompt_tokens=12, cached_tokens=4))
view.handle(ReasoningDelta("Paris, surely."))
for word in "The capital of France is Paris.".split():
    view.handle(ContentDelta(word + " "))
view.handle(Usage(12, 4, 7, 0.1, 200.0, 30.0, 1 << 20))
view.handle(Finished("stop"))
view.finish(Turn(model="smollm2", session="default", request={"seed": 0},
                 content="The capital of France is Paris.", reasoning="Paris, surely.",
                 usage={"prompt_tokens": 12, "cached_tokens": 4, "completion_tokens": 7},
                 finish_reason="stop"))
'''


@pytest.mark.slow
def test_a_headless_run_saves_the_static_turn_instead_of_the_widget():
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(HEADLESS_NOTEBOOK_CELL)])
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    outputs = [o for o in notebook.cells[0].outputs if o["output_type"] == "display_data"]
    assert len(outputs) == 1
    data = outputs[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" not in data
    assert data[TURN_MIME_TYPE]["content"] == "The capital of France is Paris."
    assert data["text/plain"].splitlines()[-2:] == [
        "The capital of France is Paris.", "[stop, 12 prompt tokens (4 cached), 7 completion tokens]"]
    assert "<details class=\"mlxnb-reasoning\"" in data["text/html"]
    assert outputs[0]["metadata"]["mlx_notebook"]["usage"]["cached_tokens"] == 4


@pytest.mark.model
@pytest.mark.slow
def test_a_real_story_reply_reaches_the_front_end_in_few_messages(kernel, tiny_reasoner_path):
    run_cell(kernel, f"%load_ext mlx_notebook\n%load_model --no-progress {tiny_reasoner_path}")
    # The tiny reasoner's scripted story: a few hundred tokens, decoded fast.
    cell, messages = run_cell(kernel, "%%chat --temp 0 --tools none\nTell me a story about a small robot.")
    comm = [m for m in messages if m["msg_type"] == "comm_msg" and m["parent_header"].get("msg_id") == cell]
    deltas = [m["content"]["data"]["content"] for m in comm if m["content"]["data"]["method"] == "custom"]
    _, out = run_cell(kernel, "print(_.usage['completion_tokens'], repr((_.reasoning, _.content)))")
    text = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
    tokens, reply = text.split(" ", 1)
    reasoning, content = eval(reply)
    assert int(tokens) >= 250
    blocks = front_end_blocks([{"method": "custom", "content": d} for d in deltas])
    # Reasoning arrives once, character by character; the answer as its rendered blocks.
    assert "".join(b["text"] for b in blocks if b["kind"] == "reasoning") == reasoning
    assert "".join("".join(b["html"]) for b in blocks if b["kind"] == "content") == markdown_html(content)
    seconds = (comm[-1]["header"]["date"] - comm[0]["header"]["date"]).total_seconds()
    assert len(deltas) <= 20 * seconds + 2
    assert len(comm) <= 20 * seconds + 12  # plus a handful of state changes
    print(f"{tokens} tokens in {seconds:.2f} s: {len(deltas)} delta messages, {len(comm)} comm messages")


def test_a_view_given_the_runners_turn_reads_its_totals_without_folding_again():
    turn = Turn(model="m", session="s", request={})
    view = ChatView("m", "s", turn=turn)
    turn.begin_round({}, "r1")
    for event in [Started("r1", prompt_tokens=40, cached_tokens=8), ContentDelta("Hi."),
                  usage_event(prompt_tokens=40, cached_tokens=8, completion_tokens=3), Finished("stop")]:
        turn.apply(event)  # what the runner does before it hands the event to the view
        view.handle(event)
    assert view.usage == dict(turn.usage) == {"prompt_tokens": 40, "cached_tokens": 8, "completion_tokens": 3}
    assert view.timings == dict(turn.timings) and len(turn.rounds) == 1


def test_stop_keeps_the_subshell_the_front_end_sent_it_on_other_messages_do_not():
    # ipykernel routes a comm's messages to the shell that last sent on it: the busy cell's.
    from ipykernel.comm.comm import BaseComm

    from mlx_notebook._upstream import keep_front_end_subshell

    comm = BaseComm(target_name="mlx-test", primary=False)
    comm._reply_subshell_id = None  # the cell's main shell sent last
    keep_front_end_subshell(comm, lambda content: isinstance(content, dict) and content.get("kind") == "stop")
    assert comm._reply_subshell_for({"method": "custom", "content": {"kind": "stop"}}, "sub-1") == "sub-1"
    assert comm._reply_subshell_for({"method": "custom", "content": {"kind": "resync"}}, "sub-1") is None


def test_a_lone_surrogate_anywhere_in_a_turn_reaches_the_front_end_as_its_escape():
    """A remote server's ``"\\ud83d"`` or a tool's file name holds a lone surrogate, which the
    kernel cannot encode as UTF-8: every message and the saved output carry its escape."""
    from jupyter_client.session import json_packer

    lone = "\ud83d"
    view = ChatView(f"model {lone}", f"session {lone}")
    assert json_packer(view.get_state())  # the state the widget opens with
    sent: list[dict] = []
    view.comm.publish_msg = lambda msg_type, data=None, **keys: sent.append(data)
    view.offer_tools([f"tool {lone}"])
    view.handle(Started("r1", prompt_tokens=3, cached_tokens=0))
    view.handle(ReasoningDelta(f"think {lone}"))
    view.handle(ToolCall(index=0, id="c1", name=f"name {lone}", arguments={f"k {lone}": lone},
                         text=f"<tool_call>{lone}"))
    view.tool_result("c1", result={f"r {lone}": [lone]}, error=None)
    view.handle(ContentDelta(f"answer {lone}"))
    view.handle(ParseProblem(text=f"text {lone}", message=f"problem {lone}"))
    view.handle(Error(f"error {lone}", type="server_error"))
    turn = Turn(model=f"model {lone}", session=f"session {lone}", request={"messages": []},
                content=f"answer {lone}", reasoning=f"think {lone}", error=f"error {lone}")
    data, metadata = view.finish(turn)
    for message in [*sent, data, metadata]:
        json_packer(message)  # raised UnicodeEncodeError: the cell's output was lost
    assert "answer \\ud83d" in data["text/plain"]
    assert data[TURN_MIME_TYPE]["model"] == "model \\ud83d"
