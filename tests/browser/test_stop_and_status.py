"""Stop while the prompt is read, and the kernel status JupyterLab shows during a turn.

SmolLM2 (float32) in a real JupyterLab + Chromium. What is asserted is what the user sees:
the card's status, how soon it says stopped, and the status bar's Busy/Idle.
"""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.model]

_SEA = ("The sea was calm that morning, and the fishermen of the little harbour town pulled "
        "their boats onto the shingle, mended their nets and argued about the weather. ")
LONG_PROMPT = "Summarise this story.\n\n" + " ".join(
    f"{_SEA}Day {i}: the talk turned to the harbour." for i in range(12))  # ~470 tokens

# Samples, every 50 ms, the kernel status the status bar shows and whether cell ``index``'s
# live card is streaming text, and records every iopub status with its parent's type.
WATCH_STATUS = """index => {
    window.__samples = [];
    window.__statusParents = [];
    const panel = window.jupyterapp.shell.currentWidget;
    panel.context.sessionContext.session.kernel.anyMessage.connect((_, args) => {
        const msg = args.msg;
        if (msg.channel === 'iopub' && msg.header.msg_type === 'status') {
            window.__statusParents.push(
                `${msg.content.execution_state} <- ${msg.parent_header.msg_type}`);
        }
    });
    setInterval(() => {
        const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[index];
        const content = cell && cell.querySelector('.mlxnb-live .mlxnb-content');
        const streaming = !!content && content.innerText.trim().length > 0
            && !cell.querySelector('.mlxnb-static');
        const bar = document.querySelector('#jp-main-statusbar').innerText;
        const status = /\\|\\s*(Idle|Busy|Starting|Restarting|Unknown|Dead)/.exec(bar);
        window.__samples.push({streaming, status: status ? status[1] : bar});
    }, 50);
}"""


def test_the_status_bar_says_busy_while_the_first_chat_of_a_kernel_streams(notebook_page,
                                                                            smollm2_path):
    nb = notebook_page("status.ipynb", [
        f"%load_ext mlx_notebook\n%load_model {smollm2_path}",
        "%%chat --temp 0 --max-tokens 60\nWrite a short story about a lighthouse keeper.",
    ])
    nb.run_cell(0)
    nb.wait_idle(timeout=180, upto=0)
    nb.page.evaluate(WATCH_STATUS, 1)
    nb.run_cell(1)  # the first widget of this kernel: JupyterLab opens a comm subshell now
    nb.cell(1).locator(".mlxnb-static").wait_for(timeout=120_000)
    samples = nb.page.evaluate("() => window.__samples")
    streaming = [s["status"] for s in samples if s["streaming"]]
    assert len(streaming) >= 5, "the reply streamed too fast to sample"
    parents = nb.page.evaluate("() => window.__statusParents")
    assert set(streaming) == {"Busy"}, (streaming, parents)


def test_stop_at_the_first_prompt_progress_ends_the_turn_within_two_seconds(notebook_page,
                                                                           smollm2_path):
    nb = notebook_page("stop_prefill.ipynb", [
        f"%load_ext mlx_notebook\n%load_model {smollm2_path}",
        f"%%chat --temp 0 --max-tokens 64\n{LONG_PROMPT}",
        "print('COMPLETION=', _.usage['completion_tokens'], _.finish_reason)",
    ])
    nb.run_cell(0)
    nb.wait_idle(timeout=180, upto=0)
    nb.run_cell(1)
    live = nb.cell(1).locator(".mlxnb-live")
    live.locator(".mlxnb-progress").wait_for(state="visible", timeout=120_000)
    label = live.locator(".mlxnb-status").inner_text()
    assert label.startswith("reading prompt"), label
    clicked = time.monotonic()
    live.locator("button.mlxnb-stop").click()
    nb.page.wait_for_function(
        """() => {
            const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[1];
            const status = cell.querySelector('.mlxnb-static .mlxnb-status')
                || cell.querySelector('.mlxnb-live .mlxnb-status');
            return status && status.innerText.trim() === 'stopped';
        }""", timeout=30_000)
    stopped_after = time.monotonic() - clicked
    nb.wait_idle(timeout=60, upto=1)
    card = nb.cell(1).locator(".mlxnb-static")
    assert card.locator(".mlxnb-status").inner_text() == "stopped"
    assert card.locator(".mlxnb-content").count() == 0 or not card.locator(
        ".mlxnb-content").inner_text().strip()  # nothing was written after Stop
    assert stopped_after < 2.0
    # Stop is the user's choice, not a failure: no traceback, and Run All would go on.
    assert not [o for o in nb.outputs(1) if o["output_type"] == "error"]
    nb.run_cell(2)
    nb.wait_idle(timeout=60, upto=2)
    printed = nb.cell(2).locator(".jp-OutputArea-output").last.inner_text()
    assert printed.split() == ["COMPLETION=", "0", "stopped"], printed

