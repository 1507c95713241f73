"""HumanEval suite: the 164 canonical solutions pass in a sandbox, broken variants and early exits fail."""

from __future__ import annotations

import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import pytest

import conductor_env  # noqa: F401  (registers the gym ids)
from conductor_env.sandboxes import docker_available, get_sandbox
from conductor_env.suite import Problem, Score
from conductor_env.tasks import SuiteError
from conductor_env.tasks.suites.humaneval import HumanEvalSuite, build_checks, build_program

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "humaneval" / "humaneval_sample.jsonl"

BACKENDS = [pytest.param("local", id="local"), pytest.param("docker", id="docker", marks=pytest.mark.docker)]


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request):
    if request.param == "docker" and (why := docker_available()):
        pytest.skip(why)
    box = get_sandbox(request.param)
    yield box
    box.close()


@pytest.fixture(scope="module")
def suite(sandbox) -> HumanEvalSuite:
    return HumanEvalSuite(sandbox=sandbox)


@pytest.fixture(scope="module")
def offline_suite() -> HumanEvalSuite:
    """For tests that never reach a sandbox."""
    return HumanEvalSuite(sandbox="local")


def fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```\n"


def verify_all(suite: HumanEvalSuite, answers: list[tuple[Problem, str]]) -> list[Score]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda pair: suite.verify(*pair), answers))


def broken_variant(problem: Problem) -> str:
    """The canonical solution, wrapped so every result is off: plausible code that must fail."""
    entry = problem.metadata["entry_point"]
    canonical = problem.metadata["prompt"] + problem.metadata["canonical_solution"]
    wrapper = textwrap.dedent(
        f"""

        def _off(value):
            if isinstance(value, bool):
                return not value
            if isinstance(value, (int, float)):
                return value + 1
            if isinstance(value, str):
                return value + "?"
            if isinstance(value, list):
                return value + [value[0] if value else 0]
            if isinstance(value, tuple):
                return value + (0,)
            return 0 if value is None else None


        _right_{entry} = {entry}


        def {entry}(*args, **kwargs):
            return _off(_right_{entry}(*args, **kwargs))
        """
    )
    return fenced(canonical.rstrip() + "\n" + wrapper)


# ---------------------------------------------------------------------------------------------
# Loading, questions and programs (no sandbox)
# ---------------------------------------------------------------------------------------------


def test_packaged_problems_load(offline_suite):
    problems = offline_suite.problems()
    assert len(problems) == 164
    assert problems[0].id == "HumanEval/0" and problems[-1].id == "HumanEval/163"
    first = problems[0]
    assert first.domain == "code"
    assert "def has_close_elements(numbers: List[float], threshold: float) -> bool:" in first.question
    assert "single fenced ```python" in first.question
    assert first.tests.rstrip().endswith("check(has_close_elements)")
    with pytest.raises(SuiteError, match="one split"):
        offline_suite.problems("train")


def test_full_function_keeps_the_prompts_imports_and_helpers(offline_suite):
    decode = next(p for p in offline_suite.problems() if p.id == "HumanEval/38")
    code = "def decode_cyclic(s: str):\n    return encode_cyclic(encode_cyclic(s))\n"
    program = build_program(decode, code)
    assert program.index("def encode_cyclic") < program.index("def decode_cyclic")
    assert program.count("def decode_cyclic") == 1  # the prompt's stub is not repeated
    assert "def check(" not in program  # the checks run apart from the candidate
    checks = build_checks(decode)
    assert "def encode_cyclic" in checks["checks"] and "def check(" in checks["checks"]
    assert checks["call"].strip() == "check(decode_cyclic)"


def test_a_bare_completion_follows_the_prompt(offline_suite):
    first = offline_suite.problems()[0]
    body = first.metadata["canonical_solution"]
    program = build_program(first, body)
    assert first.metadata["prompt"] + body in program
    assert "def check(" not in program and first.metadata["test"] not in program


def test_answers_without_a_code_block_score_zero(offline_suite):
    score = offline_suite.verify(offline_suite.problems()[0], "return sorted(numbers)")
    assert (score.correct, score.score, score.reason) == (False, 0.0, "no code block")


