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


def test_a_token_budget_holds_slots_until_the_usage_is_settled(limiter):
    assert ray.get(limiter.acquire.remote("a", "w", 4, None, 100, 60)) is True  # estimate 60 of 100
    waiting = limiter.acquire.remote("b", "w", 4, None, 100, 60)
    ready, _ = ray.wait([waiting], timeout=1.0)
    assert not ready, "60 + 60 tokens exceed the budget of 100"
    ray.get(limiter.release.remote("a"))  # a finished slot still counts its tokens for 60 s
    ready, _ = ray.wait([waiting], timeout=1.0)
    assert not ready
    ray.get(limiter.settle.remote("a", "w", 30))  # the backend reported 30: 30 + 60 fit
    assert ray.get(waiting, timeout=10) is True
    assert ray.get(limiter.spent_tokens.remote("w")) == 90


async def test_the_client_settles_its_grant_on_the_actor(limiter):
    client = RayCallLimiter(limiter)
    async with client.slot("t", 2, None, tokens_per_minute=1000, tokens=500) as grant:
        grant.settle(42)
    for _ in range(100):  # the settle is sent without waiting for it
        if ray.get(limiter.spent_tokens.remote("t")) == 42:
            break
        await asyncio.sleep(0.05)
    assert ray.get(limiter.spent_tokens.remote("t")) == 42
    async with client.slot("u", 2, None) as grant:  # no token limit: settling is harmless
        grant.settle(7)
    assert ray.get(limiter.spent_tokens.remote("u")) == 0
