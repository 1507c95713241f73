"""`conductor-env eval` as a user runs it: a real subprocess, its output, its exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "evaluation"


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Runs the installed `conductor-env` entry point (or the module when the script is absent)."""
    script = Path(sys.executable).with_name("conductor-env")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "conductor_env.cli"]
    environ = {k: v for k, v in os.environ.items() if k != "CONDUCTOR_TEST_UNSET_API_KEY"}
    environ.update(env or {})
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=timeout, env=environ)


def eval_args(out: Path, *extra: str, env_id: str = "Conductor-RG-v0", policy: str = "single:0", pool: str = "simulated") -> list[str]:
    return ["eval", "--env", env_id, "--policy", policy, "--pool", pool, "--n", "3", "--out", str(out), *extra]


@pytest.mark.parametrize(
    ("overrides", "extra", "expected"),
    [
        ({"env_id": "Conductor-RGG-v0"}, [], ["unknown env id 'Conductor-RGG-v0'", "did you mean Conductor-RG-v0"]),
        ({"policy": "single:one"}, [], ["bad policy spec 'single:one'", "valid forms:", "template:plan-solve-verify"]),
        ({"policy": "planner"}, [], ["bad policy spec 'planner'", "moa:<k>"]),
        ({"pool": str(FIXTURES / "broken_pool.toml")}, [], ["broken_pool.toml", "worker 'no-backend' needs a 'backend'"]),
        ({"pool": "no-such-pool"}, [], ["unknown pool 'no-such-pool'", ".toml path"]),
        ({"pool": str(FIXTURES / "keyed_pool.toml")}, [], ["$CONDUCTOR_TEST_UNSET_API_KEY", "not set", "export CONDUCTOR_TEST_UNSET_API_KEY="]),
        ({}, ["--env-option", "max_round=2"], ["unknown --env-option 'max_round'", "did you mean max_rounds"]),
        ({}, ["--suite-option", "nonsense"], ["--suite-option expects KEY=VALUE"]),
        ({}, ["--concurrency", "0"], ["must be at least 1"]),
    ],
    ids=["env-id", "policy-spec", "policy-name", "pool-file", "pool-name", "api-key", "env-option", "suite-option", "concurrency"],
)
def test_bad_arguments_give_one_clear_line_and_exit_2(tmp_path: Path, overrides: dict, extra: list, expected: list) -> None:
    out = tmp_path / "run"
    result = cli(*eval_args(out, *extra, **overrides))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("conductor-env eval: error: ")
    for fragment in expected:
        assert fragment in lines[0]
    assert "Traceback" not in result.stderr
    assert not out.exists()  # nothing was started, nothing left behind


def test_missing_api_key_is_accepted_once_set(tmp_path: Path) -> None:
    # With the variable set, the run gets past the check and the unreachable endpoint shows up
    # as infra errors per episode (not a crash): the key check is what failed before.
    pytest.importorskip("conductor_env.workers.openai_backend")
    out = tmp_path / "run"
    result = cli(
        *eval_args(out, "--n", "1", pool=str(FIXTURES / "keyed_pool.toml")),
        env={"CONDUCTOR_TEST_UNSET_API_KEY": "sk-test-not-a-real-key"},
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["infra_error"]
    assert "sk-test-not-a-real-key" not in (out / "results.jsonl").read_text()


def test_eval_prints_the_table_and_report_writes_plot_and_viewer(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = cli(
        "eval",
        "--env",
        "Conductor-RG-v0",
        "--policy",
        "single:0",
        "--policy",
        "template:plan-solve-verify",
        "--pool",
        "simulated",
        "--n",
        "8",
        "--concurrency",
        "4",
        "--out",
        str(out),
        "--seed",
        "3",
    )
    assert result.returncode == 0, result.stderr
    for header in ("policy", "accuracy", "95% CI", "tokens", "USD", "latency", "parse err", "infra err"):
        assert header in result.stdout
    assert "single:0" in result.stdout and "template:plan-solve-verify" in result.stdout
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 16
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["seed"] == 3 and manifest["policies"] == ["single:0", "template:plan-solve-verify"]

    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "template:plan-solve-verify" in report.stdout
    assert (out / "accuracy_vs_cost.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "report.html").stat().st_size > 1000
    assert str(out / "report.html") in report.stdout and str(out / "accuracy_vs_cost.png") in report.stdout


def test_report_of_a_folder_without_results_is_a_usage_error(tmp_path: Path) -> None:
    result = cli("report", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"conductor-env report: error: no results.jsonl in {str(tmp_path)!r}; run conductor-env eval --out {tmp_path} ... first"]


def test_a_policy_option_pool_picks_the_conductors_pool(tmp_path: Path) -> None:
    # llm:NAME looks NAME up in --policy-option pool=..., not in the workers' --pool.
    result = cli(*eval_args(tmp_path / "run", "--policy-option", "pool=simulated", policy="llm:sim-coder"))
    assert "Traceback" not in result.stderr and "multiple values" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 0, result.stderr[-2000:]
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 3
