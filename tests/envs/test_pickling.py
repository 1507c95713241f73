"""Envs pickle and deep-copy: every id, mid-episode copies, copies owning their sandbox, and
subprocess vector envs started with ``spawn`` (Gymnasium's AsyncVectorEnv, SB3's SubprocVecEnv)."""

from __future__ import annotations

import copy
import functools
import os
import pickle
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

import conductor_env  # noqa: F401  (registers the gym ids)
from conductor_env.agents.training.sb3 import RoutingEnv
from conductor_env.envs import EnvSetup
from conductor_env.sandboxes import docker_available, get_sandbox
from conductor_env.tasks import BUILTIN_SUITES, env_id_for
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SUITES = FIXTURES / "suites"
HUMANEVAL = str(FIXTURES / "humaneval" / "humaneval_sample.jsonl")
LCB = str(FIXTURES / "lcb" / "lcb_sample.jsonl")

#: Small offline options for every shipped id; code suites grade in the local (bubblewrap) sandbox.
OPTIONS: dict[str, dict[str, Any]] = {
    "Conductor-RG-v0": {"suite_options": {"size": 3}},
    "Conductor-LCB-v0": {"suite_options": {"data_files": LCB}, "sandbox": "local"},
    "Conductor-HumanEval-v0": {"suite_options": {"data_files": HUMANEVAL}, "sandbox": "local"},
    "Conductor-BigCodeBench-v0": {"suite_options": {"data_files": str(FIXTURES / "bigcodebench" / "bcb_sample.jsonl")}, "sandbox": "local"},
    "Conductor-MATH500-v0": {"suite_options": {"data_files": str(SUITES / "math500.jsonl")}},
    "Conductor-AIME-v0": {"suite_options": {"data_files": str(SUITES / "aime24_qwen.jsonl"), "year": 2024}},
    "Conductor-GPQA-v0": {"suite_options": {"data_files": str(SUITES / "gpqa_diamond.jsonl")}},
    "Conductor-MMLU-v0": {"suite_options": {"data_files": str(SUITES / "mmlu.jsonl")}},
    "Conductor-RLPR-v0": {"suite_options": {"data_files": str(SUITES / "rlpr.jsonl")}},
    "Conductor-Mix-v0": {
        "suite_options": {
            "data_files": {
                "math500": str(SUITES / "math500.jsonl"),
                "mmlu": str(SUITES / "mmlu.jsonl"),
                "lcb": str(SUITES / "lcb_v1.jsonl"),
            }
        },
        "sandbox": "local",
        "split": "test",
    },
}

WORKFLOW = 'model_id = [0, 3]\nsubtasks = ["Solve the task.", "Check it and give the final answer."]\naccess_list = [[], "all"]'
BACKENDS = [pytest.param("local", id="local"), pytest.param("docker", id="docker", marks=pytest.mark.docker)]


def one_step(worker: int) -> str:
    return f'model_id = [{worker}]\nsubtasks = ["Solve the problem."]\naccess_list = [[]]'


def sure_pool() -> WorkerPool:
    """Worker 0 always answers right, worker 1 always wrong (simulated, not LLMs)."""
    return WorkerPool(
        [WorkerSpec("always", "simulated", options={"skill": 1.0}), WorkerSpec("never", "simulated", options={"skill": 0.0})],
        name="sure",
    )


def pickled(env: gym.Env) -> gym.Env:
    return pickle.loads(pickle.dumps(env))


COPIERS: list[Callable[[gym.Env], gym.Env]] = [pickled, copy.deepcopy]


def outcome(step: tuple) -> tuple:
    """What must match between an env and its copy stepping from the same point."""
    _, reward, terminated, truncated, info = step
    return reward, terminated, truncated, info["answer"], info["correct"], info["reason"], info["infra_error"], info["problem_id"]


def make_router(env_id: str, **options: Any) -> RoutingEnv:
    """An SB3 routing env; at module level so ``spawn`` children import it (and conductor_env)."""
    return RoutingEnv(gym.make(env_id, **options))


def skip_without_docker(backend: str) -> None:
    if backend == "docker" and (why := docker_available()):
        pytest.skip(why)


# ------------------------------------------------------------------------------ every id


def test_every_shipped_id_is_covered() -> None:
    assert set(OPTIONS) == {env_id_for(name, env_name) for name, (_, env_name) in BUILTIN_SUITES.items()}


