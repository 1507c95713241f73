"""Shared plumbing of the HTTP backends: API keys, secret redaction and SDK error mapping.

The ``openai`` and ``anthropic`` SDKs share one exception layout (``APITimeoutError`` <
``APIConnectionError``, ``APIStatusError.status_code``); :func:`worker_error_from_sdk` turns
either into a :class:`~conductor_env.workers.base.WorkerError` whose ``retryable`` flag follows
the usual rule: timeouts, connection errors, 408/409/425/429 and 5xx are transient. A reply's
``retry-after-ms`` or ``Retry-After`` header (seconds or an HTTP date) travels as the error's
``retry_after_s``, which :mod:`conductor_env.workers.retry` waits for before the next attempt.
"""

from __future__ import annotations

import datetime
import email.utils
import json
import math
import os
import re
import time
from types import ModuleType
from typing import Iterable, Mapping

from conductor_env.calls import WorkerError
from conductor_env.workers.base import WorkerSpec

#: HTTP statuses a retry can fix (besides every 5xx, which includes Anthropic's 529 "overloaded").
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})

# Things shaped like API keys (OpenAI "sk-...", Anthropic "sk-ant-...", Google "AIza...") are masked
# in every error message even when they are not the configured key.
_KEY_PATTERN = re.compile(r"(sk-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{20,})")


def read_api_key(spec: WorkerSpec, default_env: str) -> str | None:
    """Reads a worker's API key from the environment.

    Args:
        spec: The worker; ``spec.api_key_env`` names the variable when set.
        default_env: The SDK's usual variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``).

    Returns:
        The key, or ``None`` when the variable is unset or empty.
    """
    value = os.environ.get(spec.api_key_env or default_env, "")
    return value or None


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Returns ``text`` with every secret and anything shaped like an API key masked."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_PATTERN.sub("***", text)


def is_retryable_status(status: int) -> bool:
    """Returns True for HTTP statuses that a later retry may fix."""
    return status in RETRYABLE_STATUSES or status >= 500


def _seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Reads how long a server asked the client to wait before retrying.

    ``retry-after-ms`` (OpenAI's, in milliseconds) wins over ``Retry-After`` (RFC 9110: seconds or
    an HTTP date). Negative, non-finite and unparseable values count as absent; a date in the past
    means no wait.

    Args:
        headers: The response headers (a case-insensitive mapping such as ``httpx.Headers``).
        now: The current Unix time (``None``: the system clock); for dates.

    Returns:
        The wait in seconds, or ``None`` when the server gave none usable.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None and (value := _seconds(millis.strip())) is not None:
        return value / 1000.0
    text = (headers.get("retry-after") or "").strip()
    if not text:
        return None
    if (value := _seconds(text)) is not None:
        return value
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # HTTP dates are GMT; a date without a zone is read as UTC too
        when = when.replace(tzinfo=datetime.timezone.utc)
    wait = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, wait) if math.isfinite(wait) else None


def worker_error_from_sdk(error: Exception, sdk: ModuleType, *, spec: WorkerSpec, secrets: Iterable[str | None] = ()) -> WorkerError:
    """Maps an ``openai`` or ``anthropic`` SDK exception to a :class:`WorkerError`.

    Args:
        error: The exception the SDK raised.
        sdk: The SDK module (``openai`` or ``anthropic``), whose exception classes are checked.
        spec: The worker, named in the message.
        secrets: Strings to mask in the message (the API key).

    Returns:
        The error to raise, with ``status`` (HTTP status or ``None``) set as an attribute and
        ``retry_after_s`` from the reply's headers.
    """
    status: int | None = None
    if isinstance(error, sdk.APITimeoutError):
        kind, retryable = f"timed out after {spec.timeout_s:g} s", True
    elif isinstance(error, sdk.APIConnectionError):
        kind, retryable = "connection failed", True
    elif isinstance(error, sdk.APIStatusError):
        status = int(error.status_code)
        kind, retryable = f"HTTP {status}", is_retryable_status(status)
    else:
        kind, retryable = type(error).__name__, False
    where = spec.base_url or "the default endpoint"
    detail = str(error)
    if status is not None:  # SDKs often leave the server's explanation out of the message
        body = getattr(error, "body", None)
        try:
            extra = json.dumps(body, ensure_ascii=False) if body is not None else error.response.text.strip()  # type: ignore[attr-defined]
        except Exception:  # an unread streamed response or an odd body
            extra = ""
        if extra and extra not in detail and (body is None or str(body) not in detail):
            detail = f"{detail} - {extra[:500]}"
    message = f"worker {spec.name!r} ({spec.backend} {spec.model!r} at {where}): {kind}: {detail}"
    response = getattr(error, "response", None)
    retry_after = retry_after_seconds(response.headers) if status is not None and response is not None else None
    result = WorkerError(redact(message, secrets), retryable=retryable, retry_after_s=retry_after)
    result.status = status  # type: ignore[attr-defined]
    return result
