"""The accuracy-versus-cost figure and the report folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conductor_env.evaluation.plot import plot_accuracy_vs_cost
from conductor_env.evaluation.report import EmptyResultsError, build_report
from conductor_env.evaluation.summary import PolicySummary


def summary(policy: str, accuracy: float, usd: float, tokens: float = 100.0, scored: int = 20) -> PolicySummary:
    return PolicySummary(
        policy=policy,
        env_id="Conductor-RG-v0",
        pool="simulated",
        episodes=scored,
        scored=scored,
        correct=round(accuracy * scored),
        accuracy=accuracy,
        ci_low=max(0.0, accuracy - 0.2),
        ci_high=min(1.0, accuracy + 0.2),
        mean_tokens=tokens,
        mean_usd=usd,
        mean_conductor_tokens=0.0,
        mean_conductor_usd=0.0,
        mean_latency_s=1.0,
        parse_errors=0,
        parse_error_rate=0.0,
        infra_errors=0,
    )


def axes_of(path: Path):
    """Reads the figure back through matplotlib's image reader (a real decode of the PNG)."""
    import matplotlib.image

    return matplotlib.image.imread(str(path))


def test_plot_is_a_png_with_log_axis_for_spread_costs(tmp_path: Path) -> None:
    path = plot_accuracy_vs_cost(
        [summary("single:0", 0.4, 0.0001), summary("moa:3", 0.6, 0.01), summary("template:parallel-judge:3", 1.0, 0.003)],
        tmp_path / "plot.png",
    )
    image = axes_of(path)
    assert image.shape[0] > 300 and image.shape[1] > 600
    assert image.std() > 0  # something was drawn


def test_plot_falls_back_to_tokens_when_nothing_costs_money(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib import pyplot as plt

    before = set(plt.get_fignums())
    path = plot_accuracy_vs_cost([summary("a", 0.5, 0.0, tokens=300), summary("b", 0.7, 0.0, tokens=900)], tmp_path / "p.png")
    assert path.is_file() and set(plt.get_fignums()) == before  # the figure was closed


def test_policies_without_scored_episodes_are_left_out_not_fatal(tmp_path: Path) -> None:
    empty = summary("down", 0.0, 0.0, scored=0)
    assert plot_accuracy_vs_cost([empty, summary("ok", 0.5, 0.001)], tmp_path / "p.png").is_file()
    assert plot_accuracy_vs_cost([empty], tmp_path / "q.png").is_file()


def test_report_of_an_empty_results_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").write_text("")
    with pytest.raises(EmptyResultsError):
        build_report(tmp_path)


def test_report_orders_policies_as_the_run_listed_them(tmp_path: Path) -> None:
    rows = [{"env_id": "Conductor-RG-v0", "pool": "simulated", "policy": p, "problem_id": f"q{i}", "sample": 0, "correct": i % 2 == 0, "cost_usd": 0.001} for p in ("zeta", "alpha") for i in range(3)]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "run.json").write_text(json.dumps({"policies": ["zeta", "alpha"]}))
    report = build_report(tmp_path)
    assert [s.policy for s in report.summaries] == ["zeta", "alpha"]
    assert report.plot_path is not None and report.plot_path.is_file() and report.html_path.is_file()
