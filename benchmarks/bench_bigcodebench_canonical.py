"""BigCodeBench's canonical solutions (``code_prompt + canonical_solution``) against their tests, in the image.

Every task is graded by Conductor-BigCodeBench-v0's own verifier (kind ``unittest``, the
BigCodeBench image, 240 s per task as BigCodeBench's ``TIMEOUT_LIMIT``); the figure is the share
that passes, and failures are grouped by cause. Needs the image
(``sudo conductor-env sandbox build --variant bigcodebench``) and the rows (a jsonl / jsonl.gz
in the HF schema; never copied into the project).

    nice -n 10 python benchmarks/bench_bigcodebench_canonical.py \\
        --data /work/shared/data/bigcodebench_v0.1.0_hf.jsonl.gz --concurrency 2

With ``--out PATH``, writes the per-task verdicts and reasons there (the recorded run is
benchmarks/results/bigcodebench_canonical.json).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conductor_env.suite import VerifierError
from conductor_env.tasks.suites.bigcodebench import DEFAULT_LIMITS, BigCodeBenchSuite, default_sandbox

#: Failure causes, first match wins (patterns over the verifier's reason).
CAUSES = (
    ("infrastructure (not scored)", re.compile(r"^infrastructure: ")),
    ("missing module", re.compile(r"ModuleNotFoundError|No module named|ImportError")),
    ("missing data (nltk corpora)", re.compile(r"LookupError|nltk_data")),
    ("network", re.compile(r"name resolution|Network is unreachable|ConnectionError|URLError|Max retries|"
                           r"gaierror|getaddrinfo|Connection refused", re.I)),
    ("timeout", re.compile(r"\btimeout\b|time limit", re.I)),
    ("watch (reported as tampering)", re.compile(r"tampered|Tampering|the program changed|changed during|left threads|"
                                                r"registered a weakref|installed a handler|replaced sys\.")),
    ("sandbox policy", re.compile(r"not available in the sandbox")),
    ("memory", re.compile(r"MemoryError|\bmemory\b", re.I)),
    ("library version difference", re.compile(r"AssertionError|AttributeError|TypeError|ValueError|KeyError|"
                                              r"FutureWarning|DeprecationWarning|unexpected keyword")),
)  # fmt: skip


def cause_of(reason: str) -> str:
    """The failure group of a verifier's reason."""
    for name, pattern in CAUSES:
        if pattern.search(reason):
            return name
    return "other"


def main(argv: list[str] | None = None) -> int:
    """Runs the canonical solutions and prints the pass share and the failure groups."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="/work/shared/data/bigcodebench_v0.1.0_hf.jsonl.gz")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--out", default=None, help="also write the per-task results here (e.g. benchmarks/results/)")
    args = parser.parse_args(argv)
    sandbox = default_sandbox(pool_size=args.concurrency)
    suite = BigCodeBenchSuite(data_files=args.data, sandbox=sandbox, limits=DEFAULT_LIMITS)
    problems = suite.problems()[: args.limit]
    started = time.monotonic()

    def grade(problem):
        try:
            score = suite.verify(problem, suite.reference_response(problem) or "")
        except VerifierError as error:  # the sandbox failed, not the solution: counted apart
            return problem.id, False, f"infrastructure: {error}"
        return problem.id, score.correct, score.reason

    rows = []
    try:
        with ThreadPoolExecutor(args.concurrency) as pool:
            for number, row in enumerate(pool.map(grade, problems), start=1):
                rows.append(row)
                if number % 50 == 0:
                    passed = sum(ok for _id, ok, _reason in rows)
                    print(f"{number}/{len(problems)}: {passed} passed ({time.monotonic() - started:.0f}s)", flush=True)
    finally:
        sandbox.close()
    failures = [(task, reason, cause_of(reason)) for task, ok, reason in rows if not ok]
    groups = collections.Counter(cause for _task, _reason, cause in failures)
    passed = len(rows) - len(failures)
    summary = {
        "tasks": len(rows),
        "passed": passed,
        "pass_share": round(passed / max(1, len(rows)), 4),
        "failures_by_cause": dict(groups.most_common()),
        "wall_s": round(time.monotonic() - started, 1),
        "limits": {"wall_s": DEFAULT_LIMITS.wall_s, "memory_mb": DEFAULT_LIMITS.memory_mb},
        "concurrency": args.concurrency,
        "failures": [{"task_id": task, "cause": cause, "reason": reason} for task, reason, cause in failures],
    }
    if args.out is not None:
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(f"passed {passed}/{len(rows)} ({100 * summary['pass_share']:.1f}%) in {summary['wall_s']}s")
    for cause, count in groups.most_common():
        print(f"  {cause}: {count}")
        for task, reason, _cause in [f for f in failures if f[2] == cause][:5]:
            print(f"    {task}: {reason[:160]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
