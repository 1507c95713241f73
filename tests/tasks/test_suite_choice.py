"""GPQA and MMLU: fixture rows in each schema, seeded GPQA shuffles, letter grading, gym ids.

The GPQA fixture rows are invented questions in GPQA's schema; no real GPQA item is stored here.
"""

from __future__ import annotations

import collections
import json
import os
import socket
from pathlib import Path

import gymnasium as gym
import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.tasks import loading
from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.suites.choice import GPQASuite, MMLUSuite, choice_question, gpqa_permutation
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

FIXTURES = Path(__file__).parents[1] / "fixtures" / "suites"
SHARED = Path(os.environ.get("CONDUCTOR_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))


def shared_file(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


def fixture_rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


# -------------------------------------------------------------------------------------- GPQA


def test_gpqa_rows_become_shuffled_problems() -> None:
    suite = GPQASuite(data_files=FIXTURES / "gpqa_diamond.jsonl")
    rows = fixture_rows("gpqa_diamond.jsonl")
    problems = suite.problems()
    assert [p.id for p in problems] == [row["Record ID"] for row in rows]
    for row, problem in zip(rows, problems):
        assert problem.domain == "choice"
        options = problem.metadata["options"]
        assert sorted(options) == sorted(row[k] for k in ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"))
        assert options["ABCD".index(problem.answer)] == row["Correct Answer"]
        assert f"{problem.answer}) {row['Correct Answer']}\n" in problem.question
        assert problem.question.startswith(row["Question"])
        assert "Answer: X" in problem.question
    # The correct option does not sit at one letter.
    assert len({p.answer for p in problems}) >= 3


def test_gpqa_permutation_is_deterministic_and_seeded() -> None:
    first = GPQASuite(data_files=FIXTURES / "gpqa_diamond.jsonl")
    again = GPQASuite(data_files=FIXTURES / "gpqa_diamond.jsonl")
    other_seed = GPQASuite(data_files=FIXTURES / "gpqa_diamond.jsonl", seed=1)
    assert [p.question for p in first.problems()] == [p.question for p in again.problems()]
    assert [p.answer for p in first.problems()] != [p.answer for p in other_seed.problems()]
    assert sorted(gpqa_permutation("recX", 0)) == [0, 1, 2, 3]
    assert gpqa_permutation("recX", 0) == gpqa_permutation("recX", 0)


def test_gpqa_permutation_is_stable_across_processes() -> None:
    # Fixed values: a change here would silently re-letter every published result.
    assert gpqa_permutation("recFixture0000x", 0) == GPQASuite(data_files=FIXTURES / "gpqa_diamond.jsonl").problems()[0].metadata["permutation"]
    import subprocess
    import sys

    code = "from conductor_env.tasks.suites.choice import gpqa_permutation as g; print(g('recFixture0000x', 0))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert other.stdout.strip() == str(gpqa_permutation("recFixture0000x", 0))


def test_gpqa_csv_export_loads() -> None:
    suite = GPQASuite(data_files=FIXTURES / "gpqa_diamond.csv")
    jsonl = GPQASuite(data_files=FIXTURES / "gpqa_diamond.jsonl")
    assert [p.question for p in suite.problems()] == [p.question for p in jsonl.problems()[:4]]


@pytest.mark.parametrize(
    ("template", "correct"),
    [
        ("Let me think.\n\nAnswer: {gold}", True),
        ("The answer is ({gold}).", True),
        ("\\boxed{{{gold}}}", True),
        ("Answer: {wrong}\n\nOn reflection that was wrong.\nAnswer: {gold}", True),
        ("Answer: {gold}\n\nOn reflection that was wrong.\nAnswer: {wrong}", False),
        ("Answer: {wrong}", False),
        ("I can't decide between them.", False),
    ],
)
def test_gpqa_grading(template: str, correct: bool) -> None:
    suite = GPQASuite(data_files=FIXTURES / "gpqa_diamond.jsonl", limit=3)
    for problem in suite.problems():
        gold = problem.answer
        wrong = "ABCD"[("ABCD".index(gold) + 2) % 4]
        score = suite.verify(problem, template.format(gold=gold, wrong=wrong))
        assert score.correct is correct, (template, score)


def test_choice_reasons_and_reference_responses() -> None:
    suite = GPQASuite(data_files=FIXTURES / "gpqa_diamond.jsonl")
    problem = suite.problems()[0]
    assert suite.verify(problem, "no idea").reason == "no choice letter"
    assert suite.verify(problem, suite.wrong_response(problem)).reason.startswith(f"expected {problem.answer}")
    for problem in suite.problems():
        assert suite.verify(problem, suite.reference_response(problem)).correct
        assert not suite.verify(problem, suite.wrong_response(problem)).correct


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("env_id", "dataset", "gated"),
    [
        ("Conductor-GPQA-v0", "Idavidrein/gpqa", True),
        ("Conductor-MMLU-v0", "cais/mmlu", False),
    ],
)
def test_hub_failure_at_make_time(monkeypatch: pytest.MonkeyPatch, env_id: str, dataset: str, gated: bool) -> None:
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_loopback_port()}")
    monkeypatch.setattr(loading, "_probe_cache", {})
    with pytest.raises(SuiteError) as raised:
        gym.make(env_id, pool="simulated")
    message = str(raised.value)
    assert dataset in message and "data_files" in message and "HF_HUB_OFFLINE" in message
    assert ("huggingface-cli login" in message and "HF_TOKEN" in message) is gated


def test_gpqa_bad_rows(tmp_path: Path) -> None:
    row = fixture_rows("gpqa_diamond.jsonl")[0]
    del row["Incorrect Answer 3"]
    bad = tmp_path / "gpqa.jsonl"
    bad.write_text(json.dumps(row) + "\n")
    with pytest.raises(SuiteError, match="Incorrect Answer 3"):
        GPQASuite(data_files=bad)


# -------------------------------------------------------------------------------------- MMLU


def test_mmlu_rows_keep_dataset_order() -> None:
    suite = MMLUSuite(data_files=FIXTURES / "mmlu.jsonl")
    rows = fixture_rows("mmlu.jsonl")
    problems = suite.problems()
    assert [p.id for p in problems] == [f"{row['subject']}/{i}" for i, row in enumerate(rows)]
    for row, problem in zip(rows, problems):
        assert problem.metadata["options"] == row["choices"]
        assert problem.answer == "ABCD"[row["answer"]]
        assert problem.question == choice_question(row["question"], row["choices"])
        assert suite.verify(problem, f"Answer: {problem.answer}").correct


def test_mmlu_subjects_splits_and_letter_answers(tmp_path: Path) -> None:
    suite = MMLUSuite(subjects=["astronomy", "abstract_algebra"], data_files=FIXTURES / "mmlu.jsonl")
    assert [p.id for p in suite.problems()] == ["astronomy/0", "abstract_algebra/5"]
    with pytest.raises(SuiteError, match="no rows for subjects"):
        MMLUSuite(subjects="virology", data_files=FIXTURES / "mmlu.jsonl")
    by_split = MMLUSuite(data_files={"test": FIXTURES / "mmlu.jsonl", "validation": FIXTURES / "mmlu_validation.jsonl"})
    assert [p.answer for p in by_split.problems("validation")] == ["B"]
    with pytest.raises(SuiteError, match="no split 'dev'"):
        by_split.problems("dev")
    # CSV-style exports: choices as a JSON string, answer as a letter.
    exported = tmp_path / "mmlu.jsonl"
    exported.write_text(json.dumps({"question": "q?", "subject": "s", "choices": json.dumps(["w", "x", "y", "z"]), "answer": "C"}) + "\n")
    problem = MMLUSuite(data_files=exported).problems()[0]
    assert problem.answer == "C" and problem.metadata["options"] == ["w", "x", "y", "z"]


# ------------------------------------------------------------------------------------ gym ids


def sure_pool() -> WorkerPool:
    return WorkerPool(
        [WorkerSpec("always", "simulated", options={"skill": 1.0}), WorkerSpec("never", "simulated", options={"skill": 0.0})],
        name="sure",
    )


ONE_STEP = 'model_id = [{worker}]\nsubtasks = ["Answer the question."]\naccess_list = [[]]'


@pytest.mark.parametrize(
    ("env_id", "data_file"),
    [
        ("Conductor-GPQA-v0", "gpqa_diamond.jsonl"),
        ("Conductor-MMLU-v0", "mmlu.jsonl"),
    ],
)
def test_gym_make_grades_right_and_wrong(env_id: str, data_file: str) -> None:
    env = gym.make(env_id, pool=sure_pool(), suite_options={"data_files": str(FIXTURES / data_file)})
    try:
        observation, info = env.reset(seed=3)
        assert info["domain"] == "choice" and "A) " in observation["question"]
        _, reward, _, _, info = env.step(ONE_STEP.format(worker=0))
        assert info["correct"] and reward == 1.0
        env.reset(seed=3)
        _, reward, _, _, info = env.step(ONE_STEP.format(worker=1))
        assert not info["correct"] and reward == 0.5
    finally:
        env.close()


# ------------------------------------------------------------------------- real rows, if present


def test_real_gpqa_rows_shuffle_evenly() -> None:
    suite = GPQASuite(data_files=shared_file("gpqa_diamond.jsonl"))
    problems = suite.problems()
    assert len(problems) == 198
    counts = collections.Counter(p.answer for p in problems)
    assert all(30 <= counts[letter] <= 70 for letter in "ABCD"), counts
    assert all(suite.verify(p, suite.reference_response(p)).correct for p in problems)


def test_real_mmlu_gold_letters() -> None:
    path = shared_file("mmlu_test_full.jsonl")
    suite = MMLUSuite(data_files=path)
    problems = suite.problems()
    assert len(problems) == 14042
    rows = [json.loads(line) for line in path.read_text().split("\n") if line]
    assert all(p.answer == "ABCD"[row["answer"]] for p, row in zip(problems, rows))
    assert all(suite.verify(p, f"The answer is ({p.answer}).").correct for p in problems[::50])
    assert not any(suite.verify(p, suite.wrong_response(p)).correct for p in problems[::50])
