"""The chat widget in a real JupyterLab + Chromium: streaming, reasoning, tools, footer, Stop.

The first tests drive a ChatView with hand-written engine events from a notebook cell (the
widget alone); the ``model`` tests run ``%%chat`` on SmolLM2 and the tiny reasoner.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from mlx_notebook.display import TURN_MIME_TYPE

KERNEL = "mlx-notebook-test"  # the test server's kernelspec (conftest.py)

pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _publish(shot: Path, name: str) -> None:
    """Refresh a README screenshot only when asked, so test runs leave the checkout clean."""
    if os.environ.get("MLX_NOTEBOOK_UPDATE_DOCS") == "1":
        shutil.copy(shot, DOCS / name)

def test_a_long_tool_result_scrolls_inside_its_card(browser):
    """Two hundred lines a tool returned stay in a box of their own; the reply after it stays in view."""
    from mlx_notebook.display import turn_css
    from mlx_notebook.display._turn_html import tool_card_html

    result = "\n".join(f"line {i}: disk sda1 is 93% full" for i in range(200))
    call = {"id": "call_1", "name": "read_log", "arguments": {"path": "/var/log/syslog"},
            "error": None, "result": result}
    page = browser.new_page(viewport={"width": 900, "height": 800})
    try:
        page.set_content(f"<style>{turn_css()}</style>{tool_card_html(call)}"
                         "<p id=reply>The disk is nearly full.</p>")
        box = page.locator(".mlxnb-tool-result")
        shown, full = box.evaluate("node => [node.clientHeight, node.scrollHeight]")
        assert shown < 450 < full, (shown, full)  # 24em of 12px text, the rest a scroll away
        box.evaluate("node => { node.scrollTop = node.scrollHeight; }")
        assert box.evaluate("node => node.scrollTop") > 0
        assert "line 199" in box.inner_text()  # nothing cut: all of it is in the box
        assert page.locator("#reply").evaluate("node => node.getBoundingClientRect().top") < 600
    finally:
        page.close()


# Records every distinct text of the live answer while it streams.
WATCH_CONTENT = """() => {
    window.__states = [];
    window.__prefill = 0;
    window.__reasoningOpen = false;
    const record = () => {
        if (document.querySelector('.mlxnb-live details.mlxnb-reasoning[open]')) window.__reasoningOpen = true;
        const bar = document.querySelector('.mlxnb-live .mlxnb-progress');
        if (bar && bar.style.display !== 'none') {
            window.__prefill = Math.max(window.__prefill, parseFloat(bar.firstChild.style.width));
        }
        for (const node of document.querySelectorAll('.mlxnb-live .mlxnb-content')) {
            const text = node.innerText.trim();
            if (text && window.__states[window.__states.length - 1] !== text) window.__states.push(text);
        }
    };
    new MutationObserver(record).observe(document.body,
        {subtree: true, childList: true, characterData: true, attributes: true});
}"""

HAND_FED_TURN = r'''
import time
from mlx_notebook.engine._events import (ContentDelta, Finished, PrefillProgress, ReasoningDelta,
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
    time.sleep(0.1)
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
    reasoning = live.locator("details.mlxnb-reasoning")
    reasoning.wait_for()
    live.locator(".mlxnb-tool-result").wait_for()
    assert "21" in live.locator(".mlxnb-tool-result").inner_text()
    live.locator(".mlxnb-content").wait_for()
    assert nb.page.evaluate("() => window.__prefill") > 50  # the prefill bar moved
    assert nb.page.evaluate("() => window.__reasoningOpen")  # open while the model reasoned...
    assert reasoning.get_attribute("open") is None  # ...folded once the answer started
    assert "tokens" in reasoning.locator("summary").inner_text()
    nb.screenshot("hand-fed-live.png", live)
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


FAILING_TURN = r'''
import time
from mlx_notebook.engine._events import ContentDelta, Error, Started
from mlx_notebook.turn import Turn
from mlx_notebook.widgets import ChatView

view = ChatView("demo", "default")
view.display()
view.handle(Started("r1", prompt_tokens=10, cached_tokens=0))
view.handle(ContentDelta("Half an"))
time.sleep(0.5)
view.handle(Error("The engine ran out of memory; load a smaller model.", type="server_error"))
time.sleep(3)
view.finish(Turn(model="demo", session="default", request={}, content="Half an",
                 error="The engine ran out of memory; load a smaller model."))
'''


def test_an_error_shows_in_the_live_view_and_stays_in_the_static_one(notebook_page):
    nb = notebook_page("error.ipynb", [FAILING_TURN])
    nb.run_all()
    live_error = nb.page.locator(".mlxnb-live .mlxnb-error")
    live_error.wait_for()
    assert live_error.inner_text() == "Error: The engine ran out of memory; load a smaller model."
    assert nb.page.locator(".mlxnb-live .mlxnb-status").inner_text() == "error"
    nb.wait_idle()
    static = nb.cell(0).locator(".mlxnb-static")
    assert "ran out of memory" in static.locator(".mlxnb-error").inner_text()
    assert static.locator(".mlxnb-status").inner_text() == "error"


STOPPABLE_TURN = r'''
import time
from mlx_notebook.engine._events import ContentDelta, Finished, Started
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


# -- %%chat on real models ----------------------------------------------------------------------

# Records, per notebook cell, every distinct text of the live answer and whether a live
# reasoning panel (open) or tool card was seen, so fast models cannot outrun the test.
WATCH_CELLS = """() => {
    window.__seen = {};
    const cells = () => Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell'));
    const record = () => {
        cells().forEach((cell, index) => {
            const live = cell.querySelector('.mlxnb-live');
            if (!live) return;
            const seen = window.__seen[index] ||= {states: [], reasoningOpen: false, toolCard: false, cached: null};
            const content = live.querySelector('.mlxnb-content');
            const text = content ? content.innerText.trim() : '';
            if (text && seen.states[seen.states.length - 1] !== text) seen.states.push(text);
            if (live.querySelector('details.mlxnb-reasoning[open]')) seen.reasoningOpen = true;
            if (live.querySelector('.mlxnb-tool .mlxnb-tool-name')) seen.toolCard = true;
            const cached = live.querySelector('[data-stat="cached"] b');
            if (cached) seen.cached = cached.innerText;
        });
    };
    new MutationObserver(record).observe(document.body,
        {subtree: true, childList: true, characterData: true, attributes: true});
}"""


def normalized(text: str) -> str:
    return " ".join(text.split())


def printed(nb, index: int, prefix: str) -> str:
    text = nb.cell(index).locator(".jp-OutputArea-output").last.inner_text()
    assert text.startswith(prefix), text
    return text[len(prefix):].strip()


@pytest.mark.model
def test_smollm2_chat_streams_answer_and_follow_up_shows_cached_tokens(notebook_page, smollm2_path):
    nb = notebook_page("smollm2.ipynb", [
        f"%load_ext mlx_notebook\n%load_model {smollm2_path}",
        "%%chat --temp 0 --max-tokens 48\nDescribe Paris in three sentences.",
        "import json\nprint('CONTENT=' + json.dumps(_.content))",
        "%%chat --temp 0 --max-tokens 24\nAnd what is the capital of Germany?",
        "print('CACHED=', _.usage['cached_tokens'], _.timings['decode_tokens_per_second'])",
        "%%chat --temp 0 --max-tokens 8 --tokens 3 --new\nSay hello.",
    ])
    nb.page.evaluate(WATCH_CELLS)
    nb.run_all()
    nb.wait_idle(timeout=300)

    content = json.loads(printed(nb, 2, "CONTENT="))
    seen = nb.page.evaluate("() => window.__seen")
    states = seen["1"]["states"]
    final_dom = nb.cell(1).locator(".mlxnb-static .mlxnb-content").inner_text()
    assert normalized(final_dom) == normalized(content)
    # The answer grew on screen: at least three partial states before the final one.
    partial = [s for s in states if normalized(s) != normalized(content)]
    assert len(partial) >= 3, states
    assert all(normalized(content).startswith(normalized(s)) for s in partial), states

    cached, decode = printed(nb, 4, "CACHED=").split()
    assert int(cached) > 0
    footer = nb.cell(3).locator(".mlxnb-static .mlxnb-footer [data-stat='cached'] b").inner_text()
    assert footer.startswith(f"{cached} (") and not footer.startswith("0 ")
    assert seen["3"]["cached"] is not None and not seen["3"]["cached"].startswith("0 ")  # live too
    nb.page.set_viewport_size({"width": 1100, "height": 1100})
    nb.cell(3).scroll_into_view_if_needed()
    shot = nb.screenshot("smollm2-follow-up.png", 3)
    _publish(shot, "screenshot-smollm2.png")
    print(f"SmolLM2 decode {decode} tok/s, {len(states)} live states")

    # --tokens: the answer token by token; hovering one lists the alternatives.
    panel = nb.cell(5).locator(".mlxnb-tokens")  # the token view the magics show under the turn
    tokens = panel.locator(".mlxnb-token")
    completion = nb.cell(5).locator(".mlxnb-static [data-stat='completion'] b").inner_text()
    assert tokens.count() == int(completion.split()[0])
    joined = "".join(tokens.nth(i).evaluate("n => n.firstChild.textContent") for i in range(tokens.count()))
    answer = nb.cell(5).locator(".mlxnb-static .mlxnb-content").inner_text()
    assert normalized(joined.replace("␣", " ").replace("↵", " ")).startswith(normalized(answer)[:10])
    tokens.first.hover()
    tip = tokens.first.locator(".mlxnb-token-tip")
    assert tip.is_visible() and tip.locator("tr").count() >= 2  # the token and alternatives
    nb.screenshot("smollm2-tokens.png", 5)


# The tool exactly as the tiny reasoner's scripts offer it (it only knows its scripts' prompts),
# answering with the scripted result.
WEATHER_TOOL = '''import json
from mlx_notebook import tool
from mlx_notebook.engine.models.tiny_reasoner import load_scripts

script = next(s for s in load_scripts() if s["name"] == "answer_from_tool_result")
scripted_result = json.loads(script["messages"][-1]["content"])

@tool(description=script["tools"][0]["function"]["description"])
def get_weather(city: str) -> dict:
    return scripted_result'''


@pytest.mark.model
def test_tiny_reasoner_turn_shows_reasoning_panel_and_tool_card(notebook_page, tiny_reasoner_path):
    nb = notebook_page("reasoner.ipynb", [
        f"%load_ext mlx_notebook\n%load_model {tiny_reasoner_path}",
        WEATHER_TOOL,
        "%%chat --temp 0\nWhat's the weather in Paris?",
    ])
    nb.page.evaluate(WATCH_CELLS)
    nb.run_all()
    nb.wait_idle(timeout=180)

    # The tiny model answers in well under a second, often before the widget's module has
    # loaded, so the live panel may never paint; the hand-fed test checks its open/fold.
    static = nb.cell(2).locator(".mlxnb-static")
    reasoning = static.locator("details.mlxnb-reasoning")
    assert reasoning.count() == 2  # one panel per round, in the order they happened
    assert [reasoning.nth(i).get_attribute("open") for i in range(2)] == [None, None]  # folded
    assert "I need the current weather in Paris" in reasoning.nth(0).locator(".mlxnb-reasoning-body").text_content()
    assert "The tool says Paris is sunny" in reasoning.nth(1).locator(".mlxnb-reasoning-body").text_content()
    order = static.evaluate("""node => Array.from(node.querySelectorAll(
        '.mlxnb-reasoning, .mlxnb-tool, .mlxnb-content')).map(e => e.classList[0])""")
    assert order == ["mlxnb-reasoning", "mlxnb-tool", "mlxnb-reasoning", "mlxnb-content"]
    assert "tools offered: get_weather" in static.locator(".mlxnb-tools-offered").inner_text()
    card = static.locator(".mlxnb-tool")
    assert card.locator(".mlxnb-tool-name").inner_text() == "get_weather"
    assert json.loads(card.locator(".mlxnb-tool-args").inner_text()) == {"city": "Paris"}
    assert json.loads(card.locator(".mlxnb-tool-result").inner_text())["condition"] == "sunny"
    reasoning.nth(0).locator("summary").click()  # unfold both for the screenshot
    reasoning.nth(1).locator("summary").click()
    nb.page.set_viewport_size({"width": 1100, "height": 1100})
    nb.cell(2).scroll_into_view_if_needed()
    shot = nb.screenshot("reasoner-tools.png", 2)
    _publish(shot, "screenshot-reasoner-tools.png")


@pytest.mark.model
def test_stop_button_ends_a_long_smollm2_turn(notebook_page, smollm2_path):
    nb = notebook_page("stop_model.ipynb", [
        f"%load_ext mlx_notebook\n%load_model {smollm2_path}",
        "%%chat --temp 0 --max-tokens 2000\nWrite a very long story about a dragon who learns to cook.",
        "%%chat --temp 0 --max-tokens 8 --new\nWhat is the capital of France?",
    ])
    nb.run_cell(0)
    nb.wait_idle(timeout=180, upto=0)
    nb.run_cell(1)
    live = nb.cell(1).locator(".mlxnb-live")
    nb.page.wait_for_function(
        """() => {
            const node = document.querySelectorAll('.jp-Notebook .jp-Cell')[1]
                .querySelector('.mlxnb-live .mlxnb-content');
            return node && node.innerText.trim().split(/\\s+/).length >= 5;
        }""", timeout=120_000)
    clicked = time.monotonic()
    live.locator("button.mlxnb-stop").click()
    nb.cell(1).locator(".mlxnb-static").wait_for(timeout=30_000)
    stopped_after = time.monotonic() - clicked
    static = nb.cell(1).locator(".mlxnb-static")
    assert static.locator(".mlxnb-status").inner_text() == "stopped"
    completion = static.locator("[data-stat='completion'] b").inner_text()
    assert int(completion.split()[0]) < 2000
    assert stopped_after < 15
    nb.wait_idle(timeout=60, upto=1)
    nb.run_cell(2)  # the engine serves the next cell normally
    nb.cell(2).locator(".mlxnb-static").wait_for(timeout=120_000)
    assert "Paris" in nb.cell(2).locator(".mlxnb-static .mlxnb-content").inner_text()
    nb.screenshot("smollm2-stopped.png", 1)


# -- the live card shows what the static renderer makes -----------------------------------------

MARKDOWN_REPLY = (
    "# Title\nHello **world** and *you*; use `x < y`.\n\n- one\n- two *it*\n  continued\n\n"
    "3. c\n4. d\n\n> quoted **bold**\n\n---\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    "[docs](https://ml-explore.github.io) and [bad](javascript:alert(1)) <script>alert(1)</script>\n\n"
    "```python\ndef f(x):\n    return 'a'  # c\n```\n\nsnake_case_name __strong__ $a_1$"
)

UNFINISHED_MARKDOWN_TURN = f"""
import time
from mlx_notebook.engine._events import ContentDelta, Started
from mlx_notebook.widgets import ChatView

