"""Kill a real `conductor-env eval` with SIGKILL part-way, rerun it, and lose nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import conductor_env  # noqa: F401
from conductor_env.tasks import get_suite

FIXTURES = Path(__file__).parents[1] / "fixtures" / "evaluation"
N = 30
POLICIES = ("single:0", "template:plan-solve-verify")


def command(out: Path) -> list[str]:
    script = Path(sys.executable).with_name("conductor-env")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "conductor_env.cli"]
    policies = [arg for spec in POLICIES for arg in ("--policy", spec)]
    return base + [
        "eval",
        "--env",
        "Conductor-RG-v0",
        *policies,
        "--pool",
        str(FIXTURES / "slow_pool.toml"),
        "--n",
        str(N),
        "--concurrency",
        "3",
        "--seed",
        "5",
        "--out",
        str(out),
    ]


def finished_lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    return text.splitlines()[: text.count("\n")]  # only lines whose newline was written


def test_sigkill_mid_run_then_resume_keeps_every_episode_exactly_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    results = out / "results.jsonl"
    process = subprocess.Popen(command(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while len(finished_lines(results)) < 8:
            assert process.poll() is None, f"eval ended before it could be killed: {process.stderr.read() if process.stderr else ''}"
            assert time.monotonic() < deadline, "eval wrote too few results to be killed part-way"
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL

    before = finished_lines(results)
    total = N * len(POLICIES)
    assert 8 <= len(before) < total, "the kill must land part-way"
    # The worst a kill can do is cut the line being written; model that too.
    with results.open("a", encoding="utf-8") as handle:
        handle.write(before[-1][: len(before[-1]) // 2])

    rerun = subprocess.run(command(out), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"resuming: {len(before)} episode(s)" in rerun.stderr

    after = results.read_text(encoding="utf-8").splitlines()
    assert after[: len(before)] == before  # finished episodes were kept as written
    records = [json.loads(line) for line in after]  # every line is a whole record
    keys = Counter((r["policy"], r["problem_id"]) for r in records)
    assert len(records) == total and all(count == 1 for count in keys.values())
    problem_ids = [p.id for p in get_suite("rg").problems()[:N]]
    for policy in POLICIES:
        assert sorted(pid for pol, pid in keys if pol == policy) == sorted(problem_ids)
    # The resumed run's table covers the whole run, old episodes and new.
    assert f"· {total} episodes" in rerun.stdout
