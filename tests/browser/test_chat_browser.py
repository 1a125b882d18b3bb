"""The chat widget in a real JupyterLab + Chromium: streaming, reasoning, tools, footer, Stop.

The first tests drive a ChatView with hand-written engine events from a notebook cell (the
widget alone); the ``model`` tests run ``%%chat`` on SmolLM2 and the tiny reasoner.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from mlx_notebook.display import TURN_MIME_TYPE

pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[2] / "docs"

# Records every distinct text of the live answer while it streams.
WATCH_CONTENT = """() => {
    window.__states = [];
    const record = () => {
        for (const node of document.querySelectorAll('.mlxnb-live .mlxnb-content')) {
            const text = node.innerText.trim();
            if (text && window.__states[window.__states.length - 1] !== text) window.__states.push(text);
        }
    };
    new MutationObserver(record).observe(document.body,
        {subtree: true, childList: true, characterData: true});
}"""

HAND_FED_TURN = r'''
import time
from mlx_notebook.engine.events import (ContentDelta, Finished, PrefillProgress, ReasoningDelta,
                                        Started, ToolCall, Usage)
from mlx_notebook.turn import Turn
from mlx_notebook.widgets import ChatView

view = ChatView("/models/demo-model", "default")
view.display()
view.handle(Started("r1", prompt_tokens=400, cached_tokens=100))
for done in range(100, 401, 50):
    view.handle(PrefillProgress(done, 400))
    time.sleep(0.05)
for word in "The user asks about Paris. I will look it up.".split():
    view.handle(ReasoningDelta(word + " "))
    time.sleep(0.04)
view.handle(ToolCall(0, "call_0", "get_weather", {"city": "Paris"}, "<tool_call>...</tool_call>"))
time.sleep(0.3)
view.tool_result("call_0", result={"temperature": 21})
answer = "It is **21 °C** in Paris today, a fine day for a walk along the Seine. Enjoy it!"
for word in answer.split(" "):
    view.handle(ContentDelta(word + " "))
    time.sleep(0.08)
view.handle(Usage(400, 100, 40, 0.2, 1500.0, 12.5, 300 << 20))
view.handle(Finished("stop"))
turn = Turn(model="/models/demo-model", session="default", request={"messages": []},
            content=answer, reasoning="The user asks about Paris. I will look it up.",
            tool_calls=[{"id": "call_0", "name": "get_weather", "arguments": {"city": "Paris"},
                         "result": {"temperature": 21}, "error": None}],
            usage={"prompt_tokens": 400, "cached_tokens": 100, "completion_tokens": 40},
            timings={"time_to_first_token": 0.2, "prefill_tokens_per_second": 1500.0,
                     "decode_tokens_per_second": 12.5, "peak_memory": 300 << 20,
                     "total_seconds": 2.5},
            finish_reason="stop")
view.finish(turn);
'''


def test_hand_fed_turn_streams_then_leaves_the_static_output(notebook_page):
    nb = notebook_page("hand_fed.ipynb", [HAND_FED_TURN])
    nb.page.evaluate(WATCH_CONTENT)
    nb.run_all()
    live = nb.page.locator(".mlxnb-live")
    live.locator(".mlxnb-progress-bar").wait_for(state="attached")
    reasoning = live.locator("details.mlxnb-reasoning")
    reasoning.wait_for()
    assert reasoning.get_attribute("open") is not None  # open while the model reasons
    live.locator(".mlxnb-tool-result").wait_for()
    assert "21" in live.locator(".mlxnb-tool-result").inner_text()
    live.locator(".mlxnb-content").wait_for()
    assert reasoning.get_attribute("open") is None  # folded once the answer starts
    assert "tokens" in reasoning.locator("summary").inner_text()
    nb.wait_idle()

    states = nb.page.evaluate("() => window.__states")
    final = "It is 21 °C in Paris today, a fine day for a walk along the Seine. Enjoy it!"
    assert len(states) >= 4, states
    # Each state is a prefix of the answer (an unclosed "**" shows as typed until it closes).
    assert all(final.startswith(state.replace("*", "")) for state in states), states
    static = nb.cell(0).locator(".mlxnb-static")
    assert static.locator(".mlxnb-content").inner_text().strip() == final
    assert static.locator("details.mlxnb-reasoning").count() == 1
    assert "cached 100 (25%)" in static.locator(".mlxnb-footer").inner_text()
    [output] = [o for o in nb.outputs(0) if o["output_type"] == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" not in output["data"]
    assert output["data"][TURN_MIME_TYPE]["content"] == final.replace("21 °C", "**21 °C**")
    nb.screenshot("hand-fed-turn.png", 0)


STOPPABLE_TURN = r'''
import time
from mlx_notebook.engine.events import ContentDelta, Finished, Started
from mlx_notebook.turn import Turn
from mlx_notebook.widgets import ChatView

view = ChatView("demo", "default")
stopped = []
view.on_stop(lambda: stopped.append(True))
view.display()
view.handle(Started("r1", prompt_tokens=10, cached_tokens=0))
turn = Turn(model="demo", session="default", request={})
try:
    for i in range(600):  # a minute: far longer than the test waits
        view.handle(ContentDelta(f"word{i} "))
        turn.content += f"word{i} "
        time.sleep(0.1)
    view.handle(Finished("stop"))
except KeyboardInterrupt:  # what the runner does: cancel, then finish as interrupted
    turn.interrupted = True
    view.handle(Finished("cancelled"))
view.finish(turn)
print("words:", len(turn.content.split()))
'''


def test_stop_button_interrupts_a_cell_that_is_busy_streaming(notebook_page):
    nb = notebook_page("stop.ipynb", [STOPPABLE_TURN])
    nb.run_all()
    live = nb.page.locator(".mlxnb-live")
    live.locator(".mlxnb-content").wait_for()
    time.sleep(1.0)
    started = time.monotonic()
    live.locator("button.mlxnb-stop").click()
    nb.wait_idle(timeout=30)
    assert time.monotonic() - started < 10
    static = nb.cell(0).locator(".mlxnb-static")
    assert static.locator(".mlxnb-status").inner_text() == "stopped"
    printed = nb.cell(0).locator(".jp-OutputArea-output pre").last.inner_text()
    assert 5 <= int(printed.split("words:")[1]) < 100
