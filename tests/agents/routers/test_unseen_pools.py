"""Routers keyed by description on pools they never saw: trained on draws of the generated
training family, played on held-out draws (other names, phrasings and skill profiles)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest
from conftest import run

from conductor_env.agents.routers import UNROUTABLE, load_router
from conductor_env.agents.routers.checkpoint import CONFIG_NAME, CheckpointError, RouterCheckpoint
from conductor_env.agents.training.routers.pairs import read_pairs
from conductor_env.agents.training.routers.table import TableError, read_table
from conductor_env.evaluation.expected import read_rows, summary

#: The orchestrate recipes' env (docs/ORCHESTRATION.md), with names (and so descriptions) shown.
ENV = ["--env-option", "reward=cost_aware", "--env-option", "price_weight=1.0", "--env-option", "max_steps=3", "--env-option", "show_names=true"]
#: Two problems per dataset: the first 12 of a split cover the six datasets (three domains).
SUITE = ["--suite-option", "size=2"]
TRAIN_POOLS = 10
HELDOUT = ("generated-heldout#0", "generated-heldout#1")


@pytest.fixture(scope="module")
def family_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("family-data")
    run("routers", "data", "--env", "Conductor-RG-v0", "--pool", "generated", "--pools", str(TRAIN_POOLS), "--n", "12", "--out", str(out), *SUITE, *ENV)
    return out


@pytest.fixture(scope="module")
def described(family_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("described-routers")
    extra = {"knn": [], "mlp": [], "routerdc": ["--param", "steps=150"]}
    for kind, params in extra.items():
        run("train", "router", "--kind", kind, "--workers", "description", "--price-weight", "1", "--data", str(family_data), "--out", str(folder / kind), *params)
    return {kind: folder / kind for kind in extra}


def evaluate(pool: str, out: Path, *policies: str, concurrency: int = 8) -> list[dict]:
    args = [arg for policy in policies for arg in ("--policy", policy)]
    run("eval", "--env", "Conductor-RG-v0", "--pool", pool, "--split", "test", "--n", "12", "--concurrency", str(concurrency), "--out", str(out), *SUITE, *ENV, *args)
    return read_rows(out / "results.jsonl")


def test_the_table_spans_the_draws_with_each_rows_descriptions(family_data: Path) -> None:
    rows = [json.loads(line) for line in (family_data / "router_data.jsonl").read_text().splitlines()]
    assert {r["pool"] for r in rows} == {f"generated#{k}" for k in range(TRAIN_POOLS)}
    assert all(set(r["descriptions"]) == set(r["scores"]) and all(r["descriptions"].values()) for r in rows)
    pairs = read_pairs(family_data)
    assert pairs.rows == len(rows) and len(pairs.pair_row) == sum(len(r["scores"]) for r in rows)
    with pytest.raises(TableError, match="--workers description"):
        read_table(family_data)  # a name-keyed router cannot fit a table whose workers change row by row


def test_description_keyed_routers_beat_random_on_held_out_pools(described: dict[str, Path], tmp_path: Path) -> None:
    policies = [f"router:{kind}:{folder}" for kind, folder in described.items()]
    means: dict[str, list[float]] = {}
    for pool in HELDOUT:
        rows = evaluate(pool, tmp_path / pool, *policies, "random")
        assert not any(str(r.get("action", "")).startswith(UNROUTABLE) for r in rows)
        for policy, figures in summary(rows, pool=pool).items():
            means.setdefault(policy.split(":")[1] if policy.startswith("router:") else policy, []).append(figures["expected_reward"])
    random = sum(means["random"]) / len(HELDOUT)
    # Control: the knn and mlp routers read the descriptions well enough to beat a random workflow.
    for kind in ("knn", "mlp"):
        assert sum(means[kind]) / len(HELDOUT) > random, (kind, means)


def test_a_name_keyed_router_refuses_the_unseen_pool(experts_routers: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conductor_env.cli import main

    with pytest.raises(CheckpointError, match="trained on workers"):
        load_router("knn", experts_routers["knn"], pool=HELDOUT[0])
    args = ["eval", "--env", "Conductor-RG-v0", "--pool", HELDOUT[0], "--n", "2", "--out", str(tmp_path / "eval"), *SUITE, *ENV]
    assert main([*args, "--policy", f"router:knn:{experts_routers['knn']}"]) == 2
    assert "unknown to the router ['gneiss', 'pyrite', 'shale', 'slate']" in capsys.readouterr().err


def test_same_rows_at_concurrency_1_and_16(described: dict[str, Path], tmp_path: Path) -> None:
    policy = f"router:mlp:{described['mlp']}"
    one = evaluate(HELDOUT[0], tmp_path / "one", policy, concurrency=1)
    many = evaluate(HELDOUT[0], tmp_path / "many", policy, concurrency=16)
    key = lambda r: (r["problem_id"], r["action"], r["reward"])  # noqa: E731
    assert sorted(map(key, one)) == sorted(map(key, many))


def test_workers_without_descriptions_are_refused_not_guessed(described: dict[str, Path], tmp_path: Path) -> None:
    pool = tmp_path / "bare.toml"
    workers = "".join(f'\n[[workers]]\nid = "w{i}"\nskill = {{ default = 0.5 }}\n' for i in range(3))
    pool.write_text(f'name = "bare"\n[defaults]\nbackend = "simulated"\nlatency_s = 0.0\nprice_per_call = 0.01\n{workers}')
    with pytest.raises(CheckpointError, match="no description"):
        load_router("knn", described["knn"], pool=str(pool))
    router = load_router("knn", described["knn"])  # no pool given: each observation is checked
    bare = gym.make("Conductor-RG-v0", pool=str(pool), show_names=True, suite_options={"size": 2})
    listed = gym.make("Conductor-RG-v0", pool=HELDOUT[1], show_names=True, suite_options={"size": 2})
    (refused,), (routed,) = router._actions([bare.reset(seed=0)[0]]), router._actions([listed.reset(seed=0)[0]])
    assert refused.startswith(UNROUTABLE) and "has no description" in refused
    assert not routed.startswith(UNROUTABLE)
    # Control: the same router plays a pool whose workers have descriptions.
    assert not any(str(r["action"]).startswith(UNROUTABLE) for r in evaluate(HELDOUT[1], tmp_path / "control", f"router:knn:{described['knn']}"))


@pytest.mark.parametrize("value", ["descripton", 1, None, ["description"]])
def test_a_corrupted_worker_key_is_a_clear_error(described: dict[str, Path], tmp_path: Path, value: object) -> None:
    folder = tmp_path / "router"
    RouterCheckpoint.load(described["knn"]).save(folder)
    config = json.loads((folder / CONFIG_NAME).read_text())
    config["worker_key"] = value
    (folder / CONFIG_NAME).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="worker_key must be one of"):
        load_router("knn", folder)


def test_kinds_without_a_description_mode_refuse_one(described: dict[str, Path], family_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conductor_env.cli import main

    assert main(["train", "router", "--kind", "smoothie", "--workers", "description", "--data", str(family_data), "--out", str(tmp_path / "s")]) != 0
    assert "no description-keyed mode" in capsys.readouterr().err
    checkpoint = RouterCheckpoint.load(described["knn"])
    with pytest.raises(CheckpointError, match="no description-keyed mode"):
        load_router("smoothie", _as_kind(checkpoint, "smoothie", tmp_path / "k"))


def _as_kind(checkpoint: RouterCheckpoint, kind: str, folder: Path) -> Path:
    import dataclasses

    return dataclasses.replace(checkpoint, kind=kind).save(folder)


def test_bad_family_arguments_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conductor_env.cli import main

    base = ["routers", "data", "--env", "Conductor-RG-v0", "--n", "2", "--out", str(tmp_path / "x"), *SUITE]
    assert main([*base, "--pool", "generated"]) == 2
    assert "--pools" in capsys.readouterr().err  # a family draws a new pool every episode
    assert main([*base, "--pool", "generated", "--pools", "0"]) == 2
    assert "--pools must be at least 1" in capsys.readouterr().err
    assert main([*base, "--pool", "generated#1", "--pools", "2"]) == 2
    assert "without #k" in capsys.readouterr().err
    assert main(["train", "router", "--kind", "masrouter", "--env", "Conductor-RG-v0", "--pool", "generated", "--out", str(tmp_path / "m")]) == 2
    assert "train with --workers description" in capsys.readouterr().err  # a family's workers cannot be known by name
