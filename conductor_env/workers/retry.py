"""Retries with exponential backoff around one worker call, honouring a server's ``Retry-After``.

When a failed attempt carries the server's requested wait (:attr:`WorkerError.retry_after_s`,
read from ``retry-after-ms`` or ``Retry-After``), the next attempt waits the longer of that and
the policy's own backoff. A requested wait beyond :attr:`RetryPolicy.max_retry_after_s` (or the
caller's ``max_wait_s``, the worker's ``timeout_s`` in a pool) ends the call at once with a
retryable :class:`WorkerError` that says so: a hostile or confused server cannot stall an episode.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Awaitable, Callable, Coroutine, TypeVar

from conductor_env.calls import RetryPolicy, WorkerError

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[object]]


def retry_delay(policy: RetryPolicy, attempt: int, error: WorkerError, max_wait_s: float | None = None) -> float:
    """Returns the wait before attempt ``attempt + 1`` after ``error``.

    Args:
        policy: Retry bounds (backoff and ``max_retry_after_s``).
        attempt: The attempt that failed (from 1).
        error: Its error; ``retry_after_s`` is the server's requested wait, if any.
        max_wait_s: A further bound on the requested wait (``None``: the policy's alone).

    Returns:
        Seconds to wait: the backoff, or the server's wait when that is longer.

    Raises:
        WorkerError: (retryable, ``retry_after_s`` kept) when the server asks for longer than
            the bound; the message names the requested wait and the bound.
    """
    backoff = policy.delay(attempt)
    requested = error.retry_after_s
    if requested is None:
        return backoff
    bound = policy.max_retry_after_s if max_wait_s is None else min(policy.max_retry_after_s, max_wait_s)
    if requested > bound:
        raise WorkerError(
            f"{error} (the server asked to retry after {requested:g} s, longer than the {bound:g} s allowed: RetryPolicy.max_retry_after_s, or the worker's timeout_s)",
            retryable=True,
            retry_after_s=requested,
        ) from error
    return max(backoff, requested)


async def with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy, *, max_wait_s: float | None = None, sleep: Sleep = asyncio.sleep) -> tuple[T, int]:
    """Runs ``call`` until it succeeds, a non-retryable error occurs, or attempts run out.

    Args:
        call: A zero-argument coroutine factory (one worker call).
        policy: Retry bounds.
        max_wait_s: The longest server-requested wait to honour (besides the policy's bound).
        sleep: Waits between attempts (tests pass one that records the delays).

    Returns:
        The call's result and the number of attempts it took.

    Raises:
        WorkerError: The last error, with ``attempts`` set, when the call never succeeded, or
            one saying the server asked for a longer wait than allowed (see :func:`retry_delay`).
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
            try:
                wait = retry_delay(policy, attempt, error, max_wait_s)
            except WorkerError as refused:
                refused.attempts = attempt  # type: ignore[attr-defined]
                refused.status = getattr(error, "status", None)  # type: ignore[attr-defined]
                raise
        except asyncio.TimeoutError as error:
            if attempt >= policy.max_attempts:
                timeout = WorkerError(f"timed out after {attempt} attempts", retryable=True)
                timeout.attempts = attempt  # type: ignore[attr-defined]
                raise timeout from error
            wait = policy.delay(attempt)
        await sleep(wait)


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
