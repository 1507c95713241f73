"""``conductor-env report``: the table, accuracy-vs-cost plot and workflow viewer of a results folder."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from conductor_env.cli.common import UsageError, output_console
from conductor_env.evaluation.results import RESULTS_NAME


def register(subparsers: Any) -> None:
    """Adds ``report`` to the ``conductor-env`` command."""
    report = subparsers.add_parser(
        "report",
        help="table, accuracy-vs-cost plot and workflow viewer of a results folder",
        description="Reads DIR/results.jsonl and writes DIR/accuracy_vs_cost.png and DIR/report.html.",
    )
    report.add_argument("dir", metavar="DIR", help="a folder written by conductor-env eval")
    report.add_argument("--title", default=None, help="title of the page and plot")
    report.add_argument("--screenshot", default=None, metavar="PNG", help="also save a screenshot of the viewer (needs chromium)")
    report.add_argument("--screenshot-filter", default="", metavar="FILTER", help="viewer filter for the screenshot, e.g. policy=moa:3 or verdict=wrong")
    report.set_defaults(handler=run_report_command)


def print_report(folder: str, *, title: str | None = None, console: Console | None = None) -> Any:
    """Builds the report of a results folder and prints its table and file paths.

    Raises:
        UsageError: When the folder holds no results.
    """
    from conductor_env.evaluation.report import EmptyResultsError, build_report
    from conductor_env.evaluation.summary import summary_table

    console = console or output_console()
    try:
        report = build_report(folder, title=title)
    except FileNotFoundError as error:
        raise UsageError(f"no {RESULTS_NAME} in {folder!r}; run conductor-env eval --out {folder} ... first") from error
    except EmptyResultsError as error:
        raise UsageError(f"{error}; wait for conductor-env eval to finish an episode") from error
    for note in report.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    console.print(summary_table(report.summaries, title=f"{len(report.records)} episodes"))
    if report.plot_path is not None:
        console.print(f"plot:   {report.plot_path}", highlight=False, markup=False)
    console.print(f"viewer: {report.html_path}", highlight=False, markup=False)
    return report


def run_report_command(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env report``."""
    report = print_report(args.dir, title=args.title)
    if args.screenshot:
        from conductor_env.evaluation.browser import BrowserError, render_page

        try:
            rendered = render_page(report.html_path, screenshot=args.screenshot, fragment=args.screenshot_filter)
        except BrowserError as error:
            raise UsageError(f"{error}; or leave out --screenshot") from error
        for problem in rendered.errors:
            print(f"viewer script error: {problem}")
        print(f"screenshot: {rendered.screenshot}")
    return 0
