"""GEM (the real gem-llm from PyPI) driving the Conductor env with the simulated pool.

gem-llm pins reasoning-gym 0.1.23, so these tests run in .venv-gem (``make test`` builds it;
test_gem_venv.py runs this file there) and skip where GEM is not installed.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

gem = pytest.importorskip("gem")

from gem.utils.constants import TERMINAL_STATE  # noqa: E402
from gem.wrappers.wrapper_factory import WRAPPER_FACTORY  # noqa: E402

from conductor_env.integrations.gem import ConductorGemEnv, register_envs  # noqa: E402
from conductor_env.tasks import SuiteError  # noqa: E402
from integrations.framework_pools import HOSTILE, KEEP, REVISE, SOLVE, CallCounter, write_pool  # noqa: E402
from integrations.training_cases import opt_in_cases, training_warnings  # noqa: E402


def direct(seed, actions, **kwargs):
    env = gym.make("Conductor-RG-v0", pool="simulated", split="train", **kwargs)
    env.reset(seed=seed)
    results = [env.step(action) for action in actions]
    env.close()
    return results


def test_registered_for_every_conductor_id():
    ids = register_envs()
    assert "conductor:RG-v0" in ids and all(i.startswith("conductor:") for i in ids)
    assert isinstance(gem.make("conductor:RG-v0", pool="simulated"), ConductorGemEnv)


def test_one_round_matches_the_env_played_directly():
    env = gem.make("conductor:RG-v0", pool="simulated")
    observation, info = env.reset(seed=11)
    assert isinstance(observation, str) and "Now write the workflow." in observation and info["messages"][-1]["role"] == "user"
    observation, reward, terminated, truncated, info = env.step(SOLVE)
    ((_, expected, *_, expected_info),) = direct(11, [SOLVE])
    assert observation == TERMINAL_STATE and terminated and not truncated
    assert reward == expected and info["reason"] == expected_info["reason"]


def test_two_rounds_observe_only_the_new_information():
    env = gem.make("conductor:RG-v0", pool="simulated", max_rounds=2)
    prompt, _ = env.reset(seed=5)
    update, reward, terminated, _, _ = env.step(SOLVE)
    assert not terminated and reward == 0.0 and "Round 1 answer" in update and "Now write the workflow." not in update
    observation, reward, terminated, _, info = env.step(REVISE)
    expected = direct(5, [SOLVE, REVISE], max_rounds=2)[-1]
    assert observation == TERMINAL_STATE and terminated and reward == expected[1] == info["round_reward"]


def test_gem_concat_wrapper_keeps_the_history():
    env = WRAPPER_FACTORY["concat"](gem.make("conductor:RG-v0", pool="simulated", max_rounds=2))
    prompt, _ = env.reset(seed=5)
    history, *_ = env.step(SOLVE)
    assert history.startswith(prompt.rstrip("\n")) and "Round 1 answer" in history
    assert env.step(KEEP)[2]


def test_async_vector_env_steps_concurrently(tmp_path, monkeypatch):
    counter = CallCounter().install(monkeypatch)
    vec = gem.make_vec(["conductor:RG-v0"] * 16, async_mode=True, pool=write_pool(tmp_path, 0.3))
    observations, infos = vec.reset(seed=0)
    assert len({info["problem_id"] for info in infos}) > 1
    _, rewards, terminated, _, infos = vec.step([SOLVE] * 16)
    # GEM resets a finished env in the same step (its SAME_STEP autoreset): the infos are the next episodes'.
    assert all(terminated) and all("problem_id" in info for info in infos) and set(rewards) <= {0.0, 0.5, 1.0}
    assert counter.max_in_flight >= 4


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_actions_score_zero_with_a_reason(name):
    env = gem.make("conductor:RG-v0", pool="simulated")
    env.reset(seed=2)
    observation, reward, terminated, _, info = env.step(HOSTILE[name])
    assert reward == 0.0 and terminated and observation == TERMINAL_STATE and info["reason"].startswith("unparsed workflow")


def test_non_text_actions_and_steps_after_the_end_score_zero():
    env = gem.make("conductor:RG-v0", pool="simulated")
    env.reset(seed=2)
    env.reset(seed=2)
    _, reward, terminated, _, info = env.step(None)
    assert reward == 0.0 and terminated and "must be text" in info["reason"]
    _, reward, _, _, info = env.step(SOLVE)
    assert reward == 0.0 and "episode is over" in info["reason"]


def test_random_action_is_a_workflow_and_unseeded_resets_follow_the_env_seed():
    env, twin = ConductorGemEnv(seed=3, pool="simulated"), ConductorGemEnv(seed=3, pool="simulated")
    assert [env.reset()[1]["problem_id"] for _ in range(3)] == [twin.reset()[1]["problem_id"] for _ in range(3)]
    assert env.step(env.sample_random_action())[4]["parse_error"] == ""


# Training rows are training rows (the cases: integrations/training_cases.py).


def gem_splits(gem_id, kwargs):
    """Two GEM envs of one set of arguments, as a vector env builds them: the splits their episodes come from."""
    splits = []
    for seed in (0, 1):
        env = gem.make(gem_id, pool="simulated", **kwargs)
        _, info = env.reset(seed=seed)
        assert f"/{info['split']}/" in info["problem_id"] or not gem_id.endswith("RG-v0")
        splits.append(info["split"])
        env.close()
    return splits


def test_gem_envs_play_the_train_split_by_default():
    splits, warned = training_warnings(lambda: gem_splits("conductor:RG-v0", {"suite_options": {"size": 2, "seed": 501}}))
    assert splits == ["train", "train"] and warned == []


@pytest.mark.parametrize("case", ["test_split", "unverified", "public_only", "gameable"])
def test_gem_refuses_without_the_opt_in_and_warns_once_with_it(case, tmp_path):
    chosen = opt_in_cases(tmp_path, 600 + ["test_split", "unverified", "public_only", "gameable"].index(case))[case]
    gem_id = "conductor:" + chosen.env_id.removeprefix("Conductor-")
    with pytest.raises(SuiteError, match=chosen.says):
        gem_splits(gem_id, chosen.refused)
    splits, warned = training_warnings(lambda: gem_splits(gem_id, chosen.allowed))
    assert set(splits) == {chosen.split}
    assert [w.category for w in warned].count(chosen.warning) == 1, [str(w.message) for w in warned]