def test_schema_errors_are_clear(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "X/0", "prompt": "def f():\\n"}\n')
    with pytest.raises(SuiteError, match="entry_point"):
        HumanEvalSuite(data_files=str(bad), sandbox="local")


# ---------------------------------------------------------------------------------------------
# Grading in the sandbox
# ---------------------------------------------------------------------------------------------


def test_every_canonical_solution_passes(suite):
    problems = suite.problems()
    scores = verify_all(suite, [(p, suite.reference_response(p)) for p in problems])
    failures = {p.id: s.reason for p, s in zip(problems, scores) if not s.correct}
    assert failures == {}
    assert sum(s.correct for s in scores) == 164


def test_every_broken_variant_fails(suite):
    problems = suite.problems()
    scores = verify_all(suite, [(p, broken_variant(p)) for p in problems])
    passed = [p.id for p, s in zip(problems, scores) if s.correct]
    assert passed == []
    assert all(s.score == 0.0 and s.reason for s in scores)


def test_wrong_responses_fail(suite):
    problems = suite.problems()[:20]
    scores = verify_all(suite, [(p, suite.wrong_response(p)) for p in problems])
    assert not any(s.correct for s in scores)


def test_completion_only_answers_are_graded_like_the_reference_harness(suite):
    problems = suite.problems()[:10]
    answers = [(p, fenced(p.metadata["canonical_solution"])) for p in problems]
    assert all(s.correct for s in verify_all(suite, answers))


@pytest.mark.parametrize(
    "exit_call",
    ["import sys\nsys.exit(0)", "import os\nos._exit(0)", "raise SystemExit", "quit()", "exit(0)"],
    ids=["sys.exit", "os._exit", "SystemExit", "quit", "exit"],
)
def test_exiting_before_the_checks_is_a_failure(suite, exit_call):
    problem = suite.problems()[0]
    canonical = problem.metadata["prompt"] + problem.metadata["canonical_solution"]
    wrong_but_exits = canonical.replace("return False", "return True") + "\n" + exit_call + "\n"
    score = suite.verify(problem, fenced(wrong_but_exits))
    assert not score.correct and score.score == 0.0


def test_main_guard_demos_do_not_run_as_in_the_reference_harness(suite):
    problem = suite.problems()[0]
    canonical = problem.metadata["prompt"] + problem.metadata["canonical_solution"]
    demo = canonical + "\n\nif __name__ == '__main__':\n    print(has_close_elements(eval(input()), 0.5))\n"
    assert suite.verify(problem, fenced(demo)).correct


def test_failures_say_why(suite):
    problem = suite.problems()[0]
    score = suite.verify(problem, fenced("def has_close_elements(numbers, threshold):\n    return True\n"))
    assert not score.correct
    assert "AssertionError" in score.reason or "wrong" in score.reason or "runtime_error" in score.reason
    quick = HumanEvalSuite(sandbox=suite.sandbox(), limits={"wall_s": 1.0, "cpu_s": 1})
    timeout = quick.verify(problem, fenced("def has_close_elements(numbers, threshold):\n    while True:\n        pass\n"))
    assert not timeout.correct and "timeout" in timeout.reason


def test_local_humaneval_schema_files(sandbox):
    local = HumanEvalSuite(data_files=str(FIXTURE), sandbox=sandbox)
    problems = local.problems()
    assert [p.id for p in problems] == ["Fixture/0", "Fixture/1"]
    assert all(local.verify(p, local.reference_response(p)).correct for p in problems)
    # A complete function that relies on the prompt's helper (rotate) passes without redefining it.
    unrotate = problems[1]
    assert local.verify(unrotate, fenced("def unrotate(s, k):\n    return rotate(s, -k)\n")).correct
    assert not local.verify(unrotate, fenced("def unrotate(s, k):\n    return rotate(s, k)\n")).correct


def test_gym_make_builds_the_humaneval_env(sandbox):
    env = gym.make("Conductor-HumanEval-v0", pool="simulated", sandbox=sandbox)
    try:
        observation, info = env.reset(seed=0, options={"problem_id": "HumanEval/2"})
        assert "def truncate_number" in observation["question"]
    finally:
        env.close()
