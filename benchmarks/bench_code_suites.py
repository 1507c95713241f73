"""Costs of the code suites' grading choices, each against its baseline in the same run.

  (a) LiveCodeBench early stop: a wrong program that times out on every test, graded with
      ``early_stop=True`` (batches of doubling size, stop after the first failing batch; what
      LiveCodeBench's grader does) against ``early_stop=False`` (every test in one job).
  (b) The same two modes on a correct program (every batch runs): the overhead of batching.
  (c) Private-test decoding: the opcode-whitelist decoder against plain ``pickle.loads``
      (unsafe: shown only as the speed baseline) on a large LiveCodeBench-style payload.
  (d) HumanEval: the 164 canonical solutions verified from 4 threads, per sandbox backend
      (``local`` is the baseline; ``docker`` when its daemon and image are there).

Usage: python benchmarks/bench_code_suites.py [--tests 16] [--payload-mb 64] [--json PATH]
"""

from __future__ import annotations

import argparse
import base64
import json
import pickle
import sys
import tempfile
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conductor_env.sandboxes import docker_available, get_sandbox
from conductor_env.tasks.lcb_private_tests import decode_private_tests
from conductor_env.tasks.suites.humaneval import HumanEvalSuite
from conductor_env.tasks.suites.livecodebench import LiveCodeBenchSuite

SUM_RIGHT = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
SUM_TLE = "```python\nwhile True:\n    pass\n```"


def compress(tests: list[dict[str, str]]) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests), protocol=4))).decode("ascii")


def sum_problem_file(directory: Path, tests: int) -> Path:
    """One stdin problem (print A+B) with ``tests`` tests, in the hub schema."""
    cases = [{"input": f"{i} {i * 7}\n", "output": f"{i * 8}\n", "testtype": "stdin"} for i in range(tests)]
    row = {
        "question_title": "Sum",
        "question_content": "Print A+B.",
        "platform": "atcoder",
        "question_id": "bench_sum",
        "contest_id": "bench",
        "contest_date": "2024-01-01T00:00:00",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": json.dumps(cases[:1]),
        "private_test_cases": compress(cases[1:]),
        "metadata": "{}",
    }
    path = directory / "bench_sum.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


def timed(function, repeat: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        function()
    return (time.perf_counter() - start) / repeat


def bench_early_stop(tests: int) -> dict:
    sandbox = get_sandbox("local")
    with tempfile.TemporaryDirectory() as folder:
        path = sum_problem_file(Path(folder), tests)
        limits = {"wall_s": 1.0, "cpu_s": 1}
        batched = LiveCodeBenchSuite(data_files=str(path), sandbox=sandbox, limits=limits)
        one_job = LiveCodeBenchSuite(data_files=str(path), sandbox=sandbox, limits=limits, early_stop=False)
        problem = batched.problems()[0]
        batched.verify(problem, SUM_RIGHT)  # warm the sandbox and the private-test cache
        one_job.verify(problem, SUM_RIGHT)
        wrong_all = timed(lambda: one_job.verify(problem, SUM_TLE))
        wrong_batched = timed(lambda: batched.verify(problem, SUM_TLE))
        right_all = timed(lambda: one_job.verify(problem, SUM_RIGHT), repeat=5)
        right_batched = timed(lambda: batched.verify(problem, SUM_RIGHT), repeat=5)
    sandbox.close()
    return {
        "tests": tests,
        "tle_program_all_tests_s": round(wrong_all, 3),
        "tle_program_early_stop_s": round(wrong_batched, 3),
        "tle_speedup": round(wrong_all / wrong_batched, 1),
        "right_program_one_job_s": round(right_all, 4),
        "right_program_batched_s": round(right_batched, 4),
        "right_batching_overhead_ratio": round(right_batched / right_all, 2),
    }


def bench_decoding(payload_mb: int) -> dict:
    count = max(1, payload_mb * 2**20 // 9_500)  # about 9.5 kB of JSON per test
    tests = [{"input": " ".join(str((i * 7919 + j) % 100_003) for j in range(1_500)), "output": str(i), "testtype": "stdin"} for i in range(count)]
    payload = compress(tests)
    raw_size = len(json.dumps(tests))
    unsafe = timed(lambda: json.loads(pickle.loads(zlib.decompress(base64.b64decode(payload)))), repeat=3)
    safe = timed(lambda: decode_private_tests(payload), repeat=3)
    return {
        "decoded_mb": round(raw_size / 2**20, 1),
        "encoded_mb": round(len(payload) / 2**20, 1),
        "pickle_loads_s": round(unsafe, 3),
        "whitelist_decoder_s": round(safe, 3),
        "ratio": round(safe / unsafe, 2),
    }


def bench_humaneval(backend: str) -> dict:
    sandbox = get_sandbox(backend)
    suite = HumanEvalSuite(sandbox=sandbox)
    problems = suite.problems()
    suite.verify(problems[0], suite.reference_response(problems[0]))  # start the workers
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=4) as pool:
        scores = list(pool.map(lambda p: suite.verify(p, suite.reference_response(p)), problems))
    elapsed = time.perf_counter() - start
    sandbox.close()
    return {"backend": backend, "passed": sum(s.correct for s in scores), "total_s": round(elapsed, 2), "per_problem_ms": round(1000 * elapsed / len(problems), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=16, help="tests of the synthetic LiveCodeBench problem")
    parser.add_argument("--payload-mb", type=int, default=64, help="decoded size of the synthetic private tests")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    results = {"early_stop": bench_early_stop(args.tests), "decoding": bench_decoding(args.payload_mb)}
    humaneval = [bench_humaneval("local")]
    why_not = docker_available()
    if why_not is None:
        humaneval.append(bench_humaneval("docker"))
        humaneval[-1]["ratio_to_local"] = round(humaneval[-1]["total_s"] / humaneval[0]["total_s"], 2)
    else:
        print(f"docker skipped: {why_not}", file=sys.stderr)
    results["humaneval"] = humaneval
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
