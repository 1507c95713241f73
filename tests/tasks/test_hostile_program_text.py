"""Candidate program text read on the host, before any sandbox: bounded, and never an exception.

HumanEval and BigCodeBench parse the candidate on the host (to find the entry point) and every
code suite ships it to a sandbox. Texts built to crash that parse (null bytes, lone surrogates,
nesting deep enough for ``RecursionError``/``MemoryError``) or to hold it (a 1 MB program parses
in seconds and takes hundreds of MB) must be wrong answers with a reason,
without the sandbox. A sandbox that fails the test when called proves they never reach it;
honest controls beside them reach it.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from conductor_env.sandboxes.base import Report, Sandbox, TestResult
from conductor_env.tasks.extract import extract_code
from conductor_env.tasks.program_text import MAX_PROGRAM_BYTES, SYNTAX_ERROR, parse_candidate, program_text_problem
from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite
from conductor_env.tasks.suites.bigcodebench import build_program as bcb_program
from conductor_env.tasks.suites.humaneval import HumanEvalSuite
from conductor_env.tasks.suites.humaneval import build_program as humaneval_program
from conductor_env.tasks.suites.livecodebench import LiveCodeBenchSuite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MB = 1 << 20

HONEST_0 = "def has_close_elements(numbers, threshold):\n    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for j, b in enumerate(numbers) if i != j)\n"

#: Programs refused on the host by every code suite (the size or the text itself).
REFUSED_BY_ALL = {
    "1 MB program": HONEST_0 + "x = [1, 2, 3]\n" * (MB // 14),
    "valid, 10^5 lines": HONEST_0 + "pass\n" * 100_000,
    "10^5 open parentheses": "(" * 100_000,
    "null byte": HONEST_0 + "x = 1\0\n",
    "lone surrogate": HONEST_0 + "s = '\ud800'\n",
    "just over the bound": HONEST_0 + "#" * MAX_PROGRAM_BYTES,
    "over the bound in bytes, not characters": HONEST_0 + "# " + "é" * (MAX_PROGRAM_BYTES // 2),
}
#: Programs within the bound that CPython cannot parse (nor compile) for depth: refused unrun by
#: the suites that parse on the host (HumanEval, BigCodeBench).
UNPARSABLE = {
    "deep unary minus": "x = " + "-" * 60_000 + "1\n",
    "deep not": "x = " + "not " * 15_000 + "1\n",
    "long call chain": "x = f" + "()" * 30_000 + "\n",
    "long attribute chain": "x = a" + ".b" * 30_000 + "\n",
    "long sum": "x = " + "1+" * 30_000 + "1\n",
    "nested lambdas": "x = " + "lambda: " * 8_000 + "1\n",
}
#: Within the bound, a plain SyntaxError: a completion might compile after the prompt, so these
#: reach the sandbox (where they fail); they must not raise on the host either.
SYNTAX_ERRORS = {
    "60,000 open parentheses": "(" * 60_000,
    "huge number literal": "x = " + "9" * 60_000 + "\n",
    "deep indentation": "".join(" " * i + "if x:\n" for i in range(120)) + " " * 120 + "pass\n",
}


def fenced(code: str) -> str:
    return f"```python\n{code}\n```\n"


class NoSandbox(Sandbox):
    """A sandbox that fails the test when a program reaches it, and counts those that do."""

    def __init__(self, allow: bool = False) -> None:
        self.allow, self.calls = allow, 0

    def run_tests(self, program: str, tests: Any, **options: Any) -> Any:
        self.calls += 1
        if not self.allow:
            raise AssertionError(f"a {len(program)}-character program reached the sandbox")
        return Report(tests=tuple(TestResult(verdict="wrong", detail="not run: a stub") for _ in tests))


def humaneval(box: Sandbox) -> tuple[HumanEvalSuite, Any]:
    suite = HumanEvalSuite(sandbox=box)
    return suite, suite.problems()[0]


def lcb(box: Sandbox) -> tuple[LiveCodeBenchSuite, Any]:
    suite = LiveCodeBenchSuite(data_files=str(FIXTURES / "lcb" / "lcb_sample.jsonl"), sandbox=box)
    return suite, next(p for p in suite.problems() if p.id == "fixture901_a")


def bigcodebench(box: Sandbox) -> tuple[BigCodeBenchSuite, Any]:
    suite = BigCodeBenchSuite(data_files=str(FIXTURES / "bigcodebench" / "bcb_sample.jsonl"), sandbox=box)
    return suite, suite.problems()[0]


SUITES = {"humaneval": humaneval, "lcb": lcb, "bigcodebench": bigcodebench}
PARSING_SUITES = {"humaneval": humaneval, "bigcodebench": bigcodebench}


def assert_refused(suite: Any, problem: Any, program: str) -> str:
    score = suite.verify(problem, fenced(program))  # raises (fails the test) if the grader breaks
    assert (score.correct, score.score) == (False, 0.0), score
    assert score.reason, score
    return score.reason


# ----------------------------------------------------------------------------- the helper


@pytest.mark.parametrize("name", sorted(REFUSED_BY_ALL))
def test_texts_over_the_bound_or_not_text_are_refused_unread(name):
    reason = program_text_problem(REFUSED_BY_ALL[name])
    assert reason is not None
    assert isinstance(parse_candidate(REFUSED_BY_ALL[name]), str)


@pytest.mark.parametrize("name", sorted(UNPARSABLE))
def test_unparsable_depth_is_a_reason_not_an_exception(name):
    reason = parse_candidate(UNPARSABLE[name])
    assert isinstance(reason, str) and not reason.startswith(SYNTAX_ERROR), reason


@pytest.mark.parametrize("name", sorted(SYNTAX_ERRORS))
def test_syntax_errors_are_told_apart(name):
    reason = parse_candidate(SYNTAX_ERRORS[name])
    assert isinstance(reason, str) and reason.startswith(SYNTAX_ERROR), reason


def test_honest_programs_parse_up_to_the_bound():
    assert isinstance(parse_candidate(HONEST_0), ast.Module)
    padded = HONEST_0 + "# a comment line\n" * ((MAX_PROGRAM_BYTES - len(HONEST_0)) // 17)
    assert len(padded.encode()) <= MAX_PROGRAM_BYTES and isinstance(parse_candidate(padded), ast.Module)
    assert program_text_problem("s = 'naïve — ünïcode ✓'\n") is None
    assert program_text_problem(123) is not None  # type: ignore[arg-type]


def test_the_bound_is_far_above_real_solutions():
    """The longest BigCodeBench reference program (prompt + canonical solution) is under 2 KB."""
    suite, _ = bigcodebench(NoSandbox())
    for problem in suite.problems():
        program = extract_code(suite.reference_response(problem))
        assert program_text_problem(program) is None and len(program.encode()) * 30 < MAX_PROGRAM_BYTES


# ----------------------------------------------------------------------------- the suites


@pytest.mark.parametrize("suite_name", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(REFUSED_BY_ALL))
def test_every_code_suite_refuses_without_the_sandbox(suite_name, name):
    suite, problem = SUITES[suite_name](NoSandbox())
    assert_refused(suite, problem, REFUSED_BY_ALL[name])


@pytest.mark.parametrize("suite_name", sorted(PARSING_SUITES))
@pytest.mark.parametrize("name", sorted(UNPARSABLE))
def test_suites_that_parse_refuse_unparsable_depth_unrun(suite_name, name):
    suite, problem = PARSING_SUITES[suite_name](NoSandbox())
    assert "cannot be parsed" in assert_refused(suite, problem, UNPARSABLE[name])


@pytest.mark.parametrize("suite_name", sorted(SUITES))
@pytest.mark.parametrize("name", sorted(SYNTAX_ERRORS))
def test_syntax_errors_reach_the_sandbox_without_raising(suite_name, name):
    box = NoSandbox(allow=True)
    suite, problem = SUITES[suite_name](box)
    suite.verify(problem, fenced(SYNTAX_ERRORS[name]))
    assert box.calls >= 1


@pytest.mark.parametrize("suite_name", sorted(SUITES))
def test_honest_controls_reach_the_sandbox(suite_name):
    box = NoSandbox(allow=True)
    suite, problem = SUITES[suite_name](box)
    suite.verify(problem, fenced(HONEST_0 + "# padding\n" * 5_000))  # 50 KB: long but within the bound
    suite.verify(problem, fenced("    return True\n"))  # an indented completion: a SyntaxError alone
    assert box.calls == 2


def test_build_program_never_raises_on_hostile_code():
    suite, problem = humaneval(NoSandbox())
    for program in [*REFUSED_BY_ALL.values(), *UNPARSABLE.values(), *SYNTAX_ERRORS.values()]:
        assert humaneval_program(problem, program).endswith("\n")
    bcb_suite, bcb_problem = bigcodebench(NoSandbox())
    for program in [*REFUSED_BY_ALL.values(), *UNPARSABLE.values(), *SYNTAX_ERRORS.values()]:
        assert bcb_program(bcb_problem, program).endswith("\n")


def test_fence_extraction_of_hostile_megabytes_never_raises():
    """Megabytes of fences, backticks or open fences: extraction returns (its cost is measured in benchmarks/bench_parse.py)."""
    texts = ["```python\n" * (MB // 10), "`" * MB, "```python\n" + "x = 1\n" * (MB // 6), "~" * MB + "`", "```\n```\n" * (MB // 8)]
    for text in texts:
        extract_code(text)
