"""Training rows are training rows, on every path that builds them.

Each path (verl, SkyRL-gym, TRL's two paths, the package's trainer, the OpenEnv server, and
``gym.make(..., training=True)`` with ``problem_rows``) is built as a run would build it, on small
local suites: by default its rows come from the ``train`` split and say so; a test split,
unverified BigCodeBench tasks, public-only LiveCodeBench rows and gameable reasoning-gym datasets
are refused without their opt-in, and with it accepted with one warning however many rows and
envs the run builds. GEM and verifiers run in their own virtualenvs (test_gem_adapter.py,
test_verifiers_taskset.py).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym
import pytest
import skyrl_gym

from conductor_env.agents.training import EnvFactory
from conductor_env.agents.training.data import build_dataset
from conductor_env.agents.training.recipe import EnvSettings
from conductor_env.envs import EnvSetup
from conductor_env.integrations.openenv.environment import ConductorEnvironment
from conductor_env.integrations.openenv.server import create_conductor_app
from conductor_env.integrations.skyrl import ENV_CLASS, skyrl_rows
from conductor_env.integrations.trl import conductor_dataset, conductor_environments, conductor_reward
from conductor_env.integrations.verl import verl_rows
from conductor_env.rows import problem_rows
from conductor_env.tasks import SuiteError
from integrations.training_cases import opt_in_cases, training_warnings

POOL = "simulated"
_tags = itertools.count(1000)


def verl_path(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    rows = verl_rows(env_id, pool=POOL, limit=2, **kwargs) + verl_rows(env_id, pool=POOL, limit=2, seed=5, **kwargs)
    return [row["extra_info"]["split"] for row in rows]


def skyrl_path(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    rows = skyrl_rows(env_id, pool=POOL, limit=2, **kwargs)
    labels = [row["extra_info"]["split"] for row in rows]
    for row in rows:  # SkyRL-train builds one env per trajectory from env_config and the row
        env = skyrl_gym.make(ENV_CLASS, env_config={"env_id": env_id, "pool": POOL, **kwargs}, extras=row)
        _, metadata = env.init(row["prompt"])
        assert metadata["problem_id"] == row["extra_info"]["problem_id"]
        labels.append(metadata["split"])
        env.close()
    return labels


def trl_reward_path(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    reward = conductor_reward(env_id, pool=POOL, **kwargs)
    try:
        return list(conductor_dataset(reward, limit=2)["split"]) + list(conductor_dataset(reward, limit=2, seed=9)["split"])
    finally:
        reward.close()


def trl_environment_path(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    environments = conductor_environments(env_id, pool=POOL, **kwargs)
    try:
        dataset = conductor_dataset(environments, limit=2, tools=True)
        for row in dataset:
            environments().reset(**row)
        return list(dataset["split"])
    finally:
        environments.close()


def trainer_path(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    fields = {key: kwargs[key] for key in ("split", "allow_test_split", "suite_options") if key in kwargs}
    factory = EnvFactory(EnvSettings(id=env_id, pool=POOL, **fields).setup())
    try:
        return list(build_dataset(factory, limit=2)["split"]) + list(build_dataset(factory, limit=2, seed=3)["split"])
    finally:
        factory.close()


def openenv_path(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    app = create_conductor_app(EnvSetup.from_id(env_id, pool=POOL, **kwargs))
    hub = app.state.conductor_hub
    try:
        labels = []
        for seed in (0, 1):  # two sessions of one server
            session = ConductorEnvironment(hub)
            observation = session.reset(seed=seed)
            assert f"/{session.state.split}/" in observation.problem_id or env_id != "Conductor-RG-v0"
            labels.append(session.state.split)
            session.close()
        return labels
    finally:
        hub.close()


def gym_make_path(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    env = gym.make(env_id, pool=POOL, training=True, **kwargs)
    try:
        return [row["split"] for row in problem_rows(env, limit=2) + problem_rows(env, limit=2, seed=4)]
    finally:
        env.close()


PATHS: dict[str, Callable[[str, dict[str, Any]], list[str]]] = {
    "verl": verl_path,
    "skyrl": skyrl_path,
    "trl_reward": trl_reward_path,
    "trl_environments": trl_environment_path,
    "trainer": trainer_path,
    "openenv": openenv_path,
    "gym_make": gym_make_path,
}
CASES = ("test_split", "unverified", "public_only", "gameable")


@pytest.mark.parametrize("path", sorted(PATHS))
def test_rows_default_to_the_train_split_and_say_so(path: str) -> None:
    labels, warned = training_warnings(lambda: PATHS[path]("Conductor-RG-v0", {"suite_options": {"size": 2, "seed": next(_tags)}}))
    assert labels and set(labels) == {"train"} and warned == []


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("path", sorted(PATHS))
def test_refused_without_the_opt_in(path: str, case: str, tmp_path: Path) -> None:
    chosen = opt_in_cases(tmp_path, next(_tags))[case]
    with pytest.raises(SuiteError, match=chosen.says):
        PATHS[path](chosen.env_id, chosen.refused)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("path", sorted(PATHS))
def test_accepted_with_the_opt_in_and_one_warning(path: str, case: str, tmp_path: Path) -> None:
    chosen = opt_in_cases(tmp_path, next(_tags))[case]
    labels, warned = training_warnings(lambda: PATHS[path](chosen.env_id, chosen.allowed))
    assert labels and set(labels) == {chosen.split}
    assert [w.category for w in warned].count(chosen.warning) == 1, [str(w.message) for w in warned]
    assert chosen.says in str(next(w for w in warned if w.category is chosen.warning).message)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_suite_with_only_a_test_split_names_the_way_to_train_on_it(path: str, tmp_path: Path) -> None:
    """BigCodeBench has only its test split: training on it by default is refused, saying how to ask for it."""
    chosen = opt_in_cases(tmp_path, next(_tags))["unverified"]
    with pytest.raises(SuiteError, match="allow_test_split=True") as refused:
        PATHS[path](chosen.env_id, {"suite_options": chosen.allowed["suite_options"]})
    assert "'train'" in str(refused.value)


def test_evaluation_envs_still_read_the_test_split_unwarned() -> None:
    """``gym.make`` without ``training`` is evaluation: the suite's default split, no refusal, no warning."""
    env, warned = training_warnings(lambda: gym.make("Conductor-RG-v0", pool=POOL, suite_options={"size": 2, "seed": next(_tags)}))
    try:
        assert warned == [] and {row["split"] for row in problem_rows(env, limit=2)} == {"test"}
    finally:
        env.close()


