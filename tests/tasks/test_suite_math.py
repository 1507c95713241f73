"""MATH-500 and AIME: fixture rows in each schema, math-verify grading, deadlines, gym ids."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.tasks import get_suite, loading
from conductor_env.tasks.math_equivalence import MathEquivalence
from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.suites.math_suites import BOXED_INSTRUCTION, AIMESuite, Math500Suite, aime_integer
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

FIXTURES = Path(__file__).parents[1] / "fixtures" / "suites"
SHARED = Path(os.environ.get("CONDUCTOR_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))


def shared_file(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


@pytest.fixture(scope="module")
def math500() -> Math500Suite:
    return Math500Suite(data_files=FIXTURES / "math500.jsonl")


# --------------------------------------------------------------------------------- MATH-500


def test_math500_rows_become_problems(math500: Math500Suite) -> None:
    problems = math500.problems()
    assert len(problems) == 10
    first = problems[0]
    assert first.id == "test/prealgebra/9001.json"
    assert first.domain == "math"
    assert first.answer == "\\frac{3}{4}"
    assert first.question.endswith(BOXED_INSTRUCTION)
    assert first.metadata["subject"] == "Prealgebra" and first.metadata["level"] == 1
    assert math500.problems("test") is problems  # loaded once


def test_math500_reference_and_wrong_responses(math500: Math500Suite) -> None:
    for problem in math500.problems():
        assert math500.verify(problem, math500.reference_response(problem)).correct, problem.id
        wrong = math500.verify(problem, math500.wrong_response(problem))
        assert not wrong.correct and wrong.score == 0.0, problem.id


GRADING_CASES = [
    ("test/prealgebra/9001.json", "So the sum is $\\boxed{0.75}$.", True),
    ("test/prealgebra/9001.json", "$\\boxed{\\dfrac{3}{4}}$", True),
    ("test/prealgebra/9001.json", "\\boxed{6/8}", True),
    ("test/prealgebra/9001.json", "First \\boxed{\\frac{3}{4}}, but rechecking: \\boxed{\\frac{2}{3}}", False),
    ("test/prealgebra/9001.json", "The answer is 3/4.", False),  # no box
    ("test/precalculus/9002.json", "$\\boxed{(2, \\pi/3)}$", True),
    ("test/precalculus/9002.json", "$\\boxed{(2, \\pi/6)}$", False),
    ("test/algebra/9004.json", "\\boxed{\\sqrt{72}}", True),
    ("test/algebra/9004.json", "\\boxed{6\\sqrt{3}}", False),
    ("test/algebra/9005.json", "\\boxed{[1, 5)}", True),
    ("test/algebra/9005.json", "\\boxed{[1, 5]}", False),
    ("test/algebra/9006.json", "\\boxed{1 + x^{2}}", True),
    ("test/algebra/9006.json", "\\boxed{x^2 - 1}", False),
    ("test/prealgebra/9008.json", "<think>maybe \\boxed{0.3}</think>It is \\boxed{\\frac{1}{3}}.", True),
    ("test/prealgebra/9008.json", "<think>surely \\boxed{\\frac{1}{3}}</think>I am not sure.", False),
    ("test/algebra/9009.json", "\\boxed{3, 2}", True),
    ("test/counting_and_probability/9010.json", "\\boxed{15}", True),
    ("test/counting_and_probability/9010.json", "\\boxed{30}", False),
]


@pytest.mark.parametrize(("problem_id", "response", "correct"), GRADING_CASES)
def test_math500_grading(math500: Math500Suite, problem_id: str, response: str, correct: bool) -> None:
    problem = next(p for p in math500.problems() if p.id == problem_id)
    score = math500.verify(problem, response)
    assert score.correct is correct, score
    assert score.score == (1.0 if correct else 0.0)
    assert score.reason


def test_math500_reasons(math500: Math500Suite) -> None:
    problem = math500.problems()[2]
    assert math500.verify(problem, "I think it's 12").reason == "no boxed answer"
    assert math500.verify(problem, "").reason == "no boxed answer"
    assert "expected 12" in math500.verify(problem, "\\boxed{11}").reason


def test_math500_verify_from_threads_and_asyncio(math500: Math500Suite) -> None:
    # math-verify's own timeouts use signal.alarm and fail off the main thread; ours must not.
    problems = list(math500.problems())
    by_id = {p.id: p for p in problems}
    cases = [(by_id[pid], response, correct) for pid, response, correct in GRADING_CASES]
    with ThreadPoolExecutor(max_workers=4) as executor:
        scores = list(executor.map(lambda case: math500.verify(case[0], case[1]), cases))
    assert [score.correct for score in scores] == [correct for _, _, correct in cases]

    async def grade_all() -> list[bool]:
        results = await asyncio.gather(*(math500.averify(p, math500.reference_response(p)) for p in problems))
        return [r.correct for r in results]

    assert all(asyncio.run(grade_all()))


def test_equivalence_deadline_kills_and_recovers() -> None:
    equivalence = MathEquivalence(timeout_s=2.0, processes=1)
    try:
        slow = equivalence.compare("\\sum_{k=1}^{10^{9}} k^{k}", "1")
        assert slow.verdict == "timeout" and not slow.equal
        assert equivalence.compare("\\frac{1}{2}", "0.5").equal  # a fresh child answers
        assert equivalence.compare("\\frac{1}{2}", "0.6").verdict == "different"
    finally:
        equivalence.close()


def test_suite_deadline_is_a_wrong_answer_with_reason() -> None:
    suite = Math500Suite(data_files=FIXTURES / "math500.jsonl", verify_timeout_s=2.0, limit=1)
    try:
        score = suite.verify(suite.problems()[0], "\\boxed{\\sum_{k=1}^{10^{9}} k^{k}}")
        assert score == type(score)(False, 0.0, "verification timed out")
    finally:
        suite.close()


def test_math500_limit_and_bad_rows(tmp_path: Path) -> None:
    assert len(Math500Suite(data_files=FIXTURES / "math500.jsonl", limit=3).problems()) == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "no problem field", "answer": "1"}) + "\n")
    with pytest.raises(SuiteError, match="no field 'problem'"):
        Math500Suite(data_files=bad)
    with pytest.raises(SuiteError, match="not found"):
        Math500Suite(data_files=tmp_path / "absent.jsonl")
    with pytest.raises(SuiteError, match="no split 'train'"):
        Math500Suite(data_files=FIXTURES / "math500.jsonl").problems("train")


# --------------------------------------------------------------------------------------- AIME


@pytest.mark.parametrize(
    ("text", "value"),
    [("025", 25), ("25", 25), ("\\text{25}", 25), ("$7$", 7), ("25.", 25), ("25.0", 25), ("0", 0), ("\\frac{50}{2}", None), ("25\\%", None), ("x=25", None), ("", None)],
)
def test_aime_integer(text: str, value: int | None) -> None:
    assert aime_integer(text) == value


def test_aime_qwen_schema_with_leading_zeros() -> None:
    suite = AIMESuite(year=2024, data_files=FIXTURES / "aime24_qwen.jsonl")
    problems = suite.problems()
    assert [p.id for p in problems] == ["2024/0", "2024/1", "2024/2"]
    assert [p.answer for p in problems] == [1, 25, 520]
    first, second = problems[0], problems[1]
    assert suite.verify(first, "\\boxed{001}").correct
    assert suite.verify(first, "\\boxed{1}").correct
    assert suite.verify(second, "so there are $\\boxed{\\text{025}}$ pairs").correct
    assert suite.verify(second, "\\boxed{\\frac{50}{2}}").correct  # non-integer form: math-verify
    assert not suite.verify(second, "\\boxed{24}").correct
    assert suite.verify(second, "25").reason == "no boxed answer"
    for problem in problems:
        assert suite.verify(problem, suite.reference_response(problem)).correct
        assert not suite.verify(problem, suite.wrong_response(problem)).correct


def test_aime_other_schemas() -> None:
    capitalised = AIMESuite(year=2024, data_files=FIXTURES / "aime24_capitalised.jsonl")
    assert [p.id for p in capitalised.problems()] == ["2024/2024-I-1", "2024/2024-I-2"]
    assert capitalised.problems()[1].answer == 210
    aime25 = AIMESuite(data_files=FIXTURES / "aime25.jsonl")
    assert [p.answer for p in aime25.problems()] == [10, 25, 7]
    assert aime25.problems()[0].id == "2025/0"
    assert aime25.verify(aime25.problems()[2], "The digit sum is \\boxed{7}.").correct


def test_aime_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="year"):
        AIMESuite(year=2023, data_files=FIXTURES / "aime25.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"problem": "p", "answer": "x+1", "id": 1}) + "\n")
    with pytest.raises(SuiteError, match="not an integer"):
        AIMESuite(data_files=bad)


# ------------------------------------------------------------------------------- offline hub


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("name", "dataset", "env_id"),
    [
        ("math500", "HuggingFaceH4/MATH-500", "Conductor-MATH500-v0"),
        ("aime", "yentinglin/aime_2025", "Conductor-AIME-v0"),
    ],
)
def test_hub_suites_fail_at_make_time_without_hub(monkeypatch: pytest.MonkeyPatch, name: str, dataset: str, env_id: str) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_loopback_port()}")
    monkeypatch.setattr(loading, "_probe_cache", {})
    with pytest.raises(SuiteError) as raised:
        gym.make(env_id, pool="simulated")
    message = str(raised.value)
    assert dataset in message and "data_files" in message and "HF_HUB_OFFLINE" in message
    assert env_id in message


# ------------------------------------------------------------------------------------ gym ids


def sure_pool() -> WorkerPool:
    """Worker 0 always solves the problem, worker 1 never does (simulated, not an LLM)."""
    return WorkerPool(
        [WorkerSpec("always", "simulated", options={"skill": 1.0}), WorkerSpec("never", "simulated", options={"skill": 0.0})],
        name="sure",
    )


ONE_STEP = 'model_id = [{worker}]\nsubtasks = ["Solve the problem."]\naccess_list = [[]]'


@pytest.mark.parametrize(
    ("env_id", "options"),
    [
        ("Conductor-MATH500-v0", {"data_files": str(FIXTURES / "math500.jsonl")}),
        ("Conductor-AIME-v0", {"data_files": str(FIXTURES / "aime24_qwen.jsonl"), "year": 2024}),
    ],
)
def test_gym_make_grades_right_and_wrong(env_id: str, options: dict) -> None:
    env = gym.make(env_id, pool=sure_pool(), suite_options=options)
    try:
        observation, info = env.reset(seed=0)
        assert info["domain"] == "math" and "\\boxed{}" in observation["question"]
        _, reward, terminated, _, info = env.step(ONE_STEP.format(worker=0))
        assert terminated and info["correct"] and reward == 1.0
        env.reset(seed=0)
        _, reward, _, _, info = env.step(ONE_STEP.format(worker=1))
        assert not info["correct"] and reward == 0.5
    finally:
        env.close()


def test_get_suite_by_name() -> None:
    suite = get_suite("math500", data_files=str(FIXTURES / "math500.jsonl"), limit=2)
    assert isinstance(suite, Math500Suite) and len(suite.problems()) == 2


# ------------------------------------------------------------------------- real rows, if present


@pytest.mark.slow
def test_real_math500_gold_answers_verify_against_themselves() -> None:
    suite = Math500Suite(data_files=shared_file("math500.jsonl"))
    problems = suite.problems()
    assert len(problems) == 500
    # Through math-verify itself (the exact-string shortcut would make this trivially true).
    failed = [p.answer for p in problems if not suite.equivalence.compare(p.answer, p.answer).equal]
    assert failed == []
    wrongly_accepted = [p.id for p in problems if suite.verify(p, suite.wrong_response(p)).correct]
    assert wrongly_accepted == []


def test_real_math500_reference_solutions_grade_correct() -> None:
    # The reference solutions end with \boxed{answer}: graded like a model response.
    suite = Math500Suite(data_files=shared_file("math500.jsonl"), limit=100)
    rows = [json.loads(line) for line in shared_file("math500.jsonl").read_text().split("\n")[:100]]
    wrong = [row["unique_id"] for row, problem in zip(rows, suite.problems()) if not suite.verify(problem, row["solution"]).correct]
    assert wrong == []


@pytest.mark.parametrize(("name", "year", "count"), [("aime24.jsonl", 2024, 30), ("aime25.jsonl", 2025, 30)])
def test_real_aime_rows(name: str, year: int, count: int) -> None:
    suite = AIMESuite(year=year, data_files=shared_file(name))
    problems = suite.problems()
    assert len(problems) == count
    assert all(0 <= p.answer <= 999 for p in problems)
    assert all(suite.verify(p, suite.reference_response(p)).correct for p in problems)
    assert not any(suite.verify(p, suite.wrong_response(p)).correct for p in problems)


def test_aime_ids_name_the_year_the_rows_state(tmp_path: Path) -> None:
    rows = [
        {"id": 60, "problem": "p", "answer": "204", "url": "https://artofproblemsolving.com/wiki/index.php/2024_AIME_I_Problems/Problem_1"},
        {"id": 61, "problem": "q", "answer": 5, "year": "2025"},
        {"ID": "2024-II-3", "Problem": "r", "Answer": 7},
        {"id": 62, "problem": "s", "answer": 9},
    ]
    path = tmp_path / "aime.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    ids = [p.id for p in AIMESuite(data_files=path).problems()]  # the default year labels only the last row
    assert ids == ["2024/60", "2025/61", "2024/2024-II-3", "2025/62"]
    assert [p.metadata["year"] for p in AIMESuite(year=2024, data_files=path).problems()] == [2024, 2025, 2024, 2024]
