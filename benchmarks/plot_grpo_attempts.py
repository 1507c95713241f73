"""Draws benchmarks/results/grpo_attempts.png from grpo_attempts.json.

The JSON holds the per-step trainer logs (TRL's ``rewards/conductor_env/mean`` and
``frac_reward_zero_std``) of each GRPO learning attempt; each attempt is a run of
``bench_grpo_learning.py`` with the flags given in BENCHMARKS.md::

    python benchmarks/plot_grpo_attempts.py
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
RANDOM_BASELINE = 0.746  # held-out mean reward of the `random` policy (grpo_learning.json)


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = json.loads((RESULTS / "grpo_attempts.json").read_text(encoding="utf-8"))["runs"]
    fig, (rewards, flat) = plt.subplots(1, 2, figsize=(11, 4))
    for run in runs:
        steps = range(1, len(run["train_reward_per_step"]) + 1)
        rewards.plot(steps, run["train_reward_per_step"], marker="o", ms=3, label=f"{run['run']}: {run['settings']}")
        flat.plot(steps, run["frac_groups_with_zero_reward_std_per_step"], marker="o", ms=3, label=run["run"])
    rewards.axhline(RANDOM_BASELINE, color="#c44", ls="--", label=f"random baseline (held-out) {RANDOM_BASELINE:.2f}")
    rewards.set(xlabel="GRPO step", ylabel="batch mean env reward", ylim=(0, 1.05))
    rewards.legend(fontsize=6, loc="lower left")
    flat.set(xlabel="GRPO step", ylabel="share of groups with identical rewards", ylim=(0, 1.05))
    flat.legend(fontsize=7)
    fig.suptitle("GRPO attempts on CPU, Gemma 3 270M Conductor, one expert per domain (none learned)")
    fig.tight_layout()
    fig.savefig(RESULTS / "grpo_attempts.png", dpi=110)


if __name__ == "__main__":
    main()
