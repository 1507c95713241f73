"""The Mix's two recipes: the released code's split-then-balance, no train/test overlap, MATH-500 held out."""

from __future__ import annotations

import collections
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.suites import mix_recipe
from conductor_env.tasks.suites.math_suites import Math500Suite
from conductor_env.tasks.suites.mix import MixRecipeWarning, MixSuite

SHARED = Path(os.environ.get("CONDUCTOR_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
SPLITS = ("train", "validation", "test")

pytestmark = [
    pytest.mark.filterwarnings("ignore::conductor_env.tasks.public_tests.PublicOnlyWarning"),
    pytest.mark.filterwarnings("ignore::conductor_env.tasks.suites.mix.MixRecipeWarning"),
]


# ------------------------------------------------------------------------ synthetic source rows


def math_row(k: int) -> dict[str, Any]:
    return {"problem": f"What is {k} + {k}?", "solution": f"\\boxed{{{2 * k}}}", "answer": str(2 * k), "subject": "Algebra", "level": 1, "unique_id": f"test/synthetic/{k}.json"}


def mmlu_row(k: int, subject: str = "astronomy") -> dict[str, Any]:
    return {"question": f"Which option is number {k % 4}? (item {k})", "subject": subject, "choices": ["zero", "one", "two", "three"], "answer": k % 4}


def rlpr_row(k: int) -> dict[str, Any]:
    return {"prompt": [{"role": "user", "content": f"What is {k} times 3?"}], "ability": "Math", "reward_model": {"ground_truth": str(3 * k), "style": "rule"}, "extra_info": {"index": k}}


def lcb_row(k: int) -> dict[str, Any]:
    tests = json.dumps([{"input": "1\n", "output": f"{1 + k}\n", "testtype": "stdin"}])
    return {
        "question_title": f"Add {k}", "question_content": f"Read N and print N + {k}.", "platform": "atcoder",
        "question_id": f"syn{k}_a", "contest_id": f"syn{k}", "contest_date": "2023-06-01T00:00:00", "starter_code": "",
        "difficulty": "easy", "public_test_cases": tests, "private_test_cases": "", "metadata": "{}",
    }  # fmt: skip


ROWS = {"math500": math_row, "mmlu": mmlu_row, "rlpr": rlpr_row, "lcb": lcb_row}


def write(folder: Path, name: str, rows: list[dict[str, Any]]) -> str:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def source_files(folder: Path, sizes: dict[str, int], *, mmlu_splits: dict[str, int] | None = None, nested: bool = False) -> dict[str, Any]:
    """Writes synthetic rows per source; ``nested`` writes ``auxiliary_train`` rows as ``{"train": row}``."""
    files: dict[str, Any] = {name: write(folder, name, [ROWS[name](k) for k in range(n)]) for name, n in sizes.items()}
    if mmlu_splits:
        files["mmlu"] = {}
        for split, n in mmlu_splits.items():
            rows = [mmlu_row(k, "" if split == "auxiliary_train" else "astronomy") for k in range(n)]
            files["mmlu"][split] = write(folder, f"mmlu_{split}", [{"train": row} for row in rows] if nested and split == "auxiliary_train" else rows)
    return files


def ids(suite: MixSuite, split: str) -> list[str]:
    return [p.id for p in suite.problems(split)]


# ---------------------------------------------------------------------------- the index rules


@given(n=st.integers(0, 400), seed=st.integers(0, 2**31), valid=st.sampled_from([0.0, 0.1, 0.2, 0.25]), test=st.sampled_from([0.0, 0.1, 0.2, 0.3]))
def test_released_split_partitions_every_row(n: int, seed: int, valid: float, test: float) -> None:
    parts = mix_recipe.released_split(n, seed=seed, valid_ratio=valid, test_ratio=test)
    assert sorted(parts["train"] + parts["validation"] + parts["test"]) == list(range(n))
    assert (len(parts["test"]), len(parts["validation"])) == (int(n * test), int(n * valid))


def test_the_index_rules_match_the_released_generators() -> None:
    datasets = pytest.importorskip("datasets")
    table = datasets.Dataset.from_dict({"i": list(range(300))})
    assert table.shuffle(seed=44)["i"] == mix_recipe.dataset_shuffle(300, 44)
    # MATH-500's released split: 100 test, 100 validation, 300 train; LCB release_v1's 400: 80/80/240.
    math = mix_recipe.released_split(500, seed=42, valid_ratio=0.2, test_ratio=0.2)
    assert [len(math[s]) for s in SPLITS] == [300, 100, 100]
    assert len(mix_recipe.released_split(400, seed=42, valid_ratio=0.2, test_ratio=0.2)["train"]) == 240
    # MMLU: auxiliary_train 99842, validation 1531, test 14042 -> the validation split limits the total.
    counts = mix_recipe.ratio_counts({"train": 99842, "validation": 1531, "test": 14042}, valid_ratio=0.2, test_ratio=0.2)
    assert counts == {"train": 4593, "validation": 1531, "test": 1531}
    keep = mix_recipe.balanced_train({"mmlu": counts["train"], "math500": 300, "rlpr": 5000, "lcb": 240}, seed=42)
    assert {name: len(kept) for name, kept in keep.items()} == {"mmlu": 240, "math500": 240, "rlpr": 240, "lcb": 240}


def released_mix_with_datasets(rows: dict[str, dict[str, list[dict[str, Any]]]], seed: int) -> dict[str, list[tuple[str, str, int]]]:
    """The released procedure, step by step with the ``datasets`` library (for comparison)."""
    datasets = pytest.importorskip("datasets")
    parts: dict[str, dict[str, Any]] = {}
    offsets = {"mmlu": 0, "math500": 2, "rlpr": 3, "lcb": 4}
    for name in ("mmlu", "math500", "rlpr", "lcb"):
        own = rows[name]
        if name == "mmlu":
            counts = mix_recipe.ratio_counts({s: len(own[s]) for s in SPLITS}, valid_ratio=0.2, test_ratio=0.2)
            tables = {s: datasets.Dataset.from_list([{"tag": f"{name}|{s}|{i}"} for i in range(len(own[s]))]).shuffle(seed=seed).select(range(counts[s])) for s in SPLITS}
        else:
            table = datasets.Dataset.from_list([{"tag": f"{name}|all|{i}"} for i in range(len(own["all"]))])
            split = mix_recipe.released_split(len(table), seed=seed, valid_ratio=0.2, test_ratio=0.2)
            tables = {s: table.select(split[s]) for s in SPLITS}
        parts[name] = tables
    smallest = min(len(parts[name]["train"]) for name in parts)
    mixed = {}
    for s, released_name in zip(SPLITS, ("train", "valid", "test")):
        chosen = [parts[n][s].shuffle(seed=seed + offsets[n]).select(range(smallest)) if s == "train" else parts[n][s] for n in parts]
        joined = datasets.concatenate_datasets(chosen).shuffle(seed=seed + len(released_name))
        mixed[s] = [(tag.split("|")[0], tag.split("|")[1], int(tag.split("|")[2])) for tag in joined["tag"]]
    return mixed


def test_the_paper_recipe_reproduces_the_released_pipeline(tmp_path: Path) -> None:
    sizes = {"math500": 40, "rlpr": 35, "lcb": 25}
    mmlu_sizes = {"auxiliary_train": 90, "validation": 6, "test": 30}
    files = source_files(tmp_path, sizes, mmlu_splits=mmlu_sizes, nested=True)
    suite = MixSuite(data_files=files, recipe="paper", allow_public_only=True)
    rows = {name: {"all": [None] * n} for name, n in sizes.items()}
    rows["mmlu"] = {"train": [None] * 90, "validation": [None] * 6, "test": [None] * 30}
    expected = released_mix_with_datasets(rows, seed=42)
    positions = {  # our problem id -> (source, split, row index) in the terms of the helper above
        **{f"math500/test/synthetic/{k}.json": ("math500", "all", k) for k in range(40)},
        **{f"rlpr/{k}": ("rlpr", "all", k) for k in range(35)},
        **{f"lcb/syn{k}_a": ("lcb", "all", k) for k in range(25)},
        **{f"mmlu/auxiliary_train/mmlu/{k}": ("mmlu", "train", k) for k in range(90)},
        **{f"mmlu/validation/astronomy/{k}": ("mmlu", "validation", k) for k in range(6)},
        **{f"mmlu/astronomy/{k}": ("mmlu", "test", k) for k in range(30)},
    }
    for split in SPLITS:
        assert [positions[i] for i in ids(suite, split)] == expected[split], split
    # 25 LCB rows -> 15 train, the smallest: 4 x 15 in train; validation/test keep every source's 20 %.
    assert collections.Counter(p.metadata["source"] for p in suite.problems("train")) == {"mmlu": 15, "math500": 15, "rlpr": 15, "lcb": 15}
    assert collections.Counter(p.metadata["source"] for p in suite.problems("test")) == {"mmlu": 6, "math500": 8, "rlpr": 7, "lcb": 5}


# ----------------------------------------------------------------------- never train on test


def assert_disjoint(suite: MixSuite) -> None:
    split_ids = {split: set(ids(suite, split)) for split in SPLITS}
    assert sum(len(v) for v in split_ids.values()) == len(set().union(*split_ids.values()))
    # The same source row never sits in two splits either (ids could differ only by prefix).
    rows = {split: {(p.metadata["source"], p.metadata.get("source_split", ""), p.metadata["source_id"]) for p in suite.problems(split)} for split in SPLITS}
    assert not rows["train"] & rows["test"] and not rows["train"] & rows["validation"] and not rows["validation"] & rows["test"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recipe=st.sampled_from(["default", "paper"]),
    sizes=st.fixed_dictionaries({"math500": st.integers(3, 40), "mmlu": st.integers(3, 40), "lcb": st.integers(3, 20)}, optional={"rlpr": st.integers(3, 40)}),
    seed=st.integers(0, 10_000),
    ratios=st.sampled_from([(0.6, 0.2, 0.2), (0.8, 0.1, 0.1), (0.5, 0.25, 0.25)]),
)
def test_test_never_overlaps_train(recipe: str, sizes: dict[str, int], seed: int, ratios: tuple[float, float, float]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        files = source_files(Path(folder), sizes)
        suite = MixSuite(data_files=files, recipe=recipe, seed=seed, ratios=ratios, allow_public_only=True)
        try:
            assert_disjoint(suite)
            if recipe == "paper":
                train = collections.Counter(p.metadata["source"] for p in suite.problems("train"))
                assert len(set(train.values())) == 1 and set(train) == set(sizes)  # balanced, every source
        finally:
            suite.close()


def test_both_recipes_on_the_fixture_files_with_the_mmlu_splits(tmp_path: Path) -> None:
    files = source_files(tmp_path, {"math500": 30, "rlpr": 30, "lcb": 12}, mmlu_splits={"auxiliary_train": 50, "validation": 5, "test": 20})
    for recipe in ("default", "paper"):
        suite = MixSuite(data_files=files, recipe=recipe, allow_public_only=True)
        assert_disjoint(suite)
        assert suite.recipe == recipe
    paper = MixSuite(data_files=files, recipe="paper", allow_public_only=True)
    mmlu = {split: {p.metadata.get("source_split") for p in paper.problems(split) if p.metadata["source"] == "mmlu"} for split in SPLITS}
    assert mmlu == {"train": {"auxiliary_train"}, "validation": {"validation"}, "test": {"test"}}
    choice = next(p for p in paper.problems("train") if p.metadata["source"] == "mmlu")
    assert paper.verify(choice, f"Answer: {choice.answer}").correct


# ------------------------------------------------------------------------------- what it says


def test_paper_recipe_without_rlpr_warns_with_its_sizes(tmp_path: Path) -> None:
    files = source_files(tmp_path, {"math500": 30, "mmlu": 30, "lcb": 10})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        suite = MixSuite(data_files=files, recipe="paper", allow_public_only=True)
    messages = [str(w.message) for w in caught if issubclass(w.category, MixRecipeWarning)]
    # LCB: 10 rows -> 6 train, the smallest; MMLU as one file is split like the others.
    assert any("without RLPR" in m and "3 x 6 = 18" in m and "960" in m and '"rlpr"' in m for m in messages), messages
    assert any("auxiliary_train" in m for m in messages)
    assert len(suite.problems("train")) == 18
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixRecipeWarning)
        MixSuite(data_files=files, allow_public_only=True)  # the default recipe does not warn


def test_recipe_option_errors(tmp_path: Path) -> None:
    files = source_files(tmp_path, {"math500": 10, "mmlu": 10, "lcb": 5})
    with pytest.raises(SuiteError, match=r"recipe must be one of \['default', 'paper'\], got 'released'"):
        MixSuite(data_files=files, recipe="released")
    with pytest.raises(SuiteError, match="size does not apply to recipe='paper'"):
        MixSuite(data_files=files, recipe="paper", size=960)
    with pytest.raises(SuiteError, match="must not repeat"):
        MixSuite(data_files=files, sources=["math500", "math500"])


def test_gym_make_with_the_paper_recipe(tmp_path: Path) -> None:
    files = source_files(tmp_path, {"math500": 20, "mmlu": 20, "lcb": 10, "rlpr": 20})
    env = gym.make("Conductor-Mix-v0", pool="simulated", split="test", suite_options={"data_files": files, "recipe": "paper", "allow_public_only": True})
    try:
        suite = env.unwrapped.suite
        assert suite.recipe == "paper" and len(suite.problems("train")) == 4 * 6
        _, info = env.reset(seed=0)
        assert info["problem_id"] in set(ids(suite, "test"))
    finally:
        env.close()


# -------------------------------------------------------------------------- MATH-500 held out


def test_math500_heldout_splits_avoid_the_paper_train_split(tmp_path: Path) -> None:
    files = source_files(tmp_path, {"math500": 50, "mmlu": 50, "lcb": 10, "rlpr": 50})
    math = Math500Suite(data_files=files["math500"])
    assert math.splits() == ["test", "heldout", "paper_test"]
    everything, heldout, paper_test = ({p.id for p in math.problems(s)} for s in ("test", "heldout", "paper_test"))
    assert (len(everything), len(heldout), len(paper_test)) == (50, 20, 10) and paper_test < heldout < everything
    for seed in (42, 7):
        mix = MixSuite(data_files=files, recipe="paper", seed=seed, allow_public_only=True)
        own = Math500Suite(data_files=files["math500"], mix_seed=seed)
        train = {p.metadata["source_id"] for p in mix.problems("train") if p.metadata["source"] == "math500"}
        mix_test = {p.metadata["source_id"] for p in mix.problems("test") if p.metadata["source"] == "math500"}
        assert train and not train & {p.id for p in own.problems("heldout")}
        assert mix_test == {p.id for p in own.problems("paper_test")}
    with pytest.raises(SuiteError, match="drop limit"):
        Math500Suite(data_files=files["math500"], limit=5).problems("heldout")
    with pytest.raises(SuiteError, match="no split 'dev'"):
        math.problems("dev")
    env = gym.make("Conductor-MATH500-v0", pool="simulated", split="heldout", suite_options={"data_files": files["math500"]})
    try:
        _, info = env.reset(seed=3)
        assert info["problem_id"] in heldout
    finally:
        env.close()


# --------------------------------------------------------------------- real rows, if present


def shared(name: str) -> str:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return str(path)


def test_real_rows_sizes_and_math500_overlap() -> None:
    files = {"math500": shared("math500.jsonl"), "mmlu": shared("mmlu_test_full.jsonl"), "lcb": shared("lcb_release_v1_public_only.jsonl")}
    math = Math500Suite(data_files=files["math500"])
    heldout = {p.id for p in math.problems("heldout")}
    paper_test = {p.id for p in math.problems("paper_test")}
    assert (len(heldout), len(paper_test)) == (200, 100)
    paper = MixSuite(data_files=files, recipe="paper", allow_public_only=True)
    sizes = {s: collections.Counter(p.metadata["source"] for p in paper.problems(s)) for s in SPLITS}
    assert sizes["train"] == {"math500": 240, "mmlu": 240, "lcb": 240}  # 3 x 240 = 720 without RLPR
    assert sizes["test"] == {"math500": 100, "mmlu": 2808, "lcb": 80}
    paper_math = {p.metadata["source_id"] for p in paper.problems("train") if p.metadata["source"] == "math500"}
    assert not paper_math & heldout
    default = MixSuite(data_files=files, allow_public_only=True)
    default_math = {p.metadata["source_id"] for p in default.problems("train") if p.metadata["source"] == "math500"}
    assert len(default_math) == 192 and 0 < len(default_math & heldout) < 192  # the default draw overlaps
    for suite in (paper, default):
        assert_disjoint(suite)
