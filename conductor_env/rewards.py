"""Reward schemes and the paper's discounted credit across rounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

REWARD_SCHEMES = ("paper", "paper_code", "correctness", "cost_aware")


@dataclass(frozen=True)
class RewardScheme:
    """Maps an episode outcome to a reward.

    Schemes:
        ``paper``: 0 if the lists cannot be parsed, 0.5 if they parse but the answer is wrong,
        1 if correct (the paper's reward; the default).
        ``paper_code``: 0 / 0.5 / 1.5 (the released code: correctness plus a 0.5 format bonus).
        ``correctness``: the verifier's score in [0, 1] (1 for correct), 0 when unparsed.
        ``cost_aware``: ``paper`` minus ``price_weight`` times the episode's USD cost.

    Args:
        name: One of :data:`REWARD_SCHEMES`.
        price_weight: Reward lost per US dollar spent (``cost_aware`` only).
    """

    name: str = "paper"
    price_weight: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in REWARD_SCHEMES:
            raise ValueError(f"unknown reward scheme {self.name!r}; use one of {REWARD_SCHEMES}")

    def __call__(self, *, parsed: bool, correct: bool, score: float = 0.0, cost_usd: float = 0.0) -> float:
        """Returns the reward of one outcome.

        Args:
            parsed: Whether the workflow parsed.
            correct: Whether the verifier accepted the answer.
            score: The verifier's score in [0, 1].
            cost_usd: The episode's worker spend.
        """
        if not parsed:
            return 0.0
        if self.name == "correctness":
            return 1.0 if correct else float(score)
        if self.name == "paper_code":
            return 1.5 if correct else 0.5
        reward = 1.0 if correct else 0.5
        if self.name == "cost_aware":
            reward -= self.price_weight * cost_usd
        return reward


def round_credit(rewards: Sequence[float], discount: float = 0.25) -> list[float]:
    """Applies the paper's discounted credit to earlier rounds.

    Going backwards from the second-to-last round, round ``k`` gets
    ``r_k <- (1 - d) * r_k + d * r_(k+1)`` with ``d = discount ** (k + 1)``, so an early round
    shares in the outcome its successors reached.

    Args:
        rewards: Raw reward of each round, in order.
        discount: The base discount (0.25 in the released checkpoints).

    Returns:
        The credited rewards, same length; the last round is unchanged.
    """
    credited = list(rewards)
    for k in range(len(credited) - 2, -1, -1):
        d = discount ** (k + 1)
        credited[k] = (1 - d) * credited[k] + d * credited[k + 1]
    return credited
