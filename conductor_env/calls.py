"""What the core asks of workers: one guarded call, its result and accounting, and its errors.

The env and the executor (the core) depend only on this module; the backends and the pool that
implement it live in :mod:`conductor_env.workers`, one layer up.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Collection, Mapping, Protocol, Sequence

Message = Mapping[str, str]


@dataclass(frozen=True)
class Completion:
    """One worker response and its accounting.

    Attributes:
        text: The response text.
        prompt_tokens: Input tokens billed.
        completion_tokens: Output tokens billed.
        cost_usd: Price of the call in US dollars (from the pool's per-million prices).
        latency_s: Wall time of the call in seconds.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0


class WorkerError(Exception):
    """A worker call failed.

    Args:
        message: What went wrong (never contains an API key).
        retryable: True for transient failures (timeouts, 429, 5xx, connection errors) that the
            executor retries with backoff; False for failures a retry cannot fix.
        retry_after_s: Seconds the server asked to wait before a retry (its ``Retry-After``),
            or ``None`` when it said nothing.
    """

    def __init__(self, message: str, *, retryable: bool = True, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a failing worker call is retried.

    Attributes:
        max_attempts: Total attempts including the first.
        base_delay_s: Delay before the second attempt; doubles each time.
        max_delay_s: Upper bound of one delay.
        jitter: Fraction of random jitter added to each delay (spreads retry storms).
        max_retry_after_s: The longest ``Retry-After`` a server may ask for; a longer one ends
            the call at once (a retryable failure saying so) instead of stalling the episode.
    """

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    jitter: float = 0.25
    max_retry_after_s: float = 60.0

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Returns the wait before attempt ``attempt + 1`` (``attempt`` counts from 1)."""
        base = min(self.max_delay_s, self.base_delay_s * (2 ** (attempt - 1)))
        return base * (1.0 + self.jitter * (rng or random).random())


@dataclass(frozen=True)
class SimulationOracle:
    """What a simulated worker needs to know about the problem.

    Attributes:
        domain: The problem's domain (selects the skill).
        correct: A response the verifier accepts, or ``None`` when the suite has none (then the
            worker can only answer wrongly).
        wrong: A response the verifier rejects.
    """

    domain: str
    correct: str | None
    wrong: str


@dataclass(frozen=True)
class CallContext:
    """What the env knows about a worker call beyond its messages; it never reaches a model.

    The pool hands it to every backend's ``complete``; only the simulated worker reads it. The
    backends that talk to a model (``openai``, ``anthropic``, ``local``) take it and drop it, so
    the gold answer cannot end up in a request.

    Attributes:
        oracle: The problem's correct and wrong responses, for simulated workers.
    """

    oracle: SimulationOracle | None = None


class ShownWorker(Protocol):
    """What the env shows of a pool entry when names are revealed (read-only: a frozen dataclass has it)."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def traits(self) -> Mapping[str, Any] | None: ...


class WorkerPoolLike(Protocol):
    """The pool as the env uses it (:class:`conductor_env.workers.pool.WorkerPool` implements it)."""

    name: str

    @property
    def specs(self) -> Sequence[ShownWorker]:
        """The pool's entries in canonical order."""

    @property
    def bound_specs(self) -> Sequence[ShownWorker]:
        """Entries as long as any this pool can show (they bound the observation space)."""

    @property
    def trait_domains(self) -> tuple[str, ...]:
        """The domains of the workers' traits (empty when they declare none)."""

    def for_episode(self, seed: int) -> WorkerPoolLike:
        """Returns the pool the episode with ``seed`` plays (itself, or a generated pool's draw)."""

    def sample_subpool(self, rng: random.Random, size: int | tuple[int, int] | None, exclude: Collection[tuple[str, ...]] = ()) -> tuple[int, ...]:
        """Returns the pool indices shown in one episode, in shown-id order, never one of ``exclude`` (sorted names)."""

    async def call(
        self,
        index: int,
        messages: Sequence[Message],
        *,
        retry: RetryPolicy | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        context: CallContext | None = None,
    ) -> tuple[Completion, int]:
        """Calls worker ``index`` under its concurrency limit, timeout and retries.

        Returns:
            The completion and the number of attempts it took.
        """

    async def aclose(self) -> None:
        """Closes the workers' clients."""
