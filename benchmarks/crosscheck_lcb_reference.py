"""Grades the same programs with this package and with LiveCodeBench's own grader; lists disagreements.

Needs a checkout of https://github.com/LiveCodeBench/LiveCodeBench (its
``lcb_runner/evaluation/testing_util.py`` is loaded from there at run time; nothing of it is
copied here; ``docs/LCB_GRADING.md`` names the commit compared) and numpy. LiveCodeBench's grader
runs programs in its own process without a sandbox, so each reference run happens in a fresh
subprocess, and the programs graded are only this script's own: right answers, wrong answers and
edge cases (decimal tokens, tuples, exits, ``if __name__``, stdin access, numpy results, limits)
for the fixture problems in ``tests/fixtures/lcb`` and, when the shared data folder is there,
the real row 1873_A with its private tests.

Each case that LiveCodeBench grades differently names the entry of ``docs/LCB_GRADING.md`` that
lists it; a difference without one is reported as UNDOCUMENTED (and the exit status is 1).
Cases that need numpy in the sandbox are skipped when it has none.

Usage: python benchmarks/crosscheck_lcb_reference.py --lcb-repo PATH [--json OUT] [--skip-slow]
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
FIDELITY = HERE.parent / "tests" / "fixtures" / "lcb" / "lcb_fidelity.jsonl"
SHARED = Path(os.environ.get("CONDUCTOR_SHARED_DATA", HERE.parents[1] / "shared" / "data"))
KAGGLE_ROW = SHARED / "lcb_1873A_with_private_kaggle_demo.jsonl"

# Runs in a subprocess: LiveCodeBench's run_test on one program; prints whether it counts as passed.
REFERENCE_RUNNER = """
import importlib.util, json, sys
sys.set_int_max_str_digits(50000)  # as LiveCodeBench's evaluation process does
spec = importlib.util.spec_from_file_location("testing_util", sys.argv[1])
testing_util = importlib.util.module_from_spec(spec)
spec.loader.exec_module(testing_util)
job = json.load(open(sys.argv[2]))
import numpy as np
results, metadata = testing_util.run_test(job["sample"], test=job["code"], timeout=6)
# As LiveCodeBench's evaluate_generations_by_problem and compute_metrics_from_results count a pass.
fixed = [bool(r) if isinstance(r, np.bool_) else r for r in (r.item(0) if isinstance(r, np.ndarray) else r for r in results)]
passed = len(fixed) == job["n"] and bool(np.all(np.array(fixed) > 0))
print(json.dumps({"passed": passed, "detail": str(metadata)[:200]}))
"""

MEAN = "import sys\ndata = sys.stdin.read().split()\nn = int(data[0]); v = list(map(int, data[1:1 + n]))\n"
PAIR = (
    "class Solution:\n    def pairWithTarget(self, nums: List[int], target: int) -> List[int]:\n"
    "        seen = {}\n        for j, x in enumerate(nums):\n            if target - x in seen:\n"
    "                return RESULT\n            seen[x] = j\n"
)
SUM = "a, b = map(int, input().split())\n"

# (problem, label, program[, the entry of docs/LCB_GRADING.md when LiveCodeBench grades it differently])
CASES: list[tuple[str, ...]] = [
    ("fixture901_a", "right", SUM + "print(a + b)"),
    ("fixture901_a", "wrong", "print(0)"),
    ("fixture901_a", "if __name__ main", "def main():\n    " + SUM + "    print(a + b)\nif __name__ == '__main__':\n    main()"),
    ("fixture901_a", "sys.exit(0) after output", "import sys\n" + SUM + "print(a + b)\nsys.exit(0)"),
    ("fixture901_a", "sys.exit(1) after output", "import sys\n" + SUM + "print(a + b)\nsys.exit(1)"),
    ("fixture901_a", "exit() after output", SUM + "print(a + b)\nexit()"),
    ("fixture901_a", "exception after output", SUM + "print(a + b)\nraise ValueError('late')"),
    ("fixture901_a", "reads sys.stdin.buffer", "import sys\na, b = map(int, sys.stdin.buffer.read().split())\nprint(a + b)"),
    ("fixture901_a", "reads open(0)", "a, b = map(int, open(0).read().split())\nprint(a + b)", "S1"),
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

SUM_OF_LINES = "n = int(input())\nprint(sum(int(input()) for _ in range(n)))\n"
NUMPY = "import numpy as np\n"
COUNT = "        return sum(x % 2 == 0 for x in nums)\n"


def _method(func: str, body: str, head: str = "") -> str:
    return f"{head}class Solution:\n    def {func}(self, *args):\n        nums = args[0]\n{body}"


# The entries of docs/LCB_GRADING.md, one program each (fixture lcb_fidelity.jsonl).
FIDELITY_CASES: list[tuple[str, ...]] = [
    ("fid_sum", "input() lines", SUM_OF_LINES),
    ("fid_sum", "open(0)", "d = open(0).read().split()\nprint(sum(map(int, d[1:])))", "S1"),
    ("fid_sum", "for line in sys.stdin", "import sys\nsys.stdin.readline()\nt = 0\nfor line in sys.stdin:\n    t += int(line)\nprint(t)", "S2"),
    ("fid_sum", "input() then read()", "import sys\nn = int(input())\nprint(sum(map(int, sys.stdin.read().split())))", "S3"),
    ("fid_sum", "readline() to the end", "import sys\nsys.stdin.readline()\nt = 0\nwhile True:\n    line = sys.stdin.readline()\n    if not line:\n        break\n    t += int(line)\nprint(t)"),
    ("fid_sum", "readline()[:-1]", "import sys\ninput = lambda: sys.stdin.readline()[:-1]\n" + SUM_OF_LINES),
    ("fid_sum", "readlines()", "import sys\nlines = sys.stdin.readlines()\nprint(sum(int(x) for x in lines[1:]))", "S4"),
    ("fid_sum", "top-level global", "total = 0\ndef add(x):\n    global total\n    total += x\nn = int(input())\nfor _ in range(n):\n    add(int(input()))\nprint(total)", "S5"),
    ("fid_sum", "quit() after output", SUM_OF_LINES + "quit()", "S6"),
    ("fid_sum", "exit() after output", SUM_OF_LINES + "exit()"),
    ("fid_sum", "sys.stdout.write", "import sys\nn = int(input())\nsys.stdout.write(str(sum(int(input()) for _ in range(n))) + '\\n')"),
    ("fid_sum", "stdout.write (header's import)", "n = int(input())\nstdout.write(str(sum(int(input()) for _ in range(n))) + '\\n')", "S7"),
    ("fid_sum", "sys.stdout.buffer.write", "import sys\nn = int(input())\nsys.stdout.buffer.write(b'%d\\n' % sum(int(input()) for _ in range(n)))", "S7"),
    ("fid_sum", "os.write(1, ...)", "import os\nn = int(input())\nos.write(1, b'%d\\n' % sum(int(input()) for _ in range(n)))", "S7"),
    ("fid_sum", "main guard, not last", "def main():\n    n = int(input())\n    print(sum(int(input()) for _ in range(n)))\nif __name__ == '__main__':\n    main()\nDONE = True", "S8"),
    ("fid_sum", "main guard, reversed", "def main():\n    n = int(input())\n    print(sum(int(input()) for _ in range(n)))\nif '__main__' == __name__:\n    main()", "S8"),
    ("fid_sum", "top-level return", "n = int(input())\nprint(sum(int(input()) for _ in range(n)))\nif n:\n    return", "S9"),
    ("fid_sum", "os.getcwd()", "import os\nos.getcwd()\n" + SUM_OF_LINES, "S10"),
    ("fid_count", "right", _method("countEven", COUNT)),
    ("fid_count", "bool for 0", _method("countEven", "        c = sum(x % 2 == 0 for x in nums)\n        return c if c else False\n")),
    ("fid_count", "float for int", _method("countEven", "        return float(sum(x % 2 == 0 for x in nums))\n")),
    ("fid_count", "numpy.int64", _method("countEven", "        return np.sum(np.array(nums) % 2 == 0)\n", NUMPY)),
    ("fid_count", "one-element numpy array", _method("countEven", "        return np.array([sum(x % 2 == 0 for x in nums)])\n", NUMPY), "F2"),
    (
        "fid_count",
        "numpy.int64 subclass, always equal",
        _method("countEven", "        return Fake(0)\n", NUMPY + "class Fake(np.int64):\n    def __eq__(self, other):\n        return True\n    __hash__ = np.int64.__hash__\n"),
        "F3",
    ),
    ("fid_count", "object, always equal", _method("countEven", "        return Equal()\n", "class Equal:\n    def __eq__(self, other):\n        return True\n"), "F3"),
    ("fid_count", "int subclass", _method("countEven", "        return Int(sum(x % 2 == 0 for x in nums))\n", "class Int(int):\n    pass\n"), "F3"),
    (
        "fid_count",
        "state kept in Solution",
        "class Solution:\n    def __init__(self):\n        self.calls = 0\n    def countEven(self, nums):\n        self.calls += 1\n        return sum(x % 2 == 0 for x in nums) if self.calls == 1 else -1\n",
        "F5",
    ),
    ("fid_count", "'class Solution' in a comment", "# no class Solution needed\ndef countEven(nums):\n    return sum(x % 2 == 0 for x in nums)\n", "F6"),
    ("fid_count", "sys.exit() in the call", _method("countEven", "        sys.exit(0)\n")),
    ("fid_mean", "numpy.float64", _method("average", "        return np.mean(nums)\n", NUMPY)),
    ("fid_dup", "numpy.bool_", _method("hasDuplicate", "        return np.bool_(len(set(nums)) != len(nums))\n", NUMPY)),
    (
        "fid_sort",
        "numpy array",
        _method("sortDesc", "        return np.sort(nums)[::-1]\n", NUMPY),
    ),
    ("fid_sort", "numpy array .tolist()", _method("sortDesc", "        return np.sort(nums)[::-1].tolist()\n", NUMPY)),
    ("fid_sort", "list of numpy.int64", _method("sortDesc", "        return [np.int64(x) for x in sorted(nums, reverse=True)]\n", NUMPY)),
    ("fid_sort", "tuple", _method("sortDesc", "        return tuple(sorted(nums, reverse=True))\n")),
    ("fid_power", "6,021-digit integer", "class Solution:\n    def powerOfTwo(self, n):\n        return 2 ** n\n"),
    ("fid_word", "numpy.str_", "import numpy as np\nclass Solution:\n    def firstWord(self, s):\n        return np.str_(s.split()[0])\n"),
    ("fid_pairs", "list of tuples", "class Solution:\n    def adjacentPairs(self, nums):\n        return [(a, b) for a, b in zip(nums, nums[1:])]\n", "F4"),
    ("fid_pairs", "tuple of lists", "class Solution:\n    def adjacentPairs(self, nums):\n        return tuple([a, b] for a, b in zip(nums, nums[1:]))\n"),
    ("fid_sum", "1.5 GB allocated", "block = bytearray(1_500_000_000)\n" + SUM_OF_LINES, "L2"),
    ("fid_sum", "2 MB of trailing spaces", SUM_OF_LINES + "print(' ' * 2_000_000)", "L3"),
    ("fid_sum", "os.fork()", "import os\nif os.fork() == 0:\n    os._exit(0)\nos.wait()\n" + SUM_OF_LINES, "S10"),
]
# Cases that spend seconds of CPU per test (left out with --skip-slow).
SLOW_CASES: list[tuple[str, ...]] = [
    ("fid_sum", "4.5 s of CPU per test", "import time\nend = time.process_time() + 4.5\nwhile time.process_time() < end:\n    pass\n" + SUM_OF_LINES),
]


def reference_verdict(testing_util: Path, suite: LiveCodeBenchSuite, problem: Problem, code: str) -> dict:
    tests = suite.tests_for(problem)
    sample = {
        "input_output": json.dumps(
            {
                "inputs": [t["input"] for t in tests],
                "outputs": [t["output"] for t in tests],
                "fn_name": problem.metadata["func_name"],
            }
        )
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"sample": sample, "code": code, "n": len(tests)}, handle)
    try:
        done = subprocess.run(
            [sys.executable, "-c", REFERENCE_RUNNER, str(testing_util), handle.name],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.unlink(handle.name)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        # The reference grader lets SystemExit escape; its pool then counts the program as failed.
        return {"passed": False, "detail": f"reference process died: {done.stderr.strip()[-200:]}"}
    return json.loads(lines[-1])


def sandbox_has_numpy(sandbox: object) -> bool:
    """Whether programs in the sandbox can import numpy."""
    report = sandbox.run_tests("import numpy", [{"input": "", "output": ""}])  # type: ignore[attr-defined]
    return report.passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lcb-repo", type=Path, required=True, help="a LiveCodeBench checkout")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the cases that spend seconds of CPU")
    args = parser.parse_args()
    testing_util = args.lcb_repo / "lcb_runner" / "evaluation" / "testing_util.py"
    if not testing_util.is_file():
        parser.error(f"{testing_util} not found")

    sandbox = get_sandbox("local")
    has_numpy = sandbox_has_numpy(sandbox)
    files = [FIXTURE, FIDELITY] + ([KAGGLE_ROW] if KAGGLE_ROW.is_file() else [])
    suites = [LiveCodeBenchSuite(data_files=str(path), sandbox=sandbox) for path in files]
    by_id = {p.id: (suite, p) for suite in suites for p in suite.problems()}
    rows = []
    for problem_id, label, code, *entry in CASES + FIDELITY_CASES + ([] if args.skip_slow else SLOW_CASES):
        if problem_id not in by_id or ("numpy" in code and not has_numpy):
            print(f"skip  {problem_id:13} {label}")
            continue
        suite, problem = by_id[problem_id]
        ours = suite.verify(problem, f"```python\n{textwrap.dedent(code)}\n```")
        theirs = reference_verdict(testing_util, suite, problem, code)
        documented = entry[0] if entry else None
        rows.append(
            {"problem": problem_id, "case": label, "ours": ours.correct, "reference": theirs["passed"], "documented": documented, "ours_reason": ours.reason, "reference_detail": theirs["detail"]}
        )
        mark = "same" if ours.correct == theirs["passed"] else f"DIFF {documented}" if documented else "UNDOCUMENTED"
        print(f"{mark:5} {problem_id:13} {label:36} ours={ours.correct!s:5} reference={theirs['passed']!s:5}")
    sandbox.close()
    same = sum(row["ours"] == row["reference"] for row in rows)
    undocumented = [row for row in rows if row["ours"] != row["reference"] and not row["documented"]]
    unexpected = [row for row in rows if row["ours"] == row["reference"] and row["documented"]]
    print(f"{same}/{len(rows)} verdicts agree; {len(rows) - same} differ, {len(undocumented)} of them undocumented")
    for row in unexpected:
        print(f"note: {row['case']!r} is listed as {row['documented']} but LiveCodeBench graded it the same")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"agree": same, "total": len(rows), "rows": rows}, indent=2) + "\n")
    return 1 if undocumented else 0


if __name__ == "__main__":
    sys.exit(main())
