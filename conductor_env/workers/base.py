"""The worker backend interface: a pool entry's spec and the async call a backend implements.

The call's result and error types (:class:`Completion`, :class:`WorkerError`) are the core's
(:mod:`conductor_env.calls`); a backend returns and raises them."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from conductor_env.calls import CallContext, Completion, Message


@dataclass(frozen=True)
class WorkerSpec:
    """One worker of a pool, as a pool TOML file declares it.

    Attributes:
        name: Unique name within the pool (never shown to the Conductor unless names are revealed).
        backend: ``simulated``, ``openai``, ``anthropic``, ``local`` or ``replay``.
        model: Model name sent to the backend.
        base_url: Endpoint for HTTP backends (``None`` means the SDK default).
        api_key_env: Name of the environment variable holding the API key.
        price_in_per_m: USD per million input tokens.
        price_out_per_m: USD per million output tokens.
        max_tokens: Default output-token limit of a call.
        temperature: Default sampling temperature.
        max_concurrency: Calls in flight at once for this worker (across the cluster when
            episodes run on Ray).
        timeout_s: Per-call timeout.
        description: Optional text shown to the Conductor when names are revealed.
        options: Backend-specific settings (e.g. ``skill``/``latency_s`` for simulated workers,
            ``reasoning_effort`` or ``thinking_budget`` for API models).
        requests_per_minute: Calls started per minute (``None``: no limit; across the cluster
            when episodes run on Ray).
        tokens_per_minute: Tokens (prompt and completion, as the backend reports them) spent
            per minute (``None``: no limit; across the cluster on Ray). A call reserves an
            estimate (prompt characters / 4 plus its output limit) until its usage is known.
        traits: What the description states as data (:mod:`conductor_env.traits`), for the
            observation's structured view; ``None`` when the pool file declares none.
    """

    name: str
    backend: str
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    price_in_per_m: float = 0.0
    price_out_per_m: float = 0.0
    max_tokens: int = 4096
    temperature: float = 0.2
    max_concurrency: int = 16
    timeout_s: float = 600.0
    description: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    traits: Mapping[str, Any] | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Returns the USD price of a call with these token counts."""
        return (prompt_tokens * self.price_in_per_m + completion_tokens * self.price_out_per_m) / 1e6


class Worker(abc.ABC):
    """A backend that answers chat messages.

    Subclasses implement :meth:`complete`; they raise :class:`WorkerError` on failure and leave
    retries to the caller (see :mod:`conductor_env.workers.retry`), so SDK-level retries are off.
    """

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec

    @abc.abstractmethod
    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        context: CallContext | None = None,
    ) -> Completion:
        """Answers a chat conversation.

        Backend settings (``top_p``, ``reasoning_effort``, ...) come from the spec's ``options``.

        Args:
            messages: OpenAI-style ``{"role", "content"}`` messages.
            max_tokens: Output-token limit (``None``: the spec's default).
            temperature: Sampling temperature (``None``: the spec's default).
            seed: Sample index or seed; backends that can sample deterministically use it.
            context: The call's :class:`~conductor_env.calls.CallContext` (the problem's gold
                answer among it). Only simulated workers read it; a backend that sends the
                messages to a model must ignore it, so nothing of it reaches the model.

        Returns:
            The completion with tokens, cost and latency.
        """

    async def aclose(self) -> None:
        """Releases clients and connections (default: nothing to release)."""
