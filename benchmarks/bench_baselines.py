"""Every baseline policy on Conductor-RG-v0 (simulated pool) and Conductor-HumanEval-v0 (local pool).

For each policy and problem one episode is played (all episodes of a suite concurrently, so the
local model batches); the table gives accuracy, mean reward, parse rate, mean cost in USD, mean
worker tokens and mean episode wall time. ``llm:gemma-greedy`` is the local Gemma 3 270M used
zero-shot as the Conductor: its parse rate is the figure of interest.

    python benchmarks/bench_baselines.py                       # both suites
    python benchmarks/bench_baselines.py --suites rg --rg-problems 120

HumanEval runs its tests in a sandbox (``--sandbox auto``: Docker when the daemon and image are
there, else the local sandbox) and uses the ``local`` pool (three Gemma 3 270M workers with
different sampling), with a short output limit to keep CPU time bounded.
Writes the figures to ``--out`` (default: a file under the system's temporary folder; the
recorded run is benchmarks/results/baselines.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents import make_policy
from conductor_env.envs import EnvSetup
from conductor_env.event_loop import run_sync
from conductor_env.workers.pool import load_pool

SPECS = [
    "single:0", "single:1", "single:2", "random", "template:plan-solve-verify", "template:parallel-judge",
    "reflect:0:3", "moa:3", "llm:gemma-greedy",
]  # fmt: skip


async def run_suite(label: str, make_env, policies, problems: int, concurrency: int) -> dict:
    """Plays every policy on the first ``problems`` problems; returns per-policy figures."""
    gate = asyncio.Semaphore(concurrency)

    async def episode(policy, index: int) -> dict:
        async with gate:
            env = make_env()
            observation, _ = env.reset(seed=index, options={"problem_index": index})
            started = time.perf_counter()
            (action,) = await policy.aact([observation])
            conduct_s = time.perf_counter() - started
            _, reward, _, _, info = await env.astep(action)
            return {
                "reward": reward,
                "correct": info["correct"],
                "parsed": not info["parse_error"],
                "infra_error": bool(info["infra_error"]),
                "cost_usd": info["cost_usd"],
                "tokens": info["tokens"],
                "wall_s": time.perf_counter() - started,
                "conductor_s": conduct_s,
            }

    started = time.perf_counter()
    jobs = {policy.name: [episode(policy, i) for i in range(problems)] for policy in policies}
    results = dict(zip(jobs, await asyncio.gather(*(asyncio.gather(*js) for js in jobs.values()))))
    table = {}
    for name, episodes in results.items():
        scored = [e for e in episodes if not e["infra_error"]]
        table[name] = {
            "episodes": len(episodes),
            "infra_errors": len(episodes) - len(scored),
            "accuracy": round(statistics.mean(e["correct"] for e in scored), 4) if scored else None,
            "mean_reward": round(statistics.mean(e["reward"] for e in scored), 4) if scored else None,
            "parse_rate": round(statistics.mean(e["parsed"] for e in scored), 4) if scored else None,
            "cost_usd": round(statistics.mean(e["cost_usd"] for e in scored), 7) if scored else None,
            "tokens": round(statistics.mean(e["tokens"] for e in scored), 1) if scored else None,
            "wall_s": round(statistics.mean(e["wall_s"] for e in episodes), 3),
        }
    print(f"\n{label}: {problems} problems x {len(policies)} policies in {time.perf_counter() - started:.0f} s")
    print(f"{'policy':30} {'acc':>6} {'reward':>7} {'parsed':>7} {'cost $':>10} {'tokens':>8} {'wall s':>7}")
    for name, row in table.items():
        print(f"{name:30} {row['accuracy']!s:>6} {row['mean_reward']!s:>7} {row['parse_rate']!s:>7} {row['cost_usd']!s:>10} {row['tokens']!s:>8} {row['wall_s']:>7}")
    return {"problems": problems, "seconds": round(time.perf_counter() - started, 1), "policies": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", nargs="+", default=["rg", "humaneval"], choices=["rg", "humaneval"])
    parser.add_argument("--rg-problems", type=int, default=60)
    parser.add_argument("--humaneval-problems", type=int, default=10)
    parser.add_argument("--worker-max-tokens", type=int, default=128, help="worker output limit on HumanEval")
    parser.add_argument("--conductor-max-tokens", type=int, default=256, help="output limit of llm:gemma-greedy")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--policies", nargs="+", default=SPECS, help="policy specs to run (default: every baseline)")
    parser.add_argument("--merge", action="store_true", help="add these policies' rows to an existing --out file")
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "conductor-env-bench" / "baselines.json"), help="where to write the figures")
    args = parser.parse_args()
    out = Path(args.out)
    figures: dict[str, dict] = json.loads(out.read_text(encoding="utf-8")) if args.merge and out.exists() else {}
    figures["settings"] = {k: v for k, v in vars(args).items() if k not in ("policies", "merge")}

    def keep(suite: str, result: dict) -> None:
        """Stores a suite's rows, next to rows of earlier runs when merging."""
        earlier = figures.get(suite, {"policies": {}, "seconds_by_run": []})
        earlier["policies"].update(result["policies"])
        earlier["problems"] = result["problems"]
        earlier.setdefault("seconds_by_run", []).append({"policies": list(result["policies"]), "seconds": result["seconds"]})
        figures[suite] = {k: v for k, v in earlier.items() if k != "seconds"}

    if "rg" in args.suites:
        simulated = load_pool("simulated")
        make = lambda: EnvSetup.from_kwargs(suite="rg", pool=simulated).make()  # noqa: E731
        policies = [make_policy(spec, max_tokens=args.conductor_max_tokens) for spec in args.policies]
        keep("Conductor-RG-v0 / simulated", run_sync(run_suite("Conductor-RG-v0, simulated pool", make, policies, args.rg_problems, 64)))
        for policy in policies:
            run_sync(policy.aclose())
        run_sync(simulated.aclose())

    if "humaneval" in args.suites:
        from conductor_env.tasks.registry import get_suite

        local = load_pool("local")
        suite = get_suite("humaneval", sandbox=args.sandbox)
        make = lambda: EnvSetup.from_kwargs(suite=suite, pool=local, worker_max_tokens=args.worker_max_tokens).make()  # noqa: E731
        policies = [make_policy(spec, pool=local, max_tokens=args.conductor_max_tokens) for spec in args.policies]
        keep("Conductor-HumanEval-v0 / local", run_sync(run_suite("Conductor-HumanEval-v0, local pool (Gemma 3 270M)", make, policies, args.humaneval_problems, 32)))
        run_sync(local.aclose())
        suite.close()

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
