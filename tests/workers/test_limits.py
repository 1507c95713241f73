"""Call limits: concurrency, requests per minute and tokens per minute, held by the pool's limiter."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import math

import pytest

from conductor_env.calls import CallContext, SimulationOracle
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.limits import RATE_WINDOW_S, LocalLimiter, RateWindow, TokenWindow, estimate_tokens
from conductor_env.workers.pool import PoolError, WorkerPool, load_pool, spec_from_mapping


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
        def slot(self, name, max_concurrency, requests_per_minute, tokens_per_minute=None, tokens=0):
            seen.append((name, max_concurrency, requests_per_minute, tokens_per_minute, tokens))
            return super().slot(name, max_concurrency, requests_per_minute, tokens_per_minute, tokens)

    spec = WorkerSpec(name="w", backend="simulated", max_concurrency=3, timeout_s=5.0, requests_per_minute=120, max_tokens=10, options={"skill": 1.0})
    pool = WorkerPool([spec, dataclasses.replace(spec, name="t", tokens_per_minute=1000)])
    pool.use_limiter(Recording())
    oracle = SimulationOracle(domain="math", correct="42", wrong="41")
    completion, attempts = await pool.call(0, [{"role": "user", "content": "hi"}], context=CallContext(oracle))
    assert attempts == 1 and seen == [("w", 3, 120, None, 0)]
    await pool.call(1, [{"role": "user", "content": "x" * 40}], max_tokens=7, context=CallContext(oracle))
    assert seen[1] == ("t", 3, 120, 1000, 10 + 7)  # 40 characters / 4, plus the output limit
    spent = pool.limiter._token_windows["t"].spent()
    assert spent == 1 + 1  # settled to the simulated worker's usage (one prompt word, one answer word)
    await pool.aclose()


@pytest.mark.parametrize("field", ["requests_per_minute", "tokens_per_minute"])
def test_rates_are_read_from_pool_files_and_checked(field):
    assert getattr(spec_from_mapping({"id": "w", "backend": "simulated", field: 30}), field) == 30
    assert getattr(spec_from_mapping({"id": "w", "backend": "simulated", field: 0.5}), field) == 0.5
    assert getattr(spec_from_mapping({"id": "w", "backend": "simulated"}), field) is None
    for bad in (0, -100, math.inf, math.nan, "30000", True, [1]):
        with pytest.raises(PoolError, match=f"worker 'w': {field} must be a positive"):
            spec_from_mapping({"id": "w", "backend": "simulated", field: bad})


def test_a_bad_token_rate_in_a_pool_file_names_the_file_and_the_worker(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[[workers]]\nid = "w"\nbackend = "simulated"\ntokens_per_minute = -inf\n', encoding="utf-8")
    with pytest.raises(PoolError, match=r"pool '.*bad.toml': worker 'w': tokens_per_minute must be a positive, finite number, got -inf"):
        load_pool(str(path))


def test_token_estimates_count_a_quarter_of_the_prompt_characters_and_the_output_limit():
    assert estimate_tokens([{"role": "system", "content": "abcde"}, {"role": "user", "content": "xyz"}], 100) == 2 + 100
    assert estimate_tokens([], 0) == 0 and estimate_tokens([{"role": "user", "content": ""}], -5) == 0


def test_token_window_delays_a_call_that_does_not_fit_until_the_window_moves():
    clock = Clock()
    window = TokenWindow(1000, clock=clock)
    assert window.reserve("a", 600) == 0.0
    clock.now = 10.0
    assert window.reserve("b", 300) == 0.0  # 900 of 1000
    clock.now = 20.0
    assert window.wait(200) == pytest.approx(RATE_WINDOW_S - 20.0)  # "a" must leave first
    assert window.reserve("c", 200) > 0 and window.spent() == 900  # refused: nothing recorded
    window.settle("a", 100)  # "a" really spent 100: 400 counted now
    assert window.reserve("c", 200) == 0.0 and window.spent() == 600
    clock.now = 30.0
    assert window.wait(700) == pytest.approx(RATE_WINDOW_S - 20.0)  # "a" and "b" must leave
    clock.now = RATE_WINDOW_S + 10.0  # "a" and "b" left, "c" (200) is still in
    assert window.reserve("d", 700) == 0.0 and window.spent() == 900
    window.settle("gone", 5)  # settling a call that left the window changes nothing
    assert window.spent() == 900


def test_a_call_larger_than_the_whole_budget_runs_alone_once_the_window_is_empty():
    clock = Clock()
    window = TokenWindow(100, clock=clock)
    assert window.reserve("small", 10) == 0.0
    assert window.wait(5000) == pytest.approx(RATE_WINDOW_S)  # waits for the window to empty
    clock.now = RATE_WINDOW_S
    assert window.reserve("huge", 5000) == 0.0  # never blocked forever: one call's overshoot
    assert window.wait(1) == pytest.approx(RATE_WINDOW_S)


async def test_local_limiter_holds_calls_while_the_token_budget_is_spent():
    clock = Clock()
    limiter = LocalLimiter(clock=clock)
    async with limiter.slot("w", 4, None, tokens_per_minute=100, tokens=80) as grant:
        grant.settle(90)  # the backend reported more than the estimate
    entered = asyncio.Event()

    async def second() -> None:
        async with limiter.slot("w", 4, None, tokens_per_minute=100, tokens=30) as grant:
            entered.set()
            grant.settle(20)

    waiting = asyncio.ensure_future(second())
    await asyncio.sleep(0.05)
    assert not entered.is_set() and not waiting.done()  # 90 + 30 > 100
    clock.now = RATE_WINDOW_S  # the first call left the window
    await asyncio.wait_for(waiting, timeout=30)
    assert entered.is_set() and limiter._token_windows["w"].spent() == 20
    async with limiter.slot("other", 4, None, tokens_per_minute=100, tokens=100):  # budgets are per worker
        pass


def test_a_copied_pool_starts_with_no_calls_in_flight():
    pool = WorkerPool([WorkerSpec(name="w", backend="simulated")])
    pool.limiter._windows["w"] = RateWindow(1)
    copied = copy.deepcopy(pool)
    assert isinstance(copied.limiter, LocalLimiter) and copied.limiter._windows == {} and copied.limiter._token_windows == {}
