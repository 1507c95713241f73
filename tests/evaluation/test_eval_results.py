"""The results file (append, fsync, crash tolerance, locking) and the table statistics."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from conductor_env.evaluation.results import ResultsWriter, episode_key, read_results, truncate_text
from conductor_env.evaluation.summary import summarize, summary_table, wilson_interval


def record(policy: str = "p", problem: str = "q0", sample: int = 0, **fields) -> dict:
    base = {"env_id": "Conductor-RG-v0", "pool": "simulated", "policy": policy, "problem_id": problem, "sample": sample}
    return {**base, **fields}


def test_appended_records_read_back_in_order(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path) as writer:
        for i in range(5):
            writer.append(record(problem=f"q{i}", correct=i % 2 == 0, text="ünïcødé\nline"))
    loaded = read_results(tmp_path)
    assert [r["problem_id"] for r in loaded.records] == [f"q{i}" for i in range(5)]
    assert loaded.records[0]["text"] == "ünïcødé\nline"
    assert loaded.skipped_lines == 0 and loaded.duplicates == 0


def test_a_partial_last_line_is_ignored_on_read_and_dropped_on_reopen(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path) as writer:
        writer.append(record(problem="q0"))
        writer.append(record(problem="q1"))
    path = tmp_path / "results.jsonl"
    with path.open("a") as handle:  # what a kill in the middle of a write leaves behind
        handle.write('{"env_id": "Conductor-RG-v0", "pool": "simul')
    loaded = read_results(path)
    assert [r["problem_id"] for r in loaded.records] == ["q0", "q1"] and loaded.skipped_lines == 1

    with ResultsWriter(tmp_path) as writer:
        writer.append(record(problem="q2"))
    text = path.read_text()
    assert text.endswith("\n") and "simul\n" not in text and '"simul' not in text.replace('"simulated"', "")
    assert [json.loads(line)["problem_id"] for line in text.splitlines()] == ["q0", "q1", "q2"]


def test_a_file_that_is_only_a_partial_line_is_emptied(tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").write_text('{"env_id": "Cond')
    with ResultsWriter(tmp_path) as writer:
        writer.append(record())
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 1


def test_the_last_record_of_a_key_wins(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path) as writer:
        writer.append(record(problem="q0", correct=False, infra_error="timeout"))
        writer.append(record(problem="q1", correct=True))
        writer.append(record(problem="q0", correct=True, infra_error=None))
        writer.append(record(problem="q0", sample=1, correct=False))
    loaded = read_results(tmp_path)
    assert loaded.duplicates == 1
    assert {episode_key(r): r["correct"] for r in loaded.records} == {
        ("Conductor-RG-v0", "simulated", "p", "q1", 0): True,
        ("Conductor-RG-v0", "simulated", "p", "q0", 0): True,
        ("Conductor-RG-v0", "simulated", "p", "q0", 1): False,
    }


def test_invalid_lines_are_skipped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join([json.dumps(record(problem="q0")), "not json", json.dumps({"no": "key"}), "", json.dumps(record(problem="q1"))]) + "\n")
    loaded = read_results(tmp_path)
    assert [r["problem_id"] for r in loaded.records] == ["q0", "q1"] and loaded.skipped_lines == 2


def test_a_second_writer_on_the_same_folder_is_refused(tmp_path: Path) -> None:
    with ResultsWriter(tmp_path):
        other = subprocess.run(
            [sys.executable, "-c", "import sys; from conductor_env.evaluation.results import ResultsWriter; ResultsWriter(sys.argv[1])", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.returncode != 0 and "another conductor-env process" in other.stderr
    ResultsWriter(tmp_path).close()  # free again once the first writer is closed


def test_missing_results_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_results(tmp_path)


def test_truncate_text_says_what_was_cut() -> None:
    assert truncate_text("abc", 5) == "abc"
    assert truncate_text(None, 5) == ""
    assert truncate_text("abcdefgh", 3) == "abc… [5 more characters]"


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [(8, 10, 0.4902, 0.9433), (0, 10, 0.0, 0.2775), (10, 10, 0.7225, 1.0), (50, 100, 0.4038, 0.5962)],
)
def test_wilson_interval_matches_published_values(successes: int, trials: int, low: float, high: float) -> None:
    got = wilson_interval(successes, trials)
    assert got == pytest.approx((low, high), abs=5e-4)


@given(st.integers(min_value=1, max_value=5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_contains_the_estimate_and_stays_in_range(pair: tuple[int, int]) -> None:
    successes, trials = pair
    low, high = wilson_interval(successes, trials)
    assert 0.0 <= low <= successes / trials <= high <= 1.0


def test_summaries_separate_infra_errors_from_accuracy() -> None:
    records = [
        record(problem="q0", correct=True, tokens=100, cost_usd=0.01, wall_s=1.0),
        record(problem="q1", correct=False, parse_error="no_lists", tokens=0, cost_usd=0.0, wall_s=0.5),
        record(problem="q2", correct=False, infra_error="worker down", tokens=50, cost_usd=0.002, wall_s=3.0),
        record(problem="q3", correct=True, tokens=150, cost_usd=0.012, wall_s=1.5),
        record(policy="other", problem="q0", correct=False, tokens=10, cost_usd=0.001, wall_s=0.1),
    ]
    first, other = summarize(records, order=["p", "other"])
    assert (first.policy, first.episodes, first.scored, first.correct) == ("p", 4, 3, 2)
    assert first.accuracy == pytest.approx(2 / 3)
    assert (first.parse_errors, first.infra_errors) == (1, 1)
    assert first.parse_error_rate == pytest.approx(1 / 3)
    assert first.mean_tokens == pytest.approx(75.0) and first.mean_usd == pytest.approx(0.006)
    assert first.mean_latency_s == pytest.approx(1.5)
    assert first.mean_conductor_tokens == 0 and first.mean_conductor_usd == 0  # old records lack the fields
    assert (other.policy, other.accuracy) == ("other", 0.0)
    assert [s.policy for s in summarize(records, order=["other", "p"])] == ["other", "p"]


def test_table_shows_one_row_per_policy() -> None:
    records = [record(policy=name, problem=f"q{i}", correct=i < 3, cost_usd=0.001) for name in ("single:0", "moa:3") for i in range(4)]
    console = Console(width=200, record=True)
    console.print(summary_table(summarize(records)))
    text = console.export_text()
    assert "single:0" in text and "moa:3" in text and "75.0%" in text and "95% CI" in text
    assert "conductor" not in text  # no policy called a model


def test_table_shows_the_conductors_own_spend_when_a_policy_calls_a_model() -> None:
    records = [record(policy="single:0", problem=f"q{i}", correct=True) for i in range(2)]
    records += [record(policy="llm:x", problem=f"q{i}", correct=True, conductor_tokens=300 + 100 * i, conductor_cost_usd=0.002) for i in range(2)]
    single, llm = summarize(records)
    assert (single.mean_conductor_tokens, llm.mean_conductor_tokens) == (0, 350)
    assert llm.mean_conductor_usd == pytest.approx(0.002)
    console = Console(width=200, record=True)
    console.print(summary_table([single, llm]))
    text = console.export_text()
    assert "conductor" in text and "350 tok, $0.0020" in text


def test_table_marks_policies_graded_on_public_tests_only() -> None:
    records = [record(policy="lookup", problem=f"q{i}", correct=True, test_set="public") for i in range(2)]
    records += [record(policy="mixed", problem="q0", correct=True, test_set="public")]
    records += [record(policy="mixed", problem="q1", correct=False, test_set="public+private")]
    records += [record(policy="mixed", problem="q2", correct=False, infra_error="down", test_set="public")]  # not scored
    records += [record(policy="hidden", problem="q0", correct=True, test_set="public+private")]
    lookup, mixed, hidden = summarize(records)
    assert (lookup.public_only, mixed.public_only, hidden.public_only) == (2, 1, 0)
    console = Console(width=240, record=True)
    console.print(summary_table([lookup, mixed, hidden]))
    text = console.export_text()
    assert "graded on" in text and "public only" in text and "1/2 public only" in text
    assert "not hidden-test accuracy" in text
    console = Console(width=240, record=True)
    console.print(summary_table([hidden]))
    assert "graded on" not in console.export_text()  # old records and graded-on-hidden runs: no column
