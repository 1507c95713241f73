"""Every registered Conductor id in the loops RL libraries build: Gymnasium's checkers, every
``make_vec`` mode, the standard wrappers, the ``info`` schema and the episode-end convention."""

from __future__ import annotations

import gc
import typing
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.spaces.utils import flatdim, flatten, flatten_space, unflatten
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import PassiveEnvChecker, RecordEpisodeStatistics, TimeLimit
from gymnasium.wrappers.vector import RecordEpisodeStatistics as VectorRecordEpisodeStatistics

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.calls import RetryPolicy
from conductor_env.envs import EnvSetup
from conductor_env.info import StepInfo
from conductor_env.sandboxes.factory import docker_available
from conductor_env.suite import VerifierError
from conductor_env.tasks import BUILTIN_SUITES, env_id_for
from conductor_env.tasks.suites.procedural import ReasoningGymSuite

FIXTURES = Path(__file__).parents[1] / "fixtures"
SUITES = FIXTURES / "suites"

#: Small offline options for every built-in id; code suites grade in the local (bubblewrap) sandbox.
ENV_OPTIONS: dict[str, dict[str, Any]] = {
    "Conductor-RG-v0": {"suite_options": {"datasets": ["basic_arithmetic", "word_sorting"], "size": 2}},
    "Conductor-LCB-v0": {"suite_options": {"data_files": str(FIXTURES / "lcb" / "lcb_sample.jsonl")}, "sandbox": "local"},
    "Conductor-HumanEval-v0": {"suite_options": {"data_files": str(FIXTURES / "humaneval" / "humaneval_sample.jsonl")}, "sandbox": "local"},
    "Conductor-BigCodeBench-v0": {"suite_options": {"data_files": str(FIXTURES / "bigcodebench" / "bcb_sample.jsonl")}, "sandbox": "local"},
    "Conductor-MATH500-v0": {"suite_options": {"data_files": str(SUITES / "math500.jsonl"), "limit": 2}},
    "Conductor-AIME-v0": {"suite_options": {"data_files": str(SUITES / "aime25.jsonl")}},
    "Conductor-GPQA-v0": {"suite_options": {"data_files": str(SUITES / "gpqa_diamond.jsonl"), "limit": 2}},
    "Conductor-MMLU-v0": {"suite_options": {"data_files": str(SUITES / "mmlu.jsonl"), "limit": 2}},
    "Conductor-RLPR-v0": {"suite_options": {"data_files": str(SUITES / "rlpr.jsonl")}},
    "Conductor-Mix-v0": {
        "suite_options": {"data_files": {name: str(SUITES / f"{file}.jsonl") for name, file in (("math500", "math500"), ("mmlu", "mmlu"), ("lcb", "lcb_v1"))}},
        "sandbox": "local",
        "split": "test",
    },
}
IDS = sorted(ENV_OPTIONS)
GOOD = 'model_id = [0]\nsubtasks = ["Solve the task."]\naccess_list = [[]]'
BAD = "I would ask worker 0 → then check ∀ answers (no lists)."
VECTOR_MODES = [
    pytest.param("sync", {}, id="sync"),
    pytest.param("async", {}, id="async-shared-memory"),
    pytest.param("async", {"shared_memory": False}, id="async-pipes"),
    pytest.param("vector_entry_point", {}, id="vector-entry-point"),
]
HINTS = typing.get_type_hints(StepInfo)
#: The dtype Gymnasium's vector info merging gives each scalar key of StepInfo.
SCALAR_DTYPES = {bool: np.bool_, float: np.float64, int: np.int64}


def make(env_id: str, **kwargs: Any) -> gym.Env:
    return gym.make(env_id, pool="simulated", **{**ENV_OPTIONS[env_id], **kwargs})


def make_vec(env_id: str, mode: str, vector_kwargs: dict[str, Any], num_envs: int = 2, **kwargs: Any) -> gym.vector.VectorEnv:
    options = {**ENV_OPTIONS[env_id], **kwargs}
    options.setdefault("pool", "simulated")
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, vector_kwargs=vector_kwargs, **options)


# ------------------------------------------------------------------------------ info schema


def matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` has exactly the type ``hint`` names (bool is not an int, int not a float)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is type(None):
        return value is None
    if origin is typing.Union:
        return any(matches(value, arg) for arg in args)
    if typing.is_typeddict(hint):
        fields = typing.get_type_hints(hint)
        return isinstance(value, dict) and set(value) == set(fields) and all(matches(value[k], h) for k, h in fields.items())
    if origin is list:
        return type(value) is list and all(matches(item, args[0]) for item in value)
    if origin is dict:
        return type(value) is dict and all(matches(k, args[0]) and matches(v, args[1]) for k, v in value.items())
    return type(value) is hint


def assert_step_info(info: dict[str, Any]) -> None:
    """Asserts an env's ``info`` has exactly StepInfo's keys, each of its declared type."""
    assert set(info) == set(HINTS), set(info) ^ set(HINTS)
    wrong = {key: info[key] for key, hint in HINTS.items() if not matches(info[key], hint)}
    assert not wrong, wrong


def assert_vector_info(infos: dict[str, Any], num_envs: int) -> None:
    """Asserts merged vector infos hold every StepInfo key for every env, with stable dtypes."""
    for key, hint in HINTS.items():
        assert key in infos and infos[f"_{key}"].all(), key
        if hint in SCALAR_DTYPES:
            assert infos[key].dtype == SCALAR_DTYPES[hint], (key, infos[key].dtype)
        elif typing.is_typeddict(hint):
            assert set(typing.get_type_hints(hint)) <= set(infos[key])
        elif typing.get_origin(hint) is not dict:  # worker_map merges into a dict keyed by shown id
            assert infos[key].dtype == object and len(infos[key]) == num_envs, key
    assert all(isinstance(value, str) for value in infos["parse_error"])


def assert_same_observations(batch: dict[str, Any], singles: list[dict[str, Any]]) -> None:
    """Asserts a batched observation holds, entry by entry, the single envs' observations."""
    for index, single in enumerate(singles):
        assert {key: _entry(values, index) for key, values in batch.items()} == single


def _entry(values: Any, index: int) -> Any:
    """Sub-env ``index``'s value of one batched entry; a batched Tuple space (``worker_names``) is
    a tuple of batched elements (gymnasium's ``batch_space``)."""
    if isinstance(values, tuple) and values and isinstance(values[0], tuple):
        return tuple(element[index] for element in values)
    return values[index]


def test_every_builtin_id_is_registered_and_covered() -> None:
    builtin = {env_id_for(name, env_name) for name, (_, env_name) in BUILTIN_SUITES.items()}
    assert set(IDS) == builtin
    assert builtin <= set(gym.registry)


# ------------------------------------------------------------------------------ per id


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_and_the_passive_checker(env_id: str) -> None:
    env = make(env_id)
    wrappers, inner = [], env
    while isinstance(inner, gym.Wrapper):
        wrappers.append(type(inner))
        inner = inner.env
    assert PassiveEnvChecker in wrappers
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
        for seed, action in ((0, GOOD), (1, BAD), (2, env.action_space.sample())):
            env.reset(seed=seed)
            env.step(action)
    assert not [w for w in caught if "gymnasium" in w.filename], [str(w.message) for w in caught]
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_spaces_hold_and_round_trip_every_observation(env_id: str) -> None:
    env = make(env_id)
    space = env.observation_space
    assert flatdim(space) == sum(flatdim(s) for s in space.spaces.values()) < 100_000
    observations = []
    for seed, action in ((0, GOOD), (1, BAD)):
        observation, info = env.reset(seed=seed)
        assert_step_info(info)
        assert env.action_space.contains(action)
        observations.append(observation)
        observation, _, terminated, truncated, info = env.step(action)
        assert terminated and not truncated
        assert_step_info(info)
        observations.append(observation)
    for observation in observations:
        assert space.contains(observation)
        flat = flatten(space, observation)
        assert flatten_space(space).contains(flat)
        assert unflatten(space, flat) == observation
    env.close()


@pytest.mark.parametrize(("mode", "vector_kwargs"), VECTOR_MODES)
@pytest.mark.parametrize("env_id", IDS)
def test_vector_modes_merge_mixed_batches(env_id: str, mode: str, vector_kwargs: dict[str, Any]) -> None:
    single = make(env_id)
    singles = [single.reset(seed=seed)[0] for seed in (0, 1)]  # sub-env i is seeded seed + i
    single.close()
    envs = VectorRecordEpisodeStatistics(make_vec(env_id, mode, vector_kwargs))
    observations, infos = envs.reset(seed=0)
    assert envs.observation_space.contains(observations)
    assert_same_observations(observations, singles)
    assert_vector_info(infos, 2)
    observations, rewards, terminations, truncations, infos = envs.step([GOOD, BAD])
    assert envs.observation_space.contains(observations)
    assert_same_observations(observations, singles)  # an episode ends on its last top-level observation
    assert terminations.all() and not truncations.any() and rewards[1] == 0.0
    assert_vector_info(infos, 2)
    assert list(infos["parse_error"]) == ["", "no_lists"]
    assert [len(steps) for steps in infos["workflow"]["steps"]] == [1, 0]
    assert infos["_episode"].all() and list(infos["episode"]["l"]) == [1, 1]
    assert np.allclose(infos["episode"]["r"], rewards)
    _, _, terminations, _, infos = envs.step([GOOD, GOOD])  # the autoreset step: reset infos
    assert not terminations.any()
    assert_vector_info(infos, 2)
    observations, _, terminations, _, infos = envs.step([BAD, GOOD])
    assert envs.observation_space.contains(observations) and terminations.all()
    assert all(question and question in prompt for question, prompt in zip(observations["question"], observations["prompt"]))
    assert list(infos["parse_error"]) == ["no_lists", ""]
    envs.close()


@pytest.mark.parametrize("env_id", IDS)
def test_standard_wrappers(env_id: str) -> None:
    env = RecordEpisodeStatistics(make(env_id, max_episode_steps=3))
    assert any(isinstance(e, TimeLimit) for e in _chain(env))
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(GOOD)
    assert terminated and not truncated
    assert info["episode"]["r"] == pytest.approx(reward) and info["episode"]["l"] == 1
    env.close()


def _chain(env: gym.Env) -> list[gym.Env]:
    chain = [env]
    while isinstance(chain[-1], gym.Wrapper):
        chain.append(chain[-1].env)
    return chain


def test_time_limit_truncates_an_episode_waiting_in_a_self_call_frame() -> None:
    env = make("Conductor-RG-v0", self_call=True, max_episode_steps=1)
    _, info = env.reset(seed=0)
    conductor = next(i for i, name in info["worker_map"].items() if name == "conductor")
    observation, reward, terminated, truncated, info = env.step(f'model_id = [{conductor}]\nsubtasks = ["Delegate"]\naccess_list = [[]]')
    assert (observation["depth"], info["frame_depth"], reward, terminated, truncated) == (1, 1, 0.0, False, True)
    assert_step_info(info)
    observation, _ = env.reset(seed=1)  # a new episode starts cleanly
    assert observation["depth"] == 0
    env.close()


# ------------------------------------------------------------------- outcomes and their infos


def sure_pool_file(tmp_path: Path) -> str:
    """A pool: worker 0 always right, 1 always wrong, 2 always down."""
    path = tmp_path / "sure.toml"
    path.write_text(
        'name = "sure"\n[defaults]\nbackend = "simulated"\n'
        '[[workers]]\nid = "always"\nskill = { default = 1.0 }\nprice_in_per_m = 1.0\n'
        '[[workers]]\nid = "never"\nskill = { default = 0.0 }\n'
        '[[workers]]\nid = "down"\nskill = { default = 1.0 }\nfail_rate = 1.0\n',
        encoding="utf-8",
    )
    return str(path)


def one_step(worker: int) -> str:
    return f'model_id = [{worker}]\nsubtasks = ["Solve"]\naccess_list = [[]]'


@pytest.mark.parametrize(("mode", "vector_kwargs"), VECTOR_MODES)
def test_info_schema_holds_across_every_outcome_in_one_batch(mode: str, vector_kwargs: dict[str, Any], tmp_path: Path) -> None:
    """A frame opening, a scored round, a parse error and a worker failure, side by side."""
    envs = make_vec(
        "Conductor-RG-v0",
        mode,
        vector_kwargs,
        num_envs=4,
        pool=sure_pool_file(tmp_path),
        self_call=True,
        retry=RetryPolicy(max_attempts=1),
    )
    _, infos = envs.reset(seed=0)
    assert_vector_info(infos, 4)
    observations, rewards, terminations, truncations, infos = envs.step([one_step(3), one_step(0), BAD, one_step(2)])
    assert envs.observation_space.contains(observations)
    assert list(observations["depth"]) == [1, 0, 0, 0]
    assert list(terminations) == [False, True, True, False] and list(truncations) == [False, False, False, True]
    assert list(rewards) == [0.0, 1.0, 0.0, 0.0]
    assert_vector_info(infos, 4)
    assert list(infos["frame_depth"]) == [1, 0, 0, 0]
    assert list(infos["parse_error"]) == ["", "", "no_lists", ""]
    assert [bool(error) for error in infos["infra_error"]] == [False, False, False, True]
    assert [len(steps) for steps in infos["workflow"]["steps"]] == [0, 1, 0, 1]
    observations, rewards, terminations, _, infos = envs.step([one_step(0)] * 4)  # the sub-workflow; autoresets
    assert envs.observation_space.contains(observations) and observations["depth"][0] == 0
    assert terminations[0] and rewards[0] == 1.0 and len(infos["frames"][0]) == 1
    assert_vector_info(infos, 4)
    envs.close()


class BrokenGrader(ReasoningGymSuite):
    """A suite whose grader fails the way a dead sandbox does."""

    def verify(self, problem, answer):
        raise VerifierError("sandbox error: container vanished")


@pytest.mark.parametrize(
    ("suite", "options", "actions", "ends"),
    [
        pytest.param("rg", {}, [one_step(0)], [(True, False)], id="scored"),
        pytest.param("rg", {}, [BAD], [(True, False)], id="parse-error"),
        pytest.param("rg", {"max_rounds": 2}, [one_step(1), one_step(0)], [(False, False), (True, False)], id="rounds"),
        pytest.param("rg", {"max_rounds": 2}, [one_step(1), "model_id = []\nsubtasks = []\naccess_list = []"], [(False, False), (True, False)], id="kept-answer"),
        pytest.param("rg", {"self_call": True}, [one_step(3), one_step(0)], [(False, False), (True, False)], id="self-call"),
        pytest.param("rg", {"self_call": True}, [one_step(3), BAD], [(False, False), (True, False)], id="bad-sub-workflow"),
        pytest.param("rg", {}, [one_step(2)], [(False, True)], id="worker-failure"),
        pytest.param("broken", {}, [one_step(0)], [(False, True)], id="verifier-failure"),
    ],
)
def test_terminated_and_truncated_follow_the_readme(suite: str, options: dict, actions: list[str], ends: list[tuple[bool, bool]], tmp_path: Path) -> None:
    """``terminated``: the answer is final (scored, kept, or unparsed). ``truncated``: infrastructure
    failed and the answer is unscored. Every episode ends on a top-level observation."""
    rg = (BrokenGrader if suite == "broken" else ReasoningGymSuite)(["basic_arithmetic"], size=2)
    env = EnvSetup.from_kwargs(suite=rg, pool=sure_pool_file(tmp_path), retry=RetryPolicy(max_attempts=1), **options).make()
    first, _ = env.reset(seed=0)
    for action, (terminated, truncated) in zip(actions, ends):
        observation, reward, is_terminated, is_truncated, info = env.step(action)
        assert (is_terminated, is_truncated) == (terminated, truncated)
        assert env.observation_space.contains(observation)
        assert_step_info(info)
    assert observation["depth"] == 0  # also when the round ended inside a self-call frame
    assert bool(info["infra_error"]) == truncated
    if truncated:
        assert reward == 0.0 and observation == first
    with pytest.raises(RuntimeError, match="reset"):
        env.step(one_step(0))
    env.close()


# ------------------------------------------------------------------------------ docker


@pytest.mark.docker
def test_code_env_in_docker_async_and_closes_its_sockets() -> None:
    if why := docker_available():
        pytest.skip(why)
    options = {**ENV_OPTIONS["Conductor-HumanEval-v0"], "sandbox": "docker"}
    envs = gym.make_vec("Conductor-HumanEval-v0", num_envs=2, vectorization_mode="async", pool="simulated", **options)
    envs.reset(seed=0)
    _, rewards, terminations, _, infos = envs.step([GOOD, BAD])
    assert terminations.all() and list(infos["parse_error"]) == ["", "no_lists"]
    envs.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        env = gym.make("Conductor-HumanEval-v0", pool="simulated", **options)
        check_env(env.unwrapped)
        env.reset(seed=0)
        assert env.step(GOOD)[4]["reason"]  # graded in a container
        env.close()
        del env
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, leaks
