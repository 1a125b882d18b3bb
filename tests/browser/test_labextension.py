"""The mlx-notebook JupyterLab extension in a real JupyterLab + Chromium.

- A saved notebook opened with no kernel: each turn is drawn by the extension's MIME
  renderer (``.mlxnb-turn-native``, an element only it makes), reasoning expands, and the
  token view shows a probability on hover.
- Math in a turn is typeset by JupyterLab's MathJax, code keeps Python's highlighting.
- ``%%chat`` cells are highlighted as Markdown: an apostrophe does not colour the rest.
- The engine panel (opened by ``%mlx panel``) lists a streaming request, its Stop ends it
  within 2 s, the prompt-cache entry shows with its bytes, "clear cache" empties it, and
  after a kernel restart it says there is no engine until the model is loaded again.
- The panel follows the current notebook's kernel when several are open.
- Notebook 7 streams the live widget and then draws the turn with the extension.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.browser

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _publish(shot: Path, name: str) -> None:
    """Refresh a README screenshot only when asked, so test runs leave the checkout clean."""
    if os.environ.get("MLX_NOTEBOOK_UPDATE_DOCS") == "1":
        shutil.copy(shot, DOCS / name)


def _saved_notebook(lab, model_path, name: str) -> str:
    """A notebook run headless (nbclient, as `jupyter execute` would) and saved, with no
    kernelspec, so JupyterLab opens it without starting a kernel."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in [
        "%load_ext mlx_notebook",
        f"%load_model {model_path} --no-progress",
        "%%chat\nWhat is 17 + 25?",
        "%%chat --session tokens --tokens 3\nWhat is 17 + 25?",
    ]])
    NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    nb.metadata.pop("kernelspec", None)
    nbformat.write(nb, lab.root / name)
    return name


def _open_without_kernel(page, lab, path: str) -> None:
    page.goto(f"{lab.url}/lab/tree/{path}?reset&token={lab.token}")
    # A notebook without a kernelspec asks which kernel to start: "No Kernel".
    page.locator(".jp-Dialog button", has_text="No Kernel").click(timeout=60_000)
    page.wait_for_function(
        """path => {
            const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            return !!w && !!w.context && w.context.path === path && w.context.isReady
                && w.context.sessionContext.session === null;
        }""", arg=path, timeout=60_000)


@pytest.mark.model
def test_a_saved_notebook_without_a_kernel_renders_turns_with_the_extension(lab, browser, tiny_reasoner_path):
    path = _saved_notebook(lab, tiny_reasoner_path, "saved_turns.ipynb")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        _open_without_kernel(page, lab, path)
        cells = page.locator(".jp-Notebook .jp-Cell")
        native = cells.nth(2).locator(".mlxnb-turn-native")
        native.wait_for(timeout=30_000)
        # The extension's element, holding the turn drawn from the bundle's own HTML.
        assert native.locator(".mlxnb-turn .mlxnb-content").inner_text().strip() == "17 + 25 = 42."
        assert "tokens" in native.locator(".mlxnb-footer").inner_text()
        assert cells.nth(2).locator(".jp-RenderedHTMLCommon .mlxnb-turn").count() == 0, "the HTML fallback drew it"
        reasoning = native.locator("details.mlxnb-reasoning")
        assert reasoning.get_attribute("open") is None
        summary = reasoning.locator("summary")
        assert summary.inner_text().startswith("Reasoning")
        summary.click()
        assert reasoning.get_attribute("open") is not None
        assert "carry 1" in reasoning.locator(".mlxnb-reasoning-body").inner_text()
        # The token view: a probability appears on hover (the extension's stylesheet styles it
        # even though JupyterLab strips <style> from this untrusted notebook).
        token = cells.nth(3).locator(".mlxnb-token").first
        tip = token.locator(".mlxnb-token-tip")
        assert not tip.is_visible()
        token.hover()
        tip.wait_for(state="visible", timeout=5_000)
        assert "%" in tip.inner_text()
        shot = DOCS.parent / "test-artifacts" / "screenshot-saved-notebook.png"
        shot.parent.mkdir(exist_ok=True)
        page.locator(".jp-NotebookPanel").screenshot(path=str(shot))
        _publish(shot, "screenshot-saved-notebook.png")
    finally:
        context.close()


# The colour of the text holding `needle` in cell `index`'s editor line `line`, and the
# line's own colour: Python colours a string, Markdown leaves plain text alone.
TEXT_COLOUR = """([index, line, needle]) => {
    const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
    const row = cell.querySelectorAll('.cm-editor .cm-line')[line];
    const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
        if (node.textContent.includes(needle)) {
            return {text: getComputedStyle(node.parentElement).color, line: getComputedStyle(row).color};
        }
    }
    return null;
}"""


