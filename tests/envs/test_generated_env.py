"""The env on a generated pool: a new pool per episode from its seed, descriptions in the prompt, the
structured view, and no hidden number anywhere in an observation."""

from __future__ import annotations

import copy
import pickle
import re
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.options import EnvOptionError
from conductor_env.traits import ABSENT, trait_row
from conductor_env.workers.pool import load_pool

ORCHESTRATE = {"reward": "cost_aware", "price_weight": 1.0, "max_steps": 3, "show_names": True}
ONE_CALL = "model_id = [0]\nsubtasks = ['Solve it.']\naccess_list = [[]]"


def _env(pool: str = "generated", **options: object) -> gym.Env:
    return gym.make("Conductor-RG-v0", pool=pool, **{**ORCHESTRATE, **options})


def _hidden_numbers(pool: object) -> set[str]:
    numbers = set()
    for spec in pool.specs:  # type: ignore[attr-defined]
        numbers |= {str(v) for v in spec.options["skill"].values()} | {str(v) for v in spec.options["judge"].values()}
        numbers.add(str(spec.options["price_per_call"]))
    return numbers


def test_each_episode_plays_the_pool_its_seed_draws() -> None:
    env, family = _env(), load_pool("generated")
    seen = set()
    for seed in range(6):
        observation, info = env.reset(seed=seed)
        pool = family.for_episode(env.unwrapped._episode.seed)
        assert set(info["worker_map"].values()) == {s.name for s in pool.specs}
        for spec in pool.specs:
            assert f"{spec.name} ({spec.description})" in observation["workers"]
        shown = [pool.specs[i] for i in env.unwrapped._episode.shown]
        assert observation["worker_descriptions"][: len(shown)] == tuple(spec.description for spec in shown)
        assert set(observation["worker_descriptions"][len(shown) :]) <= {""}
        seen.add(tuple(sorted(info["worker_map"].values())))
        again, _ = env.reset(seed=seed)
        assert again["workers"] == observation["workers"]
    assert len(seen) == 6
    env.close()


def test_no_hidden_number_reaches_an_observation() -> None:
    env, family = _env(worker_traits=True), load_pool("generated")
    for seed in range(20):
        observation, _ = env.reset(seed=seed)
        text = " ".join(str(v) for k, v in observation.items() if isinstance(v, str))
        shown = family.for_episode(env.unwrapped._episode.seed)
        assert not {n for n in _hidden_numbers(shown) if re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", text)}
        assert observation["worker_traits"].max() <= 2 and observation["worker_traits"].dtype == np.int8
    env.close()


def test_the_step_runs_the_episodes_workers_and_pays_their_price() -> None:
    env, family = _env(), load_pool("generated")
    for seed in range(10):
        _, info = env.reset(seed=seed)
        pool = family.for_episode(env.unwrapped._episode.seed)
        _, reward, terminated, _, info = env.step(ONE_CALL)
        first = pool.specs[env.unwrapped._episode.shown[0]]
        assert terminated and info["trace"][0]["worker_name"] == first.name
        assert info["cost_usd"] == pytest.approx(first.options["price_per_call"])
        assert reward == pytest.approx((1.0 if info["correct"] else 0.5) - first.options["price_per_call"])
    env.close()


def test_the_structured_view_lists_the_shown_workers_traits_then_absent_rows() -> None:
    env, family = _env(worker_traits=True, subpool_size=(1, 2)), load_pool("generated")
    for seed in range(10):
        observation, _ = env.reset(seed=seed)
        assert env.observation_space.contains(observation)
        episode = env.unwrapped._episode
        pool = family.for_episode(episode.seed)
        rows = observation["worker_traits"]
        for shown_id, index in enumerate(episode.shown):
            assert list(rows[shown_id]) == trait_row(pool.specs[index].traits, family.family.domains)
        assert (rows[len(episode.shown) :] == ABSENT).all()
    env.close()


def test_the_structured_view_names_the_questions_domain_among_the_trait_columns() -> None:
    env, family = _env(worker_traits=True), load_pool("generated")
    seen = set()
    for seed in range(30):
        observation, info = env.reset(seed=seed)
        assert family.family.domains[observation["question_domain"]] == info["domain"]
        seen.add(info["domain"])
    assert seen == set(family.family.domains)
    assert "question_domain" not in _env().reset(seed=0)[0]
    env.close()


def test_observations_stay_inside_the_space_over_many_draws() -> None:
    for pool in ("generated", "generated-heldout"):
        env = _env(pool, worker_traits=True)
        for seed in range(60):
            observation, _ = env.reset(seed=seed)
            assert env.observation_space.contains(observation), seed
        env.close()


def test_gymnasium_checker_passes_without_warnings() -> None:
    env = _env(worker_traits=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_copies_continue_the_episode_on_its_drawn_pool() -> None:
    env = _env()
    env.reset(seed=3)
    names = env.unwrapped.worker_map()
    for clone in (copy.deepcopy(env.unwrapped), pickle.loads(pickle.dumps(env.unwrapped))):
        assert clone.worker_map() == names
        _, reward, terminated, _, info = clone.step(ONE_CALL)
        assert terminated and info["trace"][0]["worker_name"] == names[0]
    env.close()


def test_worker_traits_needs_a_pool_that_declares_them() -> None:
    with pytest.raises(EnvOptionError, match="worker_traits needs a pool"):
        _env("orchestra-judge", worker_traits=True)
    env = _env("generated-heldout#2", worker_traits=True)
    observation, _ = env.reset(seed=0)
    assert (observation["worker_traits"][: observation["num_workers"]] != ABSENT).any()
    env.close()
