"""``read_on_own_thread``: a blocking iteration, read on a thread of its own for the IO loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, Iterable

__all__ = ["END", "read_on_own_thread", "called"]

END = object()
"""What the queue of ``read_on_own_thread`` gets after the last item."""


def read_on_own_thread(items: Iterable) -> asyncio.Queue:
    """Iterate ``items`` (a blocking read of generations) on a thread of its own; each item
    reaches the returned queue, then ``END`` or the exception that stopped the iteration.

    The loop's default executor admits every request (``Engine.submit``) and has a few
    threads (CPU count + 4): a read that waits on a whole generation must never hold one, or
    a handful of list-prompt completions would keep every other client from being admitted.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()

    def hand_over(item: Any) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the listener stopped: nobody reads the queue any more
            pass

    def run() -> None:
        try:
            for item in items:
                hand_over(item)
        except Exception as exc:
            hand_over(exc)
        else:
            hand_over(END)

    threading.Thread(target=run, name="mlx-notebook-list-reader", daemon=True).start()
    return queue


def called(fn: Callable[[], Any]):
    """``fn()`` as the one item of an iteration, for ``read_on_own_thread``."""
    yield fn()
