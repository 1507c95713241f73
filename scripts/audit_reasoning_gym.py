"""Audits every reasoning-gym dataset for trivial answers that the suite's grading pays.

For each dataset that the installed reasoning-gym registers, the suite (``ReasoningGymSuite``,
default options, ``allow_gameable=True``) draws ``--size`` problems to measure and ``--size``
others (another split's seeds) for the most common gold answer, and grades the trivial answers
of ``conductor_env.tasks.suites.rg_measure`` through its own ``verify``. Each dataset runs in a
worker process with a time bound; a dataset that fails to generate, or runs out of time, is
recorded with the error. Nothing is written unless asked.

A dataset that runs out of time is retried once with ``--retry-size`` problems (its row says so).

Usage:
    python scripts/audit_reasoning_gym.py [--size 100] [--seed 0] [--timeout 120] [--retry-size 20] [--datasets NAME ...]
        [--json tasks/suites/rg_trivial_answers.json] [--markdown docs/REASONING_GYM_AUDIT.md]
    python scripts/audit_reasoning_gym.py --render tasks/suites/rg_trivial_answers.json --markdown docs/REASONING_GYM_AUDIT.md
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from conductor_env.tasks.suites.procedural import DEFAULT_DATASETS, GAMEABLE_DATASETS
from conductor_env.tasks.suites.rg_audit import AUDIT_FILE, KIND_ANY, KIND_ECHO, TRIVIAL_SHARE_THRESHOLD, reasoning_gym_version
from conductor_env.tasks.suites.rg_measure import ANY_TEXT, TRIVIAL_CONSTANTS, measure_dataset


def _worker(conn: Connection) -> None:
    """Measures the datasets sent over ``conn`` one at a time; answers ``(name, row)``."""
    while True:
        request = conn.recv()
        if request is None:
            return
        name, size, seed = request
        started = time.perf_counter()
        try:
            row = measure_dataset(name, size, seed)
        except BaseException as error:  # noqa: BLE001 - recorded in the table
            row = {"error": f"{type(error).__name__}: {str(error)[:200]}", "seconds": round(time.perf_counter() - started, 2)}
        conn.send((name, row))


class Auditor:
    """One worker process at a time; a dataset past its time bound kills it and starts another."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._context = mp.get_context("spawn")
        self._process: Any = None
        self._conn: Connection | None = None

    def _start(self) -> None:
        parent, child = self._context.Pipe()
        self._process = self._context.Process(target=_worker, args=(child,), daemon=True)
        self._process.start()
        self._conn = parent

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join()
        self._process, self._conn = None, None

    def measure(self, name: str, size: int, seed: int) -> dict[str, Any]:
        """Measures one dataset; returns its row or ``{"error": ...}``."""
        if self._process is None or not self._process.is_alive():
            self._start()
        assert self._conn is not None
        started = time.perf_counter()
        self._conn.send((name, size, seed))
        try:
            if self._conn.poll(self.timeout):
                return self._conn.recv()[1]
            error = f"timeout: no result in {self.timeout:.0f} s"
        except EOFError:
            error = "the worker died"
        self._stop()
        return {"error": error, "seconds": round(time.perf_counter() - started, 2)}

    def close(self) -> None:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            self._conn.send(None)
            self._process.join(timeout=10)
        self._stop()


def summary(table: dict[str, Any]) -> dict[str, Any]:
    """Counts of the table: audited, failed, above the threshold, the default mix's worst."""
    rows = table["datasets"]
    threshold = table["threshold"]
    audited = {name: row for name, row in rows.items() if "error" not in row}
    above = {name: row for name, row in audited.items() if row["best"]["share"] > threshold}
    mix = {name: audited[name]["best"]["share"] for name in DEFAULT_DATASETS if name in audited}
    worst = max(mix, key=mix.get) if mix else None
    return {
        "registered": len(rows),
        "audited": len(audited),
        "failed": sorted(set(rows) - set(audited)),
        "above": sorted(above),
        "default_mix_worst": {"dataset": worst, "share": mix[worst]} if worst else None,
        "pays_any_text": {name: row["paid"][key] for name, row in audited.items() for key in row["paid"] if key.startswith(KIND_ANY)},
        "pays_the_echo": {name: row["paid"][key] for name, row in audited.items() for key in row["paid"] if key.startswith(KIND_ECHO)},
    }


