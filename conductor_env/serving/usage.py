"""What one served episode cost: the workers' tokens and USD plus the Conductor's own.

The response's ``usage`` follows OpenAI's fields (``prompt_tokens``, ``completion_tokens``,
``total_tokens``) summed over every worker call of every round (self-call frames included) and
every action the Conductor wrote with a model, and adds ``cost_usd`` (non-standard: their price
in USD) with the ``workers`` and ``conductor`` parts it sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conductor_env.agents.episode import PlayedEpisode


@dataclass(frozen=True)
class Spend:
    """Tokens read and written, and their price.

    Attributes:
        prompt_tokens: Tokens read.
        completion_tokens: Tokens written.
        cost_usd: Their price in USD.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens, self.cost_usd + other.cost_usd)

    def to_dict(self) -> dict[str, Any]:
        """Returns the OpenAI-style fields with ``total_tokens`` and ``cost_usd``."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True)
class EpisodeUsage:
    """The spend of one episode, split between the workers and the Conductor.

    Attributes:
        workers: Every worker call of every round (a self-call step carries its frame's calls).
        conductor: Every action the policy wrote with a model (zero for fixed workflows).
    """

    workers: Spend
    conductor: Spend

    @classmethod
    def of(cls, played: PlayedEpisode) -> EpisodeUsage:
        """Sums the spend of an episode :func:`~conductor_env.agents.episode.play` played.

        Args:
            played: The episode.

        Returns:
            Its usage.
        """
        workers = Spend()
        for step in played.rounds:
            trace = step.info.get("trace") or []
            prompt = sum(int(t.get("prompt_tokens") or 0) for t in trace)
            completion = sum(int(t.get("completion_tokens") or 0) for t in trace)
            workers += Spend(prompt, completion, float(step.info.get("cost_usd") or 0.0))
        conductor = Spend()
        for usage in played.usage:
            conductor += Spend(usage.prompt_tokens, usage.completion_tokens, usage.cost_usd)
        return cls(workers, conductor)

    @property
    def total(self) -> Spend:
        """The workers' and the Conductor's spend together."""
        return self.workers + self.conductor

    def to_openai(self) -> dict[str, Any]:
        """Returns the response's ``usage``: the totals, ``cost_usd``, and the two parts."""
        return {**self.total.to_dict(), "workers": self.workers.to_dict(), "conductor": self.conductor.to_dict()}
