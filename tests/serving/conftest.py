"""Listeners for the serving tests: the session's engines (tests/conftest.py), each served by
one listener on a free loopback port (tests read its ``url`` and ``token``), and the official
``openai`` client pointed at each (``smol``, ``tiny``) for the peers' suites run through it."""

from __future__ import annotations

import time

import openai
import pytest

from mlx_notebook.engine.serving import Listener


@pytest.fixture(scope="session")
def tiny_listener(tiny_engine):
    with Listener(tiny_engine, port=0) as listener:
        yield listener


@pytest.fixture(scope="session")
def smollm2_listener(smollm2_engine):
    with Listener(smollm2_engine, port=0) as listener:
        yield listener


@pytest.fixture(scope="session")
def smol(smollm2_listener) -> openai.OpenAI:
    return openai.OpenAI(base_url=smollm2_listener.url, api_key=smollm2_listener.token,
                         max_retries=0, timeout=120)


@pytest.fixture(scope="session")
def tiny(tiny_listener) -> openai.OpenAI:
    return openai.OpenAI(base_url=tiny_listener.url, api_key=tiny_listener.token,
                         max_retries=0, timeout=120)


def _wait_until(condition, seconds: float = 30.0) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass; True if it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


@pytest.fixture
def wait_until():
    """``wait_until(condition, seconds=30)``: poll until it holds; True if it did."""
    return _wait_until
