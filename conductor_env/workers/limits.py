"""Call limits: how many calls a worker may have in flight, and how many it may start per minute.

A :class:`~conductor_env.workers.pool.WorkerPool` asks its limiter for a slot before every
attempt at a call. :class:`LocalLimiter` (the default) holds the limits within one process;
a cluster limiter (:mod:`conductor_env.distributed`) holds them across every process of a Ray
cluster, so that N episode actors do not multiply a worker's load by N.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from typing import Any, Protocol

#: The window a requests-per-minute limit counts over.
RATE_WINDOW_S = 60.0


class CallLimiter(Protocol):
    """Grants slots for calls to a worker."""

    def slot(self, name: str, max_concurrency: int, requests_per_minute: float | None) -> contextlib.AbstractAsyncContextManager[None]:
        """Returns a context that waits for a slot of worker ``name`` and frees it on exit.

        Args:
            name: The worker's name (limits are per worker).
            max_concurrency: Calls in flight at once.
            requests_per_minute: Calls started in any 60 s window (``None``: no limit).
        """


class RateWindow:
    """Spaces call starts so that at most ``per_minute`` start in any :data:`RATE_WINDOW_S` window.

    Args:
        per_minute: Calls allowed per window (fractions round down, at least one).
        clock: Monotonic clock (seconds).
    """

    def __init__(self, per_minute: float, clock: Any = time.monotonic) -> None:
        self.capacity = max(1, int(per_minute))
        self._clock = clock
        self._starts: collections.deque[float] = collections.deque()

    def delay(self) -> float:
        """Seconds until another call may start (0: now); records the start when it is 0."""
        now = self._clock()
        while self._starts and now - self._starts[0] >= RATE_WINDOW_S:
            self._starts.popleft()
        if len(self._starts) < self.capacity:
            self._starts.append(now)
            return 0.0
        return RATE_WINDOW_S - (now - self._starts[0])


class _LocalSlot(contextlib.AbstractAsyncContextManager):
    """One worker's limits in one event loop; reused by every call (it holds no per-call state)."""

    __slots__ = ("semaphore", "window")

    def __init__(self, max_concurrency: int, window: RateWindow | None) -> None:
        self.semaphore = asyncio.Semaphore(max(1, int(max_concurrency)))
        self.window = window

    async def __aenter__(self) -> None:
        await self.semaphore.acquire()
        if self.window is not None:
            try:
                while (wait := self.window.delay()) > 0:
                    await asyncio.sleep(wait)
            except BaseException:
                self.semaphore.release()
                raise

    async def __aexit__(self, *exc: object) -> None:
        self.semaphore.release()


class LocalLimiter:
    """Per-process limits: a semaphore per worker and event loop, a rate window per worker."""

    def __init__(self) -> None:
        self._slots: dict[tuple[int, str], _LocalSlot] = {}
        self._windows: dict[str, RateWindow] = {}

    def slot(self, name: str, max_concurrency: int, requests_per_minute: float | None) -> contextlib.AbstractAsyncContextManager[None]:
        """See :meth:`CallLimiter.slot` (as cheap as a bare semaphore when there is no rate)."""
        key = (id(asyncio.get_running_loop()), name)
        found = self._slots.get(key)
        if found is None:
            window = self._windows.setdefault(name, RateWindow(requests_per_minute)) if requests_per_minute else None
            found = self._slots[key] = _LocalSlot(max_concurrency, window)
        return found

    def __getstate__(self) -> dict[str, Any]:
        """A copy starts with no calls in flight (semaphores are bound to event loops)."""
        return {"_slots": {}, "_windows": {}}
