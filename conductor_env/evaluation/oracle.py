"""The closed-form oracle of a simulated pool: the exact expected reward of every workflow.

A simulated worker (:mod:`conductor_env.workers.simulated`) answers a step correctly with its
``skill`` when nothing it reads holds the correct answer, and with its ``judge`` (or the second
chance ``1 - (1 - skill)^2`` without one) when something does; every step draws independently.
So a workflow's chance of a correct final answer is exact: a sum over the 2^n outcomes of its
steps. With the ``cost_aware`` reward (``paper`` minus ``price_weight`` x USD) the expected reward
of a workflow on a domain is::

    E[R] = 0.5 + 0.5 * P(last step correct) - price_weight * sum(price_per_call of its steps)

Token prices must be 0 in the pool (:func:`worker_table` refuses them). :func:`oracle_report`
enumerates every binary-access workflow (each step reads nothing or every earlier step) and
gives the best per domain, the best of each shape and the fixed baselines' exact values.

    from conductor_env.evaluation.oracle import oracle_report
    report = oracle_report("orchestra-judge", max_steps=3)
    report["domains"]["math"]["oracle"]  # {"reward": ..., "shape": "2-attempts+judge", ...}

See docs/ORCHESTRATION.md for the pools and the recipes, and docs/lab/orchestration.md for the
figures measured with it.
"""

from __future__ import annotations

import importlib.resources
import itertools
import json
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

from conductor_env.tasks.suites.procedural import DATASET_DOMAINS
from conductor_env.workers.pool import load_pool
from conductor_env.workers.simulated import success_probability

#: The three-worker ``orchestra`` pool shipped with the package (its file path).
POOL = str(importlib.resources.files("conductor_env.pools") / "orchestra.toml")
#: The domains of the orchestrate recipes' questions.
DOMAINS = ("math", "language", "reasoning")

#: A workflow as the oracle sees it: per step, (worker index, reads every earlier step).
Plan = tuple[tuple[int, bool], ...]


def worker_table(pool: str = POOL) -> list[dict[str, Any]]:
    """Returns each worker's ``name``, ``skill``, ``judge`` and per-call ``price``.

    Args:
        pool: A simulated pool: a preset name or a ``.toml`` path.

    Raises:
        ValueError: When a worker is not simulated or has token prices.
    """
    table = []
    for spec in load_pool(pool).specs:
        if spec.backend != "simulated":
            raise ValueError(f"worker {spec.name!r} is not simulated; the oracle needs declared skills")
        if spec.price_in_per_m or spec.price_out_per_m:
            raise ValueError(f"worker {spec.name!r} has token prices; the closed form needs price_per_call only")
        options = spec.options
        table.append({"name": spec.name, "skill": options.get("skill", 0.5), "judge": options.get("judge"), "price": float(options.get("price_per_call", 0.0))})
    return table


def chance_last_correct(steps: Sequence[tuple[dict[str, Any], Sequence[int]]], domain: str) -> float:
    """Returns the exact chance that the last of ``steps`` answers correctly.

    Args:
        steps: Per step, its worker's row of :func:`worker_table` and the indices of the earlier
            steps it reads (any subset, not only none or all).
        domain: The problem's domain (selects each worker's skill and judge).

    Returns:
        The sum, over the 2^n joint outcomes of the steps, of the chance of each outcome whose last
        step is correct. A step reads a correct answer when any step it reads answered correctly.
    """
    total = 0.0
    for outcome in itertools.product((True, False), repeat=len(steps)):
        weight = 1.0
        for (worker, reads), correct in zip(steps, outcome):
            p = success_probability(worker["skill"], worker["judge"], domain, reads_correct=any(outcome[j] for j in reads))
            weight *= p if correct else 1.0 - p
        if outcome[-1]:
            total += weight
    return total


def p_correct(plan: Plan, workers: Sequence[dict[str, Any]], domain: str) -> float:
    """Returns the exact chance that the plan's last step is correct."""
    return chance_last_correct([(workers[worker], range(i) if reads_all else ()) for i, (worker, reads_all) in enumerate(plan)], domain)


