"""verl's dataset rows and reward function, driven directly (verl needs GPUs, so it is not installed).

The rows go through a real parquet file (``datasets``, as verl's RL dataset reads them) before scoring.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from datasets import Dataset

from conductor_env.integrations.verl import compute_score, compute_score_async, compute_score_batch, verl_rows
from conductor_env.verdicts import PUBLIC_REASONS
from integrations.framework_pools import HOSTILE, SOLVE, CallCounter, write_pool


@pytest.fixture(scope="module")
def parquet_rows(tmp_path_factory):
    path = tmp_path_factory.mktemp("verl") / "train.parquet"
    Dataset.from_list(verl_rows(pool="simulated", limit=4)).to_parquet(str(path))
    return Dataset.from_parquet(str(path)).to_list()


def score(row, response):
    return compute_score(row["data_source"], response, row["reward_model"]["ground_truth"], row["extra_info"])


def test_rows_hold_the_episode_not_the_answer(parquet_rows):
    row = parquet_rows[0]
    assert row["data_source"] == "Conductor-RG-v0" and row["prompt"][-1]["role"] == "user"
    assert row["reward_model"]["ground_truth"] == row["extra_info"]["problem_id"]
    assert json.loads(row["extra_info"]["env_kwargs"]) == {"pool": "simulated"}


def test_score_is_the_env_reward_of_the_rows_episode(parquet_rows):
    for row in parquet_rows:
        result = score(row, SOLVE)
        env = gym.make("Conductor-RG-v0", pool="simulated", split="train")
        env.reset(options={"row": {"problem_id": row["extra_info"]["problem_id"], "episode_seed": row["extra_info"]["episode_seed"]}})
        _, reward, _, _, info = env.step(SOLVE)
        env.close()
        assert result == {"score": reward, "correct": bool(info["correct"]), "reason": info["reason"]}


def test_two_round_rows_keep_the_first_answer():
    (row,) = verl_rows(pool="simulated", max_rounds=2, limit=1)
    result = score(row, SOLVE)
    env = gym.make("Conductor-RG-v0", pool="simulated", split="train", max_rounds=2)
    env.reset(options={"row": {"problem_id": row["extra_info"]["problem_id"], "episode_seed": row["extra_info"]["episode_seed"]}})
    _, _, done, _, first = env.step(SOLVE)
    _, reward, done, _, last = env.step("model_id = []\nsubtasks = []\naccess_list = []")
    env.close()
    # The first round's step shows only its public verdict; the grader's reason comes at the end.
    assert first["reason"] in PUBLIC_REASONS and last["round_reasons"][0] not in PUBLIC_REASONS
    assert done and result["score"] == reward and result["reason"] == last["round_reasons"][0]


def test_batch_replays_concurrently(tmp_path, monkeypatch):
    rows = verl_rows(pool=write_pool(tmp_path, 0.3), limit=16)
    counter = CallCounter().install(monkeypatch)
    results = compute_score_batch([r["data_source"] for r in rows], [SOLVE] * 16, [r["reward_model"]["ground_truth"] for r in rows], [r["extra_info"] for r in rows])
    assert len(results) == 16 and all(r["reason"] and "unparsed" not in r["reason"] for r in results)
    assert counter.max_in_flight >= 8


async def test_async_variant_matches(parquet_rows):
    row = parquet_rows[1]
    assert await compute_score_async(row["data_source"], SOLVE, row["reward_model"]["ground_truth"], row["extra_info"]) == score(row, SOLVE)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_responses_score_zero_with_a_reason(parquet_rows, name):
    result = score(parquet_rows[2], HOSTILE[name])
    assert result["score"] == 0.0 and not result["correct"] and result["reason"].startswith("unparsed workflow")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"response": None}, "must be text"),
        ({"extra_info": None}, "no problem_id and episode_seed"),
        ({"extra_info": {"problem_id": "no/such/problem", "episode_seed": 0}}, "cannot start"),
        ({"extra_info": {"problem_id": "basic_arithmetic/test/0", "episode_seed": "zero"}}, "cannot start"),
        ({"extra_info": {"problem_id": "basic_arithmetic/test/0", "episode_seed": 0, "env_kwargs": "{not json"}}, "cannot start"),
        ({"extra_info": {"problem_id": "basic_arithmetic/test/0", "episode_seed": 0, "env_kwargs": '{"no_such_option": 1}'}}, "cannot start"),
        ({"data_source": "Conductor-Nope-v0"}, "cannot start"),
    ],
)
def test_broken_rows_score_zero_with_a_reason(parquet_rows, change, reason):
    row = parquet_rows[0]
    result = compute_score(change.get("data_source", row["data_source"]), change.get("response", SOLVE), row["reward_model"]["ground_truth"], change.get("extra_info", row["extra_info"]))
    assert result["score"] == 0.0 and reason in result["reason"] and len(result["reason"]) <= 300
