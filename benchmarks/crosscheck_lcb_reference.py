"""Grades the same programs with this package and with LiveCodeBench's own grader; lists disagreements.

Needs a checkout of https://github.com/LiveCodeBench/LiveCodeBench (its
``lcb_runner/evaluation/testing_util.py`` is loaded from there at run time; nothing of it is
copied here) and numpy. LiveCodeBench's grader runs programs in its own process without a
sandbox, so each reference run happens in a fresh subprocess, and the programs graded are only
this script's own: right answers, wrong answers and edge cases (decimal tokens, tuples, exits,
``if __name__``, ``open(0)``) for the fixture problems in ``tests/fixtures/lcb`` and, when the
shared data folder is there, the real row 1873_A with its private tests.

Usage: python benchmarks/crosscheck_lcb_reference.py --lcb-repo PATH [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from conductor_env.sandboxes import get_sandbox
from conductor_env.suite import Problem
from conductor_env.tasks.suites.livecodebench import LiveCodeBenchSuite

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "tests" / "fixtures" / "lcb" / "lcb_sample.jsonl"
SHARED = Path(os.environ.get("CONDUCTOR_SHARED_DATA", HERE.parents[1] / "shared" / "data"))
KAGGLE_ROW = SHARED / "lcb_1873A_with_private_kaggle_demo.jsonl"

# Runs in a subprocess: LiveCodeBench's run_test on one program; prints whether all tests passed.
REFERENCE_RUNNER = """
import importlib.util, json, sys
sys.set_int_max_str_digits(50000)  # as LiveCodeBench's evaluation process does
spec = importlib.util.spec_from_file_location("testing_util", sys.argv[1])
testing_util = importlib.util.module_from_spec(spec)
spec.loader.exec_module(testing_util)
job = json.load(open(sys.argv[2]))
results, metadata = testing_util.run_test(job["sample"], test=job["code"], timeout=6)
passed = len(results) == job["n"] and all(r is True for r in results)
print(json.dumps({"passed": passed, "detail": str(metadata)[:200]}))
"""

MEAN = "import sys\ndata = sys.stdin.read().split()\nn = int(data[0]); v = list(map(int, data[1:1 + n]))\n"
PAIR = (
    "class Solution:\n    def pairWithTarget(self, nums: List[int], target: int) -> List[int]:\n"
    "        seen = {}\n        for j, x in enumerate(nums):\n            if target - x in seen:\n"
    "                return RESULT\n            seen[x] = j\n"
)
SUM = "a, b = map(int, input().split())\n"

CASES: list[tuple[str, str, str]] = [
    ("fixture901_a", "right", SUM + "print(a + b)"),
    ("fixture901_a", "wrong", "print(0)"),
    ("fixture901_a", "if __name__ main", "def main():\n    " + SUM + "    print(a + b)\nif __name__ == '__main__':\n    main()"),
    ("fixture901_a", "sys.exit(0) after output", "import sys\n" + SUM + "print(a + b)\nsys.exit(0)"),
    ("fixture901_a", "sys.exit(1) after output", "import sys\n" + SUM + "print(a + b)\nsys.exit(1)"),
    ("fixture901_a", "exit() after output", SUM + "print(a + b)\nexit()"),
    ("fixture901_a", "exception after output", SUM + "print(a + b)\nraise ValueError('late')"),
    ("fixture901_a", "reads sys.stdin.buffer", "import sys\na, b = map(int, sys.stdin.buffer.read().split())\nprint(a + b)"),
    ("fixture901_a", "reads open(0)", "a, b = map(int, open(0).read().split())\nprint(a + b)"),
    ("fixture901_a", "prints 8.0 for 8", SUM + "print(f'{a + b}.0')"),
    ("fixture901_a", "no trailing newline", SUM + "print(a + b, end='')"),
    ("9001_B", "float repr (0.5 for 0.50)", MEAN + "print(min(v), sum(v) / n)"),
    ("9001_B", "2 decimals", MEAN + "print(min(v), f'{sum(v) / n:.2f}')"),
    ("9001_B", "10 decimals", MEAN + "print(min(v), f'{sum(v) / n:.10f}')"),
    ("9001_B", "float min", MEAN + "print(float(min(v)), sum(v) / n)"),
    ("9001_B", "two lines", MEAN + "print(min(v))\nprint(sum(v) / n)"),
    ("9001_B", "trailing blank lines", MEAN + "print(min(v), sum(v) / n, end='   \\n\\n\\n')"),
    ("3901", "tuple result", PAIR.replace("RESULT", "(seen[target - x], j)")),
    ("3901", "list result", PAIR.replace("RESULT", "[seen[target - x], j]")),
    ("3901", "reversed pair", PAIR.replace("RESULT", "[j, seen[target - x]]")),
    ("3901", "set result", PAIR.replace("RESULT", "{seen[target - x], j}")),
    ("3901", "float in list", PAIR.replace("RESULT", "[float(seen[target - x]), j]")),
    ("3901", "top-level function", PAIR.replace("RESULT", "[seen[target - x], j]").replace("class Solution:\n    def pairWithTarget(self, ", "class Unused:\n    pass\ndef pairWithTarget(")),
    ("3901", "main-guard demo reads input", PAIR.replace("RESULT", "[seen[target - x], j]") + "if __name__ == '__main__':\n    print(Solution().pairWithTarget(eval(input()), 9))"),
    ("3901", "misnamed method", PAIR.replace("RESULT", "[seen[target - x], j]").replace("pairWithTarget", "pair_with_target")),
    ("3902", "1 for true", "class Solution:\n    def almostPalindrome(self, s):\n        t = [s[:i] + s[i+1:] for i in range(len(s))] + [s]\n        return 1 if any(u == u[::-1] for u in t) else 0"),
    ("1873_A", "right (real row)", "t = int(input())\nfor _ in range(t):\n    s = input().strip()\n    print('YES' if sum(a != b for a, b in zip(s, 'abc')) in (0, 2) else 'NO')"),
    ("1873_A", "lower-case yes", "t = int(input())\nfor _ in range(t):\n    s = input().strip()\n    print('yes' if sum(a != b for a, b in zip(s, 'abc')) in (0, 2) else 'no')"),
]


def reference_verdict(testing_util: Path, suite: LiveCodeBenchSuite, problem: Problem, code: str) -> dict:
    tests = suite.tests_for(problem)
    sample = {"input_output": json.dumps({
        "inputs": [t["input"] for t in tests],
        "outputs": [t["output"] for t in tests],
        "fn_name": problem.metadata["func_name"],
    })}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"sample": sample, "code": code, "n": len(tests)}, handle)
    try:
        done = subprocess.run(
            [sys.executable, "-c", REFERENCE_RUNNER, str(testing_util), handle.name],
            capture_output=True, text=True, timeout=120,
        )
    finally:
        os.unlink(handle.name)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        # The reference grader lets SystemExit escape; its pool then counts the program as failed.
        return {"passed": False, "detail": f"reference process died: {done.stderr.strip()[-200:]}"}
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lcb-repo", type=Path, required=True, help="a LiveCodeBench checkout")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    testing_util = args.lcb_repo / "lcb_runner" / "evaluation" / "testing_util.py"
    if not testing_util.is_file():
        parser.error(f"{testing_util} not found")

    sandbox = get_sandbox("local")
    suites = [LiveCodeBenchSuite(data_files=str(FIXTURE), sandbox=sandbox)]
    if KAGGLE_ROW.is_file():
        suites.append(LiveCodeBenchSuite(data_files=str(KAGGLE_ROW), sandbox=sandbox))
    by_id = {p.id: (suite, p) for suite in suites for p in suite.problems()}
    rows = []
    for problem_id, label, code in CASES:
        if problem_id not in by_id:
            continue
        suite, problem = by_id[problem_id]
        ours = suite.verify(problem, f"```python\n{textwrap.dedent(code)}\n```")
        theirs = reference_verdict(testing_util, suite, problem, code)
        rows.append({"problem": problem_id, "case": label, "ours": ours.correct, "reference": theirs["passed"],
                     "ours_reason": ours.reason, "reference_detail": theirs["detail"]})
        mark = "same" if ours.correct == theirs["passed"] else "DIFF"
        print(f"{mark}  {problem_id:13} {label:28} ours={ours.correct!s:5} reference={theirs['passed']!s:5}")
    sandbox.close()
    same = sum(row["ours"] == row["reference"] for row in rows)
    print(f"{same}/{len(rows)} verdicts agree")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"agree": same, "total": len(rows), "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
