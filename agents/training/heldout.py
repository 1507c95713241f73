"""Held-out reward of a Conductor model in memory: the before/after figure of a training run.

Training reward is measured on the questions being trained on, by a policy that changes every
step; the held-out figure asks the model fixed validation questions (same episode seeds before
and after), so "after" minus "before" is what the run learned. The episodes are played by the
one episode loop (:func:`conductor_env.agents.episode.play`), so later rounds and self-call
frames are written by the model as in evaluation.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass
from typing import Sequence

from conductor_env.agents.base import Policy
from conductor_env.agents.episode import PlayedEpisode, PolicyBatcher, play
from conductor_env.agents.training.reward import EnvFactory
from conductor_env.event_loop import run_sync
from conductor_env.rows import spread_evenly

#: The episode seed of the first held-out question (question ``i`` gets ``HELDOUT_SEED + i``),
#: apart from the training questions' seeds.
HELDOUT_SEED = 10_000


@dataclass(frozen=True)
class HeldOut:
    """A held-out evaluation's figures.

    Attributes:
        mean_reward: Mean env reward over every sampled episode (an episode that failed outside
            the workers counts 0).
        parse_rate: Share of first actions the env parsed as a workflow.
        episodes: Episodes played (questions x samples).
    """

    mean_reward: float
    parse_rate: float
    episodes: int


@dataclass(frozen=True)
class HeldOutQuestion:
    """One held-out question: its problem and its episode seed (the same before and after)."""

    problem_id: str
    episode_seed: int


def heldout_questions(factory: EnvFactory, questions: int, *, seed: int = HELDOUT_SEED) -> list[HeldOutQuestion]:
    """Returns ``questions`` problems of ``factory``'s split, spread evenly over it, with fixed episode seeds."""
    problems = spread_evenly(factory.local().problems, questions)
    return [HeldOutQuestion(problem.id, seed + i) for i, problem in enumerate(problems)]


def evaluate_heldout(policy: Policy, factory: EnvFactory, questions: Sequence[HeldOutQuestion], *, samples: int) -> HeldOut:
    """Plays ``samples`` episodes of ``policy`` per question and returns the mean reward.

    Args:
        policy: The Conductor (e.g. a :class:`~conductor_env.agents.model_policy.ModelPolicy`
            over the model being trained, prompted as it is trained).
        factory: The held-out env factory (the questions' split).
        questions: From :func:`heldout_questions`.
        samples: Episodes per question.
    """
    batch = [question for question in questions for _ in range(samples)]

    async def play_all() -> list[PlayedEpisode]:
        batcher = PolicyBatcher(policy)
        envs = [factory() for _ in batch]
        try:
            return list(await asyncio.gather(*(play(env, batcher, seed=q.episode_seed, reset_options={"problem_id": q.problem_id}) for env, q in zip(envs, batch))))
        finally:
            for env in envs:
                env.close()

    played = run_sync(play_all())
    rewards = [float(episode.final[1]) if episode.final is not None and episode.error is None else 0.0 for episode in played]
    parsed = [episode.first_info is not None and not episode.first_info.get("parse_error") for episode in played]
    return HeldOut(
        mean_reward=round(statistics.mean(rewards), 4) if rewards else 0.0,
        parse_rate=round(sum(parsed) / max(1, len(parsed)), 4),
        episodes=len(played),
    )
