"""Cluster-wide call limits: one actor holds every worker's ``max_concurrency`` and rate.

Each process's :class:`~conductor_env.workers.pool.WorkerPool` keeps its limits to itself, so N
episode actors would call a worker N times as hard as its pool file allows. The episode actors'
pools (and the driver's) therefore take their slots from one :class:`ClusterLimiter` actor
through a :class:`RayCallLimiter`; they hold ``tokens_per_minute`` too (a slot's grant settles
its token estimate to the reported usage on the actor). A holder renews its slot every :data:`RENEW_S` while its call
runs; a slot not renewed for :data:`LEASE_S` (its holder died, or its node went) is taken back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass
from typing import Any, AsyncIterator

from conductor_env.distributed.runtime import require_ray
from conductor_env.workers.limits import Grant, RateWindow, TokenWindow

#: The limiter actor's name in the package's Ray namespace.
LIMITER_NAME = "conductor-env-limiter"
#: A slot not renewed for this long is taken back (its holder is presumed dead).
LEASE_S = 15.0
#: How often a holder renews its slots.
RENEW_S = 3.0
#: How often waiting acquisitions look for expired slots.
POLL_S = 0.5


@dataclass
class _Lease:
    name: str
    expires: float


class ClusterLimiter:
    """The actor: per worker, the slots in flight and a rate window (state lives only here).

    Args:
        lease_s: How long a slot stays held without being renewed.
    """

    def __init__(self, lease_s: float = LEASE_S) -> None:
        self.lease_s = lease_s
        self._leases: dict[str, _Lease] = {}
        self._cancelled: set[str] = set()
        self._windows: dict[str, RateWindow] = {}
        self._token_windows: dict[str, TokenWindow] = {}
        self._changed = asyncio.Condition()
        self.granted = 0
        self.peak: dict[str, int] = {}

    async def acquire(self, lease_id: str, name: str, max_concurrency: int, requests_per_minute: float | None, tokens_per_minute: float | None = None, tokens: int = 0) -> bool:
        """Waits for a slot of worker ``name``; returns False when the caller gave up meanwhile.

        The slot is held for ``lease_s`` unless renewed (:meth:`renew`); under a token limit its
        ``tokens`` estimate is reserved under ``lease_id`` until :meth:`settle`.
        """
        async with self._changed:
            while True:
                if lease_id in self._cancelled:
                    self._cancelled.discard(lease_id)
                    return False
                self._expire()
                wait = POLL_S
                if self._in_flight(name) < max(1, int(max_concurrency)):
                    rate = self._windows.setdefault(name, RateWindow(requests_per_minute)) if requests_per_minute else None
                    budget = self._token_windows.setdefault(name, TokenWindow(tokens_per_minute)) if tokens_per_minute else None
                    wait = max(rate.wait() if rate else 0.0, budget.wait(tokens) if budget else 0.0)
                    if wait <= 0:
                        if rate:
                            rate.delay()
                        if budget:
                            budget.reserve(lease_id, tokens)
                        self._leases[lease_id] = _Lease(name, time.monotonic() + self.lease_s)
                        self.granted += 1
                        self.peak[name] = max(self.peak.get(name, 0), self._in_flight(name))
                        return True
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), timeout=min(POLL_S, wait))

    async def settle(self, lease_id: str, name: str, tokens: int) -> None:
        """Sets the tokens of slot ``lease_id`` of worker ``name`` to its reported usage."""
        budget = self._token_windows.get(name)
        if budget is not None:
            budget.settle(lease_id, tokens)
            async with self._changed:
                self._changed.notify_all()

    async def spent_tokens(self, name: str) -> float:
        """Tokens worker ``name`` spent in the current 60 s window."""
        budget = self._token_windows.get(name)
        return budget.spent() if budget is not None else 0.0

    async def renew(self, lease_id: str) -> bool:
        """Keeps a slot held for another ``lease_s``; False when it was already taken back."""
        lease = self._leases.get(lease_id)
        if lease is None:
            return False
        lease.expires = time.monotonic() + self.lease_s
        return True

    async def release(self, lease_id: str) -> None:
        """Frees a slot (or cancels an acquisition still waiting)."""
        async with self._changed:
            if self._leases.pop(lease_id, None) is None:
                self._cancelled.add(lease_id)
            self._changed.notify_all()

    async def reset_stats(self) -> None:
        """Starts the counts (``granted``, ``peak``) again."""
        self.granted, self.peak = 0, {}

    async def stats(self) -> dict[str, Any]:
        """Slots granted so far, the peak in flight per worker, and those in flight now."""
        self._expire()
        now: dict[str, int] = {}
        for lease in self._leases.values():
            now[lease.name] = now.get(lease.name, 0) + 1
        return {"granted": self.granted, "peak": dict(self.peak), "in_flight": now}

    def _in_flight(self, name: str) -> int:
        return sum(lease.name == name for lease in self._leases.values())

    def _expire(self) -> None:
        now = time.monotonic()
        for lease_id in [k for k, lease in self._leases.items() if lease.expires < now]:
            del self._leases[lease_id]


class _RayGrant:
    """Settles a cluster slot's token estimate on the actor (fire and forget)."""

    __slots__ = ("handle", "lease_id", "name")

    def __init__(self, handle: Any, lease_id: str, name: str) -> None:
        self.handle, self.lease_id, self.name = handle, lease_id, name

    def settle(self, tokens: int) -> None:
        self.handle.settle.remote(self.lease_id, self.name, int(tokens))


class RayCallLimiter:
    """A :class:`~conductor_env.workers.limits.CallLimiter` whose slots come from the cluster's actor.

    Args:
        handle: The :class:`ClusterLimiter` actor (see :func:`cluster_limiter`). It pickles, so
            episode actors receive the same limiter as the driver.
    """

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    @contextlib.asynccontextmanager
    async def slot(self, name: str, max_concurrency: int, requests_per_minute: float | None, tokens_per_minute: float | None = None, tokens: int = 0) -> AsyncIterator[Grant]:
        """See :meth:`conductor_env.workers.limits.CallLimiter.slot`."""
        lease_id = uuid.uuid4().hex
        try:
            granted = await self.handle.acquire.remote(lease_id, name, max_concurrency, requests_per_minute, tokens_per_minute, tokens)
        except BaseException:
            self.handle.release.remote(lease_id)  # a grant that arrives later is given straight back
            raise
        if not granted:
            raise asyncio.CancelledError
        renewing = asyncio.ensure_future(self._renew(lease_id))
        try:
            yield _RayGrant(self.handle, lease_id, name)
        finally:
            renewing.cancel()
            self.handle.release.remote(lease_id)

    async def _renew(self, lease_id: str) -> None:
        while True:
            await asyncio.sleep(RENEW_S)
            self.handle.renew.remote(lease_id)


_LIMITERS: dict[str, RayCallLimiter] = {}


def cluster_limiter() -> RayCallLimiter:
    """Returns the cluster's limiter, creating its actor on first use (needs a connected Ray).

    The actor belongs to this process's Ray job: it lives as long as the job (this module keeps
    a handle, since Ray ends an actor whose handles are all gone) and ends with it.
    """
    ray = require_ray()
    job = ray.get_runtime_context().get_job_id()
    if job not in _LIMITERS:
        actor = ray.remote(ClusterLimiter).options(name=LIMITER_NAME, get_if_exists=True, max_restarts=-1, num_cpus=0, max_concurrency=10_000)
        _LIMITERS[job] = RayCallLimiter(actor.remote())
    return _LIMITERS[job]
