"""Call limits: concurrency and requests per minute, held by the pool's limiter."""

from __future__ import annotations

import asyncio
import copy

import pytest

from conductor_env.calls import CallContext, SimulationOracle
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.limits import RATE_WINDOW_S, LocalLimiter, RateWindow
from conductor_env.workers.pool import PoolError, WorkerPool, spec_from_mapping


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_rate_window_allows_per_minute_starts_then_says_how_long_to_wait():
    clock = Clock()
    window = RateWindow(3, clock=clock)
    starts = []
    for now in (0.0, 0.0, 30.0):
        clock.now = now
        starts.append(window.delay())
    assert starts == [0.0, 0.0, 0.0]
    clock.now = 40.0
    assert window.delay() == pytest.approx(RATE_WINDOW_S - 40.0)  # until the first start leaves the window
    clock.now = RATE_WINDOW_S + 0.5  # both starts at 0 left it
    assert [window.delay(), window.delay()] == [0.0, 0.0]
    assert window.delay() == pytest.approx(RATE_WINDOW_S - (RATE_WINDOW_S + 0.5 - 30.0))


def test_a_fractional_rate_still_allows_one_call():
    assert RateWindow(0.5).capacity == 1


async def test_local_limiter_holds_max_concurrency():
    limiter, inside, peak = LocalLimiter(), 0, 0

    async def call() -> None:
        nonlocal inside, peak
        async with limiter.slot("w", 2, None):
            inside += 1
            peak = max(peak, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.gather(*(call() for _ in range(8)))
    assert peak == 2


async def test_pool_calls_take_their_slot_from_a_swapped_limiter():
    seen = []

    class Recording(LocalLimiter):
        def slot(self, name, max_concurrency, requests_per_minute):
            seen.append((name, max_concurrency, requests_per_minute))
            return super().slot(name, max_concurrency, requests_per_minute)

    spec = WorkerSpec(name="w", backend="simulated", max_concurrency=3, timeout_s=5.0, requests_per_minute=120, options={"skill": 1.0})
    pool = WorkerPool([spec])
    pool.use_limiter(Recording())
    oracle = SimulationOracle(domain="math", correct="42", wrong="41")
    completion, attempts = await pool.call(0, [{"role": "user", "content": "hi"}], context=CallContext(oracle))
    assert attempts == 1 and seen == [("w", 3, 120)]
    await pool.aclose()


def test_requests_per_minute_is_read_from_pool_files_and_checked():
    assert spec_from_mapping({"id": "w", "backend": "simulated", "requests_per_minute": 30}).requests_per_minute == 30
    assert spec_from_mapping({"id": "w", "backend": "simulated"}).requests_per_minute is None
    with pytest.raises(PoolError, match="requests_per_minute"):
        spec_from_mapping({"id": "w", "backend": "simulated", "requests_per_minute": 0})


def test_a_copied_pool_starts_with_no_calls_in_flight():
    pool = WorkerPool([WorkerSpec(name="w", backend="simulated")])
    pool.limiter._windows["w"] = RateWindow(1)
    copied = copy.deepcopy(pool)
    assert isinstance(copied.limiter, LocalLimiter) and copied.limiter._windows == {}
