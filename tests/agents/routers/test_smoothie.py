"""The Smoothie router: label-free (the trained router ignores the score and reward columns), its
triplet estimate equals the released code's, it routes to the experts when wrong answers differ
(the divergent test backend), and cannot when every wrong answer is the same text (the simulated
worker's), and it plays from ``conductor-env eval`` identically at any concurrency."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import EXPERT_OF, EXPERTS, TWINS, routers_data, run, train
from test_routers import evaluate_cli, jittered, routed_to

from conductor_env.agents.routers.checkpoint import RouterCheckpoint
from conductor_env.agents.routers.smoothie import triplet_weights
from conductor_env.agents.training.routers.table import TableError, read_table
from conductor_env.cli import main
from conductor_env.evaluation import EvalConfig, evaluate
from conductor_env.evaluation.setup import build_policies
from conductor_env.workers.pool import register_backend
from fixtures.results_rows import rows_without_clock

register_backend("divergent", "divergent:DivergentWorker")
DIVERGENT = str(Path(__file__).parent / "pools" / "divergent-experts.toml")


@pytest.fixture(scope="module")
def divergent(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("smoothie")
    data = routers_data(DIVERGENT, folder / "data", "--suite-option", "size=20", n=120)
    return {"data": data, "local": train("smoothie", data, folder / "local"), "global": train("smoothie", data, folder / "global", "--param", "variant=global")}


def released_fit(lambda_arr: np.ndarray) -> np.ndarray:
    """HazyResearch/smoothie src/model.py Smoothie.fit, as released (the reference)."""
    n_samples, n_voters, dim = lambda_arr.shape
    diff = np.zeros(n_voters)
    for i in range(n_voters):
        other_idxs = np.delete(np.arange(n_voters), i)
        rows, cols = np.triu_indices(len(other_idxs), k=1)
        pairs = np.vstack((other_idxs[rows], other_idxs[cols])).T
        index_diffs = []
        for j, k in pairs:
            d = lambda a, b: (np.linalg.norm(lambda_arr[:, a, :] - lambda_arr[:, b, :], axis=1) ** 2).mean()  # noqa: E731
            index_diffs.append(0.5 * (d(i, j) + d(i, k) - d(j, k)))
        diff[i] = np.mean(index_diffs)
    theta = dim / (2 * diff)
    return theta / theta.sum()


@pytest.mark.parametrize("voters", [3, 5])
def test_the_triplet_estimate_matches_the_released_code(voters: int) -> None:
    rng = np.random.default_rng(voters)
    truth = rng.normal(size=(40, 1, 16))
    noise = rng.normal(size=(40, voters, 16)) * np.linspace(0.2, 2.0, voters)[None, :, None]
    answers = truth + noise
    sq = ((answers[:, :, None, :] - answers[:, None, :, :]) ** 2).sum(-1).mean(0)
    ours = triplet_weights(sq, 16)
    assert np.allclose(ours, released_fit(answers), atol=1e-6)
    assert ours.argmax() == 0 and ours.argmin() == voters - 1  # least noise, highest weight


def test_smoothie_routes_to_the_experts_when_wrong_answers_differ(divergent: dict[str, Path], tmp_path: Path) -> None:
    specs = [f"router:smoothie:{divergent['local']}", f"router:smoothie:{divergent['global']}"]
    records = evaluate_cli(tmp_path / "eval", DIVERGENT, *specs)
    local = [r for r in records if r["policy"] == specs[0]]
    assert len(local) == 60
    assert sum(routed_to(r) == [EXPERT_OF[r["domain"]]] for r in local) >= 54
    # The global variant has one set of weights: every question goes to the same worker.
    assert len({tuple(routed_to(r)) for r in records if r["policy"] == specs[1]}) == 1


def test_with_one_wrong_answer_for_all_smoothie_takes_the_agreeing_wrong_workers(experts_data: Path, tmp_path: Path) -> None:
    # The simulated worker's wrong answers are all the suite's one wrong response: the two
    # non-experts agree whenever both are wrong, so they look best. The limitation, documented.
    assert len({a for row in read_table(experts_data).answers or () for a in row if "unknown" in a}) == 1
    folder = train("smoothie", experts_data, tmp_path / "smoothie")
    records = evaluate_cli(tmp_path / "eval", EXPERTS, f"router:smoothie:{folder}")
    assert sum(routed_to(r) == [EXPERT_OF[r["domain"]]] for r in records) <= 6


def shuffled_labels(data: Path, out: Path) -> Path:
    rows = [json.loads(line) for line in (data / "router_data.jsonl").read_text().splitlines()]
    rng = random.Random(0)
    for key in ("scores", "rewards", "correct"):
        column = [row[key] for row in rows]
        rng.shuffle(column)
        for row, value in zip(rows, column):
            row[key] = {w: 1.0 - v for w, v in value.items()}
    out.mkdir()
    (out / "router_data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (out / "router_data.json").write_text((data / "router_data.json").read_text())
    return out


def test_smoothie_is_label_free_shuffled_scores_train_the_same_router(divergent: dict[str, Path], tmp_path: Path) -> None:
    other = train("smoothie", shuffled_labels(divergent["data"], tmp_path / "shuffled"), tmp_path / "router")
    assert read_table(tmp_path / "shuffled").scores.tolist() != read_table(divergent["data"]).scores.tolist()
    assert (other / "weights.safetensors").read_bytes() == (divergent["local"] / "weights.safetensors").read_bytes()
    assert RouterCheckpoint.load(other).params == RouterCheckpoint.load(divergent["local"]).params
    # The honest control: the kNN router reads the labels, so it does change.
    knn = [train("knn", d, tmp_path / f"knn{i}") for i, d in enumerate((divergent["data"], tmp_path / "shuffled"))]
    assert (knn[0] / "weights.safetensors").read_bytes() != (knn[1] / "weights.safetensors").read_bytes()


def test_a_table_without_answers_or_with_two_workers_is_refused_clearly(divergent: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [json.loads(line) for line in (divergent["data"] / "router_data.jsonl").read_text().splitlines()]
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "router_data.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "answers"}) + "\n" for r in rows))
    assert main(["train", "router", "--kind", "smoothie", "--data", str(tmp_path / "none"), "--out", str(tmp_path / "r")]) != 0
    assert "records none" in capsys.readouterr().err
    (tmp_path / "some").mkdir()
    (tmp_path / "some" / "router_data.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "answers" or i % 2}) + "\n" for i, r in enumerate(rows)))
    with pytest.raises(TableError, match="answers on every row or on none"):
        read_table(tmp_path / "some")
    rows[3]["answers"]["wordsmith"] = 7
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "router_data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(TableError, match="line 4"):
        read_table(tmp_path / "bad")
    twins = routers_data(TWINS, tmp_path / "twins", n=6)
    assert main(["train", "router", "--kind", "smoothie", "--data", str(twins), "--out", str(tmp_path / "r2")]) != 0
    assert "at least 3 workers" in capsys.readouterr().err


def test_smoothie_results_are_identical_at_any_concurrency(divergent: dict[str, Path], tmp_path: Path) -> None:
    rows = []
    for concurrency in (1, 16):
        config = EvalConfig.for_id("Conductor-RG-v0", pool=jittered(EXPERTS), split="test", suite_options={"size": 10}, n=30, concurrency=concurrency, seed=3)
        evaluate(config, build_policies([f"router:smoothie:{divergent['local']}"], pool=config.setup.pool), str(tmp_path / str(concurrency)))
        rows.append(rows_without_clock(tmp_path / str(concurrency)))
    assert len(rows[0]) == 30 and rows[0] == rows[1]


def test_the_cli_trains_with_params(divergent: dict[str, Path], tmp_path: Path) -> None:
    run("train", "router", "--kind", "smoothie", "--data", str(divergent["data"]), "--out", str(tmp_path / "k5"), "--param", "k=5")
    params = RouterCheckpoint.load(tmp_path / "k5").params
    assert params["k"] == 5 and params["variant"] == "local" and params["worker_calls_per_question"] == 3
    assert main(["train", "router", "--kind", "smoothie", "--data", str(divergent["data"]), "--out", str(tmp_path / "x"), "--param", "variant=median"]) != 0
