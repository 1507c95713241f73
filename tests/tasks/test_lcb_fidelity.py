"""Pins every known difference between this package's LiveCodeBench grading and LiveCodeBench's
own grader, one test per entry of ``docs/LCB_GRADING.md`` (the ids S1 ... L4 are its entries).

The programs answer the problems of ``tests/fixtures/lcb/lcb_fidelity.jsonl``. Each test states
the package's verdict; the doc says what LiveCodeBench does instead (and
``benchmarks/crosscheck_lcb_reference.py`` checks that against LiveCodeBench's code).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from conductor_env.sandboxes import Limits, get_sandbox
from conductor_env.tasks import SuiteError
from conductor_env.tasks.suites.livecodebench import LCB_TIMEOUT_S, LiveCodeBenchSuite

FIDELITY = Path(__file__).resolve().parents[1] / "fixtures" / "lcb" / "lcb_fidelity.jsonl"
SUM = "n = int(input())\nprint(sum(int(input()) for _ in range(n)))\n"


@pytest.fixture(scope="module")
def box():
    sandbox = get_sandbox("local", pool_size=1)
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def suite(box):
    return LiveCodeBenchSuite(data_files=str(FIDELITY), sandbox=box)


@pytest.fixture(scope="module")
def has_numpy(box):
    report = box.run_tests("import numpy", [{"input": "", "output": ""}])
    if not report.passed:
        # Only a missing numpy skips: a guard that refuses numpy's import is a failure (issue 57).
        assert "No module named 'numpy'" in report.tests[0].stderr_head, report.tests[0]
        pytest.skip("numpy is not installed in the local sandbox (Debian's python3-numpy provides it)")


def grade(suite: LiveCodeBenchSuite, problem_id: str, code: str):
    problem = next(p for p in suite.problems() if p.id == problem_id)
    return suite.verify(problem, f"```python\n{textwrap.dedent(code).strip()}\n```\n")


# -- Stdin programs run as real scripts ---------------------------------------------------------

#: Entry -> a program that passes here (LiveCodeBench fails each, see the doc).
REAL_SCRIPT = {
    "S1 open(0)": "d = open(0).read().split()\nprint(sum(map(int, d[1:])))",
    "S2 for line in sys.stdin": "import sys\nsys.stdin.readline()\nt = 0\nfor line in sys.stdin:\n    t += int(line)\nprint(t)",
    "S3 input() then read()": "import sys\nn = int(input())\nprint(sum(map(int, sys.stdin.read().split())))",
    "S4 readlines()": "import sys\nlines = sys.stdin.readlines()\nassert all(x.endswith('\\n') for x in lines)\nprint(sum(int(x) for x in lines[1:]))",
    "S5 top-level global": "total = 0\ndef add(x):\n    global total\n    total += x\nn = int(input())\nfor _ in range(n):\n    add(int(input()))\nprint(total)",
    "S6 quit()": SUM + "quit()",
    "S7 stdout.write from the header": "n = int(input())\nstdout.write(str(sum(int(input()) for _ in range(n))) + '\\n')",
    "S7 sys.stdout.buffer": "import sys\nn = int(input())\nsys.stdout.buffer.write(b'%d\\n' % sum(int(input()) for _ in range(n)))",
    "S7 os.write(1)": "import os\nn = int(input())\nos.write(1, b'%d\\n' % sum(int(input()) for _ in range(n)))",
    "S8 main guard not last": "def main():\n    " + SUM.replace("\n", "\n    ") + "\nif __name__ == '__main__':\n    main()\nDONE = True",
    "S8 main guard reversed": "def main():\n    " + SUM.replace("\n", "\n    ") + "\nif '__main__' == __name__:\n    main()",
    "S10 os.getcwd()": "import os\nos.getcwd()\n" + SUM,
    "S10 os.fork()": "import os\nif os.fork() == 0:\n    os._exit(0)\nos.wait()\n" + SUM,
}


@pytest.mark.parametrize("entry", sorted(REAL_SCRIPT))
def test_stdin_programs_run_as_real_scripts(suite, entry):
    score = grade(suite, "fid_sum", REAL_SCRIPT[entry])
    assert score.correct, score.reason


def test_controls_that_both_graders_pass_and_fail(suite):
    assert grade(suite, "fid_sum", SUM).correct
    assert grade(suite, "fid_sum", SUM + "exit()").correct
    assert grade(suite, "fid_sum", "import sys\n" + SUM + "sys.exit(1)").correct  # LiveCodeBench ignores the status too
    assert grade(suite, "fid_sum", "import sys\ninput = lambda: sys.stdin.readline()[:-1]\n" + SUM).correct
    assert not grade(suite, "fid_sum", "n = int(input())\nprint(n)").correct
    assert not grade(suite, "fid_sum", SUM + "raise ValueError('late')").correct


def test_s9_a_top_level_return_is_a_syntax_error(suite):
    # LiveCodeBench wraps the program in a function, where `return` is legal; here it is a script.
    score = grade(suite, "fid_sum", SUM + "if n:\n    return")
    assert not score.correct and "runtime_error" in score.reason and "SyntaxError" in score.reason


# -- Functional calls -----------------------------------------------------------------------------


def method(func: str, body: str, head: str = "") -> str:
    return f"{head}\nclass Solution:\n    def {func}(self, nums):\n        {body}\n"


@pytest.mark.parametrize(
    ("problem_id", "code"),
    [
        ("fid_count", method("countEven", "return np.sum(np.array(nums) % 2 == 0)", "import numpy as np")),
        ("fid_mean", method("average", "return np.mean(nums)", "import numpy as np")),
        ("fid_dup", method("hasDuplicate", "return np.bool_(len(set(nums)) != len(nums))", "import numpy as np")),
        ("fid_sort", method("sortDesc", "return [np.int64(x) for x in sorted(nums, reverse=True)]", "import numpy as np")),
        ("fid_word", method("firstWord", "return np.str_(nums.split()[0])", "import numpy as np")),
    ],
    ids=["int64", "float64", "bool_", "list of int64", "str_"],
)
def test_f1_numpy_scalars_pass_as_their_values(suite, has_numpy, problem_id, code):
    score = grade(suite, problem_id, code)
    assert score.correct, score.reason


def test_f2_numpy_arrays_are_refused_even_with_one_element(suite, has_numpy):
    one = grade(suite, "fid_count", method("countEven", "return np.array([sum(x % 2 == 0 for x in nums)])", "import numpy as np"))
    several = grade(suite, "fid_sort", method("sortDesc", "return np.sort(nums)[::-1]", "import numpy as np"))
    for score in (one, several):
        assert not score.correct and "numpy array" in score.reason
    assert grade(suite, "fid_sort", method("sortDesc", "return np.sort(nums)[::-1].tolist()", "import numpy as np")).correct


@pytest.mark.parametrize(
    "head",
    [
        "class Answer:\n    def __init__(self, nums):\n        pass\n    def __eq__(self, other):\n        return True\n",
        "class Answer(int):\n    def __new__(cls, nums):\n        return int.__new__(cls, sum(x % 2 == 0 for x in nums))\n",
        "class Answer(float):\n    def __new__(cls, nums):\n        return float.__new__(cls, sum(x % 2 == 0 for x in nums))\n",
    ],
    ids=["always equal", "int subclass", "float subclass"],
)
def test_f3_objects_with_their_own_equality_are_refused(suite, head):
    score = grade(suite, "fid_count", method("countEven", "return Answer(nums)", head))
    assert not score.correct and "not a JSON value" in score.reason


def test_f4_nested_tuples_are_lists(suite):
    tuples = "class Solution:\n    def adjacentPairs(self, nums):\n        return [(a, b) for a, b in zip(nums, nums[1:])]\n"
    assert grade(suite, "fid_pairs", tuples).correct


def test_f5_each_test_gets_a_fresh_process(suite):
    stateful = (
        "calls = []\nclass Solution:\n    def __init__(self):\n        self.used = False\n"
        "    def countEven(self, nums):\n        calls.append(1)\n        first = not self.used and len(calls) == 1\n"
        "        self.used = True\n        return sum(x % 2 == 0 for x in nums) if first else -1\n"
    )
    score = grade(suite, "fid_count", stateful)
    assert score.correct, score.reason


def test_f6_solution_is_found_by_name_not_by_text(suite):
    function = "# no class Solution needed\ndef countEven(nums):\n    return sum(x % 2 == 0 for x in nums)\n"
    assert grade(suite, "fid_count", function).correct
    helper = "class SolutionHelper:\n    pass\ndef countEven(nums):\n    return sum(x % 2 == 0 for x in nums)\n"
    assert grade(suite, "fid_count", helper).correct


def test_f7_long_integers_compare_exactly(suite):
    right = "class Solution:\n    def powerOfTwo(self, n):\n        return 2 ** n\n"
    off_by_one = "class Solution:\n    def powerOfTwo(self, n):\n        return 2 ** n + (n > 100)\n"
    assert grade(suite, "fid_power", right).correct
    score = grade(suite, "fid_power", off_by_one)
    assert not score.correct and "test 2/2: wrong" in score.reason


# -- Limits -------------------------------------------------------------------------------------


def test_l1_the_time_limit_is_wall_time_six_seconds_by_default(suite, box):
    assert LCB_TIMEOUT_S == 6.0
    assert suite.test_limits().wall_s == 6.0 and suite.test_limits().cpu_s is None
    given = LiveCodeBenchSuite(data_files=str(FIDELITY), sandbox=box, limits={"wall_s": 2.0, "cpu_s": 1})
    assert given.test_limits() == Limits(wall_s=2.0, cpu_s=1)
    both = LiveCodeBenchSuite(data_files=str(FIDELITY), sandbox=box, limits={"wall_s": 2.0}, timeout_s=9)
    assert both.test_limits().wall_s == 9.0


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), "6", True])
def test_l1_a_bad_timeout_is_refused(box, bad):
    with pytest.raises(SuiteError, match="timeout_s"):
        LiveCodeBenchSuite(data_files=str(FIDELITY), sandbox=box, timeout_s=bad)


def test_l1_timeout_s_sets_the_wall_time_per_test(box):
    sleepy = "import time\ntime.sleep(1.5)\n" + SUM  # sleeping spends wall time, not CPU time
    short = LiveCodeBenchSuite(data_files=str(FIDELITY), sandbox=box, timeout_s=1)
    score = grade(short, "fid_sum", sleepy)
    assert not score.correct and "timeout" in score.reason and "wall-clock" in score.reason
    assert grade(LiveCodeBenchSuite(data_files=str(FIDELITY), sandbox=box, timeout_s=30), "fid_sum", sleepy).correct


def test_l1_the_top_level_of_a_functional_program_counts_in_each_test(box):
    # LiveCodeBench runs the top level once, under an alarm of its own; here each test runs it.
    program = "import time\ntime.sleep(0.7)\n" + method("countEven", "time.sleep(0.7)\n        return sum(x % 2 == 0 for x in nums)")
    short = LiveCodeBenchSuite(data_files=str(FIDELITY), sandbox=box, timeout_s=1)
    score = grade(short, "fid_count", program)
    assert not score.correct and "timeout" in score.reason


def test_l2_memory_is_limited_to_the_address_space_limit(suite):
    score = grade(suite, "fid_sum", "block = bytearray(1_500_000_000)\n" + SUM)
    assert not score.correct and "memory" in score.reason


def test_l3_output_is_capped(suite):
    score = grade(suite, "fid_sum", SUM + "print(' ' * 2_000_000)")
    assert not score.correct and "output_limit" in score.reason


def test_l4_processes_are_capped(box):
    forks = "import os\nfor _ in range(40):\n    if os.fork() == 0:\n        import time\n        time.sleep(5)\n        os._exit(0)\n" + SUM
    capped = LiveCodeBenchSuite(data_files=str(FIDELITY), sandbox=box, limits={"processes": 16, "wall_s": 3.0})
    score = grade(capped, "fid_sum", forks)
    assert not score.correct and "BlockingIOError" in score.reason


# -- The doc and the tests stay together ---------------------------------------------------------


def test_every_entry_of_the_doc_names_a_test_that_exists():
    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "LCB_GRADING.md").read_text(encoding="utf-8")
    tests = "".join((root / "tests" / path).read_text(encoding="utf-8") for path in ("tasks/test_lcb_fidelity.py", "sandboxes/test_sandbox_lcb_fidelity.py"))
    rows = [line for line in doc.splitlines() if re.match(r"\| [SFL]\d+ \|", line)]
    entries = [row.split("|")[1].strip() for row in rows]
    assert entries == [f"S{i}" for i in range(1, 11)] + [f"F{i}" for i in range(1, 9)] + [f"L{i}" for i in range(1, 5)]
    for row in rows:
        pinned_by = row.rstrip(" |").rsplit("|", 1)[-1]
        names = re.findall(r"`(test_\w+?)(?:\*|\[|`)", pinned_by)
        for name in names:
            assert f"def {name}" in tests, f"{row.split('|')[1].strip()}: {name} is not a test"
        assert names or re.search(r"`\[S\d+ ", pinned_by), f"no test named for {row[:40]}"
    for entry in REAL_SCRIPT:
        assert f"[{entry.split(' ', 1)[0]} " in doc or entry.split(" ", 1)[0] in entries
