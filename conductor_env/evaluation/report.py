"""A results folder's report: the table, the accuracy-versus-cost plot and the workflow viewer."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from conductor_env.evaluation.html import write_report_html
from conductor_env.evaluation.results import RESULTS_NAME, read_manifest, read_results
from conductor_env.evaluation.summary import PolicySummary, summarize

PLOT_NAME = "accuracy_vs_cost.png"
HTML_NAME = "report.html"


class EmptyResultsError(ValueError):
    """The results file exists but holds no finished episode yet."""


@dataclass
class Report:
    """What :func:`build_report` produced.

    Attributes:
        summaries: Per-policy statistics.
        records: The episodes (one per key).
        plot_path: The PNG, or ``None`` when matplotlib is missing.
        html_path: The viewer page.
        notes: Things worth telling the user (skipped lines, a missing plot library).
    """

    summaries: list[PolicySummary]
    records: list[dict[str, Any]]
    plot_path: Path | None
    html_path: Path
    notes: list[str]


def public_only_note(summaries: Sequence[PolicySummary]) -> str | None:
    """Returns a note naming the policies with episodes graded on public tests only, or ``None``.

    Args:
        summaries: Per-policy statistics.

    Returns:
        One line such as ``"graded on public tests only ...: single:0 on Conductor-LCB-v0 (20/20 episodes)"``.
    """
    return _flagged_note(summaries, "public_only", ("graded on public tests only (the examples printed in the statement, no hidden tests; a lookup table of them passes), so not hidden-test accuracy"))


def unverified_note(summaries: Sequence[PolicySummary]) -> str | None:
    """Returns a note naming the policies with episodes on unverified problems, or ``None``."""
    return _flagged_note(summaries, "unverified", ("unverified problems (tests that ran beside the real ctypes, where a program could forge its verdict; see docs/THREAT_MODEL.md)"))


def _flagged_note(summaries: Sequence[PolicySummary], count: str, what: str) -> str | None:
    flagged = [f"{s.policy} on {s.env_id} ({getattr(s, count)}/{s.scored} episodes)" for s in summaries if getattr(s, count)]
    return f"{what}: {', '.join(flagged)}" if flagged else None


def build_report(folder: str | os.PathLike[str], *, policies: Sequence[str] | None = None, title: str | None = None) -> Report:
    """Reads ``folder/results.jsonl`` and writes the plot and the viewer beside it.

    Args:
        folder: A folder written by ``conductor-env eval`` (or a ``results.jsonl`` path).
        policies: Policy names in table order (others follow); ``None``: file order.
        title: Page and plot title (default: the env id).

    Returns:
        The report.

    Raises:
        FileNotFoundError: When there is no results file.
        EmptyResultsError: When the results file holds no episode.
    """
    folder = Path(folder)
    if folder.is_file():
        folder = folder.parent
    loaded = read_results(folder)
    if not loaded.records:
        raise EmptyResultsError(f"{str(folder / RESULTS_NAME)!r} holds no finished episode yet")
    order = list(policies or (read_manifest(folder) or {}).get("policies") or [])
    summaries = summarize(loaded.records, order=order or None)
    notes = []
    if loaded.skipped_lines:
        notes.append(f"ignored {loaded.skipped_lines} unreadable line(s) in the results file")
    public_only = public_only_note(summaries)
    if public_only:
        notes.append(public_only)
    unverified = unverified_note(summaries)
    if unverified:
        notes.append(unverified)
    envs = sorted({s.env_id for s in summaries})
    title = title or f"conductor-env · {', '.join(envs)}"
    plot_path: Path | None
    try:
        from conductor_env.evaluation.plot import plot_accuracy_vs_cost

        plot_path = plot_accuracy_vs_cost(summaries, folder / PLOT_NAME)
    except ImportError:
        plot_path = None
        notes.append("matplotlib is not installed, so there is no plot; pip install 'conductor-env[report]'")
    html_path = write_report_html(loaded.records, summaries, folder / HTML_NAME, title=title, plot_path=plot_path)
    return Report(summaries=summaries, records=loaded.records, plot_path=plot_path, html_path=html_path, notes=notes)
