"""JupyterLab (headless, 127.0.0.1, token, everything in a temp dir) driven by Debian's Chromium.

Follows ../shared/BROWSER-TESTING.md: Playwright for Python with ``/usr/bin/chromium`` (never
``playwright install``), a fixed free port with ``port_retries=0``, isolated config, runtime,
data, workspace and settings dirs, the news notification turned off, and ``&reset`` so no
restored tab steals "run all". The kernel runs this venv's Python with OpenBLAS preloaded.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PREBUILT_EXTENSION = Path(__file__).resolve().parents[2] / "share" / "jupyter" / "labextensions" / "mlx-notebook"
KERNEL = "mlx-notebook-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _jupyter_server(app: str, home: Path, root: Path, options: list[str], log: Path):
    """``python -m app`` (jupyterlab or notebook) on a free loopback port with a fresh token,
    its config, runtime and data under ``home`` and this checkout's extension build; yields
    ``(url, token, process)`` once it answers and stops it afterwards."""
    token, port = secrets.token_hex(16), _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTER_DATA_DIR": str(home / "data")}
    env.pop("LD_PRELOAD", None)  # the server itself runs no model
    command = [
        sys.executable, "-m", app, "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}", *options,
        # The extension as this checkout builds it: extra paths come before the venv's copy,
        # which an editable install made when it last ran.
        f"--LabServerApp.extra_labextensions_path={PREBUILT_EXTENSION.parent}",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    process = subprocess.Popen(command, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"{app} did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
    try:
        yield url, token, process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def jupyter_server():
    """``with jupyter_server(app, home, root, options, log) as (url, token, process)``, for
    tests that start a server of their own (Notebook 7).

    A fixture, not an import: the test folders are not packages, so ``from conftest import``
    gets whichever conftest.py pytest imported first.
    """
    return _jupyter_server


class Lab:
    """A running JupyterLab: where its notebooks live and how to reach it."""

    def __init__(self, root: Path, url: str, token: str, process: subprocess.Popen, log: Path):
        self.root, self.url, self.token, self.process, self.log = root, url, token, process, log

    def notebook(self, name: str, cells: list[str]) -> str:
        """Write a notebook of code cells and return its path relative to the server root."""
        notebook = {
            "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": KERNEL, "display_name": "Python 3 (mlx-notebook tests)",
                                        "language": "python"}},
            "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": source,
                       "outputs": [], "execution_count": None} for i, source in enumerate(cells)],
        }
        (self.root / name).write_text(json.dumps(notebook))
        return name


@pytest.fixture(scope="session")
def lab(tmp_path_factory) -> Lab:
    if not CHROMIUM.exists():
        pytest.fail("Chromium is missing: run bash tests/run.sh as root, or apt-get install chromium")
    home = tmp_path_factory.mktemp("lab")
    root, data = home / "root", home / "data"  # data: _jupyter_server's JUPYTER_DATA_DIR
    root.mkdir()
    settings = home / "settings"
    notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    kernel_env = {"PYTHONUNBUFFERED": "1"}
    # Its own name: in a venv, jupyter prefers the venv's own "python3" spec over ours.
    kernel_dir = data / "kernels" / KERNEL
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "kernel.json").write_text(json.dumps({
        # The product's launcher: it preloads the fast BLAS the way a user's kernel gets it.
        "argv": [sys.executable, "-m", "mlx_notebook.kernel", "-f", "{connection_file}"],
        "display_name": "Python 3 (mlx-notebook tests)", "language": "python", "env": kernel_env,
    }))
    options = [
        f"--LabApp.workspaces_dir={home / 'workspaces'}", f"--LabApp.user_settings_dir={settings}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
        "--ServerApp.disable_check_xsrf=False",
    ]
    with _jupyter_server("jupyterlab", home, root, options, home / "lab.log") as (url, token, process):
        yield Lab(root, url, token, process, home / "lab.log")


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    # tests/run.sh preloads OpenBLAS for the models; inherited by Playwright's node driver it
    # makes pthread_create fail and the driver hang, so the driver and browser start without it.
    preload = os.environ.pop("LD_PRELOAD", None)
    try:
        manager = sync_playwright()
        playwright = manager.start()
    finally:
        if preload is not None:
            os.environ["LD_PRELOAD"] = preload
    env = {key: value for key, value in os.environ.items() if key != "LD_PRELOAD"}
    try:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, env=env)
        yield chromium
        chromium.close()
    finally:
        manager.__exit__(None, None, None)


class NotebookPage:
    """One notebook open in JupyterLab, with the few actions the tests need."""

    def __init__(self, page, lab: Lab, path: str):
        self.page, self.lab, self.path = page, lab, path

    def open(self, timeout: float = 90) -> "NotebookPage":
        self.page.goto(f"{self.lab.url}/lab/tree/{self.path}?reset&token={self.lab.token}")
        self.page.wait_for_function(
            """path => {
                const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                if (!w || !w.context || w.context.path !== path) return false;
                const kernel = w.context.sessionContext.session?.kernel;
                return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
            }""",
            arg=self.path, timeout=timeout * 1000,
        )
        return self

    def run_all(self) -> None:
        # Not awaited: the command's promise resolves only when every cell has run.
        self.page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

    def run_cell(self, index: int) -> None:
        self.page.evaluate(
            """index => {
                const panel = window.jupyterapp.shell.currentWidget;
                panel.content.activeCellIndex = index;
                window.jupyterapp.commands.execute('notebook:run-cell');
            }""", index)

    def wait_idle(self, timeout: float = 180, upto: int | None = None) -> None:
        """Wait until the cells (all, or those up to index ``upto``) have run and the kernel idles."""
        self.page.wait_for_function(
            """upto => {
                const w = window.jupyterapp.shell.currentWidget;
                const kernel = w.context.sessionContext.session?.kernel;
                const cells = w.content.widgets.slice(0, upto === null ? undefined : upto + 1);
                return kernel.status === 'idle' && cells.every(c => c.model.type !== 'code'
                    || (c.model.executionCount !== null && !c.hasClass('jp-mod-running')
                        && !c.node.querySelector('.jp-InputArea-prompt')?.textContent.includes('*')));
            }""", arg=upto, timeout=timeout * 1000)

    def cell(self, index: int):
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def outputs(self, index: int) -> list[dict]:
        """The cell's outputs as the notebook model holds them (what would be saved)."""
        return self.page.evaluate(
            """index => window.jupyterapp.shell.currentWidget.content.model.cells.get(index)
                .toJSON().outputs""", index)

    def screenshot(self, name: str, target: int | Any | None = None) -> Path:
        """Save ``test-artifacts/<name>`` of the page, a cell (by index) or any locator."""
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        if target is None:
            target = self.page
        elif isinstance(target, int):
            target = self.cell(target)
        target.screenshot(path=str(path))
        return path


@pytest.fixture
def notebook_page(lab, browser):
    """``open(name, cells)`` writes a notebook (unless ``cells`` is None) and opens it in a fresh page."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pages = []

    def open_(name: str, cells: list[str]) -> NotebookPage:
        page = context.new_page()
        page.set_default_timeout(60_000)
        pages.append(page)
        path = name if cells is None else lab.notebook(name, cells)
        return NotebookPage(page, lab, path).open()

    yield open_
    for page in pages:
        # Shut the notebook's kernel down so kernels do not pile up across tests.
        try:
            page.evaluate("() => window.jupyterapp.shell.currentWidget?.context.sessionContext.shutdown()")
        except Exception:
            pass
    context.close()
