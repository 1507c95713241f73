"""Routers as policies: trained on a pool with one expert per domain they route to the experts,
from ``conductor-env eval --policy router:<kind>:DIR``, identically at any concurrency; the price
weight trades score for cost; other pools' workers are refused or mapped by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXPERT_OF, EXPERTS, SUITE, TWINS, routers_data, train

from conductor_env.agents.routers import UNROUTABLE
from conductor_env.cli import main
from conductor_env.evaluation import EvalConfig, evaluate
from conductor_env.evaluation.setup import build_policies
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool, load_pool
from fixtures.results_rows import rows_without_clock

KINDS = ("knn", "mlp")


def evaluate_cli(out: Path, pool: str, *policies: str, n: int = 60, extra: tuple[str, ...] = ()) -> list[dict]:
    args = ["eval", "--env", "Conductor-RG-v0", "--pool", pool, "--split", "test", "--n", str(n), "--out", str(out), *SUITE, *extra]
    for policy in policies:
        args += ["--policy", policy]
    assert main(args) == 0
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def routed_to(record: dict) -> list[str]:
    return [step["worker_name"] for step in record["trace"]]


def test_routers_send_each_question_to_its_domains_expert(experts_routers: dict[str, Path], tmp_path: Path) -> None:
    specs = [f"router:{kind}:{experts_routers[kind]}" for kind in KINDS]
    records = evaluate_cli(tmp_path / "eval", EXPERTS, *specs, "single:0")
    assert {r["domain"] for r in records} == set(EXPERT_OF)
    for spec in specs:
        mine = [r for r in records if r["policy"] == spec]
        assert len(mine) == 60
        assert [routed_to(r) for r in mine] == [[EXPERT_OF[r["domain"]]] for r in mine], spec
        assert sum(r["correct"] for r in mine) >= 50
    # the honest control: one fixed worker is right on its own domain only
    control = [r for r in records if r["policy"] == "single:0"]
    assert sum(r["correct"] for r in control) < 35


def test_routers_map_workers_by_name_when_the_pool_is_shuffled(experts_routers: dict[str, Path], tmp_path: Path) -> None:
    specs = [f"router:{kind}:{experts_routers[kind]}" for kind in KINDS]
    records = evaluate_cli(tmp_path / "eval", EXPERTS, *specs, n=30, extra=("--env-option", "subpool_size=3", "--env-option", "show_names=true"))
    orders = {tuple(r["worker_map"].values()) for r in records}
    assert len(orders) > 1  # the episodes did show the pool in different orders
    for record in records:
        assert routed_to(record) == [EXPERT_OF[record["domain"]]]


def test_a_worker_the_router_does_not_know_is_left_out_and_an_episode_without_known_workers_scores_zero(experts_routers: dict[str, Path], tmp_path: Path) -> None:
    spec = f"router:knn:{experts_routers['knn']}"
    # Two-worker sub-pools with names: the router picks among the two it is shown.
    records = evaluate_cli(tmp_path / "named", EXPERTS, spec, n=30, extra=("--env-option", "subpool_size=2", "--env-option", "show_names=true"))
    for record in records:
        shown = list(record["worker_map"].values())
        assert routed_to(record)[0] in shown
        if EXPERT_OF[record["domain"]] in shown:
            assert routed_to(record) == [EXPERT_OF[record["domain"]]]
    # Hidden names on two-worker sub-pools: the router cannot tell who is who, and says so.
    records = evaluate_cli(tmp_path / "hidden", EXPERTS, spec, n=6, extra=("--env-option", "subpool_size=2"))
    for record in records:
        assert record["reward"] == 0.0 and record["parse_error"] and not record["trace"]
        assert record["action"].startswith(UNROUTABLE) and "show_names=true" in record["action"]


def jittered(path: str) -> WorkerPool:
    """The pool with random latencies, so episodes ask for actions in shuffled order and batches."""
    pool = load_pool(path)
    specs = [WorkerSpec(s.name, s.backend, model=s.model, description=s.description, options={**s.options, "latency_s": [0.0, 0.02]}) for s in pool.specs]
    return WorkerPool(specs, name=pool.name)


def test_results_are_identical_at_any_concurrency(experts_routers: dict[str, Path], tmp_path: Path) -> None:
    rows = []
    for concurrency in (1, 16):
        config = EvalConfig.for_id("Conductor-RG-v0", pool=jittered(EXPERTS), split="test", suite_options={"size": 10}, n=30, concurrency=concurrency, seed=3)
        policies = build_policies([f"router:{kind}:{experts_routers[kind]}" for kind in KINDS], pool=config.setup.pool)
        evaluate(config, policies, str(tmp_path / str(concurrency)))
        rows.append(rows_without_clock(tmp_path / str(concurrency)))
    assert len(rows[0]) == 60 and rows[0] == rows[1]


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("twins")
    data = routers_data(TWINS, folder / "data", "--env-option", "reward=cost_aware", "--env-option", "price_weight=1", n=12)
    return {"data": data, **{kind: train(kind, data, folder / kind) for kind in KINDS}, "knn-priced": train("knn", data, folder / "knn-priced", "--price-weight", "1")}


def test_the_price_weight_sends_tied_questions_to_the_cheaper_worker(twins: dict[str, Path], tmp_path: Path) -> None:
    knn = f"router:knn:{twins['knn']}"
    records = evaluate_cli(tmp_path / "free", TWINS, knn, n=12, extra=("--env-option", "reward=cost_aware", "--env-option", "price_weight=1"))
    assert {tuple(routed_to(r)) for r in records} == {("premium",)}  # scores tie: the first worker
    priced = [knn, f"router:mlp:{twins['mlp']}"]
    records = evaluate_cli(
        tmp_path / "priced",
        TWINS,
        *priced,
        f"router:knn:{twins['knn-priced']}",
        n=12,
        extra=("--env-option", "reward=cost_aware", "--env-option", "price_weight=1", "--policy-option", "price_weight=1"),
    )
    assert {tuple(routed_to(r)) for r in records} == {("budget",)}
    assert all(r["reward"] == pytest.approx(0.99) for r in records)


def test_kind_trained_on_reward_routes_by_the_envs_cost_aware_reward(twins: dict[str, Path], tmp_path: Path) -> None:
    folder = train("knn", twins["data"], tmp_path / "knn-reward", "--target", "reward")
    assert json.loads((folder / "router.json").read_text())["target"] == "reward"
    records = evaluate_cli(tmp_path / "eval", TWINS, f"router:knn:{folder}", n=12, extra=("--env-option", "reward=cost_aware", "--env-option", "price_weight=1"))
    assert {tuple(routed_to(r)) for r in records} == {("budget",)}


def test_conductor_env_eval_plays_routers_in_a_fresh_process_offline(experts_routers: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "eval"
    args = ["eval", "--env", "Conductor-RG-v0", "--pool", EXPERTS, "--split", "test", "--n", "12", "--out", str(out), *SUITE]
    for kind in KINDS:
        args += ["--policy", f"router:{kind}:{experts_routers[kind]}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "conductor_env.cli", *args], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"router:knn:{experts_routers['knn']}" in done.stdout
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 24 and all(routed_to(r) == [EXPERT_OF[r["domain"]]] for r in records)