@pytest.mark.parametrize("env_id", sorted(OPTIONS))
def test_every_id_pickles_and_deep_copies_before_and_after_steps(env_id: str) -> None:
    env = gym.make(env_id, pool="simulated", **OPTIONS[env_id])
    try:
        fresh = [copier(env) for copier in COPIERS]  # before any reset
        observation, _ = env.reset(seed=0)
        for twin in fresh:
            assert twin.reset(seed=0)[0] == observation

        mid_episode = [copier(env) for copier in COPIERS]  # after reset: the episode is copied
        expected = outcome(env.step(WORKFLOW))
        assert not expected[6], expected  # graded, not an infrastructure failure
        for twin in [*fresh, *mid_episode]:
            assert outcome(twin.step(WORKFLOW)) == expected

        ended = [copier(env) for copier in COPIERS]  # after the episode ended
        env.reset(seed=1)
        expected = outcome(env.step(WORKFLOW))
        for twin in ended:
            twin.reset(seed=1)
            assert outcome(twin.step(WORKFLOW)) == expected

        suite = env.unwrapped.suite
        if hasattr(suite, "sandbox"):
            assert all(twin.unwrapped.suite.sandbox() is not suite.sandbox() for twin in [*fresh, *mid_episode, *ended])
        for twin in [*fresh, *mid_episode, *ended]:
            twin.close()
    finally:
        env.close()


def test_vector_entry_point_env_pickles_with_its_shared_suite() -> None:
    envs = gym.make_vec("Conductor-HumanEval-v0", num_envs=2, vectorization_mode="vector_entry_point", pool="simulated", **OPTIONS["Conductor-HumanEval-v0"])
    try:
        envs.reset(seed=0)
        twin = pickled(envs)
        assert twin.envs[0].suite is twin.envs[1].suite and twin.envs[0].pool is twin.envs[1].pool
        assert twin.envs[0].suite is not envs.envs[0].suite
        _, rewards, terminations, _, infos = envs.step([WORKFLOW] * 2)
        _, twin_rewards, twin_terminations, _, twin_infos = twin.step([WORKFLOW] * 2)
        assert (rewards == twin_rewards).all() and terminations.all() and twin_terminations.all()
        assert list(infos["reason"]) == list(twin_infos["reason"])
        twin.close()
    finally:
        envs.close()


def test_a_waiting_self_call_frame_cannot_be_copied_but_the_finished_round_can() -> None:
    env = EnvSetup.from_kwargs(suite="rg", pool=sure_pool(), self_call=True, suite_options={"size": 3}).make()
    try:
        env.reset(seed=0)
        observation, _, _, _, _ = env.step(one_step(2))  # id 2 is the Conductor itself: a frame opens
        assert observation["depth"] == 1
        for copier in COPIERS:
            with pytest.raises(TypeError, match="self-call frame"):
                copier(env)
        _, reward, terminated, _, info = env.step(one_step(0))
        assert terminated and info["correct"] and reward == 1.0
        for copier in COPIERS:
            twin = copier(env)
            twin.reset(seed=0)
            twin.step(one_step(2))
            assert twin.step(one_step(0))[1] == 1.0
            twin.close()
    finally:
        env.close()


# ---------------------------------------------------------------------- sandboxes in copies


def grade(env: gym.Env, worker: int, problem_id: str) -> dict[str, Any]:
    env.reset(seed=0, options={"problem_id": problem_id})
    return env.step(one_step(worker))[4]


@pytest.mark.parametrize("backend", BACKENDS)
def test_deep_copy_of_a_used_sandbox_grades_on_its_own(backend: str) -> None:
    skip_without_docker(backend)
    env = gym.make("Conductor-HumanEval-v0", pool=sure_pool(), sandbox=backend, suite_options={"data_files": HUMANEVAL})
    twin = None
    try:
        assert grade(env, 0, "Fixture/0")["correct"]
        sandbox = env.unwrapped.suite.sandbox()
        before = {id(worker) for worker in sandbox.pool.workers()}
        assert before

        twin = copy.deepcopy(env)
        for each in (env, twin):
            assert grade(each, 0, "Fixture/1")["correct"]
            right, wrong = grade(each, 0, "Fixture/0"), grade(each, 1, "Fixture/0")
            assert right["correct"] and not wrong["correct"] and not wrong["infra_error"]
        twin_sandbox = twin.unwrapped.suite.sandbox()
        assert twin_sandbox is not sandbox and type(twin_sandbox) is type(sandbox)
        assert not {id(worker) for worker in twin_sandbox.pool.workers()} & before
        if backend == "docker":
            ours = {worker.container.id for worker in sandbox.pool.workers()}
            theirs = {worker.container.id for worker in twin_sandbox.pool.workers()}
            assert ours and theirs and not ours & theirs

        twin.close()  # closing the copy leaves the original's sandbox running
        assert env.unwrapped.suite.sandbox() is sandbox
        assert grade(env, 0, "Fixture/1")["correct"]
        assert {id(worker) for worker in sandbox.pool.workers()} == before

        twin = copy.deepcopy(env)
        env.close()  # and closing the original leaves the copy's
        assert grade(twin, 0, "Fixture/0")["correct"] and not grade(twin, 1, "Fixture/0")["correct"]
    finally:
        env.close()
        if twin is not None:
            twin.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_copies_of_a_suite_given_a_sandbox_instance_start_their_own(backend: str) -> None:
    skip_without_docker(backend)
    box = get_sandbox(backend, pool_size=1)
    env = gym.make("Conductor-LCB-v0", pool=sure_pool(), sandbox=box, suite_options={"data_files": LCB})
    program = "```python\na, b = map(int, input().split())\nprint(a + b)\n```\n"
    twins: list[gym.Env] = []
    try:
        suite = env.unwrapped.suite
        problem = next(p for p in suite.problems() if p.id == "fixture901_a")
        assert suite.verify(problem, program).correct and box.pool.workers()

        twins = [copier(env) for copier in COPIERS]
        for twin in twins:
            twin_suite = twin.unwrapped.suite
            assert twin_suite.verify(problem, program).correct
            assert not twin_suite.verify(problem, "```python\nprint(0)\n```").correct
            own = twin_suite.sandbox()
            assert own is not box and type(own) is type(box) and own.pool.size == 1
            assert own.default_limits == box.default_limits
            twin.close()  # the copy closes the sandbox it started, never the caller's
            assert own.pool.workers() == []
        assert suite.verify(problem, program).correct

        env.close()  # the caller's sandbox outlives the env
        assert box.run_tests("print(int(input()) * 2)", [{"input": "4", "output": "8"}]).passed
    finally:
        env.close()
        for twin in twins:
            twin.close()
        box.close()


