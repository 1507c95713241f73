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
import json
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

from conductor_env.tasks.suites.procedural import DATASET_DOMAINS
from conductor_env.workers.closed_form import Plan, all_plans, chance_last_correct, expected_reward, p_correct, ranked_plans, shape_of, worker_rows
from conductor_env.workers.pool import load_pool

__all__ = ["DOMAINS", "POOL", "Plan", "all_plans", "chance_last_correct", "expected_reward", "oracle_report", "p_correct", "shape_of", "shown_oracle", "worker_table"]

#: The three-worker ``orchestra`` pool shipped with the package (its file path).
POOL = str(importlib.resources.files("conductor_env.pools") / "orchestra.toml")
#: The domains of the orchestrate recipes' questions.
DOMAINS = ("math", "language", "reasoning")


def worker_table(pool: str = POOL) -> list[dict[str, Any]]:
    """Returns each worker's ``name``, ``skill``, ``judge`` and per-call ``price``.

    Args:
        pool: A simulated pool: a preset name, a ``.toml`` path or a family's draw (``generated-heldout#3``).

    Raises:
        ValueError: When a worker is not simulated or has token prices.
    """
    return worker_rows(load_pool(pool).specs)


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


def _domain_report(domain: str, max_steps: int, workers: Sequence[dict[str, Any]], baselines: dict[str, Plan], price_weight: float) -> dict[str, Any]:
    scored = ranked_plans(workers, domain, max_steps, price_weight)
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
    baselines = baseline_plans(len(workers), max_steps)
    domains = {domain: _domain_report(domain, max_steps, workers, baselines, price_weight) for domain in DOMAINS}

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
