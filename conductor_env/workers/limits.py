"""Call limits: calls in flight, calls started per minute and tokens spent per minute, per worker.

A :class:`~conductor_env.workers.pool.WorkerPool` asks its limiter for a slot before every
attempt at a call. :class:`LocalLimiter` (the default) holds the limits within one process;
a cluster limiter (:mod:`conductor_env.distributed`) holds them across every process of a Ray
cluster, so that N episode actors do not multiply a worker's load by N.

A tokens-per-minute limit reserves each call's estimate (:func:`estimate_tokens`: a quarter of
the prompt's characters plus the output limit) when the slot is granted, and the pool settles
the reservation to the usage the backend reports once the call returns. A call starts only when
its estimate fits in what the last 60 s left of the budget (or when nothing was spent in them),
so a window overshoots by at most one call's worth (more only where a prompt holds more tokens
than a quarter of its characters). A failed attempt keeps its estimate: providers count
rejected requests too.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from typing import Any, Hashable, Protocol, Sequence

from conductor_env.calls import Message

#: The window a requests- or tokens-per-minute limit counts over.
RATE_WINDOW_S = 60.0
#: How often a call waiting for token budget looks again (settled calls may free some early).
TOKEN_POLL_S = 1.0


def estimate_tokens(messages: Sequence[Message], max_output_tokens: int) -> int:
    """Returns a call's token estimate before it is made: prompt characters / 4 plus the output limit."""
    characters = sum(len(str(message.get("content", ""))) for message in messages)
    return -(-characters // 4) + max(0, int(max_output_tokens))


class Grant(Protocol):
    """A granted slot; the caller reports the call's real token usage through it."""

    def settle(self, tokens: int) -> None:
        """Replaces the slot's token estimate by ``tokens``, the usage the backend reported."""


class CallLimiter(Protocol):
    """Grants slots for calls to a worker."""

    def slot(self, name: str, max_concurrency: int, requests_per_minute: float | None, tokens_per_minute: float | None = None, tokens: int = 0) -> contextlib.AbstractAsyncContextManager[Grant]:
        """Returns a context that waits for a slot of worker ``name``, yields its grant and frees it on exit.

        Args:
            name: The worker's name (limits are per worker).
            max_concurrency: Calls in flight at once.
            requests_per_minute: Calls started in any 60 s window (``None``: no limit).
            tokens_per_minute: Tokens spent in any 60 s window (``None``: no limit).
            tokens: This call's estimate (:func:`estimate_tokens`), reserved until settled.
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

    def wait(self) -> float:
        """Seconds until another call may start (0: now); records nothing."""
        now = self._clock()
        while self._starts and now - self._starts[0] >= RATE_WINDOW_S:
            self._starts.popleft()
        return 0.0 if len(self._starts) < self.capacity else RATE_WINDOW_S - (now - self._starts[0])

    def delay(self) -> float:
        """Seconds until another call may start (0: now); records the start when it is 0."""
        wait = self.wait()
        if wait <= 0:
            self._starts.append(self._clock())
        return wait


class TokenWindow:
    """Keeps the tokens of the calls started in any :data:`RATE_WINDOW_S` window within ``per_minute``.

    Args:
        per_minute: Tokens allowed per window.
        clock: Monotonic clock (seconds).
    """

    def __init__(self, per_minute: float, clock: Any = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self._clock = clock
        self._spent: dict[Hashable, list[float]] = {}  # key -> [start, tokens], in start order

    def _expire(self, now: float) -> None:
        while self._spent:
            key = next(iter(self._spent))
            if now - self._spent[key][0] < RATE_WINDOW_S:
                return
            del self._spent[key]

    def wait(self, tokens: int) -> float:
        """Seconds until a call estimated at ``tokens`` may start (0: now); records nothing."""
        now = self._clock()
        self._expire(now)
        used = sum(spent for _, spent in self._spent.values())
        if not self._spent or used + tokens <= self.capacity:
            return 0.0
        for start, spent in self._spent.values():  # the oldest leave first
            used -= spent
            if used + tokens <= self.capacity or used <= 0:
                return max(1e-3, RATE_WINDOW_S - (now - start))
        return 0.0  # pragma: no cover - the loop returns once the last entry is gone

    def reserve(self, key: Hashable, tokens: int) -> float:
        """Like :meth:`wait`, and records ``tokens`` under ``key`` when the call may start."""
        wait = self.wait(tokens)
        if wait <= 0:
            self._spent[key] = [self._clock(), float(max(0, tokens))]
        return wait

    def settle(self, key: Hashable, tokens: int) -> None:
        """Sets the tokens of call ``key`` to what it really spent (nothing once it left the window)."""
        entry = self._spent.get(key)
        if entry is not None:
            entry[1] = float(max(0, tokens))

    def spent(self) -> float:
        """Tokens counted in the current window."""
        self._expire(self._clock())
        return sum(spent for _, spent in self._spent.values())


class _NoTokens:
    __slots__ = ()

    def settle(self, tokens: int) -> None:
        """Nothing to settle: the worker has no token limit."""


NO_TOKENS: Grant = _NoTokens()


class _TokenGrant:
    __slots__ = ("key", "window")

    def __init__(self, window: TokenWindow) -> None:
        self.window, self.key = window, object()

    def settle(self, tokens: int) -> None:
        self.window.settle(self.key, tokens)


class _LocalSlot(contextlib.AbstractAsyncContextManager):
    """One worker's limits in one event loop; reused by every call without a token limit."""

    __slots__ = ("semaphore", "window")

    def __init__(self, max_concurrency: int, window: RateWindow | None) -> None:
        self.semaphore = asyncio.Semaphore(max(1, int(max_concurrency)))
        self.window = window

    async def enter(self, tokens: TokenWindow | None = None, estimate: int = 0) -> Grant:
        """Waits for the semaphore, then until both the rate and the token budget allow a start."""
        await self.semaphore.acquire()
        try:
            while True:
                rate_wait = self.window.wait() if self.window is not None else 0.0
                token_wait = tokens.wait(estimate) if tokens is not None else 0.0
                if rate_wait <= 0 and token_wait <= 0:
                    break
                await asyncio.sleep(max(rate_wait, min(token_wait, TOKEN_POLL_S)))
        except BaseException:
            self.semaphore.release()
            raise
        if self.window is not None:
            self.window.delay()  # records the start (no await since the check: still free)
        if tokens is None:
            return NO_TOKENS
        grant = _TokenGrant(tokens)
        tokens.reserve(grant.key, estimate)
        return grant

    async def __aenter__(self) -> Grant:
        return await self.enter()

    async def __aexit__(self, *exc: object) -> None:
        self.semaphore.release()


class _TokenSlot(contextlib.AbstractAsyncContextManager):
    """One call's slot under a token limit (it holds the call's estimate)."""

    __slots__ = ("estimate", "shared", "tokens")

    def __init__(self, shared: _LocalSlot, tokens: TokenWindow, estimate: int) -> None:
        self.shared, self.tokens, self.estimate = shared, tokens, estimate

    async def __aenter__(self) -> Grant:
        return await self.shared.enter(self.tokens, self.estimate)

    async def __aexit__(self, *exc: object) -> None:
        self.shared.semaphore.release()


class LocalLimiter:
    """Per-process limits: a semaphore per worker and event loop, rate and token windows per worker.

    Args:
        clock: Monotonic clock (seconds) of the rate and token windows.
    """

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._slots: dict[tuple[int, str], _LocalSlot] = {}
        self._windows: dict[str, RateWindow] = {}
        self._token_windows: dict[str, TokenWindow] = {}

    def slot(self, name: str, max_concurrency: int, requests_per_minute: float | None, tokens_per_minute: float | None = None, tokens: int = 0) -> contextlib.AbstractAsyncContextManager[Grant]:
        """See :meth:`CallLimiter.slot` (as cheap as a bare semaphore when there is no rate)."""
        key = (id(asyncio.get_running_loop()), name)
        found = self._slots.get(key)
        if found is None:
            window = self._windows.setdefault(name, RateWindow(requests_per_minute, self._clock)) if requests_per_minute else None
            found = self._slots[key] = _LocalSlot(max_concurrency, window)
        if not tokens_per_minute:
            return found
        return _TokenSlot(found, self._token_windows.setdefault(name, TokenWindow(tokens_per_minute, self._clock)), tokens)

    def __getstate__(self) -> dict[str, Any]:
        """A copy starts with no calls in flight (semaphores are bound to event loops)."""
        return {"_clock": self._clock, "_slots": {}, "_windows": {}, "_token_windows": {}}
