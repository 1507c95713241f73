"""``conductor-env routers data``: every worker alone on a split, as a per-question table; and reading tables."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import SUITE, routers_data

from conductor_env.agents.training.routers.table import TableError, read_table
from conductor_env.cli import main


def test_writes_one_row_per_question_with_every_workers_measures(tmp_path: Path) -> None:
    out = routers_data("orchestra-judge", tmp_path / "data", "--env-option", "reward=cost_aware", "--env-option", "price_weight=1", n=12)
    rows = [json.loads(line) for line in (out / "router_data.jsonl").read_text().splitlines()]
    episodes = [json.loads(line) for line in (out / "eval" / "results.jsonl").read_text().splitlines()]
    workers = ["flash", "solver", "checker"]
    assert len(rows) == 12 and len(episodes) == 36
    for row in rows:
        assert list(row["scores"]) == workers and row["split"] == "train" and row["pool"] == "orchestra-judge"
        for i, worker in enumerate(workers):
            (episode,) = [e for e in episodes if e["problem_id"] == row["problem_id"] and e["policy"] == f"single:{i}"]
            assert episode["trace"][0]["worker_name"] == worker
            assert (row["scores"][worker], row["rewards"][worker], row["correct"][worker]) == (episode["score"], episode["reward"], float(episode["correct"]))
            assert math.isclose(row["costs"][worker], {"flash": 0.02, "solver": 0.08, "checker": 0.02}[worker], rel_tol=1e-6)
            assert math.isclose(row["rewards"][worker], (1.0 if episode["correct"] else 0.5) - row["costs"][worker], abs_tol=1e-9)
    meta = json.loads((out / "router_data.json").read_text())
    assert meta["workers"] == workers and meta["descriptions"][1] == "strong at reasoning, costly" and meta["rows"] == 12
    assert meta["env_options"] == {"reward": "cost_aware", "price_weight": 1}
    # The table loads with datasets, and with the package's reader.
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset("json", data_files=str(out / "router_data.jsonl"), split="train")
    assert loaded.num_rows == 12 and loaded[0]["costs"]["solver"] == pytest.approx(0.08)
    table = read_table(out)
    assert table.workers == tuple(workers) and table.scores.shape == (12, 3)
    assert table.questions[3] == rows[3]["question"]


def test_is_resumable_and_grows_with_n(tmp_path: Path) -> None:
    out = routers_data("orchestra-judge", tmp_path / "data", n=6)
    first = (out / "router_data.jsonl").read_text()
    results = out / "eval" / "results.jsonl"
    lines = results.read_text().splitlines()
    routers_data("orchestra-judge", out, n=6)  # nothing to play: the table is rebuilt from the same episodes
    assert results.read_text().splitlines() == lines
    assert (out / "router_data.jsonl").read_text() == first
    routers_data("orchestra-judge", out, n=9)  # three more questions: only their episodes are played
    assert results.read_text().splitlines()[: len(lines)] == lines and len(results.read_text().splitlines()) == 27
    assert (out / "router_data.jsonl").read_text().startswith(first) and len(read_table(out).questions) == 9


def test_bad_arguments_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["routers", "data", "--env", "Conductor-RG-v0", "--out", str(tmp_path / "x"), *SUITE]
    assert main([*base, "--pool", "experts", "--env-option", "subpool_size=2"]) == 2
    assert "subpool_size" in capsys.readouterr().err
    assert main([*base, "--pool", "no-such-pool"]) == 2
    assert "no-such-pool" in capsys.readouterr().err
    assert main([*base, "--pool", "experts", "--n", "0"]) == 2
    assert "--n" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no rows"),
        ("not json\n", "line 1 is not JSON"),
        ("[1, 2]\n", "line 1 is not a JSON object"),
        ('{"scores": {"a": 1}, "rewards": {"a": 1}, "costs": {"a": 0}}\n', "line 1 has no question"),
        ('{"question": "q", "scores": {"a": 1, "b": 0}, "rewards": {"a": 1, "b": 0}, "costs": {"a": 0}}\n', "costs\\['b'\\] is None"),
        ('{"question": "q", "scores": {"a": NaN}, "rewards": {"a": 1}, "costs": {"a": 0}}\n', "not a finite number"),
        ('{"question": "q", "scores": {"a": true}, "rewards": {"a": 1}, "costs": {"a": 0}}\n', "not a finite number"),
        ('{"question": "q", "rewards": {"a": 1}, "costs": {"a": 0}}\n', "no 'scores' object"),
    ],
)
def test_a_bad_table_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "router_data.jsonl"
    path.write_text(text)
    with pytest.raises(TableError, match=message):
        read_table(path)


def test_a_hand_written_table_without_sidecar_reads(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    rows = [{"question": f"q{i}", "scores": {"x": i % 2, "y": 1}, "rewards": {"x": 0, "y": 0}, "costs": {"x": 0.1, "y": 0.2}} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = read_table(path)
    assert table.workers == ("x", "y") and table.shown_names == ("x", "y")
    assert table.scores.tolist() == [[0, 1], [1, 1], [0, 1]]
    with pytest.raises(TableError, match="no router-data table"):
        read_table(tmp_path / "missing.jsonl")
