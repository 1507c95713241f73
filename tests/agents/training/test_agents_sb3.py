"""The SB3 routing wrapper: SB3's own check_env, the action/observation mapping, a few PPO steps."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.training.sb3 import ROUTING_TEMPLATES, RoutingEnv, hashed_bag_of_words
from conductor_env.envs import EnvSetup
from conductor_env.workflow import parse_workflow


@pytest.fixture()
def routing():
    env = RoutingEnv(gym.make("Conductor-RG-v0", pool="simulated", suite_options={"size": 5}))
    yield env
    env.close()


def test_sb3_check_env_passes_without_warnings(routing):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # SB3 reports its findings as warnings
        check_env(routing, warn=True)


def test_spaces_and_action_mapping(routing):
    assert routing.action_space == gym.spaces.Discrete(len(ROUTING_TEMPLATES) * 4)
    assert routing.domains == ("language", "math", "reasoning")
    assert routing.observation_space.shape == (256 + 3 + 1,)
    assert routing.describe_action(0) == ("single", 0)
    assert routing.describe_action(5) == ("reflect-2", 1)
    assert routing.describe_action(11) == ("plan-solve-verify", 3)
    with pytest.raises(ValueError, match="outside"):
        routing.describe_action(12)
    for action in range(routing.action_space.n):
        workflow = parse_workflow(routing.workflow_text(action), num_workers=4)
        template, worker = routing.describe_action(action)
        assert {s.worker for s in workflow.steps} == {worker}
        assert len(workflow.steps) == {"single": 1, "reflect-2": 2, "plan-solve-verify": 3}[template]


def test_observation_encodes_question_and_domain(routing):
    first, info = routing.reset(seed=3)
    again, _ = routing.reset(seed=3)
    assert first.dtype == np.float32 and routing.observation_space.contains(first)
    np.testing.assert_array_equal(first, again)
    assert np.isclose(np.linalg.norm(first[:256]), 1.0)
    domain_slot = routing.domains.index(info["domain"])
    assert first[256 + domain_slot] == 1.0 and first[256:].sum() == 1.0
    observation, reward, terminated, truncated, step_info = routing.step(4)
    assert terminated and not truncated and reward in (0.5, 1.0)
    assert step_info["template"] == "reflect-2" and step_info["routed_worker"] == 0
    assert step_info["parse_error"] == "" and len(step_info["trace"]) == 2
    np.testing.assert_array_equal(observation, first)


def test_hashing_is_stable_and_case_insensitive():
    a = hashed_bag_of_words("Spell THIS word backward", 64)
    b = hashed_bag_of_words("spell this word backward", 64)
    np.testing.assert_array_equal(a, b)
    assert not np.any(hashed_bag_of_words("", 64))


def test_ppo_runs_a_few_steps(routing):
    model = PPO("MlpPolicy", routing, n_steps=32, batch_size=16, n_epochs=1, seed=0, device="cpu", verbose=0)
    model.learn(total_timesteps=64)
    observation, _ = routing.reset(seed=0)
    action, _ = model.predict(observation, deterministic=True)
    assert routing.action_space.contains(int(action))


def test_unsupported_envs_are_refused():
    with pytest.raises(ValueError, match="max_rounds=1"):
        RoutingEnv(EnvSetup.from_kwargs(suite="rg", pool="simulated", max_rounds=2, suite_options={"size": 5}).make())
    with pytest.raises(ValueError, match="fixed number of shown workers"):
        RoutingEnv(EnvSetup.from_kwargs(suite="rg", pool="simulated", subpool_size=(2, 3), suite_options={"size": 5}).make())
    with pytest.raises(ValueError, match="unknown routing templates"):
        RoutingEnv(EnvSetup.from_kwargs(suite="rg", pool="simulated", suite_options={"size": 5}).make(), templates=("nope",))
    fixed = RoutingEnv(EnvSetup.from_kwargs(suite="rg", pool="simulated", subpool_size=2, suite_options={"size": 5}).make())
    assert fixed.action_space.n == 3 * 2