@pytest.mark.parametrize(("field", "value"), [("training", "yes"), ("allow_test_split", "no"), ("allow_test_split", 1)])
def test_switches_must_be_bools(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"{field} must be true or false"):
        EnvSetup.from_id("Conductor-RG-v0", pool=POOL, **{field: value})


def test_verl_rows_cannot_be_mislabelled() -> None:
    with pytest.raises(TypeError, match="split_name"):
        verl_rows(pool=POOL, limit=1, split_name="train", split="test", allow_test_split=True)


def test_the_verl_example_writes_train_and_validation_rows(tmp_path: Path) -> None:
    """examples/verl_dataset.py, run as a user runs it: train rows to train on, validation rows to watch, no test rows."""
    import subprocess
    import sys

    from datasets import Dataset

    root = Path(__file__).parents[2]
    run = subprocess.run([sys.executable, str(root / "examples" / "verl_dataset.py"), "--limit", "3", "--val-limit", "2", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    for name, split, count in (("train", "train", 3), ("validation", "validation", 2)):
        rows = Dataset.from_parquet(str(tmp_path / f"{name}.parquet")).to_list()
        assert len(rows) == count and {row["extra_info"]["split"] for row in rows} == {split}
        assert all(f"/{split}/" in row["extra_info"]["problem_id"] for row in rows)
    refused = subprocess.run([sys.executable, str(root / "examples" / "verl_dataset.py"), "--split", "test", "--out", str(tmp_path / "no")], capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "allow_test_split" in refused.stderr


@pytest.mark.parametrize("case", ["unverified", "public_only", "gameable"])
def test_sb3_routing_env_enforces_the_suites_opt_ins(case: str, tmp_path: Path) -> None:
    """RoutingEnv wraps a ready env (its split is the env's own) and checks the suite's opt-ins at the same choke point."""
    from conductor_env.agents.training.sb3 import RoutingEnv

    chosen = opt_in_cases(tmp_path, next(_tags))[case]

    def wrap_twice(kwargs: dict[str, Any]) -> list[str]:
        env = gym.make(chosen.env_id, pool=POOL, **kwargs)
        try:
            return [RoutingEnv(env).conductor.suite.name for _ in range(2)]
        finally:
            env.close()

    with pytest.raises(SuiteError, match=chosen.says):
        wrap_twice(chosen.refused)
    names, warned = training_warnings(lambda: wrap_twice(chosen.allowed))
    assert len(names) == 2 and [w.category for w in warned].count(chosen.warning) == 1, [str(w.message) for w in warned]