def _cell(text: Any) -> str:
    text = "" if text is None else str(text)
    text = text.replace("\n", " ").replace("|", "\\|")
    return text if len(text) <= 40 else text[:37] + "..."


def markdown(table: dict[str, Any]) -> str:
    """The human-readable page: how it was measured, the threshold, and the full table."""
    counts = summary(table)
    threshold = table["threshold"]
    rows = table["datasets"]
    audited = [(name, row) for name, row in rows.items() if "error" not in row]
    shares = sorted(row["best"]["share"] for _, row in audited)
    bands = [(0.0, 0.0), (0.0, 0.02), (0.02, 0.05), (0.05, 0.10), (0.10, 0.25), (0.25, 0.5), (0.5, 1.0)]
    worst = counts["default_mix_worst"]
    lines = [
        "# reasoning-gym: trivial answers the grading pays",
        "",
        "Generated by `python scripts/audit_reasoning_gym.py "
        f"--size {table['size']} --seed {table['seed']} --json tasks/suites/{AUDIT_FILE} --markdown docs/REASONING_GYM_AUDIT.md` "
        f"with reasoning-gym {table['reasoning_gym_version']}; do not edit by hand.",
        "",
        "Every dataset reasoning-gym registers is built by `ReasoningGymSuite` with default options, "
        f"{table['size']} problems of the `test` split are graded by the suite's own `verify` (the strict "
        "check where the suite has one, else the library scorer at full marks), and each trivial answer "
        "below is sent as `Answer: <text>` to every problem:",
        "",
        "- constants: " + ", ".join(f"`{c}`" if c else '`""`' for c in TRIVIAL_CONSTANTS) + ";",
        "- the question echoed back (the library's question text after `Answer:`);",
        f"- the dataset's most common gold answer, counted on {table['size']} other problems (the `train` split's seeds);",
        f"- any text: `{table['any_text']}`.",
        "",
        "*Trivial share*: the largest share of the measured problems that one of these answers is graded "
        "correct on. *Honest*: the share of reference responses (the gold answer) graded correct, the control.",
        "",
        "## Threshold",
        "",
        f"The suite refuses, unless built with `allow_gameable=True`, every dataset whose trivial share is "
        f"above **{threshold:.0%}**, every dataset the table does not list (a newer reasoning-gym: rerun the "
        "audit) or whose audit failed, and `propositional_logic` (its scorer pays a premise copied from the "
        "question, which no fixed answer shows). Opting in warns (`GameableDatasetWarning`) with the reasons.",
        "",
        "Why 10%: a Conductor trained on a dataset where one fixed answer earns the reward on a share *p* of "
        "its problems collects *p* for no work on every problem, and a policy gradient finds such an answer "
        "easily: a constant is the simplest policy there is, it needs no reading of the question and no "
        "worker that can solve anything. The shortcut competes with solving wherever the workers solve "
        "little more than *p*, which is the case early in training and on hard datasets. At 10% the free "
        "reward is what guessing among ten equally likely answers earns; above it, the dataset's answers come "
        "from a handful of values or its scorer accepts answers that solve nothing, and we refuse it. Below "
        "it a common answer among many values (an lcm of 300, a probability of 1/2) is paid a few times in "
        "a hundred, which we accept as the price of reasoning-gym's answer spreads.",
        "",
        "What the measurement shows (table below): most datasets pay no trivial answer at all, most of the "
        "rest one on 1-7% of problems. Those above 10% pay one because the answer is yes/no, True/False, a "
        "small count or -1 for impossible, or because the scorer checks less than the question asks "
        "(`puzzle24` accepts any expression of four numbers in range worth 24, not only of the four given; "
        "`game_of_life_halting` compares `bool(answer)` with `bool(gold)`, and its gold answers `True` and "
        "`False` are both non-empty strings, so any text is paid). Between 5% and 20% the "
        f"shares are continuous, so a dataset within a few points of 10% can change sides with another draw: "
        f"at {table['size']} problems the standard error at 10% is 3 points (a true 5% reads above 10% about "
        "once in 100 draws, a true 20% reads at or below it about once in 200). Audit such a dataset with "
        "more problems (`--datasets NAME --size 1000`) before trusting it.",
        "",
        "| trivial share | datasets |",
        "|---|---:|",
    ]
    for low, high in bands:
        if low == high:
            count, label = sum(s == 0.0 for s in shares), "0"
        else:
            count, label = sum(low < s <= high for s in shares), f"> {low:.0%} to {high:.0%}"
        lines.append(f"| {label} | {count} |")
    lines += [
        "",
        f"**{counts['audited']}** of {counts['registered']} registered datasets audited "
        f"({len(counts['failed'])} failed to generate or grade: {', '.join(counts['failed']) or 'none'}); "
        f"**{len(counts['above'])}** above the threshold. "
        + (f"The default mix's worst trivial share: {worst['share']:.0%} (`{worst['dataset']}`). " if worst else "")
        + "Any text is paid by: "
        + (", ".join(f"`{name}` ({share:.0%})" for name, share in counts["pays_any_text"].items()) or "none")
        + "; the echoed question by: "
        + (", ".join(f"`{name}` ({share:.0%})" for name, share in counts["pays_the_echo"].items()) or "none")
        + ".",
        "",
        "## Per dataset",
        "",
        "| dataset | default mix | n | trivial share | best trivial answer | kind | most common gold (share) | honest | refused |",
        "|---|---|---:|---:|---|---|---|---:|---|",
    ]
    for name, row in sorted(rows.items(), key=lambda item: (-item[1].get("best", {}).get("share", 2.0), item[0])):
        mix = "yes" if name in DEFAULT_DATASETS else ""
        if "error" in row:
            lines.append(f"| `{name}` | {mix} | | | | | | | not audited: {_cell(row['error'])} |")
            continue
        best = row["best"]
        refused = "yes" if best["share"] > threshold else ("yes (copied premise)" if name in GAMEABLE_DATASETS else "")
        modal = "" if row["modal_answer"] is None else f"`{_cell(row['modal_answer'])}` ({row['modal_share']:.0%})"
        honest = "" if row["honest"] is None else f"{row['honest']:.0%}"
        answer = "" if best["answer"] is None else f"`{_cell(best['answer'])}`"
        n = f"{row['n']}*" if "retried" in row else str(row["n"])
        lines.append(f"| `{name}` | {mix} | {n} | {best['share']:.0%} | {answer} | {best['kind'] or ''} | {modal} | {honest} | {refused} |")
    if any("retried" in row for row in rows.values()):
        lines += ["", f"\\* Timed out at {table['size']} problems and measured again on fewer."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100, help="problems measured per dataset (and as many for the modal answer)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per dataset")
    parser.add_argument("--retry-size", type=int, default=20, help="size of one retry after a timeout (0: none)")
    parser.add_argument("--datasets", nargs="+", help="only these (default: every registered dataset)")
    parser.add_argument("--json", type=Path, help="write the table here (the shipped one: tasks/suites/" + AUDIT_FILE + ")")
    parser.add_argument("--markdown", type=Path, help="write the human-readable page here (docs/REASONING_GYM_AUDIT.md)")
    parser.add_argument("--render", type=Path, help="measure nothing: write --markdown from this table")
    args = parser.parse_args(argv)
    if args.render:
        table = json.loads(args.render.read_text(encoding="utf-8"))
        print(json.dumps(summary(table), indent=1))
        if args.markdown:
            args.markdown.write_text(markdown(table), encoding="utf-8")
        return 0

    from reasoning_gym.factory import DATASETS

    names = args.datasets or sorted(DATASETS)
    auditor = Auditor(args.timeout)
    rows: dict[str, Any] = {}
    try:
        for index, name in enumerate(names, 1):
            row = auditor.measure(name, args.size, args.seed)
            if row.get("error", "").startswith("timeout") and args.retry_size:
                first = row["error"]
                row = auditor.measure(name, args.retry_size, args.seed)
                row["retried"] = f"{first} at size {args.size}; measured at size {args.retry_size}"
            rows[name] = row
            shown = row["error"] if "error" in row else f"{row['best']['share']:.0%} {row['best']['kind']}: {row['best']['answer']!r}"
            print(f"[{index}/{len(names)}] {name}: {shown} ({row.get('seconds', '?')} s)", flush=True)
    finally:
        auditor.close()
    table = {
        "reasoning_gym_version": reasoning_gym_version(),
        "size": args.size,
        "seed": args.seed,
        "threshold": TRIVIAL_SHARE_THRESHOLD,
        "constants": list(TRIVIAL_CONSTANTS),
        "any_text": ANY_TEXT,
        "datasets": dict(sorted(rows.items())),
    }
    counts = summary(table)
    print(json.dumps(counts, indent=1))
    if args.json:
        args.json.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.markdown:
        args.markdown.write_text(markdown(table), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
