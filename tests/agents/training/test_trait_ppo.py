"""The numeric learner on the structured view: the wrapper's spaces and features, plan actions the
env refuses or runs, and a short PPO run that learns and saves a policy that plays the same plans."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.env_checker import check_env

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.specs import make_policy
from conductor_env.agents.training.trait_ppo import TraitPlanEnv, TraitPPOConfig, heldout_value, make_training_env, train_trait_ppo
from conductor_env.agents.trait_plans import plan_table, plan_workflow
from conductor_env.agents.traits_ppo import SLOT_FEATURES, slot_features
from conductor_env.traits import ABSENT

ORCHESTRATE = {"reward": "cost_aware", "price_weight": 1.0, "max_steps": 3, "show_names": True, "examples": "none"}


def _env(pool: str = "generated", **options: object) -> TraitPlanEnv:
    return TraitPlanEnv(gym.make("Conductor-RG-v0", pool=pool, **{**ORCHESTRATE, "worker_traits": True, **options}))


def test_sb3_check_env_passes_without_warnings() -> None:
    env = _env()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, warn=True)
    # One step; two, the second reading the first; three, the last reading all (the second reads the first or not).
    assert env.slots == 4 and env.action_space.n == len(plan_table(4, 3)) == 4 + 4**2 + 4**3 * 2
    env.close()


def test_the_wrapper_needs_the_structured_view_and_one_round() -> None:
    with pytest.raises(ValueError, match="worker_traits=True"):
        TraitPlanEnv(gym.make("Conductor-RG-v0", pool="generated", **ORCHESTRATE))
    with pytest.raises(ValueError, match="max_rounds=1"):
        _env(max_rounds=2)


def test_the_wrapper_trains_only_on_rows_the_suites_opt_ins_allow() -> None:
    gameable = {"datasets": ["syllogism"]}  # pays a constant answer on most problems
    with pytest.raises(ValueError, match="allow_gameable"):
        _env(suite_options=gameable)
    with pytest.warns(UserWarning, match="syllogism"):
        _env(suite_options={**gameable, "allow_gameable": True}).close()


def test_features_read_the_questions_column_and_leave_empty_slots_zero() -> None:
    # Columns: math, language, reasoning. Slot 0 strong at math, weak elsewhere, costly; slot 1
    # fair at language and judges reasoning, cheap; slots 2-3 empty.
    traits = np.full((4, 7), ABSENT, dtype=np.int8)
    traits[0] = [2, 0, 0, 0, 0, 0, 1]
    traits[1] = [0, 1, 0, 0, 0, 1, 0]
    math, reasoning = slot_features(traits, 0).reshape(4, SLOT_FEATURES), slot_features(traits, 2).reshape(4, SLOT_FEATURES)
    assert list(math[0]) == [0, 0, 1, 0, 0, 1] and list(math[1]) == [1, 0, 0, 0, 1, 0]
    assert list(reasoning[0]) == [1, 0, 0, 0, 0, 1] and list(reasoning[1]) == [1, 0, 0, 1, 1, 0]
    assert not math[2:].any() and not reasoning[2:].any()
    # A domain no column covers: only the price tiers remain.
    assert list(slot_features(traits, ABSENT).reshape(4, SLOT_FEATURES)[0]) == [0, 0, 0, 0, 0, 1]


def test_a_plan_on_an_empty_slot_is_refused_by_the_env_and_a_shown_one_runs() -> None:
    env = _env()
    plans = list(env.plans)
    seed = next(s for s in range(50) if env.env.reset(seed=s)[0]["num_workers"] == 3)  # a draw of three: slot 3 is empty
    env.reset(seed=seed)
    _, reward, terminated, _, info = env.step(plans.index(((3, False),)))
    assert terminated and reward == 0.0 and info["reason"]
    env.reset(seed=seed)
    assert ((0, False), (1, False)) not in plans  # a call nothing reads is never offered
    _, reward, terminated, _, info = env.step(plans.index(((0, False), (0, False), (1, True))))
    assert terminated and reward > 0 and [step["worker"] for step in info["trace"]] == [0, 0, 1]
    env.close()


@pytest.mark.slow
def test_a_short_ppo_run_learns_and_its_saved_policy_plays_the_scored_plans(tmp_path: Path) -> None:
    config = TraitPPOConfig(timesteps=6144, n_envs=8, n_steps=128, learning_rate=1e-3, eval_every=6144, heldout=("generated-heldout#0", "generated-heldout#3"))
    result = train_trait_ppo(config, tmp_path, log=lambda _: None)
    first, last = result["checkpoints"][0], result["checkpoints"][-1]
    assert last["timesteps"] >= config.timesteps and last["mean"] > first["mean"] + 0.1
    saved = json.loads((tmp_path / "trait_ppo.json").read_text(encoding="utf-8"))
    assert saved["checkpoints"] == result["checkpoints"] and saved["config"]["timesteps"] == config.timesteps

    # The saved policy, built from its spec and played through the env, writes the plans the scores were computed for.
    policy = make_policy(f"traits-ppo:{tmp_path}")
    env = make_training_env(config, rank=0)
    for seed in range(12):
        observation, _ = env.env.reset(seed=seed)
        features = slot_features(observation["worker_traits"], int(observation["question_domain"]))
        action, _ = policy.model.predict(features, deterministic=True)
        assert policy.act([observation]) == [plan_workflow(env.plans[int(action)]).render()]
    values = heldout_value(lambda f: int(policy.model.predict(f, deterministic=True)[0]), env.plans, env.slots, config.heldout)
    assert round(sum(values.values()) / len(values), 4) == last["mean"]
    env.close()


def test_a_traits_ppo_spec_without_a_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds no model.zip"):
        make_policy(f"traits-ppo:{tmp_path}")
