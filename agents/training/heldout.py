"""Held-out reward of a Conductor model in memory: the before/after figure of a training run.

Training reward is measured on the questions being trained on, by a policy that changes every
step; the held-out figure asks the model fixed validation questions (same episode seeds before
and after), so "after" minus "before" is what the run learned.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from conductor_env.agents.training.data import build_dataset
from conductor_env.agents.model_policy import ModelPolicy
from conductor_env.agents.prompts import PromptBuilder, observation_of_chat
from conductor_env.agents.training.reward import EnvFactory
from conductor_env.event_loop import run_sync


@dataclass(frozen=True)
class HeldOut:
    """A held-out evaluation's figures.

    Attributes:
        mean_reward: Mean env reward over every sampled episode.
        parse_rate: Share of actions the env parsed as a workflow.
        episodes: Episodes played (questions x samples).
    """

    mean_reward: float
    parse_rate: float
    episodes: int


def heldout_rows(factory: EnvFactory, questions: int, prompt_builder: PromptBuilder, *, seed: int = 10_000) -> list[dict[str, Any]]:
    """Returns ``questions`` rows of ``factory``'s split (spread over it), with fixed episode seeds."""
    return list(build_dataset(factory, limit=questions, seed=seed, prompt_builder=prompt_builder))


def evaluate_heldout(
    model: Any,
    tokenizer: Any,
    factory: EnvFactory,
    rows: Sequence[dict[str, Any]],
    *,
    samples: int,
    max_new_tokens: int,
    temperature: float = 1.0,
) -> HeldOut:
    """Plays ``samples`` sampled actions of ``model`` per row and returns the mean reward.

    Args:
        model: A causal LM (or PEFT model) in memory.
        tokenizer: Its tokenizer (with a chat template).
        factory: The held-out env factory (the rows' split).
        rows: Rows of :func:`heldout_rows`.
        samples: Actions per row.
        max_new_tokens: Output limit per action (the training limit).
        temperature: Sampling temperature (0: greedy).
    """
    policy = ModelPolicy(model, tokenizer, max_new_tokens=max_new_tokens, temperature=temperature)
    batch = [row for row in rows for _ in range(samples)]
    actions = policy.generate([observation_of_chat(row["prompt"]) for row in batch])  # the prompt as trained
    envs = [factory() for _ in batch]
    for env, row in zip(envs, batch):
        env.reset(seed=row["episode_seed"], options={"problem_id": row["problem_id"]})

    async def play() -> list[tuple]:
        return list(await asyncio.gather(*(env.astep(action) for env, action in zip(envs, actions))))

    results = run_sync(play())
    rewards = [float(reward) for _, reward, _, _, _ in results]
    parsed = [not info.get("parse_error") for _, _, _, _, info in results]
    return HeldOut(
        mean_reward=round(statistics.mean(rewards), 4) if rewards else 0.0,
        parse_rate=round(sum(parsed) / max(1, len(parsed)), 4),
        episodes=len(results),
    )