# ------------------------------------------------------------------- processes started by spawn


@pytest.mark.parametrize("env_id", ["Conductor-RG-v0", "Conductor-HumanEval-v0"])
def test_async_vector_env_with_spawn_steps_a_real_episode(env_id: str) -> None:
    # "module:id" makes gym.make import conductor_env (registering the ids) in the fresh child.
    make = functools.partial(gym.make, f"conductor_env:{env_id}", pool="simulated", **OPTIONS[env_id])
    envs = gym.vector.AsyncVectorEnv([make, make], context="spawn")
    try:
        observations, infos = envs.reset(seed=7)
        assert len(observations["prompt"]) == 2 and infos["_problem_id"].all()
        _, rewards, terminations, truncations, infos = envs.step([WORKFLOW, WORKFLOW])
        assert terminations.all() and not truncations.any()
    finally:
        envs.close()
    for index in range(2):  # the children ran the same episodes as this process does
        env = gym.make(env_id, pool="simulated", **OPTIONS[env_id])
        try:
            env.reset(seed=7 + index)
            _, reward, _, _, info = env.step(WORKFLOW)
            assert reward == rewards[index] and info["reason"] == infos["reason"][index]
        finally:
            env.close()


def test_sb3_subproc_vec_env_with_spawn_routes_on_a_code_id() -> None:
    from stable_baselines3.common.vec_env import SubprocVecEnv

    make = functools.partial(make_router, "conductor_env:Conductor-HumanEval-v0", pool=sure_pool(), **OPTIONS["Conductor-HumanEval-v0"])
    envs = SubprocVecEnv([make, make], start_method="spawn")
    try:
        observations = envs.reset()
        assert observations.shape == (2, *envs.observation_space.shape)
        # Action a runs template a // 2 on worker a % 2: 0 = "single" on the sure worker, 1 = on the wrong one.
        _, rewards, dones, infos = envs.step(np.array([0, 1]))
        assert dones.all() and [info["routed_worker"] for info in infos] == [0, 1]
        assert list(rewards) == [1.0, 0.5] and infos[0]["correct"] and not infos[1]["correct"]
    finally:
        envs.close()


def test_an_env_pickled_mid_episode_finishes_it_in_a_spawned_process() -> None:
    import multiprocessing

    env = gym.make("Conductor-HumanEval-v0", pool=sure_pool(), **OPTIONS["Conductor-HumanEval-v0"])
    try:
        env.reset(seed=0, options={"problem_id": "Fixture/1"})
        with multiprocessing.get_context("spawn").Pool(1) as processes:
            result = processes.apply(_step_unpickled, (pickle.dumps(env), one_step(0)))
        assert result == outcome(env.step(one_step(0))) and result[4]
    finally:
        env.close()


def _step_unpickled(data: bytes, action: str) -> tuple:
    env = pickle.loads(data)
    try:
        return outcome(env.step(action))
    finally:
        env.close()


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_a_forked_child_starts_its_own_workers_and_leaves_the_parents_alone(backend):
    """AsyncVectorEnv's default start method on Linux forks: the child must not use or close
    the parent's sandbox workers (for Docker, remove its containers)."""
    from conductor_env.sandboxes import get_sandbox

    box = get_sandbox(backend, pool_size=1)
    add = "print(sum(map(int, input().split())))"
    test = [{"input": "2 3", "output": "5"}]
    assert box.run_tests(add, test).passed
    parent_worker = box.pool.workers()[0]
    pid = os.fork()
    if pid == 0:  # the child: grade on workers of its own, then close them
        code = 1
        try:
            code = 0 if box.run_tests(add, test).passed and parent_worker not in box.pool.workers() else 3
            box.close()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert box.pool.workers() == [parent_worker]
    assert box.run_tests(add, test).passed  # the parent's worker still serves
    box.close()
