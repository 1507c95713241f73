"""Retries with exponential backoff around one worker call."""

from __future__ import annotations

import asyncio
import sys
from typing import Awaitable, Callable, Coroutine, TypeVar

from conductor_env.calls import RetryPolicy, WorkerError

T = TypeVar("T")


async def with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy) -> tuple[T, int]:
    """Runs ``call`` until it succeeds, a non-retryable error occurs, or attempts run out.

    Args:
        call: A zero-argument coroutine factory (one worker call).
        policy: Retry bounds.

    Returns:
        The call's result and the number of attempts it took.

    Raises:
        WorkerError: The last error, with ``attempts`` set, when the call never succeeded.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call(), attempt
        except WorkerError as error:
            error.attempts = attempt  # type: ignore[attr-defined]
            if not error.retryable or attempt >= policy.max_attempts:
                raise
        except asyncio.TimeoutError as error:
            if attempt >= policy.max_attempts:
                timeout = WorkerError(f"timed out after {attempt} attempts", retryable=True)
                timeout.attempts = attempt  # type: ignore[attr-defined]
                raise timeout from error
        await asyncio.sleep(policy.delay(attempt))


async def with_timeout(call: Coroutine[object, object, T], timeout_s: float | None) -> T:
    """Awaits ``call``, raising :class:`asyncio.TimeoutError` after ``timeout_s`` seconds.

    Uses :func:`asyncio.timeout` where available (no extra task per call, unlike ``wait_for``
    before Python 3.12).
    """
    if timeout_s is None:
        return await call
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(timeout_s):
            return await call
    return await asyncio.wait_for(call, timeout_s)  # pragma: no cover - Python 3.10
