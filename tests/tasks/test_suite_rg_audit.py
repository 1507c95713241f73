"""reasoning-gym trivial-answer audit: the shipped table, the refusals it drives, and a re-measurement.

The table (``tasks/suites/rg_trivial_answers.json``, written by ``scripts/audit_reasoning_gym.py``)
must cover every dataset the installed reasoning-gym registers, the default mix must pass its
threshold, a dataset above it must be refused with its trivial answer named, and measuring a few
datasets again (other seeds, fewer problems) must agree with it. Honest controls: the gold answer
is still paid on opted-in and default datasets.
"""

from __future__ import annotations

import warnings

import pytest
from reasoning_gym.factory import DATASETS

from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.suites import rg_audit
from conductor_env.tasks.suites.procedural import DATASET_DOMAINS, DEFAULT_DATASETS, STRICT_CHECKS, ReasoningGymSuite
from conductor_env.tasks.suites.rg_audit import TRIVIAL_SHARE_THRESHOLD, GameableDatasetWarning, audit_refusal, load_audit, reasoning_gym_version
from conductor_env.tasks.suites.rg_measure import measure_dataset

TABLE = load_audit()
ROWS = TABLE["datasets"]
ABOVE = sorted(name for name, row in ROWS.items() if "error" not in row and row["best"]["share"] > TRIVIAL_SHARE_THRESHOLD)


def test_the_table_covers_every_registered_dataset_of_this_reasoning_gym() -> None:
    # A reasoning-gym upgrade (new datasets, changed scorers) fails here: rerun the audit.
    assert set(DATASETS) <= set(ROWS), sorted(set(DATASETS) - set(ROWS))
    assert TABLE["reasoning_gym_version"] == reasoning_gym_version()
    assert TABLE["threshold"] == TRIVIAL_SHARE_THRESHOLD


def test_the_table_is_mostly_audited_and_its_rows_are_sound() -> None:
    audited = [row for row in ROWS.values() if "error" not in row]
    assert len(audited) >= 0.9 * len(ROWS)
    for name, row in ROWS.items():
        if "error" in row:
            continue
        assert 0.0 <= row["best"]["share"] <= 1.0 and row["n"] >= 10, name
        assert row["best"]["share"] == max(row["paid"].values(), default=0.0), name
        # The control: the gold answer is paid (a dataset whose own gold answer fails is a scorer bug).
        assert row["honest"] is None or row["honest"] >= 0.5, name


def test_the_default_mix_passes_the_threshold_and_builds_without_warning() -> None:
    for name in DEFAULT_DATASETS:
        assert "error" not in ROWS[name], name
        assert ROWS[name]["best"]["share"] <= TRIVIAL_SHARE_THRESHOLD, (name, ROWS[name]["best"])
        assert audit_refusal(name) is None
    assert set(DEFAULT_DATASETS) <= set(STRICT_CHECKS)
    domains = [DATASET_DOMAINS.get(name, "reasoning") for name in DEFAULT_DATASETS]
    assert len(DEFAULT_DATASETS) == 6 and domains.count("math") == 3 and domains.count("language") == 2
    assert "letter_counting" not in DEFAULT_DATASETS  # a constant "1" pays about 4 answers in 10
    with warnings.catch_warnings():
        warnings.simplefilter("error", GameableDatasetWarning)
        suite = ReasoningGymSuite(size=3)
    assert all(suite.verify(problem, suite.reference_response(problem)).correct for problem in suite.problems())


def test_datasets_above_the_threshold_exist_and_include_the_outside_audits_findings() -> None:
    assert {"letter_counting", "syllogism", "coin_flip"} <= set(ABOVE)
    assert ROWS["letter_counting"]["best"]["answer"] == "1" and ROWS["letter_counting"]["best"]["share"] > 0.3


