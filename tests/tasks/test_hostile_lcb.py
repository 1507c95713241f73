"""LiveCodeBench's verifier against outputs built to crash or fool the grader, on both backends.

The comparison runs on this side of the sandbox, on what the program printed or returned. Each
attack here either made that comparison raise (which left the answer unscored and, before the
pool gave workers back on every path, leaked a sandbox slot) or tried to pass without solving.
All must be wrong answers with a reason; honest controls beside them must pass; and more of them
in a row than the pool has slots must leave the pool working.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conductor_env.sandboxes import Limits, docker_available, get_sandbox
from conductor_env.tasks.suites.livecodebench import LiveCodeBenchSuite

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "lcb" / "lcb_sample.jsonl"
LIMITS = Limits(wall_s=3.0, cpu_s=2, memory_mb=512, processes=32, output_bytes=1 << 18)
BACKENDS = [pytest.param("local", id="local"), pytest.param("docker", id="docker", marks=pytest.mark.docker)]


def fenced(code: str) -> str:
    return f"```python\n{textwrap.dedent(code).strip()}\n```\n"


#: Answers to ``fixture901_a`` (print A+B; it has hidden tests).
STDIN_ATTACKS = {
    "signalling NaN": "print('sNaN')",
    "negative signalling NaN": "print('-sNaN')",
    "quiet NaN": "print('NaN')",
    "infinity": "print('Infinity')",
    "huge number": "print('9' * 200000)",
    "huge exponent": "print('1e999999999999')",
    "NaN payload": "print('sNaN123456789')",
    "lookup table of the examples": """
        answers = {"3 5": "8", "-2 2": "0"}
        print(answers.get(input().strip(), "0"))
    """,
    "silent exit": "import sys\nsys.exit(0)",
    "many lines": "print('8\\n' * 5000)",
    "binary garbage": "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 64)",
    "kills everything": "import os, signal\nos.kill(-1, signal.SIGKILL)",
}

#: Answers to ``3901`` (functional ``pairWithTarget``).
FUNCTIONAL_ATTACKS = {
    "always-equal object": """
        class Anything:
            def __eq__(self, other): return True
        class Solution:
            def pairWithTarget(self, nums, target): return Anything()
    """,
    "list subclass": """
        class Same(list):
            def __eq__(self, other): return True
        class Solution:
            def pairWithTarget(self, nums, target): return Same([0, 1])
    """,
    "int subclass items": """
        class Liar(int):
            def __eq__(self, other): return True
        class Solution:
            def pairWithTarget(self, nums, target): return [Liar(5), Liar(5)]
    """,
    "integer past the digit limit": """
        class Solution:
            def pairWithTarget(self, nums, target): return [10 ** 5000, 1]
    """,
    "deep nesting": """
        class Solution:
            def pairWithTarget(self, nums, target):
                value = [0]
                for _ in range(100000):
                    value = [value]
                return value
    """,
    "not a number": """
        class Solution:
            def pairWithTarget(self, nums, target): return [float('nan'), float('inf')]
    """,
    "integer keys": """
        class Solution:
            def pairWithTarget(self, nums, target): return {0: 1}
    """,
    "patched encoder: huge literal": """
        import json
        class Evil(json.JSONEncoder):
            def encode(self, value): return '1' * 50000
        json.JSONEncoder = Evil
        class Solution:
            def pairWithTarget(self, nums, target): return [0, 1][::-1]
    """,
    "patched encoder: deep brackets": """
        import json
        class Evil(json.JSONEncoder):
            def encode(self, value): return '[' * 200000 + ']' * 200000
        json.JSONEncoder = Evil
        json.dumps = lambda *a, **k: '[' * 200000 + ']' * 200000
        class Solution:
            def pairWithTarget(self, nums, target): return None
    """,
    "patched encoder: not JSON": """
        import json
        json.dumps = lambda *a, **k: 'sNaN'
        class Evil(json.JSONEncoder):
            def encode(self, value): return '{"a": sNaN'
        json.JSONEncoder = Evil
        class Solution:
            def pairWithTarget(self, nums, target): return None
    """,
    "patched builtins": """
        import builtins
        builtins.isinstance = lambda *a: True
        builtins.type = lambda *a: int
        class Anything:
            def __eq__(self, other): return True
        class Solution:
            def pairWithTarget(self, nums, target): return Anything()
    """,
    "exit in the call": """
        import os
        class Solution:
            def pairWithTarget(self, nums, target): os._exit(0)
    """,
}

#: Program text built to crash or hold the host (``tasks/program_text.py``): name -> (code,
#: refused on the host before any sandbox). LiveCodeBench does not parse on the host, but ships
#: the program to the sandbox; within the bound, the sandbox's compiler refuses the rest.
A_PLUS_B = "a, b = map(int, input().split())\nprint(a + b)\n"
TEXT_ATTACKS = {
    "null byte": (A_PLUS_B + "x = 1\0", True),
    "lone surrogate": (A_PLUS_B + "s = '\ud800'", True),
    "1 MB program": (A_PLUS_B + "y = [1, 2, 3]\n" * 75_000, True),
    "valid, 10^5 lines": (A_PLUS_B + "pass\n" * 100_000, True),
    "10^5 open parentheses": ("(" * 100_000, True),
    "60,000 open parentheses": ("(" * 60_000, False),
    "huge number literal": (A_PLUS_B + "x = " + "9" * 60_000, False),
    "deep unary minus": (A_PLUS_B + "x = " + "-" * 60_000 + "1", False),
}

HONEST = {
    "fixture901_a": "a, b = map(int, input().split())\nprint(a + b)",
    "3901": """
        class Solution:
            def pairWithTarget(self, nums, target):
                seen = {}
                for j, x in enumerate(nums):
                    if target - x in seen:
                        return [seen[target - x], j]
                    seen[x] = j
    """,
}


@pytest.fixture(scope="module", params=BACKENDS)
def suite(request):
    if request.param == "docker" and (why := docker_available()):
        pytest.skip(why)
    box = get_sandbox(request.param, pool_size=1, limits=LIMITS)
    yield LiveCodeBenchSuite(data_files=str(SAMPLE), sandbox=box, limits=LIMITS)
    assert box.leftover_processes() == []
    box.close()


def problem(suite: LiveCodeBenchSuite, problem_id: str):
    return next(p for p in suite.problems() if p.id == problem_id)


@pytest.mark.parametrize("name", sorted(STDIN_ATTACKS))
def test_stdin_attacks_are_wrong_answers(suite, name):
    score = suite.verify(problem(suite, "fixture901_a"), fenced(STDIN_ATTACKS[name]))
    assert (score.correct, score.score < 1.0) == (False, True), score
    assert score.reason


@pytest.mark.parametrize("name", sorted(FUNCTIONAL_ATTACKS))
def test_functional_attacks_are_wrong_answers(suite, name):
    score = suite.verify(problem(suite, "3901"), fenced(FUNCTIONAL_ATTACKS[name]))
    assert (score.correct, score.score) == (False, 0.0), score
    assert score.reason


@pytest.mark.parametrize("name", sorted(TEXT_ATTACKS))
def test_hostile_program_text_is_a_wrong_answer(suite, name):
    code, _on_host = TEXT_ATTACKS[name]
    score = suite.verify(problem(suite, "fixture901_a"), f"```python\n{code}\n```\n")
    assert (score.correct, score.score) == (False, 0.0), score
    assert score.reason


def test_a_long_honest_program_within_the_bound_passes(suite):
    score = suite.verify(problem(suite, "fixture901_a"), fenced(A_PLUS_B + "# a comment line\n" * 3_000))
    assert score.correct, score


@pytest.mark.parametrize("problem_id", sorted(HONEST))
def test_honest_answers_pass(suite, problem_id):
    score = suite.verify(problem(suite, problem_id), fenced(HONEST[problem_id]))
    assert score.correct, score


def test_a_crash_storm_leaves_the_pool_working(suite):
    """With one sandbox worker, many answers that once made grading raise, then honest ones."""
    storm = [
        ("fixture901_a", STDIN_ATTACKS["signalling NaN"]),
        ("3901", FUNCTIONAL_ATTACKS["patched encoder: huge literal"]),
        ("3901", FUNCTIONAL_ATTACKS["patched encoder: deep brackets"]),
        ("fixture901_a", STDIN_ATTACKS["kills everything"]),
    ]
    for problem_id, code in storm * 3:
        assert not suite.verify(problem(suite, problem_id), fenced(code)).correct
    for problem_id, code in HONEST.items():
        assert suite.verify(problem(suite, problem_id), fenced(code)).correct


def test_a_job_waits_for_a_busy_pool_only_so_long():
    """No verify blocks forever: with every worker held, a job gives up after the queue limit."""
    box = get_sandbox("local", pool_size=1, limits=LIMITS)
    box.queue_timeout_s = 0.5
    held = box.pool.acquire()
    try:
        report = box.run_tests("print(1)", [{"input": "", "output": "1"}])
        assert report.error is not None and "became free" in report.error
    finally:
        box.pool.release(held)
    assert box.run_tests("print(1)", [{"input": "", "output": "1"}]).passed
    box.close()
