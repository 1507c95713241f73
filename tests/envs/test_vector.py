"""Vector envs: the concurrent vector entry point and Gymnasium's SyncVectorEnv."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import conductor_env  # noqa: F401
from conductor_env.envs.vector import ConductorVectorEnv

WORKFLOW = 'model_id = [1, 3]\nsubtasks = ["Solve", "Check"]\naccess_list = [[], "all"]'


def test_make_vec_vector_entry_point_steps_and_autoresets() -> None:
    envs = gym.make_vec("Conductor-RG-v0", num_envs=4, vectorization_mode="vector_entry_point", pool="simulated")
    assert isinstance(envs, ConductorVectorEnv)
    observations, infos = envs.reset(seed=0)
    assert envs.observation_space.contains(observations) and len(observations["prompt"]) == 4
    _, rewards, terminations, truncations, infos = envs.step([WORKFLOW, WORKFLOW, "bad", WORKFLOW])
    assert terminations.all() and not truncations.any()
    assert rewards[2] == 0.0 and infos["parse_error"][2] == "no_lists"
    assert set(np.unique(rewards[[0, 1, 3]])) <= {0.5, 1.0}
    observations, rewards, terminations, _, infos = envs.step([WORKFLOW] * 4)  # autoreset step
    assert (rewards == 0).all() and not terminations.any() and "problem_id" in infos
    envs.close()


def test_vector_results_match_single_envs() -> None:
    envs = gym.make_vec("Conductor-RG-v0", num_envs=3, vectorization_mode="vector_entry_point", pool="simulated")
    envs.reset(seed=10)
    _, rewards, _, _, infos = envs.step([WORKFLOW] * 3)
    for index in range(3):
        env = gym.make("Conductor-RG-v0", pool="simulated")
        env.reset(seed=10 + index)
        _, reward, _, _, info = env.step(WORKFLOW)
        assert reward == rewards[index] and info["answer"] == infos["answer"][index]
    envs.close()


def test_sync_vector_env_works() -> None:
    envs = gym.make_vec("Conductor-RG-v0", num_envs=2, vectorization_mode="sync", pool="simulated")
    envs.reset(seed=0)
    _, rewards, terminations, _, _ = envs.step([WORKFLOW, "no lists"])
    assert terminations.all() and rewards[1] == 0.0
    envs.close()