reply = {MARKDOWN_REPLY!r}
view = ChatView("demo", "default")
view.display()
view.handle(Started("r1", prompt_tokens=10, cached_tokens=0))
for i in range(0, len(reply), 9):
    view.handle(ContentDelta(reply[i:i + 9]))
    time.sleep(0.02)
view._flush()  # the last piece; the turn is left live (no finish) for the test to read
"""


def test_the_live_card_draws_the_static_renderers_html(notebook_page):
    from mlx_notebook.display import markdown_html

    nb = notebook_page("live_markdown.ipynb", [UNFINISHED_MARKDOWN_TURN])
    nb.run_all()
    nb.wait_idle()
    content = nb.page.locator(".mlxnb-live .mlxnb-content")
    content.wait_for()
    live, expected = nb.page.evaluate(
        """([selector, html]) => {
            const template = document.createElement('template');
            template.innerHTML = html;  // the browser's own serialisation of the static HTML
            return [document.querySelector(selector).innerHTML, template.innerHTML];
        }""", [".mlxnb-live .mlxnb-content", markdown_html(MARKDOWN_REPLY)])
    assert live == expected
    assert content.locator("table td").first.inner_text() == "1"
    assert content.locator('pre.mlxnb-code span[style*="color"]').count() >= 3  # highlighted
    assert content.locator("script").count() == 0 and "<script>" in content.inner_text()
    assert content.locator('a[href^="javascript"]').count() == 0


def test_a_headless_run_reopens_untrusted_with_the_whole_turn_without_running(lab, notebook_page):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(HAND_FED_TURN)])
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    notebook.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, lab.root / "headless.ipynb")
    # Opened as a stranger's notebook: untrusted, so JupyterLab sanitizes the HTML, and the
    # kernel never runs a cell, so nothing but the saved output can show the turn.
    nb = notebook_page("headless.ipynb", None)
    static = nb.cell(0).locator(".mlxnb-static")
    static.wait_for()
    assert nb.cell(0).locator(".jp-OutputArea-output.jp-mod-trusted").count() == 0
    assert static.locator(".mlxnb-content").inner_text().strip() == (
        "It is 21 °C in Paris today, a fine day for a walk along the Seine. Enjoy it!")
    assert static.locator("details.mlxnb-reasoning summary").inner_text().startswith("Reasoning")
    assert static.locator(".mlxnb-tool-name").inner_text() == "get_weather"
    assert "cached 100 (25%)" in static.locator(".mlxnb-footer").inner_text()
    nb.screenshot("headless-reopened.png", 0)


WATCH_COMPARE = """() => {
    window.__liveCards = 0;
    new MutationObserver(() => {
        window.__liveCards = Math.max(window.__liveCards,
            document.querySelectorAll('.widget-hbox .mlxnb-live').length);
    }).observe(document.body, {subtree: true, childList: true});
}"""


@pytest.mark.model
def test_compare_streams_two_cards_side_by_side_then_marks_where_they_part(notebook_page, smollm2_path):
    nb = notebook_page("compare.ipynb", [
        f"%load_ext mlx_notebook\n%load_model {smollm2_path}",
        '%%chat --max-tokens 24 --compare "temperature=0" "temperature=0 max_tokens=6"\n'
        "Describe Paris in three sentences.",
        "print('DIVERGES=', _.diverges_at, len(_.sides[1].logprobs))",
    ])
    nb.page.evaluate(WATCH_COMPARE)
    nb.run_all()
    nb.wait_idle(timeout=300)
    assert nb.page.evaluate("() => window.__liveCards") == 2  # both streamed, side by side
    diverges, shorter = printed(nb, 2, "DIVERGES=").split()
    assert diverges == shorter == "6"  # side B stopped at 6 tokens: that is where they part
    compare = nb.cell(1).locator(".mlxnb-compare")
    assert compare.locator(".mlxnb-static").count() == 2
    assert compare.locator(".mlxnb-compare-label").all_inner_texts() == ["temperature=0", "temperature=0 max_tokens=6"]
    assert compare.locator(".mlxnb-diverge").count() == 1  # side A's 7th token; B has none there
    assert "They diverge at token 6" in compare.locator(".mlxnb-compare-divergence").inner_text()
    nb.screenshot("compare.png", 1)


@pytest.mark.model
def test_clicking_an_alternative_in_the_token_view_branches_the_reply_there(notebook_page, smollm2_path):
    nb = notebook_page("branch.ipynb", [
        f"%load_ext mlx_notebook\n%load_model {smollm2_path}",
        "%%chat --temp 0 --max-tokens 10 --tokens 3\nWhat is the capital of France? Answer in one sentence.",
    ])
    nb.run_all()
    nb.wait_idle(timeout=300)
    cell = nb.cell(1)
    token = cell.locator(".mlxnb-token[data-at='5']")  # ' Paris' in "The capital of France is Paris."
    token.hover()
    alternative = token.locator("tr.mlxnb-alt").first
    chosen = alternative.get_attribute("data-token")
    alternative.click()
    note = cell.locator(".mlxnb-branch-note")
    note.wait_for(timeout=120_000)
    assert note.inner_text().startswith("Branch at token 5: The capital of France is")
    assert chosen.strip() in note.inner_text() and "instead of ' Paris'" in note.inner_text()
    cell.locator(".mlxnb-static").nth(1).wait_for(timeout=120_000)  # the branch streamed, then left its static card
    card = cell.locator(".mlxnb-static").nth(1)
    assert "cached" in card.locator(".mlxnb-footer").inner_text()
    cached = card.locator(".mlxnb-footer [data-stat='cached'] b").inner_text()
    assert not cached.startswith("0 ")  # the prompt cache served the prefix
    nb.screenshot("branch.png", 1)
