"""SkyRL-gym (the real package from PyPI) driving the Conductor env with the simulated pool."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from conductor_env.integrations.skyrl import ENV_CLASS, ConductorSkyRLEnv, skyrl_rows  # noqa: E402
from integrations.framework_pools import HOSTILE, KEEP, REVISE, SOLVE, CallCounter, write_pool  # noqa: E402

CONFIG = {"pool": "simulated", "max_rounds": 2}


@pytest.fixture(scope="module")
def rows():
    return skyrl_rows(limit=6, **CONFIG)


def make(row, config=CONFIG):
    return skyrl_gym.make(ENV_CLASS, env_config=config, extras=row)


def test_registered_and_built_through_skyrl_gym(rows):
    env = make(rows[0])
    assert isinstance(env, ConductorSkyRLEnv) and isinstance(env, skyrl_gym.Env)
    assert rows[0]["env_class"] == ENV_CLASS and set(rows[0]["extra_info"]) == {"problem_id", "episode_seed", "split", "domain"}


def test_one_round_matches_the_env_played_directly(rows):
    row = rows[1]
    env = make(row, {"pool": "simulated", "max_rounds": 1})
    prompt, meta = env.init(row["prompt"])
    assert meta["problem_id"] == row["extra_info"]["problem_id"]
    out = env.step(SOLVE)
    direct = gym.make("Conductor-RG-v0", pool="simulated", split="train")
    direct.reset(options={"row": row["extra_info"]})
    _, reward, terminated, _, info = direct.step(SOLVE)
    assert out["done"] and terminated and out["observations"] == []
    assert out["reward"] == reward and out["metadata"]["reason"] == info["reason"]
    direct.close()
    env.close()


def test_two_rounds_send_only_the_new_information(rows):
    env = make(rows[2])
    prompt, _ = env.init(rows[2]["prompt"])
    assert prompt == rows[2]["prompt"]
    first = env.step(SOLVE)
    assert not first["done"] and first["reward"] == 0.0  # the episode's reward comes at its end
    (update,) = first["observations"]
    assert update["role"] == "user" and "Round 1 answer" in update["content"]
    assert prompt[-1]["content"] not in update["content"]  # the prompt is not resent
    second = env.step(REVISE)
    assert second["done"] and second["observations"] == []
    assert second["reward"] == second["metadata"]["round_reward"]
    assert env.get_metrics() == {"rounds": 2, "episode_reward": second["reward"]}


def test_rewards_round_gives_each_rounds_own(rows):
    env = make(rows[2], {**CONFIG, "rewards": "round"})
    env.init(None)
    first = env.step(SOLVE)
    assert first["reward"] == first["metadata"]["round_reward"]
    assert env.step(KEEP)["done"]


def test_concurrent_trajectories_on_threads_overlap(rows, tmp_path, monkeypatch):
    """SkyRL-train steps each trajectory's env on its thread pool (SkyRL-gym is synchronous)."""
    counter = CallCounter().install(monkeypatch)
    config = {"pool": write_pool(tmp_path, 0.3), "max_rounds": 1}

    def trajectory(i):
        env = make(rows[i % len(rows)], config)
        env.init(None)
        out = env.step(SOLVE)
        env.close()
        return out

    with ThreadPoolExecutor(16) as threads:
        outs = list(threads.map(trajectory, range(16)))
    assert all(out["done"] and out["metadata"]["parse_error"] == "" for out in outs)
    assert counter.max_in_flight >= 4


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_actions_score_zero_with_a_reason(rows, name):
    env = make(rows[3])
    env.init(None)
    out = env.step(HOSTILE[name])
    assert out["reward"] == 0.0 and out["done"]
    assert out["metadata"]["reason"].startswith("unparsed workflow") and len(out["metadata"]["reason"]) <= 300


@pytest.mark.parametrize("action", [None, b"model_id = [0]", 42, ["a"]])
def test_non_text_actions_and_steps_after_the_end_score_zero(rows, action):
    env = make(rows[3])
    env.init(None)
    out = env.step(action)
    assert out["reward"] == 0.0 and out["done"] and "must be text" in out["metadata"]["reason"]
    again = env.step(SOLVE)
    assert again["reward"] == 0.0 and "episode is over" in again["metadata"]["reason"]


def test_extras_without_a_row_draw_an_episode_from_the_seed():
    env = make({"seed": 7})
    messages, meta = env.init(None)
    twin = make({"seed": 7})
    assert twin.init(None) == (messages, meta) and meta["row"] is None