def expected_reward(plan: Plan, workers: Sequence[dict[str, Any]], domain: str, price_weight: float = 1.0) -> float:
    """Returns E[reward] of a plan under ``cost_aware`` (0.5 wrong / 1 right, minus price_weight x USD)."""
    cost = sum(workers[w]["price"] for w, _ in plan)
    return 0.5 + 0.5 * p_correct(plan, workers, domain) - price_weight * cost


def shape_of(plan: Plan) -> str:
    """Names a plan's shape: ``single``, ``solve-verify``, ``k-attempts+judge``, ``chain-n`` or ``other``."""
    n = len(plan)
    reads = [r for _, r in plan]
    if n == 1:
        return "single"
    if n == 2 and reads[1]:
        return "solve-verify"
    if reads[-1] and not any(reads[1:-1]):
        return f"{n - 1}-attempts+judge"
    if all(reads[1:]):
        return f"chain-{n}"
    return "other"


def all_plans(num_workers: int, max_steps: int) -> Iterable[Plan]:
    """Yields every binary-access plan of up to ``max_steps`` steps (step 0 reads nothing)."""
    for n in range(1, max_steps + 1):
        for workers in itertools.product(range(num_workers), repeat=n):
            for reads in itertools.product((False, True), repeat=n - 1):
                yield tuple(zip(workers, (False, *reads)))


def render(plan: Plan, workers: Sequence[dict[str, Any]]) -> str:
    """Returns a plan as text, e.g. ``flash -> flash -> checker(reads all)``."""
    return " -> ".join(f"{workers[w]['name']}{'(reads all)' if r else ''}" for w, r in plan)


def baseline_plans(num_workers: int, max_steps: int = 5) -> dict[str, Plan]:
    """Returns the fixed baselines of ``conductor-env eval`` on the whole pool, as plans.

    The plans follow :mod:`conductor_env.agents.baselines`; baselines longer than ``max_steps`` are
    left out (the env refuses them).
    """

    def cycle(count: int) -> list[int]:
        return [i % num_workers for i in range(count)]

    plans: dict[str, Plan] = {f"single:{w}": ((w, False),) for w in range(num_workers)}
    p, s, v = cycle(3)
    plans["template:plan-solve-verify"] = ((p, False), (s, True), (v, True))
    for k in (2, 3):
        ids = cycle(k + 1)
        plans[f"template:parallel-judge:{k}"] = (*((w, False) for w in ids[:-1]), (ids[-1], True))
    for w in range(num_workers):
        plans[f"reflect:{w}:3"] = ((w, False), (w, True), (w, True))
    for k in (2, 3):
        plans[f"moa:{k}"] = (*((w, False) for w in cycle(k)), (0, True))
    return {name: plan for name, plan in plans.items() if len(plan) <= max_steps}


def _domain_report(domain: str, plans: Sequence[Plan], workers: Sequence[dict[str, Any]], baselines: dict[str, Plan], price_weight: float) -> dict[str, Any]:
    # Ties go to the shorter plan with fewer reads (the same chance at no extra price).
    scored = sorted(((expected_reward(p, workers, domain, price_weight), p) for p in plans), key=lambda x: (-round(x[0], 9), len(x[1]), sum(r for _, r in x[1])))
    best_by_shape: dict[str, Any] = {}
    for value, plan in scored:
        best_by_shape.setdefault(shape_of(plan), {"reward": round(value, 4), "plan": render(plan, workers), "steps": len(plan)})
    best_value, best_plan = scored[0]
    return {
        "oracle": {"reward": round(best_value, 4), "shape": shape_of(best_plan), "plan": render(best_plan, workers), "p_correct": round(p_correct(best_plan, workers, domain), 4)},
        "best_by_shape": best_by_shape,
        "baselines": {name: round(expected_reward(plan, workers, domain, price_weight), 4) for name, plan in baselines.items()},
    }


