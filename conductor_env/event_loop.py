"""One background event loop per process, so synchronous ``env.step`` calls can drive async
workers whose clients (HTTP connection pools, batching queues) must live on a single loop."""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """Returns the process's background event loop, starting its thread on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed() or _thread is None or not _thread.is_alive():
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_loop.run_forever, name="conductor-env-loop", daemon=True)
            _thread.start()
        return _loop


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs a coroutine on the background loop and waits for its result.

    Args:
        coroutine: The coroutine to run.

    Returns:
        Its result (its exception is re-raised here).

    Raises:
        RuntimeError: When called from the background loop's own thread (that would deadlock).
    """
    loop = background_loop()
    if threading.current_thread() is _thread:
        coroutine.close()
        raise RuntimeError("run_sync was called from the conductor-env event loop; await the async method instead")
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result()


def _shutdown() -> None:
    if _loop is not None and not _loop.is_closed():
        _loop.call_soon_threadsafe(_loop.stop)


def _forget_after_fork() -> None:
    # A forked child (multiprocessing's default start method on Linux) inherits the loop object
    # but not its thread, and possibly the lock held mid-start; it starts its own on first use.
    global _lock, _loop, _thread
    _lock, _loop, _thread = threading.Lock(), None, None


atexit.register(_shutdown)
os.register_at_fork(after_in_child=_forget_after_fork)
