"""The GRPO training dataset: one conversational row per problem, replayable in the env.

Each row keeps ``problem_id`` and ``episode_seed``, so :class:`~conductor_env.agents.training.reward.ConductorReward`
resets every completion of a GRPO group to the same question, sub-pool and worker sampling seeds.
"""

from __future__ import annotations

import itertools
import random
from typing import Any, Mapping, Sequence, TypeVar

from conductor_env.agents.prompts import PromptBuilder, chat_messages, full_prompt
from conductor_env.agents.training.reward import EnvFactory
from conductor_env.env import ConductorEnv
from conductor_env.rows import row_split, spread_evenly


def build_dataset(
    factory: EnvFactory,
    *,
    limit: int | None = None,
    seed: int = 0,
    problem_ids: Sequence[str] | None = None,
    prompt_builder: PromptBuilder = full_prompt,
    balance_domains: bool = False,
    domain_weights: Mapping[str, int] | None = None,
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
        domain_weights: With ``balance_domains``, each round-robin round takes this many
            problems of a domain (1 for a domain not named) instead of one, cycling a domain's
            problems (reshuffled) until every domain has had all of its own; a step of
            ``sum(weights)`` questions then sees domain ``d`` ``weights[d]`` times.

    Raises:
        ValueError: For a weight below 1, a domain the split does not have, or weights without
            ``balance_domains``.

    Returns:
        A :class:`datasets.Dataset` with ``prompt`` (the chat messages: the user message, after the
        Conductor template's system message when it has one), ``problem_id``,
        ``episode_seed``, ``domain`` and ``split`` (the factory's: ``train`` unless its setup names another).
    """
    from datasets import Dataset

    env = factory.local()
    if problem_ids is None:
        problem_ids = [p.id for p in spread_evenly(env.problems, limit)]
    if domain_weights and not balance_domains:
        raise ValueError("domain_weights need balance_domains (they weigh its round-robin order)")
    if balance_domains:
        problem_ids = _round_robin_by_domain(env, problem_ids, seed, domain_weights or {})
    split = row_split(env)
    rows: dict[str, list[Any]] = {"prompt": [], "problem_id": [], "episode_seed": [], "domain": [], "split": []}
    for i, problem_id in enumerate(problem_ids):
        observation, info = env.reset(seed=seed + i, options={"problem_id": problem_id})
        rows["prompt"].append(chat_messages(observation, prompt_builder))
        rows["problem_id"].append(problem_id)
        rows["episode_seed"].append(seed + i)
        rows["domain"].append(info["domain"])
        rows["split"].append(split)
    return Dataset.from_dict(rows)


def check_domain_weights(weights: Mapping[str, int]) -> None:
    """Refuses a domain weight that is not an integer of at least 1.

    Raises:
        ValueError: Naming the bad weights.
    """
    bad = {domain: weight for domain, weight in weights.items() if not isinstance(weight, int) or isinstance(weight, bool) or weight < 1}
    if bad:
        raise ValueError(f"domain_weights must be integers >= 1, got {bad}")


T = TypeVar("T")


def interleave(queues: Sequence[Sequence[T]]) -> list[T]:
    """The queues' items one from each in turn, while they last (``[[a, b], [c]]`` -> ``[a, c, b]``).

    Args:
        queues: The queues, in the order a round visits them.

    Returns:
        Every item, round by round.
    """
    return [queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)]


def _round_robin_by_domain(env: ConductorEnv, problem_ids: Sequence[str], seed: int, weights: Mapping[str, int]) -> list[str]:
    """Interleaves the problems' domains (each domain's order shuffled with ``seed``).

    Without weights a round takes one problem of each domain while they last. With weights a
    round takes ``weights[d]`` of domain ``d``, a domain's problems repeating (reshuffled each
    pass) until the domain that needs the most rounds has had all of its own.
    """
    domain_of = {p.id: p.domain for p in env.problems}
    by_domain: dict[str, list[str]] = {}
    for problem_id in problem_ids:
        by_domain.setdefault(domain_of[problem_id], []).append(problem_id)
    order = random.Random(seed)
    if not weights:
        return interleave([order.sample(ids, len(ids)) for _, ids in sorted(by_domain.items())])
    unknown = sorted(set(weights) - set(by_domain))
    if unknown:
        raise ValueError(f"domain_weights name domains the split does not have: {unknown} (it has {sorted(by_domain)})")
    check_domain_weights(weights)
    rounds = max(-(-len(ids) // weights.get(domain, 1)) for domain, ids in by_domain.items())
    streams = {domain: _reshuffled_cycle(ids, order) for domain, ids in sorted(by_domain.items())}
    return [problem_id for _ in range(rounds) for domain, stream in streams.items() for problem_id in itertools.islice(stream, weights.get(domain, 1))]


def _reshuffled_cycle(ids: Sequence[str], order: random.Random) -> Any:
    """Yields ``ids`` forever, in a new shuffled order on every pass."""
    while True:
        yield from order.sample(list(ids), len(ids))