def oracle_report(pool: str = POOL, max_steps: int = 3, price_weight: float = 1.0) -> dict[str, Any]:
    """Returns the oracle of a simulated pool.

    Args:
        pool: A simulated pool: a preset name or a ``.toml`` path.
        max_steps: The most steps per workflow (the orchestrate recipes' env option).
        price_weight: The ``cost_aware`` reward's weight on USD.

    Returns:
        ``pool``, ``price_weight``, ``max_steps``, ``workers``; per domain in ``domains`` the best
        plan (``oracle``), the best plan of each shape (``best_by_shape``) and each baseline's
        expected reward (``baselines``); and ``mean_over_domains`` of the oracle, of perfect
        routing (the best single call per domain, ``routing_oracle``) and of each baseline.
    """
    workers = worker_table(pool)
    plans = list(all_plans(len(workers), max_steps))
    baselines = baseline_plans(len(workers), max_steps)
    domains = {domain: _domain_report(domain, plans, workers, baselines, price_weight) for domain in DOMAINS}

    def mean(values: Iterable[float]) -> float:
        return round(sum(values) / len(DOMAINS), 4)

    return {
        "pool": Path(pool).name,
        "price_weight": price_weight,
        "max_steps": max_steps,
        "workers": workers,
        "domains": domains,
        "mean_over_domains": {
            "oracle": mean(domains[d]["oracle"]["reward"] for d in DOMAINS),
            "routing_oracle": mean(domains[d]["best_by_shape"]["single"]["reward"] for d in DOMAINS),
            **{name: mean(domains[d]["baselines"][name] for d in DOMAINS) for name in baselines},
        },
    }


@lru_cache(maxsize=None)
def shown_oracle(pool: str, shown: tuple[str, ...], domain: str, max_steps: int = 3) -> float:
    """Returns the best expected reward over plans on some of the pool's workers.

    Args:
        pool: A simulated pool: a preset name or a ``.toml`` path.
        shown: The names of the workers an episode showed (a sub-pool).
        domain: The problem's domain.
        max_steps: The most steps per workflow.
    """
    table = {w["name"]: w for w in worker_table(pool)}
    workers = [table[name] for name in shown]
    return max(expected_reward(plan, workers, domain) for plan in all_plans(len(workers), max_steps))


def training_domain(problem_id: str) -> str:
    """Returns the domain of a training record's problem (``gcd/train/3`` -> ``math``)."""
    return DATASET_DOMAINS.get(problem_id.split("/")[0], "reasoning")


def training_episodes(episodes_path: str | Path) -> list[dict[str, Any]]:
    """Returns a run's sampled training episodes: ``rewards.json``'s ``episodes`` or ``episodes.jsonl``'s lines."""
    text = Path(episodes_path).read_text(encoding="utf-8")
    return json.loads(text)["episodes"] if str(episodes_path).endswith(".json") else [json.loads(line) for line in text.splitlines() if line.strip()]


def oracle_per_step(episodes: Iterable[dict[str, Any]], pool: str = POOL) -> list[float]:
    """Returns, per training step, the oracle's mean over that step's episodes, each on the workers it showed.

    This is the ceiling of the batch reward when training mixes in smaller sub-pools, whose oracle
    is lower than the whole pool's.

    Args:
        episodes: Training episodes with ``step``, ``problem_id`` and ``worker_map``.
        pool: The run's simulated pool.

    Returns:
        One value per recorded step, in step order.
    """
    by_step: dict[int, list[float]] = defaultdict(list)
    for episode in episodes:
        shown = tuple(sorted(episode["worker_map"].values()))
        by_step[episode["step"]].append(shown_oracle(pool, shown, training_domain(episode["problem_id"])))
    return [round(sum(values) / len(values), 4) for _, values in sorted(by_step.items())]


def training_oracle(episodes_path: str | Path, pool: str = POOL) -> list[float]:
    """Returns :func:`oracle_per_step` of a run's ``rewards.json`` or ``episodes.jsonl``."""
    return oracle_per_step(training_episodes(episodes_path), pool)
