"""The closed-form oracle of a simulated pool: the expected reward of every workflow, per domain.

A simulated worker (``conductor_env/workers/simulated.py``) answers a step correctly with its
``skill`` when nothing it reads holds the correct answer, and with its ``judge`` (or the second
chance ``1 - (1 - skill)^2`` without one) when something does; every step draws independently
(each step's seed differs). So a workflow's chance of a correct final answer is exact: sum over
the 2^n outcomes of its steps. With the ``cost_aware`` reward (``paper`` minus
``price_weight`` x USD), the expected reward of a workflow on a domain is

    E[R] = 0.5 + 0.5 * P(last step correct) - price_weight * sum(price_per_call of its steps)

(token prices must be 0 in the pool; the script refuses otherwise). The script enumerates every
binary-access workflow (each step reads nothing or every earlier step, as the paper's trained
Conductor writes them) up to ``--max-steps`` steps over the pool's workers, and prints the best
per domain, the best of each shape, and the exact expected reward of the fixed baselines of
``conductor-env eval`` on the whole pool. See docs/ORCHESTRATION.md.

    python benchmarks/oracle_orchestration.py [--pool benchmarks/pools/orchestra.toml] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from conductor_env.workers.pool import load_pool
from conductor_env.workers.simulated import success_probability

POOL = str(Path(__file__).resolve().parent / "pools" / "orchestra.toml")
DOMAINS = ("math", "language", "reasoning")

#: A workflow as the oracle sees it: per step, (worker index, reads every earlier step).
Plan = tuple[tuple[int, bool], ...]


def worker_table(pool: str = POOL) -> list[dict[str, Any]]:
    """Returns each worker's name, skill, judge and per-call price from a simulated pool file."""
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
    """Returns the exact chance that the plan's last step is correct (sum over step outcomes)."""
    return chance_last_correct([(workers[worker], range(i) if reads_all else ()) for i, (worker, reads_all) in enumerate(plan)], domain)


def expected_reward(plan: Plan, workers: Sequence[dict[str, Any]], domain: str, price_weight: float = 1.0) -> float:
    """Returns E[reward] of a plan under ``cost_aware`` (paper 0.5 / 1 minus price_weight x USD)."""
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
    """Every binary-access plan up to ``max_steps`` steps (step 0 reads nothing)."""
    for n in range(1, max_steps + 1):
        for workers in itertools.product(range(num_workers), repeat=n):
            for reads in itertools.product((False, True), repeat=n - 1):
                yield tuple(zip(workers, (False, *reads)))


def render(plan: Plan, workers: Sequence[dict[str, Any]]) -> str:
    return " -> ".join(f"{workers[w]['name']}{'(reads all)' if r else ''}" for w, r in plan)


def baseline_plans(num_workers: int, max_steps: int = 5) -> dict[str, Plan]:
    """The fixed baselines of ``conductor-env eval`` on the whole pool, as plans (agents/baselines.py).

    Baselines longer than ``max_steps`` are left out (the env refuses them).
    """
    cycle = lambda count: [i % num_workers for i in range(count)]  # noqa: E731 - as baselines._cycle
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


def oracle_report(pool: str = POOL, max_steps: int = 3, price_weight: float = 1.0) -> dict[str, Any]:
    """Returns, per domain, the best plan, the best plan of each shape and each baseline's E[reward]."""
    workers = worker_table(pool)
    plans = list(all_plans(len(workers), max_steps))
    report: dict[str, Any] = {"pool": Path(pool).name, "price_weight": price_weight, "max_steps": max_steps, "workers": workers, "domains": {}}
    baselines = baseline_plans(len(workers), max_steps)
    for domain in DOMAINS:
        # Ties go to the shorter plan with fewer reads (the same chance at no extra price).
        scored = sorted(((expected_reward(p, workers, domain, price_weight), p) for p in plans), key=lambda x: (-round(x[0], 9), len(x[1]), sum(r for _, r in x[1])))
        best_by_shape: dict[str, Any] = {}
        for value, plan in scored:
            best_by_shape.setdefault(shape_of(plan), {"reward": round(value, 4), "plan": render(plan, workers), "steps": len(plan)})
        best_value, best_plan = scored[0]
        report["domains"][domain] = {
            "oracle": {"reward": round(best_value, 4), "shape": shape_of(best_plan), "plan": render(best_plan, workers), "p_correct": round(p_correct(best_plan, workers, domain), 4)},
            "best_by_shape": best_by_shape,
            "baselines": {name: round(expected_reward(plan, workers, domain, price_weight), 4) for name, plan in baselines.items()},
        }
    means = {name: round(sum(report["domains"][d]["baselines"][name] for d in DOMAINS) / len(DOMAINS), 4) for name in baselines}
    routing = sum(report["domains"][d]["best_by_shape"]["single"]["reward"] for d in DOMAINS) / len(DOMAINS)
    report["mean_over_domains"] = {
        "oracle": round(sum(report["domains"][d]["oracle"]["reward"] for d in DOMAINS) / len(DOMAINS), 4),
        "routing_oracle": round(routing, 4),  # the best single call per domain: perfect routing, no orchestration
        **means,
    }
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", default=POOL)
    parser.add_argument("--max-steps", type=int, default=3, help="most steps per workflow (the orchestrate recipe's env option)")
    parser.add_argument("--price-weight", type=float, default=1.0)
    parser.add_argument("--json", default=None, help="also write the report here")
    args = parser.parse_args(argv)
    report = oracle_report(args.pool, args.max_steps, args.price_weight)
    for domain, row in report["domains"].items():
        print(f"{domain}: oracle {row['oracle']['reward']:.3f} = {row['oracle']['shape']}: {row['oracle']['plan']}")
        for shape, best in row["best_by_shape"].items():
            print(f"    best {shape:<18} {best['reward']:.3f}  {best['plan']}")
        print("    baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in row["baselines"].items()))
    print("mean over domains: " + ", ".join(f"{k} {v:.3f}" for k, v in report["mean_over_domains"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
