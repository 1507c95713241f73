"""Issue 16: the ``orchestra-judge`` pool and the ``orchestrate-judge`` recipe, where orchestrating
on math pays about twice what it pays on the ``orchestra`` pool (closed form; the agreement with
played episodes is checked for both pools in ``test_orchestration_recipe.py``)."""

from __future__ import annotations

import importlib.resources

import pytest

from conductor_env.agents.training.recipes import load_recipe
from conductor_env.workers.pool import load_pool

ORCHESTRA_POOL = str(importlib.resources.files("conductor_env.pools") / "orchestra.toml")
ORCHESTRA_JUDGE_POOL = str(importlib.resources.files("conductor_env.pools") / "orchestra-judge.toml")


@pytest.fixture(scope="module")
def oracle():
    """The closed-form oracle of a simulated pool (docs/ORCHESTRATION.md)."""
    from conductor_env.evaluation import oracle as module

    return module


def test_the_recipe_is_orchestrate_on_another_pool():
    judge, plain = load_recipe("orchestrate-judge").build(), load_recipe("orchestrate").build()
    assert (judge.env.pool, plain.env.pool) == ("orchestra-judge", "orchestra")
    assert (judge.grpo.scale_rewards, judge.grpo.max_steps, plain.grpo.scale_rewards, plain.grpo.max_steps) == ("batch", 30, "group", 40)
    same = {"env": {"pool": "orchestra"}, "grpo": {"scale_rewards": "group", "max_steps": 40}}
    assert load_recipe("orchestrate-judge").build(same) == plain
    assert [spec.name for spec in load_pool("orchestra-judge").specs] == ["flash", "solver", "checker"]  # the preset name loads it


def test_the_oracle_writes_a_different_shape_per_domain(oracle):
    report = oracle.oracle_report(ORCHESTRA_JUDGE_POOL, max_steps=3)
    best = {d: (row["oracle"]["shape"], row["oracle"]["plan"]) for d, row in report["domains"].items()}
    assert best["language"] == ("single", "flash")
    assert best["reasoning"] == ("single", "solver")
    assert best["math"] == ("2-attempts+judge", "flash -> flash -> checker(reads all)")


def test_orchestrating_on_math_pays_far_more_than_on_the_orchestra_pool(oracle):
    def math_lead(pool: str) -> float:
        row = oracle.oracle_report(pool, max_steps=3)["domains"]["math"]
        return row["oracle"]["reward"] - row["best_by_shape"]["single"]["reward"]

    assert math_lead(ORCHESTRA_JUDGE_POOL) == pytest.approx(0.142, abs=0.001)
    assert math_lead(ORCHESTRA_POOL) == pytest.approx(0.083, abs=0.001)
    means = oracle.oracle_report(ORCHESTRA_JUDGE_POOL, max_steps=3)["mean_over_domains"]
    assert means["oracle"] > means["routing_oracle"] + 0.04
    best_fixed = max(value for name, value in means.items() if name not in ("oracle", "routing_oracle"))
    assert means["routing_oracle"] > best_fixed + 0.05  # routing alone beats every fixed baseline


def test_no_single_call_is_good_on_math_and_the_judge_needs_what_it_reads(oracle):
    workers = oracle.worker_table(ORCHESTRA_JUDGE_POOL)
    assert max(oracle.p_correct(((w, False),), workers, "math") for w in range(3)) == pytest.approx(0.4)
    # The checker reading nothing (first step, or access to no step) is its own weak solver, not a judge.
    assert oracle.p_correct(((2, True),), workers, "math") == pytest.approx(0.4)
    # Two flash attempts (0.4 each), then the checker (judge 0.97, own skill 0.4), by hand.
    p_any = 1 - 0.6**2
    assert oracle.p_correct(((0, False), (0, False), (2, True)), workers, "math") == pytest.approx(p_any * 0.97 + (1 - p_any) * 0.4)
    # On reasoning nobody judges: reading the solver's attempt does not lift the checker above its skill.
    assert oracle.p_correct(((1, False), (2, True)), workers, "reasoning") == pytest.approx(0.3)