@pytest.mark.parametrize("name", ABOVE)
def test_a_dataset_above_the_threshold_is_refused_naming_its_trivial_answer(name: str) -> None:
    best = ROWS[name]["best"]
    with pytest.raises(SuiteError, match="allow_gameable=True") as raised:
        ReasoningGymSuite(["basic_arithmetic", name])
    message = str(raised.value)
    assert name in message and f"{best['share']:.0%}" in message and "threshold 10%" in message
    if best["kind"] != rg_audit.KIND_ECHO:
        assert repr(best["answer"]) in message


def test_the_refusal_is_real_the_trivial_answer_is_paid_once_opted_in() -> None:
    with pytest.warns(GameableDatasetWarning, match=r"letter_counting.*'1'"):
        suite = ReasoningGymSuite(["letter_counting"], size=40, seed=3, allow_gameable=True)
    problems = suite.problems("validation")
    paid = sum(suite.verify(problem, "Answer: 1").correct for problem in problems)
    assert paid / len(problems) > TRIVIAL_SHARE_THRESHOLD
    # Honest control: the gold answer is paid, a wrong one is not.
    assert all(suite.verify(problem, suite.reference_response(problem)).correct for problem in problems)
    assert not any(suite.verify(problem, suite.wrong_response(problem)).correct for problem in problems)


def test_propositional_logic_stays_refused_though_no_fixed_answer_shows_it() -> None:
    with pytest.raises(SuiteError, match="premise copied from the question"):
        ReasoningGymSuite(["propositional_logic"])


def test_a_dataset_the_table_does_not_cover_is_refused_as_not_audited(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {**TABLE, "datasets": {name: row for name, row in ROWS.items() if name != "spell_backward"}}
    table["datasets"]["chain_sum"] = {"error": "timeout: no result in 120 s"}
    monkeypatch.setattr(rg_audit, "load_audit", lambda: table)
    with pytest.raises(SuiteError, match=r"spell_backward: not audited: absent from rg_trivial_answers\.json"):
        ReasoningGymSuite(["basic_arithmetic", "spell_backward"])
    with pytest.raises(SuiteError, match=r"chain_sum: not audited: it failed .*timeout"):
        ReasoningGymSuite(["chain_sum"])
    with pytest.warns(GameableDatasetWarning, match="not audited"):
        suite = ReasoningGymSuite(["spell_backward"], size=2, allow_gameable=True)
    assert all(suite.verify(problem, suite.reference_response(problem)).correct for problem in suite.problems())
    ReasoningGymSuite(["basic_arithmetic"])  # still audited: built without an opt-in


def test_a_missing_table_audits_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    rg_audit.load_audit.cache_clear()
    monkeypatch.setattr(rg_audit, "AUDIT_FILE", "no_such_table.json")
    try:
        with pytest.raises(SuiteError, match="not audited"):
            ReasoningGymSuite(["basic_arithmetic"])
    finally:
        monkeypatch.undo()
        rg_audit.load_audit.cache_clear()
    assert load_audit()["datasets"]


@pytest.mark.parametrize("name", ["letter_counting", "syllogism", "coin_flip", "basic_arithmetic", "spell_backward", "word_sorting"])
def test_a_remeasurement_on_other_seeds_agrees_with_the_table(name: str) -> None:
    row = measure_dataset(name, size=40, seed=7)
    shipped = ROWS[name]["best"]["share"]
    assert row["n"] == 40
    assert abs(row["best"]["share"] - shipped) <= 0.2, (row["best"], ROWS[name]["best"])
    # Far from the threshold on either side, the verdict must not change.
    if shipped >= 2 * TRIVIAL_SHARE_THRESHOLD:
        assert row["best"]["share"] > TRIVIAL_SHARE_THRESHOLD
    if shipped <= TRIVIAL_SHARE_THRESHOLD / 2:
        assert row["best"]["share"] <= TRIVIAL_SHARE_THRESHOLD
    assert row["honest"] is None or row["honest"] >= 0.9
