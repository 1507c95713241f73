"""Issue 57, item 4, through ``sandbox="ray"``: the honest controls of
tests/sandboxes/test_honest_controls.py pass and its hostile programs are still refused, as in process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite
from conductor_env.tasks.suites.humaneval import HumanEvalSuite

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandboxes"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"))
from test_honest_controls import (  # noqa: E402 - the in-process battery
    BCB_SAMPLE,
    BIGCODEBENCH_ANSWERS,
    FUNCTIONAL_PROGRAMS,
    HOSTILE_PROGRAMS,
    HUMANEVAL_ANSWERS,
    LIMITS,
    STDIN_PROGRAMS,
    importable,
)


def test_honest_controls_pass_and_hostile_rewrites_are_refused_through_ray(hosts):
    if not importable(hosts, "numpy"):
        pytest.skip("numpy is not installed in the local sandbox (scripts/setup_sandbox.sh installs it)")
    failed = []
    for name, (program, stdin, expected) in STDIN_PROGRAMS.items():
        report = hosts.run_tests(program, [{"input": stdin, "output": expected}], kind="stdin", limits=LIMITS)
        if not report.passed:
            failed.append(("stdin", name, report))
    for name, (program, args, expected) in FUNCTIONAL_PROGRAMS.items():
        test = {"input": "\n".join(json.dumps(arg) for arg in args), "output": json.dumps(expected)}
        report = hosts.run_tests(program, [test], kind="functional", func_name="solve", limits=LIMITS)
        if not report.passed:
            failed.append(("functional", name, report))
    for name, (program, expected) in HOSTILE_PROGRAMS.items():
        report = hosts.run_tests(program, [{"input": "", "output": expected}], limits=LIMITS)
        if not report.passed:  # each prints "refused" and the untouched answer
            failed.append(("hostile", name, report))
    humaneval = HumanEvalSuite(sandbox=hosts, limits=LIMITS)
    problems = {problem.id: problem for problem in humaneval.problems()}
    for task_id, answer in HUMANEVAL_ANSWERS.items():
        score = humaneval.verify(problems[task_id], f"```python\n{answer}```\n")
        if not score.correct:
            failed.append(("humaneval", task_id, score))
    bigcodebench = BigCodeBenchSuite(data_files=str(BCB_SAMPLE), sandbox=hosts, limits=LIMITS)
    for name, answer in BIGCODEBENCH_ANSWERS.items():
        score = bigcodebench.verify(bigcodebench.problems()[0], f"```python\n{answer}```")
        if not score.correct:
            failed.append(("bigcodebench", name, score))
    assert not failed, failed
