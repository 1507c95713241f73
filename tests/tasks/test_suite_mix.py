"""The training mix (and its RLPR source): balanced draws, 60/20/20 splits, delegated grading."""

from __future__ import annotations

import collections
import os
import socket
import warnings
from pathlib import Path

import gymnasium as gym
import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.tasks import loading
from conductor_env.tasks.public_tests import PublicOnlyError, PublicOnlyWarning
from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.suites.mix import MixSuite
from conductor_env.tasks.suites.rlpr import RLPRSuite, extract_tagged_answer, rlpr_match
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

FIXTURES = Path(__file__).parents[1] / "fixtures" / "suites"
SHARED = Path(os.environ.get("CONDUCTOR_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))

# The LCB rows of these files have no private tests (like the public-only release_v1 export), so
# reading the mix's train split needs allow_public_only=True (see the public-only tests below).
FILES = {
    "math500": str(FIXTURES / "math500.jsonl"),
    "mmlu": str(FIXTURES / "mmlu.jsonl"),
    "lcb": str(FIXTURES / "lcb_v1.jsonl"),
}
LCB_WITH_HIDDEN_TESTS = str(Path(__file__).parents[1] / "fixtures" / "lcb" / "lcb_sample.jsonl")

# The opt-in's warning is expected wherever a test opts in; the tests of the warning record it.
pytestmark = pytest.mark.filterwarnings("ignore::conductor_env.tasks.public_tests.PublicOnlyWarning")


def shared_file(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


@pytest.fixture(scope="module")
def mix() -> MixSuite:
    suite = MixSuite(data_files={**FILES, "rlpr": str(FIXTURES / "rlpr.jsonl")}, allow_public_only=True)
    yield suite
    suite.close()


# -------------------------------------------------------------------------------------- RLPR


@pytest.mark.parametrize(
    ("prediction", "reference", "match"),
    [
        ("60", "60", True),
        ("60 km/h", "60", True),
        ("60.04", "60", True),  # within 1e-3 relative
        ("61", "60", False),
        ("25%", "0.25", True),
        ("0.25", "25%", True),
        ("$1,200", "1200", True),
        ("1.2 thousand", "1200", True),
        ("1.13e4", "11300", True),
        ("nacl", "NaCl", True),
        ("NaCl2", "NaCl", False),
        ("F = qvB", "F=qvB", False),
        ("", "5", False),
    ],
)
def test_rlpr_match(prediction: str, reference: str, match: bool) -> None:
    assert rlpr_match(prediction, reference) is match


def test_rlpr_answer_extraction() -> None:
    assert extract_tagged_answer("<answer>3</answer> then <answer> 4 </answer>") == "4"
    assert extract_tagged_answer("<think><answer>1</answer></think>no tag here") is None
    assert extract_tagged_answer("So \\boxed{7}.") == "7"


def test_rlpr_rows(tmp_path: Path) -> None:
    suite = RLPRSuite(data_files=FIXTURES / "rlpr.jsonl")
    problems = suite.problems()
    assert [p.id for p in problems] == ["0", "1", "2", "3"]
    first = problems[0]
    assert first.domain == "reasoning" and first.answer == "60"
    assert first.question.startswith("Subject: Physics\n\nA car travels")
    assert "<answer>" in first.question
    assert suite.verify(first, "Speed = 150/2.5.\n<answer>60 km/h</answer>").correct
    assert suite.verify(first, "I think 60").reason == "no <answer> tag"
    assert suite.verify(problems[3], "<answer>30</answer>").correct  # gold "30 J"
    for problem in problems:
        assert suite.verify(problem, suite.reference_response(problem)).correct
        assert not suite.verify(problem, suite.wrong_response(problem)).correct
    with pytest.raises(SuiteError, match="no split 'test'"):
        suite.problems("test")


# --------------------------------------------------------------------------------------- mix


def test_mix_splits_are_sixty_twenty_twenty_per_source(mix: MixSuite) -> None:
    splits = {split: mix.problems(split) for split in ("train", "validation", "test")}
    counts = {split: collections.Counter(p.metadata["source"] for p in problems) for split, problems in splits.items()}
    # 10 MATH rows -> 6/2/2, 6 MMLU -> 4/1/1, 4 LCB -> 2/1/1 (rounded), 4 RLPR -> 2/1/1.
    assert counts["train"] == {"math500": 6, "mmlu": 4, "lcb": 2, "rlpr": 2}
    assert counts["validation"] == {"math500": 2, "mmlu": 1, "lcb": 1, "rlpr": 1}
    assert counts["test"] == {"math500": 2, "mmlu": 1, "lcb": 1, "rlpr": 1}
    ids = [p.id for problems in splits.values() for p in problems]
    assert len(ids) == len(set(ids)) == 24
    assert all(p.id == f"{p.metadata['source']}/{p.metadata['source_id']}" for problems in splits.values() for p in problems)
    assert mix.problems() == splits["train"]


def test_mix_is_deterministic_and_seeded(mix: MixSuite) -> None:
    files = {**FILES, "rlpr": str(FIXTURES / "rlpr.jsonl")}
    again = MixSuite(data_files=files, allow_public_only=True)
    assert [p.id for p in again.problems("train")] == [p.id for p in mix.problems("train")]
    other = MixSuite(data_files=files, seed=7, allow_public_only=True)
    assert [p.id for p in other.problems("train")] != [p.id for p in mix.problems("train")]
    without_rlpr = MixSuite(data_files=FILES, allow_public_only=True)
    assert {p.metadata["source"] for p in without_rlpr.problems("train")} == {"math500", "mmlu", "lcb"}


def test_mix_caps_each_source_at_its_share() -> None:
    small = MixSuite(data_files=FILES, size=9, allow_public_only=True)  # 3 per source
    sources = collections.Counter(p.metadata["source"] for split in ("train", "validation", "test") for p in small.problems(split))
    assert sources == {"math500": 3, "mmlu": 3, "lcb": 3}


def test_mix_grades_with_each_source(mix: MixSuite) -> None:
    everything = [p for split in ("train", "validation", "test") for p in mix.problems(split)]
    by_source = {p.metadata["source"]: p for p in everything}
    math, choice, rlpr, code = by_source["math500"], by_source["mmlu"], by_source["rlpr"], by_source["lcb"]
    assert mix.verify(math, f"\\boxed{{{math.answer}}}").correct
    assert mix.verify(math, "Answer: A").reason == "no boxed answer"
    assert mix.verify(choice, f"Answer: {choice.answer}").correct
    assert mix.verify(choice, "\\boxed{42}").reason == "no choice letter"
    assert mix.verify(rlpr, f"<answer>{rlpr.answer}</answer>").correct
    assert mix.verify(code, "I would loop over the input.").reason == "no code block"
    assert code.domain == "code" and mix.reference_response(code) is None
    for problem in (math, choice, rlpr):
        assert mix.verify(problem, mix.reference_response(problem)).correct
        assert not mix.verify(problem, mix.wrong_response(problem)).correct
    with pytest.raises(SuiteError, match="not part of this mix"):
        mix.verify(type(math)(id="math500/other", question="q", domain="math", metadata={"source": "math500"}), "x")


def test_mix_code_runs_in_the_sandbox() -> None:
    code_only = MixSuite(data_files={"lcb": FILES["lcb"]}, sources=["lcb"], sandbox="local", allow_public_only=True)
    try:
        code = next(p for split in ("train", "validation", "test") for p in code_only.problems(split) if p.id == "lcb/fixmix1_a")
        score = code_only.verify(code, "```python\nprint(2 * int(input()))\n```")
        assert score.correct, score
        assert not code_only.verify(code, code_only.wrong_response(code)).correct
    finally:
        code_only.close()


def test_mix_option_errors() -> None:
    with pytest.raises(SuiteError, match="sources"):
        MixSuite(data_files=FILES, sources=["math500", "gsm8k"])
    with pytest.raises(SuiteError, match="ratios"):
        MixSuite(data_files=FILES, ratios=(0.5, 0.5, 0.5))
    with pytest.raises(SuiteError, match="splits"):
        MixSuite(data_files=FILES).problems("dev")


# ------------------------------------------------------------------- rows without hidden tests


def test_mix_train_split_refuses_public_only_lcb_rows_without_the_opt_in() -> None:
    mix = MixSuite(data_files=FILES)
    # Evaluation splits serve them, marked.
    code = [p for split in ("validation", "test") for p in mix.problems(split) if p.metadata["source"] == "lcb"]
    assert code and all(p.metadata["test_set"] == "public" and not p.metadata["has_private_tests"] for p in code)
    with pytest.raises(PublicOnlyError) as refused:
        mix.problems("train")
    message = str(refused.value)
    assert "allow_public_only" in message and "split 'train'" in message and "lcb/" in message
    # The default split is train, so a plain gym.make fails at once, with the same message.
    with pytest.raises(PublicOnlyError, match="allow_public_only"):
        gym.make("Conductor-Mix-v0", pool="simulated", suite_options={"data_files": FILES})


def test_mix_opt_in_warns_once_per_suite() -> None:
    mix = MixSuite(data_files=FILES, allow_public_only=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = mix.problems("train")
        assert mix.problems("train") == first and mix.problems() == first
        env = gym.make("Conductor-Mix-v0", suite=mix, pool="simulated")
        env.close()
    public_only = [w for w in caught if issubclass(w.category, PublicOnlyWarning)]
    assert len(public_only) == 1
    assert "graded only on public tests" in str(public_only[0].message)
    assert "allow_public_only=True" in str(public_only[0].message)


def test_mix_with_hidden_test_rows_trains_without_opt_in_or_warning() -> None:
    mix = MixSuite(data_files={**FILES, "lcb": LCB_WITH_HIDDEN_TESTS})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PublicOnlyWarning)
        train = mix.problems("train")
    code = [p for p in train if p.metadata["source"] == "lcb"]
    assert code and all(p.metadata["test_set"] == "public+private" for p in code)


def test_mix_opt_in_must_be_a_bool() -> None:
    with pytest.raises(SuiteError, match="allow_public_only must be true or false"):
        MixSuite(data_files=FILES, allow_public_only="no")


def closed_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_mix_names_the_missing_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(SuiteError) as raised:
        MixSuite(data_files={**FILES, "mmlu": str(tmp_path / "absent.jsonl")})
    assert "source 'mmlu'" in str(raised.value) and '"data_files": {"mmlu"' in str(raised.value)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_loopback_port()}")
    monkeypatch.setattr(loading, "_probe_cache", {})
    with pytest.raises(SuiteError) as raised:
        gym.make("Conductor-Mix-v0", pool="simulated", suite_options={"data_files": {"math500": FILES["math500"]}})
    message = str(raised.value)
    assert "cais/mmlu" in message and "HF_HUB_OFFLINE" in message and "data_files" in message


# ------------------------------------------------------------------------------------ gym ids


def sure_pool() -> WorkerPool:
    return WorkerPool(
        [WorkerSpec("always", "simulated", options={"skill": 1.0}), WorkerSpec("never", "simulated", options={"skill": 0.0})],
        name="sure",
    )


def test_gym_make_mix_episode() -> None:
    env = gym.make("Conductor-Mix-v0", pool=sure_pool(), split="validation", suite_options={"data_files": FILES})
    try:
        suite = env.unwrapped.suite
        math = next(p for p in suite.problems("validation") if p.domain == "math")
        observation, info = env.reset(options={"problem_id": math.id})
        assert info["problem_id"] == math.id and observation["question"] == math.question
        _, reward, _, _, info = env.step('model_id = [0]\nsubtasks = ["Solve it."]\naccess_list = [[]]')
        assert info["correct"] and reward == 1.0
    finally:
        env.close()


# ------------------------------------------------------------------------- real rows, if present


def test_real_mix_has_960_problems() -> None:
    files = {
        "math500": shared_file("math500.jsonl"),
        "mmlu": shared_file("mmlu_test_full.jsonl"),
        "lcb": shared_file("lcb_release_v1_public_only.jsonl"),
    }
    suite = MixSuite(data_files=files, allow_public_only=True)
    sizes = {split: len(suite.problems(split)) for split in ("train", "validation", "test")}
    assert sizes == {"train": 576, "validation": 192, "test": 192}
    sources = collections.Counter(p.metadata["source"] for p in suite.problems("train"))
    assert sources == {"math500": 192, "mmlu": 192, "lcb": 192}
