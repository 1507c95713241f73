"""The evaluation progress bar: episodes done, accuracy so far, USD so far and time left."""

from __future__ import annotations

import threading
from typing import Any, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from conductor_env.evaluation.runner import ProgressReporter

#: Warnings printed before the rest are summarised.
MAX_WARNINGS = 5


class RichProgress(ProgressReporter):
    """A rich progress bar on stderr (a plain line per 10% when stderr is not a terminal).

    Accuracy and spend count the episodes already in the results file too, so a resumed run
    shows the totals of the whole run.

    Args:
        console: Where to draw (default: stderr).
        description: Text before the bar.
    """

    def __init__(self, console: Console | None = None, description: str = "episodes") -> None:
        self.console = console or Console(stderr=True)
        self.description = description
        self._lock = threading.Lock()
        self._scored = self._correct = 0
        self._usd = 0.0
        self._done = self._total = 0
        self._next_report = 0.0
        self._warnings = 0
        self._progress: Progress | None = None
        self._task: Any = None

    def _count(self, record: dict[str, Any]) -> None:
        self._usd += float(record.get("cost_usd") or 0.0)
        if not record.get("infra_error"):
            self._scored += 1
            self._correct += bool(record.get("correct"))

    def _stats(self) -> str:
        accuracy = f"{100 * self._correct / self._scored:.1f}%" if self._scored else "-"
        return f"acc {accuracy}  ${self._usd:.4f}"

    def start(self, total: int, already_done: Sequence[dict[str, Any]]) -> None:
        """Shows the bar (and how many episodes a resumed run skips)."""
        for record in already_done:
            self._count(record)
        self._total = total
        if already_done:
            self.console.print(f"resuming: {len(already_done)} episode(s) already in the results file, {total} to run")
        if not self.console.is_terminal:
            self._next_report = 0.1
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(self.description, total=total, stats=self._stats())

    def advance(self, record: dict[str, Any]) -> None:
        """Counts one finished episode."""
        with self._lock:
            self._count(record)
            self._done += 1
            if self._progress is not None:
                self._progress.update(self._task, advance=1, stats=self._stats())
            elif self._total and self._done / self._total >= self._next_report:
                self.console.print(f"{self.description}: {self._done}/{self._total}  {self._stats()}", highlight=False)
                while self._next_report <= self._done / self._total:
                    self._next_report += 0.1

    def warn(self, message: str) -> None:
        """Prints a note above the bar (the first few; then says that more were hidden)."""
        with self._lock:
            self._warnings += 1
            count = self._warnings
        if count <= MAX_WARNINGS:
            self.console.print(Text.assemble(("warning: ", "yellow"), message))
        elif count == MAX_WARNINGS + 1:
            self.console.print(Text("further warnings are not shown; the results file has every error", style="yellow"))

    def stop(self) -> None:
        """Removes the live display (the final state stays on screen)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
