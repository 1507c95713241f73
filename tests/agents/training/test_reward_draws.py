"""``ConductorReward(draws=k)``: each completion is played with k independent worker samples and
rewarded with their mean; outages still give ``None``, never a fake score."""

from __future__ import annotations

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.training.data import build_dataset
from conductor_env.agents.training.recipe import GRPORecipe
from conductor_env.agents.training.reward import ConductorReward, EnvFactory
from conductor_env.calls import RetryPolicy
from conductor_env.envs import EnvSetup
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

SMALL_RG = {"datasets": ["basic_arithmetic"], "size": 3}


def single(worker: int) -> str:
    return f'model_id = [{worker}]\nsubtasks = ["Solve it."]\naccess_list = [[]]'


@pytest.fixture()
def factory():
    pool = WorkerPool(
        [
            WorkerSpec("coin", "simulated", options={"skill": 0.5}),
            WorkerSpec("sure", "simulated", options={"skill": 1.0}),
            WorkerSpec("down", "simulated", options={"skill": 1.0, "fail_rate": 1.0}),
        ],
        name="draws",
    )
    made = EnvFactory(EnvSetup.from_id("Conductor-RG-v0", pool=pool, split="train", suite_options=SMALL_RG, retry=RetryPolicy(max_attempts=1)))
    yield made
    made.close()


def by_hand(factory: EnvFactory, action: str, row: dict, draws: int) -> list[float]:
    env = factory()
    rewards = []
    for k in range(draws):
        env.reset(seed=row["episode_seed"], options={"problem_id": row["problem_id"], "worker_draw": k})
        rewards.append(env.step(action)[1])
    return rewards


def test_the_reward_is_the_mean_over_independent_draws(factory):
    row = build_dataset(factory, limit=1)[0]
    reward = ConductorReward(factory, draws=16)
    actions = [single(0), single(1), "no lists here"]
    got = reward(completions=actions, problem_id=[row["problem_id"]] * 3, episode_seed=[row["episode_seed"]] * 3)
    coin = by_hand(factory, single(0), row, 16)
    assert got[0] == pytest.approx(sum(coin) / 16)
    assert 0.5 < got[0] < 1.0  # the coin worker is right in some draws and wrong in others
    assert got[1:] == [1.0, 0.0]
    records = reward.records
    assert [r.draws for r in records] == [16, 16, 16]
    assert records[0].accuracy == pytest.approx(sum(r == 1.0 for r in coin) / 16)
    assert records[1].accuracy == 1.0 and records[2].accuracy == 0.0 and records[2].parse_error == "no_lists"
    assert records[0].worker_map == {0: "coin", 1: "sure", 2: "down"}  # which worker each id was, for the strategy tables


def test_one_draw_is_the_old_single_episode_reward(factory):
    row = build_dataset(factory, limit=1)[0]
    one = ConductorReward(factory)(completions=[single(0)], problem_id=[row["problem_id"]], episode_seed=[row["episode_seed"]])
    assert one == by_hand(factory, single(0), row, 1)


def test_an_outage_in_every_draw_is_unscored_not_zero(factory):
    row = build_dataset(factory, limit=1)[0]
    reward = ConductorReward(factory, draws=4)
    assert reward(completions=[single(2)], problem_id=[row["problem_id"]], episode_seed=[row["episode_seed"]]) == [None]
    assert reward.records[0].infra_error and reward.records[0].reward is None


@pytest.mark.parametrize("draws", [0, -3])
def test_draws_below_one_are_refused(factory, draws):
    with pytest.raises(ValueError, match="draws must be >= 1"):
        ConductorReward(factory, draws=draws)


def test_the_recipe_and_the_cli_carry_the_draws():
    from conductor_env.cli import build_parser
    from conductor_env.cli.train import recipe_from_args

    parser = build_parser()
    assert GRPORecipe().grpo.reward_draws == 1  # the paper's: one episode per completion
    assert recipe_from_args(parser.parse_args(["train", "grpo", "--reward-draws", "8"]), cuda=True)[1].grpo.reward_draws == 8
    assert recipe_from_args(parser.parse_args(["train", "grpo", "--recipe", "orchestrate"]))[1].grpo.reward_draws > 1
