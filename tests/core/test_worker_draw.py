"""The reset option ``worker_draw``: independent worker samples for the same problem and sub-pool."""

from __future__ import annotations

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.envs import EnvSetup
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

SMALL_RG = {"datasets": ["basic_arithmetic"], "size": 4}
ACTION = 'model_id = [0]\nsubtasks = ["Solve it."]\naccess_list = [[]]'


def coin_pool() -> WorkerPool:
    """Three coin-flip workers, so a sub-pool of two is a random draw and answers vary by sample."""
    return WorkerPool([WorkerSpec(name, "simulated", options={"skill": 0.5}) for name in ("a", "b", "c")], name="coins")


@pytest.fixture()
def env():
    made = EnvSetup.from_id("Conductor-RG-v0", pool=coin_pool(), split="train", suite_options=SMALL_RG, options={"subpool_size": 2}).make()
    yield made
    made.close()


def outcome(env, seed: int, **options) -> tuple[str, dict, bool]:
    observation, info = env.reset(seed=seed, options={"problem_index": 0, **options})
    *_, step_info = env.step(ACTION)
    return observation["prompt"], dict(info["worker_map"]), bool(step_info["correct"])


def test_draw_zero_is_the_seeds_own_sample(env):
    for seed in range(5):
        assert outcome(env, seed) == outcome(env, seed, worker_draw=0)


def test_draws_keep_the_problem_and_sub_pool_but_resample_the_workers(env):
    for seed in range(3):
        prompt, shown, _ = outcome(env, seed)
        results = [outcome(env, seed, worker_draw=k) for k in range(1, 40)]
        assert {(p, tuple(s.items())) for p, s, _ in results} == {(prompt, tuple(shown.items()))}
        correct = [c for _, _, c in results]
        assert 5 < sum(correct) < 35  # a fair coin per draw, not one fixed outcome
        assert correct == [outcome(env, seed, worker_draw=k)[2] for k in range(1, 40)]  # each draw is reproducible


@pytest.mark.parametrize("bad, error", [(-1, ValueError), ("1", TypeError), (1.5, TypeError), (None, TypeError)])
def test_a_bad_draw_is_refused_with_a_clear_error(env, bad, error):
    with pytest.raises(error, match="worker_draw"):
        env.reset(seed=0, options={"worker_draw": bad})
