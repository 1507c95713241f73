"""Draws the GRPO learning attempts' curves from benchmarks/results/grpo_attempts.json.

The JSON holds the per-step trainer logs (TRL's ``rewards/conductor_env/mean`` and
``frac_reward_zero_std``) of each GRPO learning attempt; each attempt is a run of
``experiments/bench_grpo_learning.py`` with the flags given in docs/lab/grpo-learning.md::

    python experiments/plot_grpo_attempts.py --out /tmp/grpo_attempts.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
RANDOM_BASELINE = 0.746  # held-out mean reward of the `random` policy (grpo_learning.json)
LEARNED = {"I", "J", "K", "L"}  # an lr warm-up at 1e-4 to 2e-4: the runs whose routing improved


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=str(RESULTS / "grpo_attempts.json"), help="the attempts' logs")
    parser.add_argument("--out", required=True, help="the PNG to write")
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = json.loads(Path(args.runs).read_text(encoding="utf-8"))["runs"]
    fig, (rewards, flat) = plt.subplots(1, 2, figsize=(12, 4.5))
    colours = plt.get_cmap("tab20").colors
    for index, run in enumerate(runs):
        steps = range(1, len(run["train_reward_per_step"]) + 1)
        learned = run["run"] in LEARNED
        style = dict(color=colours[(2 * index) % 20 + (index >= 10)], marker="o", ms=3 if learned else 2, lw=2.2 if learned else 0.8, alpha=1.0 if learned else 0.55)
        rewards.plot(steps, run["train_reward_per_step"], label=f"{run['run']}: {run['settings']}", **style)
        if "frac_groups_with_zero_reward_std_per_step" in run:  # run 0 predates logging it
            flat.plot(steps, run["frac_groups_with_zero_reward_std_per_step"], label=run["run"], **style)
    rewards.axhline(RANDOM_BASELINE, color="#c44", ls="--", label=f"random baseline (held-out) {RANDOM_BASELINE:.2f}")
    rewards.set(xlabel="GRPO step", ylabel="batch mean env reward", ylim=(0, 1.05))
    rewards.legend(fontsize=6, loc="lower left")
    flat.set(xlabel="GRPO step", ylabel="share of groups with identical rewards", ylim=(0, 1.05))
    flat.legend(fontsize=7)
    fig.suptitle("GRPO attempts on CPU, Gemma 3 270M Conductor, one expert per domain (I-L learned to route)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
