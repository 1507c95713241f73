"""A server's ``Retry-After``: read from the headers (seconds, milliseconds, HTTP dates, hostile
values), waited for by the retry loop instead of its own shorter backoff, and refused when longer
than the policy allows. The waits are recorded by an injected ``sleep``; nothing here sleeps."""

from __future__ import annotations

import email.utils
import pickle
import time

import httpx
import pytest

from conductor_env.calls import RetryPolicy, WorkerError
from conductor_env.workers.http_errors import retry_after_seconds
from conductor_env.workers.retry import retry_delay, with_retries

NOW = 1_700_000_000.0
NO_JITTER = RetryPolicy(max_attempts=4, base_delay_s=0.5, max_delay_s=8.0, jitter=0.0, max_retry_after_s=60.0)


def _date(offset_s: float) -> str:
    return email.utils.formatdate(NOW + offset_s, usegmt=True)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": " 2.5 "}, 2.5),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # OpenAI's precise header wins
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),  # a garbled one falls back to the other
        ({"Retry-After": _date(30)}, 30.0),
        ({"Retry-After": _date(-3600)}, 0.0),  # a date in the past: no wait
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00"}, 0.0),  # no zone: read as GMT, long past
        ({"Retry-After": "999999"}, 999999.0),  # huge but well-formed: the retry loop refuses it
    ],
)
def test_retry_after_is_read_in_every_form_servers_send(headers, expected):
    assert retry_after_seconds(httpx.Headers(headers), now=NOW) == pytest.approx(expected)


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "-inf", "1e999", "soon", "", "5, 6", "Wed, 21 Oct 99999 07:28:00 GMT", "0x10"])
def test_hostile_or_garbled_retry_after_counts_as_absent(value):
    assert retry_after_seconds(httpx.Headers({"Retry-After": value, "retry-after-ms": value}), now=NOW) is None


def test_no_header_is_no_wait_and_the_real_clock_serves_dates():
    assert retry_after_seconds(httpx.Headers({})) is None
    ahead = email.utils.formatdate(time.time() + 120, usegmt=True)
    assert 100 < retry_after_seconds(httpx.Headers({"Retry-After": ahead})) <= 120


def test_the_delay_is_the_longer_of_the_backoff_and_the_servers_wait():
    assert retry_delay(NO_JITTER, 1, WorkerError("429", retry_after_s=3.0)) == 3.0
    assert retry_delay(NO_JITTER, 4, WorkerError("429", retry_after_s=1.0)) == 4.0  # backoff 0.5 * 2**3 is longer
    assert retry_delay(NO_JITTER, 1, WorkerError("429", retry_after_s=0.0)) == 0.5
    assert retry_delay(NO_JITTER, 2, WorkerError("503")) == 1.0  # no header: the backoff


def test_a_wait_beyond_the_bound_is_refused_with_the_reason():
    with pytest.raises(WorkerError) as caught:
        retry_delay(NO_JITTER, 1, WorkerError("HTTP 429: slow down", retry_after_s=999999.0))
    assert caught.value.retryable and caught.value.retry_after_s == 999999.0
    assert "HTTP 429: slow down" in str(caught.value) and "999999 s" in str(caught.value) and "60 s allowed" in str(caught.value)
    with pytest.raises(WorkerError, match="longer than the 10 s allowed"):  # the worker's timeout bounds it too
        retry_delay(NO_JITTER, 1, WorkerError("429", retry_after_s=30.0), max_wait_s=10.0)
    assert retry_delay(NO_JITTER, 1, WorkerError("429", retry_after_s=60.0)) == 60.0  # the bound itself is honoured


async def test_the_retry_loop_waits_what_the_server_asked_then_succeeds():
    slept: list[float] = []
    errors = [WorkerError("HTTP 429", retry_after_s=12.0), WorkerError("HTTP 503", retry_after_s=0.25)]

    async def call() -> str:
        if errors:
            raise errors.pop(0)
        return "ok"

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    assert await with_retries(call, NO_JITTER, sleep=sleep) == ("ok", 3)
    assert slept == [12.0, 1.0]  # the server's 12 s; then the backoff (1 s) beat its 0.25 s


async def test_the_retry_loop_gives_up_at_once_on_a_hostile_wait():
    slept: list[float] = []
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        error = WorkerError("HTTP 429", retry_after_s=1e9)
        error.status = 429  # type: ignore[attr-defined]
        raise error

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    with pytest.raises(WorkerError) as caught:
        await with_retries(call, NO_JITTER, sleep=sleep)
    assert calls == 1 and slept == [] and caught.value.attempts == 1 and caught.value.status == 429
    assert caught.value.retryable and "asked to retry after 1e+09 s" in str(caught.value)


async def test_a_non_retryable_error_is_never_retried_whatever_it_says():
    async def call() -> str:
        raise WorkerError("HTTP 400", retryable=False, retry_after_s=1.0)

    async def sleep(seconds: float) -> None:
        raise AssertionError("no wait expected")

    with pytest.raises(WorkerError, match="HTTP 400"):
        await with_retries(call, NO_JITTER, sleep=sleep)


def test_the_wait_survives_pickling_with_the_error():
    copied = pickle.loads(pickle.dumps(WorkerError("HTTP 429", retry_after_s=4.0)))
    assert copied.retry_after_s == 4.0 and copied.retryable and str(copied) == "HTTP 429"
