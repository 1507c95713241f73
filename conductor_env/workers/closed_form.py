"""The closed form of simulated workers: the exact chance and expected reward of a workflow.

A simulated worker (:mod:`conductor_env.workers.simulated`) answers a step correctly with its
``skill`` when nothing it reads holds the correct answer, and with its ``judge`` (or the second
chance ``1 - (1 - skill)^2`` without one) when something does; every step draws independently, so
a workflow's chance of a correct final answer is a sum over the 2^n outcomes of its steps. With
the ``cost_aware`` reward (``paper`` minus ``price_weight`` x USD)::

    E[R] = 0.5 + 0.5 * P(last step correct) - price_weight * sum(price_per_call of its steps)

:mod:`conductor_env.evaluation.oracle` builds its reports on this; the format warm start's
``oracle`` targets (:mod:`conductor_env.agents.training.warmstart`) use :func:`best_plan`.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Sequence

from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.simulated import success_probability

#: A workflow as the oracle sees it: per step, (worker index, reads every earlier step).
Plan = tuple[tuple[int, bool], ...]


def worker_rows(specs: Sequence[WorkerSpec]) -> list[dict[str, Any]]:
    """Returns each worker's ``name``, ``skill``, ``judge`` and per-call ``price``.

    Raises:
        ValueError: When a worker is not simulated or has token prices.
    """
    table = []
    for spec in specs:
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


def ranked_plans(workers: Sequence[dict[str, Any]], domain: str, max_steps: int, price_weight: float = 1.0) -> list[tuple[float, Plan]]:
    """Returns every binary-access plan with its expected reward, best first; ties go to the
    shorter plan with fewer reads (the same chance at no extra price)."""
    scored = ((expected_reward(plan, workers, domain, price_weight), plan) for plan in all_plans(len(workers), max_steps))
    return sorted(scored, key=lambda x: (-round(x[0], 9), len(x[1]), sum(r for _, r in x[1])))


def best_plan(workers: Sequence[dict[str, Any]], domain: str, max_steps: int, price_weight: float = 1.0) -> tuple[float, Plan]:
    """Returns the best plan on ``workers`` (rows of :func:`worker_rows`) for ``domain`` and its expected reward."""
    return ranked_plans(workers, domain, max_steps, price_weight)[0]
