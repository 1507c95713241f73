"""Draws the training curves of the ``orchestrate`` recipe's runs (docs/lab/orchestration.md).

Each run's ``rewards.json`` (written by ``conductor-env train grpo``) holds TRL's per-step log:
the batch mean env reward (each completion's reward is already the mean of its worker draws) and
the share of groups whose samples all scored the same (the env reward's own count; for runs that
predate it, counted from the saved episodes, since TRL's ``frac_reward_zero_std`` measures the
batch's spread under ``scale_rewards="batch"``). The horizontal lines are the closed-form
expectations of the oracle, of perfect single-call routing and of the best fixed baseline on the
whole pool. A run that trained on smaller sub-pools (``subpool_size``) also gets a dotted line
in its colour: per step, the oracle on the workers each of its episodes showed, its real ceiling::

    python experiments/plot_orchestration.py --out /tmp/orchestration_curves.png seed0=RUN0 seed1=RUN1 ...

A run continued from another (``--model RUN/final``) joins it with a comma, ``seed0=RUN0,RUN0_MORE``:
one curve over all their steps, with a thin vertical line where each continuation starts.

``--pool orchestra-judge`` draws the expectations of that pool (the ``orchestrate-judge`` recipe's runs).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable, Sequence

from conductor_env.agents.training.reward import identical_group_share
from conductor_env.evaluation.oracle import POOL, oracle_per_step, oracle_report, worker_table


def per_step(run_dir: str, key: str) -> list[float]:
    """The values TRL logged under ``key``, one per optimizer step."""
    log = json.loads((Path(run_dir) / "rewards.json").read_text(encoding="utf-8"))["log_history"]
    return [float(entry[key]) for entry in log if key in entry]


def identical_groups(run_dir: str) -> list[float]:
    """The share of groups whose samples all scored the same, one value per optimizer step."""
    logged = per_step(run_dir, "conductor/identical_groups")
    if logged:
        return logged
    saved = json.loads((Path(run_dir) / "rewards.json").read_text(encoding="utf-8"))
    episodes = saved.get("episodes", [])
    if not episodes:
        return per_step(run_dir, "frac_reward_zero_std")
    steps = sorted({episode["step"] for episode in episodes})
    return [identical_group_share([e["problem_id"] for e in episodes if e["step"] == step], [e["reward"] for e in episodes if e["step"] == step]) for step in steps]


def subpool_oracle(run_dir: str, pool: str) -> list[float] | None:
    """Per step, the oracle on the sub-pools a run's episodes showed (:func:`conductor_env.evaluation.oracle.oracle_per_step`), or
    ``None`` when every recorded episode showed the whole pool (or none kept its ``worker_map``)."""
    episodes = json.loads((Path(run_dir) / "rewards.json").read_text(encoding="utf-8")).get("episodes", [])
    size = len(worker_table(pool))
    if not episodes or any("worker_map" not in e for e in episodes) or all(len(e["worker_map"]) == size for e in episodes):
        return None
    return oracle_per_step(episodes, pool)


def chained(run_dirs: Sequence[str], values: Callable[[str], list[float] | None]) -> list[float] | None:
    """One run's per-step ``values`` over runs continued from one another, in order (``None`` when any run has none)."""
    parts = [values(run_dir) for run_dir in run_dirs]
    if any(part is None for part in parts):
        return None
    return [value for part in parts for value in part]


def main(argv: list[str] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="NAME=RUN_DIR[,RUN_DIR...]")
    parser.add_argument("--out", required=True)
    parser.add_argument("--pool", default=POOL, help="the runs' simulated pool (preset or .toml path; default: orchestra)")
    args = parser.parse_args(argv)
    means = oracle_report(args.pool)["mean_over_domains"]
    best_baseline = max(v for k, v in means.items() if k not in ("oracle", "routing_oracle"))
    fig, (rewards, flat) = plt.subplots(1, 2, figsize=(12, 4.5))
    for spec in args.runs:
        name, dirs = spec.split("=", 1)
        run_dirs = dirs.split(",")
        parts = [per_step(run_dir, "rewards/conductor_env/mean") for run_dir in run_dirs]
        values = [value for part in parts for value in part]
        (line,) = rewards.plot(range(1, len(values) + 1), values, marker="o", ms=3, label=name)
        start = 0
        for part in parts[:-1]:
            start += len(part)
            rewards.axvline(start + 0.5, color=line.get_color(), lw=0.6, alpha=0.5)
        ceiling = chained(run_dirs, lambda d: subpool_oracle(d, args.pool))
        if ceiling is not None:
            rewards.plot(range(1, len(ceiling) + 1), ceiling, ls=":", lw=1, color=line.get_color(), label=f"{name}: oracle on its shown sub-pools")
        zero = chained(run_dirs, identical_groups) or []
        flat.plot(range(1, len(zero) + 1), zero, marker="o", ms=3, label=name)
    for value, label, colour in ((means["oracle"], "oracle", "#2a2"), (means["routing_oracle"], "best single call per domain", "#27c"), (best_baseline, "best fixed baseline", "#c44")):
        rewards.axhline(value, color=colour, ls="--", lw=1, label=f"{label} {value:.3f}")
    rewards.set(xlabel="GRPO step", ylabel="batch mean env reward (16 worker draws each)", ylim=(0.3, 1.0))
    rewards.legend(fontsize=7, loc="lower right")
    flat.set(xlabel="GRPO step", ylabel="share of groups with identical rewards", ylim=(-0.02, 1.02))
    flat.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(args.out)


if __name__ == "__main__":
    main()