def test_chat_cells_are_highlighted_as_markdown(notebook_page):
    nb = notebook_page("highlight.ipynb", [
        "%%chat --tokens 3\nIt's a test, and the rest should stay plain.",
        "x = 'It' + \"s a test, and the rest\"",
    ])
    chat = nb.cell(0)
    chat.locator(".cm-mlxnb-magic").wait_for(timeout=30_000)
    assert chat.locator(".cm-mlxnb-magic").inner_text() == "%%chat --tokens 3"
    nb.page.wait_for_function(
        """() => document.querySelectorAll('.jp-Notebook .jp-Cell')[1]
               .querySelectorAll('.cm-editor .cm-line span').length > 0""")
    prompt = nb.page.evaluate(TEXT_COLOUR, [0, 1, "the rest"])
    assert prompt and prompt["text"] == prompt["line"], prompt
    # The same words in a Python string are coloured: the check above can tell.
    python = nb.page.evaluate(TEXT_COLOUR, [1, 0, "the rest"])
    assert python and python["text"] != python["line"], python


@pytest.mark.model
def test_the_engine_panel_lists_stops_and_clears(notebook_page, smollm2_path):
    nb = notebook_page("panel.ipynb", [
        f"%load_ext mlx_notebook\n%load_model {smollm2_path}",
        "%mlx panel",
        "%%chat --session story --max-tokens 2000 --temperature 1.0 --seed 1\n"
        "Write a very long story about a lighthouse keeper.",
        "%%chat --session short --max-tokens 8\nWhat is the capital of France?",
    ])
    page = nb.page
    nb.run_cell(0)
    nb.wait_idle(timeout=180, upto=0)
    nb.run_cell(1)
    panel = page.locator(".mlxnb-panel")
    panel.wait_for(state="visible", timeout=30_000)
    page.wait_for_function(
        """() => document.querySelector('.mlxnb-panel tr[data-fact="name"] td')?.innerText
               .startsWith('smollm2')""", timeout=30_000)
    assert panel.locator(".mlxnb-panel-alive").inner_text() == "alive"

    nb.run_cell(2)
    request = panel.locator(".mlxnb-panel-live .mlxnb-panel-request")
    page.wait_for_function(
        """() => {
            const row = document.querySelector('.mlxnb-panel-live .mlxnb-panel-request');
            return row && parseInt(row.querySelector('.mlxnb-panel-tokens').innerText) >= 5
                && row.querySelector('.mlxnb-panel-speed').innerText.includes('tok/s');
        }""", timeout=120_000)
    assert request.locator(".mlxnb-panel-session").inner_text() == "story"
    shot = DOCS.parent / "test-artifacts" / "screenshot-engine-panel.png"
    shot.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(shot))
    _publish(shot, "screenshot-engine-panel.png")
    clicked = time.monotonic()
    request.locator("button.mlxnb-panel-stop").click()
    page.wait_for_function(
        """() => {
            const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[2];
            const status = cell.querySelector('.mlxnb-static .mlxnb-status');
            return status && status.innerText.trim() === 'stopped';
        }""", timeout=30_000)
    assert time.monotonic() - clicked < 2.0
    nb.wait_idle(timeout=60, upto=2)
    page.wait_for_function("() => !document.querySelector('.mlxnb-panel-live .mlxnb-panel-request')")
    assert panel.locator(".mlxnb-panel-recent-row").first.locator("td").last.inner_text() == "stopped"

    nb.run_cell(3)
    nb.wait_idle(timeout=120, upto=3)
    cache = panel.locator(".mlxnb-panel-cache")
    page.wait_for_function(
        "() => parseInt(document.querySelector('.mlxnb-panel-cache')?.dataset.bytes || '0') > 0")
    assert int(cache.get_attribute("data-entries")) >= 1
    assert "MB" in cache.locator('tr[data-fact="bytes"] td').inner_text()
    sessions = [row.locator("td").first.inner_text() for row in cache.locator(".mlxnb-panel-prompt").all()]
    assert "short" in sessions, sessions
    page.evaluate("() => window.jupyterapp.commands.execute('mlx-notebook:clear-cache')")
    page.wait_for_function(
        "() => document.querySelector('.mlxnb-panel-cache')?.dataset.entries === '0'", timeout=10_000)
    assert cache.get_attribute("data-bytes") == "0"

    # A kernel restart: the panel says there is no engine until the model is loaded again.
    page.evaluate("() => window.jupyterapp.shell.currentWidget.context.sessionContext.session.kernel.restart()")
    panel.locator(".mlxnb-panel-no-engine").wait_for(timeout=60_000)
    nb.page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.context.sessionContext.session.kernel.status === 'idle'",
        timeout=60_000)
    nb.run_cell(0)
    nb.wait_idle(timeout=180, upto=0)
    page.wait_for_function(
        """() => document.querySelector('.mlxnb-panel tr[data-fact="name"] td')?.innerText
               .startsWith('smollm2')""", timeout=30_000)


@pytest.fixture(scope="module")
def notebook7(lab, jupyter_server):
    """Notebook 7 (the `notebook` package) on the lab's root, kernels and extension copy."""
    home = lab.root.parent
    options = [
        f"--JupyterNotebookApp.workspaces_dir={home / 'workspaces7'}",
        f"--JupyterNotebookApp.user_settings_dir={home / 'settings'}",
        "--JupyterNotebookApp.expose_app_in_browser=True",
    ]
    with jupyter_server("notebook", home, lab.root, options, home / "notebook7.log") as (url, token, _):
        yield url, token


