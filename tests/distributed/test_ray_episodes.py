"""Episodes on Ray: the same rewards as in process, and every episode exactly once when actors or nodes die."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import conductor_env  # noqa: F401  (registers the gym ids)
from conductor_env.distributed import RayEnvHost
from conductor_env.evaluation.runner import EvalConfig, evaluate
from conductor_env.evaluation.setup import build_policies
from conductor_env.workers.pool import load_pool
from fixtures.results_rows import rows_without_clock

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray

WORKFLOW = 'model_id = [1, 3]\nsubtasks = ["Solve", "Check"]\naccess_list = [[], "all"]'


def slow_pool(tmp_path: Path, latency_s: float = 0.05, max_concurrency: int = 64) -> str:
    """The simulated preset with every call taking ``latency_s`` (episodes stay in flight)."""
    text = (Path(conductor_env.__file__).parent / "pools" / "simulated.toml").read_text()
    text = text.replace("latency_s = 0.0", f"latency_s = {latency_s}").replace("max_concurrency = 64", f"max_concurrency = {max_concurrency}")
    path = tmp_path / "slow.toml"
    path.write_text(text)
    return str(path)


def keyed(records: list[dict]) -> dict[tuple, tuple]:
    return {(r["policy"], r["problem_id"], r["sample"]): (r["reward"], r["correct"], r["answer"]) for r in records}


def results_lines(out: Path) -> list[dict]:
    path = out / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def run(config: EvalConfig, specs: list[str], out: Path, host: RayEnvHost | None = None):
    policies = build_policies(specs, pool=load_pool(config.setup.pool))
    return evaluate(config, policies, str(out), host=host)


def test_ray_evaluation_gives_the_in_process_rewards(cluster, tmp_path):
    config = EvalConfig.for_id("Conductor-RG-v0", pool="simulated", n=12, concurrency=6, seed=3)
    local = run(config, ["single:0", "moa:2"], tmp_path / "local")
    host = RayEnvHost(workers=3)
    try:
        remote = run(config, ["single:0", "moa:2"], tmp_path / "ray", host=host)
        busy = [s for s in host.actors.stats() if s["steps"] > 0]
    finally:
        host.close()
    assert len(remote.records) == len(local.records) == 24
    assert keyed(remote.records) == keyed(local.records)
    assert len(busy) == 3, "every actor played episodes"
    assert all(r["reruns"] == 0 for r in remote.records)


def test_a_stochastic_policy_writes_the_same_rows_on_ray_as_in_process(cluster, tmp_path):
    config = EvalConfig.for_id("Conductor-RG-v0", pool="simulated", n=12, samples=2, concurrency=8, seed=4, env_options={"max_rounds": 2})
    run(config, ["random"], tmp_path / "local")
    host = RayEnvHost(workers=3)
    try:
        run(config, ["random"], tmp_path / "ray", host=host)
    finally:
        host.close()
    local, remote = rows_without_clock(tmp_path / "local"), rows_without_clock(tmp_path / "ray")
    assert len(local) == 24 and [{k: v for k, v in r.items() if k != "reruns"} for r in remote] == [{k: v for k, v in r.items() if k != "reruns"} for r in local]


def _kill_when(out: Path, at_least: int, kill) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + 120
        while len(results_lines(out)) < at_least and time.monotonic() < deadline:
            time.sleep(0.05)
        kill()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_an_episode_actor_killed_mid_run_loses_no_episode(cluster, tmp_path):
    pool = slow_pool(tmp_path)
    config = EvalConfig.for_id("Conductor-RG-v0", pool=pool, n=30, concurrency=6, seed=1)
    local = run(config, ["single:0"], tmp_path / "local")
    host = RayEnvHost(workers=2)
    out = tmp_path / "ray"
    watcher = _kill_when(out, 6, lambda: ray.kill(host.actors.handles[0], no_restart=False))
    try:
        remote = run(config, ["single:0"], out, host=host)
        lost = host.lost
    finally:
        host.close()
    watcher.join(timeout=5)
    lines = results_lines(out)
    assert len(lines) == 30 and len({(r["problem_id"], r["sample"]) for r in lines}) == 30, "each episode written exactly once"
    assert keyed(remote.records) == keyed(local.records)
    assert lost >= 1 and sum(r["reruns"] for r in lines) >= 1
    assert not any(r["infra_error"] for r in lines)


def test_a_node_removed_mid_run_loses_no_episode(cluster, tmp_path):
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    doomed = cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    pool = slow_pool(tmp_path)
    config = EvalConfig.for_id("Conductor-RG-v0", pool=pool, n=24, concurrency=4, seed=2)
    local = run(config, ["single:0"], tmp_path / "local")
    # Every actor starts on the doomed node; the soft affinity lets Ray restart them elsewhere.
    host = RayEnvHost(workers=2, actor_options={"scheduling_strategy": NodeAffinitySchedulingStrategy(doomed.node_id, soft=True)})
    out = tmp_path / "ray"
    watcher = _kill_when(out, 4, lambda: cluster.remove_node(doomed))
    try:
        remote = run(config, ["single:0"], out, host=host)
        lost = host.lost
    finally:
        host.close()
    watcher.join(timeout=30)
    lines = results_lines(out)
    assert len(lines) == 24 and len({(r["problem_id"], r["sample"]) for r in lines}) == 24
    assert keyed(remote.records) == keyed(local.records)
    assert lost >= 1
    assert not any(r["infra_error"] for r in lines)


def test_worker_limits_hold_across_the_cluster(cluster, tmp_path):
    from conductor_env.distributed.limiter import LIMITER_NAME

    pool = slow_pool(tmp_path, latency_s=0.1, max_concurrency=2)
    config = EvalConfig.for_id("Conductor-RG-v0", pool=pool, n=16, concurrency=8, seed=4)
    host = RayEnvHost(workers=4)
    try:
        host.start(config.setup)
        ray.get(ray.get_actor(LIMITER_NAME).reset_stats.remote())
        run(config, ["single:0"], tmp_path / "ray", host=host)
        stats = ray.get(ray.get_actor(LIMITER_NAME).stats.remote())
    finally:
        host.close()
    worker = load_pool(pool).specs[0].name
    assert stats["granted"] >= 16
    assert stats["peak"][worker] == 2, f"8 episodes on 4 actors wanted the worker at once; the cluster allowed 2 ({stats})"


def test_make_vec_with_the_ray_backend_matches_the_local_vector_env(cluster):
    kwargs = dict(num_envs=4, vectorization_mode="vector_entry_point", pool="simulated")
    local = gym.make_vec("Conductor-RG-v0", **kwargs)
    remote = gym.make_vec("Conductor-RG-v0", **kwargs, backend="ray", backend_options={"workers": 2})
    try:
        results = []
        for envs in (local, remote):
            observations, _ = envs.reset(seed=7)
            assert envs.observation_space.contains(observations)
            _, rewards, terminations, _, infos = envs.step([WORKFLOW, "bad", WORKFLOW, WORKFLOW])
            _, after, _, _, _ = envs.step([WORKFLOW] * 4)  # the autoreset step
            results.append((rewards, terminations, list(infos["answer"]), after))
        assert np.array_equal(results[0][0], results[1][0]) and results[0][2] == results[1][2]
        assert results[1][1].all() and (results[1][3] == 0).all()
    finally:
        local.close()
        remote.close()


def test_grpo_reward_graded_on_ray_matches_the_local_reward(cluster):
    from conductor_env.agents.training.reward import ConductorReward, EnvFactory
    from conductor_env.distributed import RayEnvFactory
    from conductor_env.envs import EnvSetup

    setup = EnvSetup.from_id("Conductor-RG-v0", pool="simulated", split="train")  # the factories train: the train split
    suite, _ = setup.build_suite()
    problems = suite.problems("train")[:4]
    suite.close()
    columns = dict(completions=[WORKFLOW, "no lists", WORKFLOW, WORKFLOW], problem_id=[p.id for p in problems], episode_seed=[1, 2, 3, 4])
    local_factory, remote_factory = EnvFactory(setup), RayEnvFactory(setup, workers=2)
    try:
        assert ConductorReward(remote_factory)(**columns) == ConductorReward(local_factory)(**columns)
    finally:
        local_factory.close()
        remote_factory.close()


def test_eval_cli_runs_on_the_cluster(cluster, tmp_path):
    out = tmp_path / "cli"
    command = [
        sys.executable,
        "-m",
        "conductor_env.cli",
        "eval",
        "--env",
        "Conductor-RG-v0",
        "--policy",
        "single:0",
        "--pool",
        "simulated",
        "--n",
        "4",
        "--out",
        str(out),
        "--ray",
        cluster.address,
        "--ray-workers",
        "2",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(results_lines(out)) == 4


@pytest.mark.slow
def test_two_real_grpo_steps_rewarded_on_ray(cluster, tmp_path):
    from conductor_env.agents.training import EnvSettings, GRPORecipe, GRPOSettings, build_trainer
    from conductor_env.agents.training.reward import REWARD_NAME
    from conductor_env.distributed import RayEnvFactory

    env = EnvSettings(suite_options={"datasets": ["basic_arithmetic", "spell_backward"], "size": 3}, options={"examples": "none"}, problems=4)
    setup = env.setup()
    recipe = GRPORecipe(env=env, grpo=GRPOSettings(max_steps=2, questions_per_step=1, num_generations=2, max_completion_length=24, learning_rate=1e-5), output_dir=str(tmp_path))
    factory = RayEnvFactory(setup, workers=2)
    trainer, reward = build_trainer(recipe, factory=factory)
    try:
        trainer.train()
    finally:
        reward.close()
    steps = [entry for entry in trainer.state.log_history if f"rewards/{REWARD_NAME}/mean" in entry]
    assert len(steps) == 2 and len(reward.records) == 4
    assert all(r.infra_error is None for r in reward.records)
