"""``traits-rule``: it reads only what the descriptions state, plays each regime's workflow, and on
the unseen protocol's held-out pools comes within a hair of the oracle, above perfect routing."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.specs import make_policy
from conductor_env.agents.trait_plans import StructuredViewError
from conductor_env.evaluation.oracle import oracle_report
from conductor_env.evaluation.unseen import UNSEEN_POOLS
from conductor_env.workers.closed_form import expected_reward, worker_rows
from conductor_env.workers.pool import load_pool
from conductor_env.workflow import parse_workflow

ORCHESTRATE = {"reward": "cost_aware", "price_weight": 1.0, "max_steps": 3, "show_names": True, "examples": "none"}
# One domain per regime: math has a costly specialist, language a cheap fair solver and a cheap
# judge, reasoning a cheap strong worker beside a costly fair decoy.
WORKERS = (
    ("spec", "costly", {"math": "strong", "language": "weak", "reasoning": "fair"}, []),
    ("solver", "cheap", {"math": "weak", "language": "fair", "reasoning": "weak"}, []),
    ("judge", "cheap", {"math": "weak", "language": "weak", "reasoning": "weak"}, ["language"]),
    ("quick", "cheap", {"math": "weak", "language": "weak", "reasoning": "strong"}, []),
)


def _pool_file(folder: Path, skills: dict[str, float], name: str = "regimes") -> Path:
    """A pool of :data:`WORKERS` whose hidden chance for each stated level is ``skills[level]``."""
    blocks = ['[defaults]\nbackend = "simulated"\nlatency_s = 0.0\nprice_in_per_m = 0.0\nprice_out_per_m = 0.0\n']
    for worker, tier, solve, judges in WORKERS:
        skill = ", ".join(f"{d} = {skills[level]}" for d, level in solve.items())
        judge = ", ".join(f"{d} = {skills['judge'] if d in judges else skills[level]}" for d, level in solve.items())
        levels = ", ".join(f'{d} = "{level}"' for d, level in solve.items())
        blocks.append(
            f'[[workers]]\nid = "{worker}"\ndescription = "{worker}"\nskill = {{ {skill} }}\njudge = {{ {judge} }}\n'
            f'price_per_call = {skills[tier]}\ntraits = {{ solve = {{ {levels} }}, judge = {judges!r}, price = "{tier}" }}\n'.replace("'", '"')
        )
    path = folder / f"{name}.toml"
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def _workflows(pool: Path | str) -> dict[str, list[tuple[int, bool]]]:
    """The rule's plan per domain on a fixed pool, played from real observations."""
    env = gym.make("Conductor-RG-v0", pool=str(pool), **ORCHESTRATE, worker_traits=True)
    policy, plans = make_policy("traits-rule"), {}
    for seed in range(40):
        observation, info = env.reset(seed=seed)
        workflow = parse_workflow(policy.act([observation])[0], num_workers=observation["num_workers"], max_steps=3)
        plans.setdefault(info["domain"], [(step.worker, step.access_all) for step in workflow.steps])
    env.close()
    return plans


TYPICAL = {"weak": 0.25, "fair": 0.62, "strong": 0.9, "judge": 0.95, "cheap": 0.02, "costly": 0.08}


def test_each_regime_gets_its_workflow(tmp_path: Path) -> None:
    plans = _workflows(_pool_file(tmp_path, TYPICAL))
    assert plans["math"] == [(0, False)]  # the costly specialist
    assert plans["language"] == [(1, False), (1, False), (2, True)]  # two cheap attempts, then the judge
    assert plans["reasoning"] == [(3, False)]  # the cheap strong worker, not the costly decoy


def test_it_reads_the_stated_traits_never_the_hidden_numbers(tmp_path: Path) -> None:
    other = {"weak": 0.33, "fair": 0.56, "strong": 0.87, "judge": 0.94, "cheap": 0.011, "costly": 0.095}
    assert _workflows(_pool_file(tmp_path, TYPICAL)) == _workflows(_pool_file(tmp_path, other, name="other"))


def test_it_needs_the_structured_view() -> None:
    env = gym.make("Conductor-RG-v0", pool="generated", **ORCHESTRATE)
    observation, _ = env.reset(seed=0)
    with pytest.raises(StructuredViewError, match="worker_traits=True"):
        make_policy("traits-rule").act([observation])
    with pytest.raises(ValueError, match="no \\[family\\] table"):
        make_policy("traits-rule", family="orchestra-judge")
    env.close()


def test_on_the_held_out_pools_it_is_near_the_oracle_and_above_perfect_routing() -> None:
    values, oracles, single = [], [], []
    for pool in UNSEEN_POOLS:
        rows = worker_rows(load_pool(pool).specs)  # type: ignore[arg-type]
        plans = _workflows(pool)
        value = sum(expected_reward(tuple(plans[d]), rows, d) for d in plans) / len(plans)
        report = oracle_report(pool)["mean_over_domains"]
        assert report["routing_oracle"] - 1e-4 <= value <= report["oracle"] + 1e-4, pool  # the report rounds to 4 places
        values.append(value), oracles.append(report["oracle"]), single.append(report["routing_oracle"])
    mean = sum(values) / len(values)
    assert mean > sum(single) / len(single) + 0.02 and mean > sum(oracles) / len(oracles) - 0.005
