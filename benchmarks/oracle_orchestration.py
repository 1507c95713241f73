"""Prints the closed-form oracle of a simulated pool (conductor_env.evaluation.oracle).

Per domain: the best workflow, the best of each shape and the fixed baselines' exact expected
reward under ``cost_aware``. See docs/ORCHESTRATION.md.

    python benchmarks/oracle_orchestration.py [--pool orchestra-judge] [--max-steps 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

from conductor_env.evaluation.oracle import POOL, oracle_report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", default=POOL, help="a simulated pool (preset name or .toml path)")
    parser.add_argument("--max-steps", type=int, default=3, help="most steps per workflow (the orchestrate recipe's env option)")
    parser.add_argument("--price-weight", type=float, default=1.0)
    parser.add_argument("--json", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)
    report = oracle_report(args.pool, args.max_steps, args.price_weight)
    for domain, row in report["domains"].items():
        print(f"{domain}: oracle {row['oracle']['reward']:.3f} = {row['oracle']['shape']}: {row['oracle']['plan']}")
        for shape, best in row["best_by_shape"].items():
            print(f"    best {shape:<18} {best['reward']:.3f}  {best['plan']}")
        print("    baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in row["baselines"].items()))
    print("mean over domains: " + ", ".join(f"{k} {v:.3f}" for k, v in report["mean_over_domains"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
