"""Episodes per second with TRL, by path, against the package's own loop, in one run.

Every episode is one workflow step on a simulated worker that takes 1 s (``--latency``), so the
figure is how many worker calls a path keeps in flight. Three paths, each with N rollouts:

- package loop: ``agents.episode.play`` for N episodes with ``asyncio.gather`` (what ``conductor-env eval`` runs);
- reward-function path: ``conductor_reward(...)`` called as TRL calls it, on N completions;
- environment path: one real ``GRPOTrainer`` step with ``environment_factory=conductor_environments(...)``
  and N rollouts of a tiny offline model that calls ``run_workflow`` once (the step's whole time:
  generation and the backward pass of the tiny model are a small part of it).

Usage: python benchmarks/bench_trl.py [--rollouts 8 64] [--latency 1.0]   (prints a table; writes nothing)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time

from conductor_env.agents import make_policy
from conductor_env.agents.episode import PolicyBatcher, play
from conductor_env.event_loop import run_sync
from conductor_env.integrations.trl import conductor_dataset, conductor_environments, conductor_reward, conductor_tool_reward
from conductor_env.integrations.trl_smoke import tiny_tool_caller
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

ENV_ID = "Conductor-RG-v0"
SUITE = {"datasets": ["basic_arithmetic"], "size": 4}
ACTION = {"model_id": [0], "subtasks": ["Solve it."], "access_list": [[]]}


def slow_pool(latency: float) -> WorkerPool:
    return WorkerPool([WorkerSpec("slow", "simulated", max_concurrency=256, options={"skill": 1.0, "latency_s": latency})], name="slow")


def package_loop(n: int, latency: float) -> float:
    reward = conductor_reward(ENV_ID, pool=slow_pool(latency), suite_options=SUITE)  # only for its env factory
    envs = [reward.factory() for _ in range(n)]
    problem = reward.factory.local().problems[0].id
    policy = PolicyBatcher(make_policy("single:0"))

    async def run() -> None:
        await asyncio.gather(*(play(env, policy, seed=0, reset_options={"problem_id": problem}) for env in envs))

    started = time.perf_counter()
    run_sync(run())
    elapsed = time.perf_counter() - started
    reward.close()
    return elapsed


def reward_path(n: int, latency: float) -> float:
    reward = conductor_reward(ENV_ID, pool=slow_pool(latency), suite_options=SUITE)
    row = conductor_dataset(reward, limit=1)[0]
    started = time.perf_counter()
    rewards = reward(completions=[[{"role": "assistant", "content": json.dumps(ACTION)}]] * n, problem_id=[row["problem_id"]] * n, episode_seed=[row["episode_seed"]] * n)
    elapsed = time.perf_counter() - started
    assert rewards == [1.0] * n, rewards
    reward.close()
    return elapsed


def environment_path(n: int, latency: float) -> float:
    from trl import GRPOConfig, GRPOTrainer

    environments = conductor_environments(ENV_ID, pool=slow_pool(latency), suite_options=SUITE)
    dataset = conductor_dataset(environments, limit=1, tools=True)
    probe = environments()
    prompts = [[*row["prompt"][:-1], {"role": "user", "content": probe.reset(**dict(row))}] for row in dataset]
    model, tokenizer, generation = tiny_tool_caller(prompts, ACTION, probe.run_workflow)
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out,
            max_steps=1,
            per_device_train_batch_size=n,
            num_generations=n,
            max_completion_length=128,
            max_tool_calling_iterations=2,
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            generation_kwargs=generation,
        )
        trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=conductor_tool_reward, environment_factory=environments, train_dataset=dataset, args=args)
        started = time.perf_counter()
        trainer.train()
        elapsed = time.perf_counter() - started
    logged = trainer.state.log_history[0]
    assert logged["conductor/rounds"] == 1.0 and logged["reward"] == 1.0, logged
    environments.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--latency", type=float, default=1.0)
    options = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    print(f"{'rollouts':>8} {'path':<22} {'seconds':>8} {'episodes/s':>11} {'vs package loop':>16}")
    for n in options.rollouts:
        base = package_loop(n, options.latency)
        for name, seconds in (("package loop", base), ("reward function", reward_path(n, options.latency)), ("environment_factory", environment_path(n, options.latency))):
            print(f"{n:>8} {name:<22} {seconds:>8.2f} {n / seconds:>11.2f} {base / seconds:>15.2f}x", flush=True)


if __name__ == "__main__":
    main()
