"""moa with up to 8 proposers, and the same-budget baseline (k calls to one worker, then a vote)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents import SPEC_GRAMMAR, make_policy
from conductor_env.agents.baselines import ATTEMPT, VOTE, MixtureOfAgents, SameBudget
from conductor_env.agents.specs import mean_worker_calls, read_results
from conductor_env.envs import EnvSetup
from conductor_env.evaluation.runner import EvalConfig, evaluate
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool
from conductor_env.workflow import parse_workflow


def nine_workers() -> WorkerPool:
    return WorkerPool([WorkerSpec(f"sim-{i}", "simulated", options={"skill": 0.1 * (i + 1)}) for i in range(9)], name="nine")


@pytest.fixture(scope="module")
def wide_env():
    env = EnvSetup.from_kwargs(suite="rg", pool=nine_workers(), max_steps=9, suite_options={"size": 5}).make()
    yield env
    env.close()


@pytest.fixture(scope="module")
def narrow_env():
    env = EnvSetup.from_kwargs(suite="rg", pool=nine_workers(), suite_options={"size": 5}).make()  # max_steps 5
    yield env
    env.close()


def steps_of(policy, observation):
    (action,) = policy.act([observation])
    return parse_workflow(action, num_workers=int(observation["num_workers"]), max_steps=int(observation["max_steps"])).steps


# ------------------------------------------------------------------------------------ parsing


def test_specs_parse() -> None:
    assert isinstance(make_policy("moa:8"), MixtureOfAgents) and make_policy("moa:8").k == 8
    budget = make_policy("same-budget:3:4")
    assert isinstance(budget, SameBudget) and (budget.name, budget.worker, budget.k) == ("same-budget:3:4", 3, 4)
    assert make_policy(" same-budget:0:1 ").name == "same-budget:0:1"
    assert "same-budget:<id>:<k>" in SPEC_GRAMMAR and "same-budget:<id>:auto" in SPEC_GRAMMAR and "k <= 8" in SPEC_GRAMMAR


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("moa:9", "1 <= k <= 8"),
        ("same-budget:0:0", "k >= 1"),
        ("same-budget:0", "unknown form"),
        ("same-budget:x:2", "unknown form"),
        ("same-budget:0:-2", "unknown form"),
        ("same-budget:0:two", "unknown form"),
        ("same-budget:0:auto", "needs the option budget_from"),
    ],
)
def test_bad_specs(spec: str, why: str) -> None:
    with pytest.raises(ValueError, match=why) as error:
        make_policy(spec)
    assert "policy specs:" in str(error.value)


# --------------------------------------------------------------------------- the workflows


def test_moa_8_on_a_nine_worker_pool(wide_env) -> None:
    observation, _ = wide_env.reset(seed=0)
    steps = steps_of(make_policy("moa:8"), observation)
    assert [s.worker for s in steps] == [0, 1, 2, 3, 4, 5, 6, 7, 0]
    assert [s.access for s in steps] == [()] * 8 + [tuple(range(8))]
    assert [s.worker for s in steps_of(make_policy("moa:7", aggregator=8), observation)] == [0, 1, 2, 3, 4, 5, 6, 8]


def test_same_budget_workflows(wide_env) -> None:
    observation, _ = wide_env.reset(seed=0)
    steps = steps_of(make_policy("same-budget:5:4"), observation)
    assert [s.worker for s in steps] == [5, 5, 5, 5]
    assert [s.access for s in steps] == [(), (), (), (0, 1, 2)]
    assert [s.subtask for s in steps] == [ATTEMPT, ATTEMPT, ATTEMPT, VOTE]
    assert [(s.worker, s.access) for s in steps_of(make_policy("same-budget:8:1"), observation)] == [(8, ())]
    assert [s.access for s in steps_of(make_policy("same-budget:2:2"), observation)] == [(), (0,)]
    assert len(steps_of(make_policy("same-budget:1:9"), observation)) == 9


def test_workflows_longer_than_the_env_allows_raise(narrow_env) -> None:
    observation, _ = narrow_env.reset(seed=0)
    for spec, steps in (("moa:8", 9), ("moa:5", 6), ("same-budget:0:6", 6)):
        with pytest.raises(ValueError, match=rf"writes {steps} steps but the env allows 5; .*max_steps={steps}"):
            make_policy(spec).act([observation])
    assert len(steps_of(make_policy("moa:4"), observation)) == 5
    assert len(steps_of(make_policy("same-budget:0:5"), observation)) == 5
    with pytest.raises(ValueError, match="worker id 9"):
        make_policy("same-budget:9:2").act([observation])


@pytest.mark.parametrize("spec", ["same-budget:4:3", "moa:8"])
def test_end_to_end_episode(wide_env, spec: str) -> None:
    policy = make_policy(spec)
    for seed in range(3):
        observation, _ = wide_env.reset(seed=seed)
        (action,) = policy.act([observation])
        _, reward, terminated, truncated, info = wide_env.step(action)
        assert terminated and not truncated and info["parse_error"] == "" and info["infra_error"] == ""
        assert len(info["trace"]) == (3 if spec.startswith("same") else 9)
        if spec.startswith("same"):
            assert {t["worker_name"] for t in info["trace"]} == {"sim-4"}
        assert reward in (0.5, 1.0)


# ------------------------------------------------------------------- k from a previous run


def test_auto_reads_the_mean_calls_of_a_previous_run(tmp_path: Path) -> None:
    config = EvalConfig.for_id("Conductor-RG-v0", pool=nine_workers(), suite_options={"size": 8}, n=8, concurrency=4)
    evaluate(config, [make_policy("random", seed=3), make_policy("template:plan-solve-verify")], str(tmp_path))
    records = read_results(tmp_path)
    random_steps = [len(r["workflow"]["steps"]) for r in records if r["policy"] == "random"]
    assert len(set(random_steps)) > 1  # a varied "Conductor"
    assert mean_worker_calls(records, policy="random") == pytest.approx(sum(random_steps) / len(random_steps))
    expected = int(sum(random_steps) / len(random_steps) + 0.5)
    auto = make_policy("same-budget:2:auto", budget_from=str(tmp_path), budget_policy="random")
    assert auto.name == f"same-budget:2:{expected}" and auto.k == expected
    fixed = make_policy("same-budget:2:auto", budget_from=str(tmp_path / "results.jsonl"), budget_policy="template:plan-solve-verify")
    assert fixed.k == 3
    with pytest.raises(ValueError, match=r"hold policies \['random', 'template:plan-solve-verify'\]; choose one with budget_policy"):
        make_policy("same-budget:2:auto", budget_from=str(tmp_path))
    with pytest.raises(ValueError, match="no scored episode of policy 'moa:3'"):
        make_policy("same-budget:2:auto", budget_from=str(tmp_path), budget_policy="moa:3")
    with pytest.raises(ValueError, match="no results file"):
        make_policy("same-budget:2:auto", budget_from=str(tmp_path / "absent"))


def test_counting_rule_for_rounds_frames_and_failures(tmp_path: Path) -> None:
    step = lambda name: {"worker_name": name}  # noqa: E731
    records = [
        # Round 2 of 2: one call, plus a self-call step whose frame made two calls; round 1: two calls.
        {"policy": "c", "trace": [step("a"), step("conductor")], "frames": [{"trace": [step("a"), step("b")]}],
         "earlier_rounds": [{"trace": [step("a"), step("b")], "frames": []}]},
        {"policy": "c", "trace": [], "frames": [], "parse_error": "no_lists"},  # counts, with 0 calls
        {"policy": "c", "trace": [step("a")], "infra_error": "worker down"},  # left out
    ]  # fmt: skip
    assert mean_worker_calls(records) == pytest.approx((5 + 0) / 2)
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n")
    assert make_policy("same-budget:0:auto", budget_from=str(path)).k == 3  # 2.5 rounds half up
    path.write_text('{"policy": "c"}\nnot json\n')
    with pytest.raises(ValueError, match="line 2 .* is not JSON"):
        make_policy("same-budget:0:auto", budget_from=str(path))
