"""The evaluation loop (`conductor-env eval`) against a plain sequential loop, in one run.

Measures, with simulated workers (no model time, so the loop itself is what is timed):
  (a) wall time of N episodes of plan-solve-verify (3 dependent calls) with a fixed worker
      latency: the runner (C episodes in flight, each record fsynced) against a plain loop of
      ``env.step`` one episode after another, the way a first script would do it;
  (b) the runner's own cost per episode with zero-latency workers (batching, record building,
      JSON, fsync; the one-off setup measured separately and left out) against the plain
      ``env.step`` loop (which records nothing);
  (c) resuming: a rerun that finds every episode done (reads and skips the results) against
      the run that wrote them.

Usage: python benchmarks/bench_eval.py [--episodes 200] [--latency 0.05] [--concurrency 32] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Sequence

import gymnasium as gym

import conductor_env  # noqa: F401
from conductor_env.agents.base import Observation, Policy
from conductor_env.evaluation import EvalConfig, evaluate
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

ENV_ID = "Conductor-RG-v0"
WORKFLOW = 'model_id = [1, 0, 1]\nsubtasks = ["Plan.", "Solve using the plan.", "Verify and answer."]\naccess_list = [[], "all", "all"]'


class Fixed(Policy):
    name = "plan-solve-verify"

    async def aact(self, observations: Sequence[Observation]) -> list[str]:
        return [WORKFLOW for _ in observations]


def pool(latency_s: float) -> WorkerPool:
    return WorkerPool(
        [WorkerSpec(f"sim-{i}", "simulated", max_concurrency=10_000, options={"skill": 0.6, "latency_s": latency_s}) for i in range(2)],
        name=f"sim-{latency_s:g}",
    )


def plain_loop(episodes: int, latency_s: float) -> float:
    env = gym.make(ENV_ID, pool=pool(latency_s))
    started = time.perf_counter()
    for i in range(episodes):
        env.reset(seed=i, options={"problem_index": i})
        env.step(WORKFLOW)
    wall = time.perf_counter() - started
    env.close()
    return wall


def runner(episodes: int, latency_s: float, concurrency: int, folder: str) -> float:
    config = EvalConfig.for_id(ENV_ID, pool=pool(latency_s), n=episodes, concurrency=concurrency)
    started = time.perf_counter()
    result = evaluate(config, [Fixed()], folder)
    wall = time.perf_counter() - started
    assert len(result.new_records) == episodes or result.skipped == episodes
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    n, latency = min(args.episodes, 300), args.latency  # the RG test split has 300 problems

    runner(8, 0.0, 4, tempfile.mkdtemp())  # warm-up: imports, suite generation
    plain_latency = plain_loop(n, latency)
    with tempfile.TemporaryDirectory() as folder:
        ours_latency = runner(n, latency, args.concurrency, folder)
    plain_zero = plain_loop(n, 0.0)
    with tempfile.TemporaryDirectory() as folder:
        setup = runner(1, 0.0, args.concurrency, folder)  # suite, pool and env construction
    with tempfile.TemporaryDirectory() as folder:
        ours_zero = runner(n, 0.0, args.concurrency, folder) - setup
        resumed = runner(n, 0.0, args.concurrency, folder)

    figures = {
        "episodes": n,
        "latency_s": latency,
        "concurrency": args.concurrency,
        "a_plain_sequential_wall_s": round(plain_latency, 3),
        "a_runner_wall_s": round(ours_latency, 3),
        "a_speedup": round(plain_latency / ours_latency, 1),
        "b_plain_per_episode_ms": round(1000 * plain_zero / n, 3),
        "b_runner_per_episode_ms": round(1000 * ours_zero / n, 3),
        "b_runner_over_plain": round(ours_zero / plain_zero, 2),
        "setup_s": round(setup, 3),
        "c_resume_wall_s": round(resumed, 3),
        "c_resume_over_run": round(resumed / (ours_zero + setup), 3),
    }
    print(
        f"(a) {n} episodes, 3 dependent calls of {latency * 1000:.0f} ms: plain loop {plain_latency:.2f} s, "
        f"runner (C={args.concurrency}) {ours_latency:.2f} s -> {figures['a_speedup']}x faster\n"
        f"(b) zero-latency workers: plain env.step {figures['b_plain_per_episode_ms']} ms/episode, runner with "
        f"fsynced records {figures['b_runner_per_episode_ms']} ms/episode ({figures['b_runner_over_plain']}x)\n"
        f"(c) rerun with everything done: {resumed:.2f} s = {figures['c_resume_over_run']}x the run that wrote it "
        f"(setup of suite, pool and envs: {setup:.2f} s, in both)"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=2)
            handle.write("\n")


if __name__ == "__main__":
    main()
