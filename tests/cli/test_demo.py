"""`conductor-env demo` end to end: local Gemma workers, HumanEval graded in the sandbox, report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conductor_env.cli.demo import DEMO_POLICIES, ORCHESTRA_BASELINES, ORCHESTRA_CONDUCTOR
from conductor_env.cli.demo_routers import DEMO_ROUTER_KINDS, router_verdict

pytestmark = pytest.mark.slow


def demo(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("conductor-env")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "conductor_env.cli"]
    # One problem and short replies keep the test small; the flow is the demo's own.
    args = ["demo", "--out", str(out), "--n", "1", "--worker-max-tokens", "24", "--orchestra-n", "6", *extra]
    return subprocess.run(command + args, capture_output=True, text=True, timeout=1200)


def test_demo_compares_the_baselines_and_writes_plot_and_viewer(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = demo(out)
    assert result.returncode == 0, result.stderr[-3000:]
    for policy in DEMO_POLICIES:
        assert policy in result.stdout
    assert f"plot:   {out / 'accuracy_vs_cost.png'}" in result.stdout
    assert f"viewer: {out / 'report.html'}" in result.stdout
    assert (out / "accuracy_vs_cost.png").is_file() and (out / "report.html").is_file()

    assert f"viewer: {out / 'orchestra' / 'report.html'}" in result.stdout
    assert (out / "orchestra" / "accuracy_vs_cost.png").is_file()
    orchestra = [json.loads(line) for line in (out / "orchestra" / "results.jsonl").read_text().splitlines()]
    routers = [f"router:{kind}:{out / 'orchestra' / 'routers' / kind}" for kind in DEMO_ROUTER_KINDS]
    assert sorted({r["policy"] for r in orchestra}) == sorted([ORCHESTRA_CONDUCTOR, *routers, *ORCHESTRA_BASELINES])
    assert all(r["parse_error"] is None for r in orchestra if r["policy"] in routers)  # the routers, trained here, route every question
    assert "beats every learned router here" in result.stdout or "a learned router beats the trained Conductor here" in result.stdout
    trained = [r for r in orchestra if r["policy"] == ORCHESTRA_CONDUCTOR]
    assert len(trained) == 6 and all(r["infra_error"] is None for r in trained)
    assert sum(r["parse_error"] is None for r in trained) >= 5  # the shipped Conductor writes valid workflows
    assert {r["domain"] for r in trained} == {"math", "language", "reasoning"}

    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["policy"] for r in records) == sorted(DEMO_POLICIES)
    for record in records:
        assert record["env_id"] == "Conductor-HumanEval-v0" and record["pool"] == "local"
        assert record["infra_error"] is None, record["infra_error"]  # the sandbox graded every answer
        assert record["parse_error"] is None  # baselines always write valid workflows
        assert all(step["completion_tokens"] > 0 for step in record["trace"])  # a real model answered
        assert set(record["worker_map"].values()) <= {"gemma-greedy", "gemma-warm", "gemma-hot"}

    again = demo(out)  # a second run reuses the finished episodes
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resuming: {len(records)} episode(s) already in the results file, 0 to run" in again.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == len(records)
    assert len((out / "orchestra" / "results.jsonl").read_text().splitlines()) == len(orchestra)


def test_the_verdict_names_a_router_that_beats_the_conductor() -> None:
    assert router_verdict({"c": 0.8, "router:knn:/x": 0.85, "router:mlp:/y": 0.7, "single:0": 0.9}, "c").startswith("a learned router beats the trained Conductor here: knn 0.850")
    assert router_verdict({"c": 0.9, "router:knn:/x": 0.85}, "c").startswith("the trained Conductor (0.900) beats every learned router")
    assert router_verdict({"c": 0.9, "single:0": 0.95}, "c") == ""
