"""Seconds per BigCodeBench problem with the importable runner: the cost of the unittest watch.

Grades the reference solutions of the fixture tasks (tests/fixtures/bigcodebench) ``--rounds``
times: the stdlib tasks on the local backend and the pandas task on the BigCodeBench image. Put
an older checkout's package on ``PYTHONPATH`` (assembled as the editable install does) and run
both in one session, alternating, to compare runners. Writes nothing.

Usage: python benchmarks/bench_bigcodebench_watch.py [--rounds 8]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import conductor_env
from conductor_env.sandboxes import Limits, LocalSandbox
from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite, default_sandbox

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "bigcodebench" / "bcb_sample.jsonl"
LIMITS = Limits(wall_s=60.0, memory_mb=4096, processes=64)


def seconds_per_problem(sandbox, tasks: tuple[int, ...], rounds: int) -> float:
    """Mean seconds per verification of the reference solutions of ``tasks``."""
    suite = BigCodeBenchSuite(data_files=str(SAMPLE), sandbox=sandbox, limits=LIMITS)
    problems = [suite.problems()[index] for index in tasks]
    for problem in problems:  # warm the pool
        assert suite.verify(problem, suite.reference_response(problem)).correct
    started, count = time.perf_counter(), 0
    for _ in range(rounds):
        for problem in problems:
            assert suite.verify(problem, suite.reference_response(problem)).correct
            count += 1
    return (time.perf_counter() - started) / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    print(f"conductor_env from {Path(conductor_env.__file__).parent}")
    for label, make, tasks in (
        ("stdlib tasks, local backend", lambda: LocalSandbox(pool_size=1, limits=LIMITS), (0, 1)),
        ("pandas task, BigCodeBench image", lambda: default_sandbox(pool_size=1), (2,)),
    ):
        sandbox = make()
        try:
            print(f"{label}: {seconds_per_problem(sandbox, tasks, args.rounds) * 1000:.0f} ms per problem")
        finally:
            sandbox.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
