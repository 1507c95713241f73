"""The accuracy-versus-cost figure: one point per policy with its 95% interval."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from conductor_env.evaluation.summary import PolicySummary

#: Cost spread (max / min) beyond which the x axis becomes logarithmic.
LOG_SPREAD = 20.0
#: One marker shape per policy (with the colour, so points differ without colour vision too).
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*", "h", "<", ">")


def plot_accuracy_vs_cost(summaries: Sequence[PolicySummary], path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Draws accuracy against mean cost per episode, like the paper's performance/efficiency plot.

    The x axis is mean USD per episode; when every policy cost nothing (local workers without
    prices) it is mean tokens per episode instead. It is logarithmic when costs spread over more
    than a factor of :data:`LOG_SPREAD`. Error bars are the Wilson 95% intervals.

    Args:
        summaries: From :func:`~conductor_env.evaluation.summary.summarize` (one point each;
            policies without a scored episode are left out).
        path: The PNG file to write.
        title: Figure title (default: the env and pool).

    Returns:
        The path written.

    Raises:
        ImportError: When matplotlib is not installed (``pip install conductor-env[report]``).
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    summaries = [s for s in summaries if s.scored > 0]  # a policy with no scored episode has no accuracy
    use_usd = any(s.mean_usd > 0 for s in summaries)
    xs = [s.mean_usd if use_usd else s.mean_tokens for s in summaries]
    ys = [100 * s.accuracy for s in summaries]
    below = [max(0.0, 100 * (s.accuracy - s.ci_low)) for s in summaries]
    above = [max(0.0, 100 * (s.ci_high - s.accuracy)) for s in summaries]
    positive = [x for x in xs if x > 0]
    log_x = len(positive) == len(xs) and len(positive) > 1 and max(positive) / min(positive) > LOG_SPREAD

    figure, axes = plt.subplots(figsize=(8.6, 4.8), dpi=120)
    try:
        several_groups = len({(s.env_id, s.pool) for s in summaries}) > 1
        colours = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
        for i, (s, x, y, lo, hi) in enumerate(zip(summaries, xs, ys, below, above)):
            label = f"{s.policy} ({s.pool})" if several_groups else s.policy
            axes.errorbar(
                [x],
                [y],
                yerr=[[lo], [hi]],
                fmt=MARKERS[i % len(MARKERS)],
                markersize=8,
                capsize=4,
                color=colours[i % len(colours)],
                label=f"{label}: {y:.0f}%",
            )
        if log_x:
            axes.set_xscale("log")
            axes.set_xlim(min(xs) / 1.8, max(xs) * 1.8)
        elif xs:
            span = (max(xs) - min(xs)) or max(abs(max(xs)), 1e-12)
            axes.set_xlim(min(xs) - 0.15 * span, max(xs) + 0.15 * span)
            axes.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))
        if summaries:
            axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=9, frameon=False, title="policy: accuracy")
        axes.set_ylim(-2, 102)
        axes.set_xlabel("mean cost per episode (USD)" if use_usd else "mean worker tokens per episode (no prices in this pool)")
        axes.set_ylabel("accuracy (%), 95% Wilson interval")
        if title is None and summaries:
            title = f"{summaries[0].env_id} · pool {summaries[0].pool}" if not several_groups else "accuracy vs cost"
        axes.set_title(title or "accuracy vs cost")
        axes.grid(True, alpha=0.3, which="both")
        figure.tight_layout()
        figure.savefig(path)
    finally:
        plt.close(figure)
    return path
