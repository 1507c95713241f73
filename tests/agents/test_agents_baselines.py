"""Baseline policies: every spec builds valid workflows that run on the real env; bad specs error."""

from __future__ import annotations

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents import SPEC_GRAMMAR, Policy, make_policy, num_shown_workers
from conductor_env.agents.baselines import FINAL_FORMAT, worker_ids
from conductor_env.env import ConductorEnv
from conductor_env.envs import EnvSetup
from conductor_env.workflow import parse_workflow

SPECS = [
    "single:0",
    "single:3",
    "random",
    "template:plan-solve-verify",
    "template:parallel-judge",
    "template:parallel-judge:2",
    "template:parallel-judge:4",
    "reflect:1:1",
    "reflect:2:3",
    "reflect:0:5",
    "moa:1",
    "moa:4",
]

STEPS = {
    "single:0": 1, "single:3": 1, "template:plan-solve-verify": 3, "template:parallel-judge": 4,
    "template:parallel-judge:2": 3, "template:parallel-judge:4": 5, "reflect:1:1": 1, "reflect:2:3": 3,
    "reflect:0:5": 5, "moa:1": 2, "moa:4": 5,
}  # fmt: skip


@pytest.fixture(scope="module")
def env():
    environment = EnvSetup.from_kwargs(suite="rg", pool="simulated", suite_options={"size": 5}).make()
    yield environment
    environment.close()


def observations(env: ConductorEnv, count: int) -> list[dict]:
    return [env.reset(seed=seed)[0] for seed in range(count)]


@pytest.mark.parametrize("spec", SPECS)
def test_every_spec_writes_parsable_workflows_that_run(env, spec):
    policy = make_policy(spec)
    assert isinstance(policy, Policy)
    assert policy.name.startswith(spec.split(":")[0])
    rewards = []
    for seed in range(6):
        observation, _ = env.reset(seed=seed)
        (action,) = policy.act([observation])
        workflow = parse_workflow(action, num_workers=num_shown_workers(observation), max_steps=5)
        if spec in STEPS:
            assert len(workflow.steps) == STEPS[spec]
        assert workflow.steps[-1].subtask.endswith(FINAL_FORMAT)
        _, reward, terminated, truncated, info = env.step(action)
        assert terminated and not truncated
        assert info["parse_error"] == "" and info["infra_error"] == ""
        assert len(info["trace"]) == len(workflow.steps)
        assert info["cost_usd"] > 0
        rewards.append(reward)
    assert set(rewards) <= {0.5, 1.0}


def test_templates_use_the_documented_workers(env):
    observation, _ = env.reset(seed=0)
    ids = lambda spec: [s.worker for s in parse_workflow(make_policy(spec).act([observation])[0], num_workers=4).steps]  # noqa: E731
    assert ids("single:3") == [3]
    assert ids("reflect:2:3") == [2, 2, 2]
    assert ids("template:plan-solve-verify") == [0, 1, 2]
    assert ids("template:parallel-judge") == [0, 1, 2, 3]
    assert ids("moa:4") == [0, 1, 2, 3, 0]
    access = lambda spec: [s.access for s in parse_workflow(make_policy(spec).act([observation])[0], num_workers=4).steps]  # noqa: E731
    assert access("template:parallel-judge:2") == [(), (), (0, 1)]
    assert access("reflect:0:3") == [(), (0,), (0, 1)]
    assert access("template:plan-solve-verify") == [(), (0,), (0, 1)]


def test_batches_are_answered_in_order(env):
    batch = observations(env, 5)
    actions = make_policy("template:parallel-judge:3").act(batch)
    assert len(actions) == 5 and all(isinstance(a, str) for a in actions)


def test_random_is_seeded_varied_and_respects_the_step_limit():
    env = EnvSetup.from_kwargs(suite="rg", pool="simulated", max_steps=3, suite_options={"size": 5}).make()
    try:
        batch = observations(env, 40)
        first = make_policy("random", seed=7).act(batch)
        assert first == make_policy("random", seed=7).act(batch)
        assert first != make_policy("random", seed=8).act(batch)
        lengths = set()
        for observation, action in zip(batch, first):
            workflow = parse_workflow(action, num_workers=4, max_steps=3)
            lengths.add(len(workflow.steps))
            assert workflow.steps[-1].subtask.endswith(FINAL_FORMAT)
        assert lengths == {1, 2, 3}
        assert all(0 <= s.worker < 4 for a in first for s in parse_workflow(a, num_workers=4, max_steps=3).steps)
    finally:
        env.close()


