"""Scores an eval on a simulated pool by each episode's exact expected reward (conductor_env.evaluation.expected).

Drops the workers' coin flips and keeps the policies' choices, so paired gaps between policies
on the same questions are far narrower. See docs/ORCHESTRATION.md.

    python benchmarks/expected_orchestration.py EVAL_DIR [--paired-with BASELINE_DIR] [--pool orchestra-judge] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Sequence

from conductor_env.evaluation.expected import RECIPE_REWARD, paired_gaps, read_rows, summary
from conductor_env.evaluation.oracle import POOL
from conductor_env.rewards import RewardScheme


def _print_gaps(report: dict[str, Any], rows: list[dict[str, Any]], baseline_dir: str, pool: str, scheme: RewardScheme) -> None:
    baseline_rows = read_rows(Path(baseline_dir) / "results.jsonl")
    report["paired_gaps"] = {}
    for policy in report["policies"]:
        gaps = report["paired_gaps"][policy] = paired_gaps(rows, baseline_rows, policy, pool, scheme)
        for other, g in gaps.items():
            print(f"{policy} minus {other}: {g['gap']:+.4f} ({g['ci95'][0]:+.4f} to {g['ci95'][1]:+.4f}) over {g['questions']} questions")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("eval_dir", help="an eval folder (its results.jsonl) on a simulated pool")
    parser.add_argument("--pool", default=POOL, help="the simulated pool it was played on (preset or .toml path)")
    parser.add_argument("--paired-with", default=None, metavar="DIR", help="an eval folder of other policies on the same split: per-question gaps to each")
    parser.add_argument("--price-weight", type=float, default=RECIPE_REWARD.price_weight)
    parser.add_argument("--json", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)
    scheme = RewardScheme("cost_aware", price_weight=args.price_weight)
    rows = read_rows(Path(args.eval_dir) / "results.jsonl")
    report: dict[str, Any] = {"eval_dir": args.eval_dir, "pool": args.pool, "price_weight": args.price_weight, "policies": summary(rows, args.pool, scheme)}
    for policy, row in report["policies"].items():
        domains = ", ".join(f"{d} {v:.3f}" for d, v in row["domains"].items())
        print(f"{policy}: {row['expected_reward']:.3f} ({row['ci95'][0]:.3f}-{row['ci95'][1]:.3f}) over {row['questions']} questions; {domains}")
    if args.paired_with:
        _print_gaps(report, rows, args.paired_with, args.pool, scheme)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
