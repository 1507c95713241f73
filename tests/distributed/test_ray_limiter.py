"""The cluster limiter: slots granted up to the limit, given back on release, taken back from the dead."""

from __future__ import annotations

import asyncio
import time

import pytest

from conductor_env.distributed.limiter import ClusterLimiter, RayCallLimiter

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray


@pytest.fixture
def limiter(cluster):
    handle = ray.remote(ClusterLimiter).options(max_concurrency=1000).remote(lease_s=1.0)
    yield handle
    ray.kill(handle)


def test_a_slot_whose_holder_stopped_renewing_is_taken_back(limiter):
    assert ray.get(limiter.acquire.remote("dead-holder", "w", 1, None)) is True  # never renewed, never released
    started = time.monotonic()
    assert ray.get(limiter.acquire.remote("next", "w", 1, None), timeout=30) is True
    assert time.monotonic() - started >= 0.5, "the second slot waited for the first to lapse"
    assert ray.get(limiter.stats.remote())["in_flight"] == {"w": 1}


def test_a_renewed_slot_is_kept_and_a_released_one_is_free_at_once(limiter):
    assert ray.get(limiter.acquire.remote("a", "w", 1, None))
    for _ in range(4):
        time.sleep(0.4)
        assert ray.get(limiter.renew.remote("a")) is True
    waiting = limiter.acquire.remote("b", "w", 1, None)
    ready, _ = ray.wait([waiting], timeout=0.5)
    assert not ready, "a renewed slot is still held"
    ray.get(limiter.release.remote("a"))
    assert ray.get(waiting, timeout=5) is True


async def test_the_client_holds_the_limit_and_gives_up_cleanly_when_cancelled(limiter):
    client = RayCallLimiter(limiter)
    inside = peak = 0

    async def call() -> None:
        nonlocal inside, peak
        async with client.slot("w", 2, None):
            inside += 1
            peak = max(peak, inside)
            await asyncio.sleep(0.05)
            inside -= 1

    await asyncio.gather(*(call() for _ in range(8)))
    assert peak == 2
    waiter = asyncio.ensure_future(call())
    async with client.slot("w", 2, None):
        async with client.slot("w", 2, None):
            await asyncio.sleep(0.2)
            waiter.cancel()  # gave up while waiting: its later grant must not leak
    await asyncio.gather(waiter, return_exceptions=True)
    await asyncio.sleep(0.3)
    assert ray.get(limiter.stats.remote())["in_flight"] == {}