@pytest.mark.model
def test_notebook_7_streams_the_widget_then_renders_the_turn_natively(lab, browser, notebook7, tiny_reasoner_path):
    url, token = notebook7
    path = lab.notebook("notebook7.ipynb", [
        f"%load_ext mlx_notebook\n%load_model {tiny_reasoner_path} --no-progress",
        "%%chat\nWhat is 17 + 25?",
    ])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{url}/notebooks/{path}?token={token}")
        page.wait_for_function(
            """() => {
                const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                const kernel = w && w.context && w.context.sessionContext.session?.kernel;
                return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
            }""", timeout=90_000)
        cells = page.locator(".jp-Notebook .jp-Cell")
        assert cells.nth(1).locator(".cm-mlxnb-magic").inner_text() == "%%chat"
        # The live widget (anywidget) is seen while the turn streams, then the extension draws
        # the finished turn in its place.
        page.evaluate("""() => {
            window.__sawWidget = false;
            new MutationObserver(() => {
                if (document.querySelector('.mlxnb-live')) window.__sawWidget = true;
            }).observe(document.body, {subtree: true, childList: true});
            window.jupyterapp.commands.execute('notebook:run-all-cells');
        }""")
        native = cells.nth(1).locator(".mlxnb-turn-native")
        native.wait_for(timeout=180_000)
        assert native.locator(".mlxnb-content").inner_text().strip() == "17 + 25 = 42."
        assert page.evaluate("() => window.__sawWidget"), "the live widget never rendered in Notebook 7"
    finally:
        try:
            page.evaluate("() => window.jupyterapp.shell.currentWidget?.context.sessionContext.shutdown()")
        except Exception:
            pass
        context.close()


@pytest.mark.model
def test_the_engine_panel_follows_the_current_notebooks_kernel(lab, notebook_page, tiny_reasoner_path):
    nb = notebook_page("multi_a.ipynb", [f"%load_ext mlx_notebook\n%load_model {tiny_reasoner_path} --no-progress"])
    page = nb.page
    nb.run_cell(0)
    nb.wait_idle(timeout=120, upto=0)
    page.evaluate("() => window.jupyterapp.commands.execute('mlx-notebook:open-panel')")
    model_name = """() => document.querySelector('.mlxnb-panel tr[data-fact="name"] td')?.innerText || ''"""
    page.wait_for_function(f"() => ({model_name})().startsWith('tiny-reasoner')", timeout=30_000)

    # A second notebook with its own kernel, the extension loaded but no model.
    lab.notebook("multi_b.ipynb", ["%load_ext mlx_notebook"])
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:open', {path: 'multi_b.ipynb'})")
    page.wait_for_function(
        """() => {
            const w = window.jupyterapp.shell.currentWidget;
            const kernel = w && w.context && w.context.path === 'multi_b.ipynb'
                && w.context.sessionContext.session?.kernel;
            return !!kernel && kernel.status === 'idle';
        }""", timeout=90_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(
        """() => document.querySelector('.mlxnb-panel .mlxnb-panel-source')?.innerText === 'multi_b.ipynb'
               && document.querySelector('.mlxnb-panel-model .mlxnb-panel-no-engine')""", timeout=60_000)
    assert "run %load_model" in page.locator(".mlxnb-panel-model .mlxnb-panel-no-engine").inner_text()

    # Back to the first notebook: its engine again.
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:open', {path: 'multi_a.ipynb'})")
    page.wait_for_function(f"() => ({model_name})().startsWith('tiny-reasoner')", timeout=30_000)
    assert page.locator(".mlxnb-panel .mlxnb-panel-source").inner_text() == "multi_a.ipynb"
    page.evaluate("""() => {
        for (const w of window.jupyterapp.shell.widgets('main')) w.context?.sessionContext.shutdown();
    }""")


def test_the_renderer_typesets_math_and_keeps_highlighted_code(lab, browser):
    from mlx_notebook.display import turn_mimebundle
    from mlx_notebook.turn import Turn

    content = "Euler: $e^{i\\pi}+1=0$\n\n```python\nprint('hi')  # greet\n```"
    turn = Turn(model="demo-model", session="default", request={"messages": [{"role": "user", "content": "?"}]},
                content=content, finish_reason="stop")
    data, metadata = turn_mimebundle(turn)
    cell = nbformat.v4.new_code_cell("%%chat\n?", execution_count=1, outputs=[
        nbformat.v4.new_output("display_data", data=data, metadata=metadata)])
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), lab.root / "math.ipynb")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        _open_without_kernel(page, lab, "math.ipynb")
        native = page.locator(".jp-Notebook .jp-Cell").first.locator(".mlxnb-turn-native")
        native.locator(".mlxnb-content mjx-container").first.wait_for(timeout=30_000)
        assert "\\(" not in native.locator(".mlxnb-content").inner_text()
        assert native.locator('pre.mlxnb-code span[style*="color"]').count() >= 2
    finally:
        context.close()