def test_an_id_outside_the_shown_pool_raises_unless_wrapped():
    env = EnvSetup.from_kwargs(suite="rg", pool="simulated", subpool_size=2, suite_options={"size": 5}).make()
    try:
        observation, _ = env.reset(seed=0)
        assert num_shown_workers(observation) == 2
        with pytest.raises(ValueError, match=r"worker id 3.*wrap_ids"):
            make_policy("single:3").act([observation])
        with pytest.raises(ValueError, match="wrap_ids"):
            make_policy("reflect:5:2").act([observation])
        (action,) = make_policy("single:3", wrap_ids=True).act([observation])
        assert [s.worker for s in parse_workflow(action, num_workers=2).steps] == [1]
        # Cycling baselines adapt to the pool they are shown.
        (action,) = make_policy("moa:3").act([observation])
        assert [s.worker for s in parse_workflow(action, num_workers=2).steps] == [0, 1, 0, 0]
        _, reward, *_ = env.step(action)
        assert reward in (0.5, 1.0)
    finally:
        env.close()


def test_cycling_never_picks_the_conductor_itself():
    env = EnvSetup.from_kwargs(suite="rg", pool="simulated", self_call=True, suite_options={"size": 5}).make()
    try:
        observation, _ = env.reset(seed=0)
        assert num_shown_workers(observation) == 5 and worker_ids(observation) == [0, 1, 2, 3]
        for spec in ("template:parallel-judge:4", "moa:4", "random"):
            for action in make_policy(spec).act([observation] * 10):
                assert all(s.worker != 4 for s in parse_workflow(action, num_workers=5).steps)
        _, reward, terminated, _, info = env.step(make_policy("moa:4").act([observation])[0])
        assert terminated and info["parse_error"] == ""
    finally:
        env.close()


@pytest.mark.parametrize(
    "spec",
    ["", "single", "single:x", "single:-1", "moa:0", "moa:9", "reflect:0:6", "reflect:0:0", "reflect:1",
     "template:parallel-judge:5", "template:parallel-judge:0", "template:foo", "llm:", "bogus", "random:3"],
)  # fmt: skip
def test_bad_specs_raise_with_the_grammar(spec):
    with pytest.raises(ValueError) as error:
        make_policy(spec)
    assert "single:<id>" in str(error.value) or spec == "llm:"


def test_grammar_is_documented_and_options_are_checked():
    for form in ("single:<id>", "random", "template:plan-solve-verify", "template:parallel-judge", "reflect:<id>:<k>", "moa:<k>", "llm:<name>"):
        assert form in SPEC_GRAMMAR
    with pytest.raises(ValueError, match="unknown policy options"):
        make_policy("single:0", colour="red")
    # Options of other families are ignored, so one dict serves a whole evaluation.
    assert make_policy("single:0", seed=3, max_tokens=5).name == "single:0"


def test_llm_with_an_unknown_name_is_a_clear_error():
    with pytest.raises(ValueError, match="not a known local model"):
        make_policy("llm:no-such-model-anywhere")


@pytest.mark.slow
def test_llm_conductor_with_the_local_gemma(env):
    from conductor_env.event_loop import run_sync

    by_worker = make_policy("llm:gemma-greedy", max_tokens=16)  # a worker of the `local` preset
    by_model = make_policy("llm:gemma3-270m", max_tokens=16, temperature=0.0)  # a known local model
    try:
        assert by_worker.name == "llm:gemma-greedy" and by_model.name == "llm:gemma3-270m"
        batch = observations(env, 2)
        actions = by_worker.act(batch)
        assert len(actions) == 2 and all(isinstance(a, str) and a.strip() for a in actions)
        assert by_model.act(batch[:1])[0].strip()
        ((text, usage),) = run_sync(by_model.aact_with_usage(batch[:1]))
        assert text.strip() and 0 < usage.completion_tokens <= 16 and usage.prompt_tokens > 100
        assert usage.cost_usd == 0.0  # a local model has no price
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step(actions[0])
        assert terminated and (reward > 0) == (info["parse_error"] == "")
    finally:
        run_sync(by_worker.aclose())
        run_sync(by_model.aclose())
