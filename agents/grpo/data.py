"""The GRPO training dataset: one conversational row per problem, replayable in the env.

Each row keeps ``problem_id`` and ``episode_seed``, so :class:`~conductor_env.agents.grpo.reward.ConductorReward`
resets every completion of a GRPO group to the same question, sub-pool and worker sampling seeds.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from conductor_env.agents.grpo.prompts import PromptBuilder, chat_messages, full_prompt
from conductor_env.agents.grpo.reward import EnvFactory
from conductor_env.env import ConductorEnv


def build_dataset(
    factory: EnvFactory,
    *,
    limit: int | None = None,
    seed: int = 0,
    problem_ids: Sequence[str] | None = None,
    prompt_builder: PromptBuilder = full_prompt,
    balance_domains: bool = False,
) -> Any:
    """Builds the GRPO training dataset: one conversational row per problem.

    Args:
        factory: The env factory (its split chooses the problems).
        limit: Keep at most this many problems, spread evenly over the split (``None``: all).
        seed: Base of each row's ``episode_seed`` (row ``i`` gets ``seed + i``).
        problem_ids: Use exactly these problems instead.
        prompt_builder: Turns the observation into the user message (default: the env's prompt).
        balance_domains: Order the rows round-robin over the domains (each domain's problems
            shuffled with ``seed``), so that, read in order, every window of ``k`` rows per
            domain holds ``k`` of each while they last. Train on it unshuffled
            (``GRPORecipe.balance_domains``) and every step sees each domain equally.

    Returns:
        A :class:`datasets.Dataset` with ``prompt`` (the chat messages: the user message, after the
        Conductor template's system message when it has one), ``problem_id``,
        ``episode_seed`` and ``domain``.
    """
    from datasets import Dataset

    env = factory.local()
    if problem_ids is None:
        problems = list(env.problems)
        if limit is not None and limit < len(problems):
            stride = len(problems) / limit
            problems = [problems[int(i * stride)] for i in range(limit)]
        problem_ids = [p.id for p in problems]
    if balance_domains:
        problem_ids = _round_robin_by_domain(env, problem_ids, seed)
    rows: dict[str, list[Any]] = {"prompt": [], "problem_id": [], "episode_seed": [], "domain": []}
    for i, problem_id in enumerate(problem_ids):
        observation, info = env.reset(seed=seed + i, options={"problem_id": problem_id})
        rows["prompt"].append(chat_messages(observation, prompt_builder))
        rows["problem_id"].append(problem_id)
        rows["episode_seed"].append(seed + i)
        rows["domain"].append(info["domain"])
    return Dataset.from_dict(rows)


def _round_robin_by_domain(env: ConductorEnv, problem_ids: Sequence[str], seed: int) -> list[str]:
    """Interleaves the problems' domains (each domain's order shuffled with ``seed``)."""
    domain_of = {p.id: p.domain for p in env.problems}
    by_domain: dict[str, list[str]] = {}
    for problem_id in problem_ids:
        by_domain.setdefault(domain_of[problem_id], []).append(problem_id)
    order = random.Random(seed)
    queues = [order.sample(ids, len(ids)) for _, ids in sorted(by_domain.items())]
    return [queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)]
