"""Readable progress of a GRPO run: a rich progress bar, warnings with their likely fix, a reward curve.

Each optimizer step TRL logs the env's mean reward, the parse rate (``conductor/parse_rate``,
from :class:`~conductor_env.agents.training.reward.ConductorReward`) and the share of GRPO groups
whose completions all got the same reward (``conductor/identical_groups``, from the same reward;
TRL's ``frac_reward_zero_std`` where it is absent). Such a group has advantage 0 for every
completion: it teaches nothing. :class:`StepWatch` turns a run of bad steps into a warning that
names the likely fix; :class:`RichProgress` shows the figures on a progress bar and prints the
warnings; :func:`plot_reward_curve` draws the run's reward curve beside its checkpoints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

REWARD_KEY = "rewards/conductor_env/mean"

#: The share of GRPO groups whose completions all got the same reward, logged by the env reward
#: (``agents/training/reward.py``). TRL's own ``frac_reward_zero_std`` measures the batch's spread
#: instead of each group's under ``scale_rewards="batch"``, so it reads 0 there even when every
#: group is identical; this key is right under any scaling.
IDENTICAL_GROUPS_KEY = "conductor/identical_groups"


@dataclass(frozen=True)
class StepStats:
    """The figures of one logged GRPO step.

    Attributes:
        step: The optimizer step (1-based).
        reward: Mean env reward of the step's completions.
        parse_rate: Share of completions the env parsed as a workflow.
        identical_share: Share of groups whose completions all got the same reward.
        clipped_share: Share of completions cut off at the length limit.
    """

    step: int
    reward: float
    parse_rate: float
    identical_share: float
    clipped_share: float = 0.0

    @classmethod
    def from_log(cls, step: int, logs: Mapping[str, Any]) -> "StepStats | None":
        """Reads a TRL log entry; ``None`` for an entry that is not a training step's."""
        reward = logs.get(REWARD_KEY, logs.get("reward"))
        if not isinstance(reward, (int, float)):
            return None

        def number(key: str) -> float:
            value = logs.get(key, 0.0)
            return float(value) if isinstance(value, (int, float)) and not math.isnan(value) else 0.0

        return cls(
            step=step,
            reward=float(reward) if not math.isnan(reward) else 0.0,
            parse_rate=number("conductor/parse_rate"),
            identical_share=number(IDENTICAL_GROUPS_KEY) if IDENTICAL_GROUPS_KEY in logs else number("frac_reward_zero_std"),
            clipped_share=number("completions/clipped_ratio"),
        )


class StepWatch:
    """Warns when a run stops carrying a learning signal for several steps in a row.

    Two patterns, each reported once when it first lasts ``patience`` steps:

    - the parse rate is 0: no completion is a workflow, every reward is 0;
    - at least ``identical_threshold`` of the groups have identical rewards while the mean
      reward is below ``converged_reward`` (when every completion already earns about the
      best reward, identical groups mean the policy converged, not that it is stuck).

    Args:
        patience: Consecutive steps a pattern must last.
        identical_threshold: Share of identical-reward groups that counts as high.
        converged_reward: Mean reward at or above which identical groups are not a problem.
    """

    def __init__(self, patience: int = 3, identical_threshold: float = 0.75, converged_reward: float = 0.9) -> None:
        self.patience = patience
        self.identical_threshold = identical_threshold
        self.converged_reward = converged_reward
        self._no_parse = 0
        self._identical = 0
        self._warned: set[str] = set()

    def update(self, stats: StepStats) -> list[str]:
        """Takes one step's figures; returns the warnings that became due (usually none)."""
        self._no_parse = self._no_parse + 1 if stats.parse_rate == 0 else 0
        stuck = stats.identical_share >= self.identical_threshold and stats.reward < self.converged_reward
        self._identical = self._identical + 1 if stuck and stats.parse_rate > 0 else 0
        due = []
        if self._no_parse >= self.patience and "no_parse" not in self._warned:
            self._warned.add("no_parse")
            if stats.clipped_share >= 0.99:
                fix = "every completion hit the length limit: raise --max-completion-length, or add --format-warmup-steps 30 with --prompt compact"
            else:
                fix = "the model does not write the three lists: add --format-warmup-steps 30 (with --prompt compact for a small model)"
            due.append(f"parse rate 0 for {self._no_parse} steps (up to step {stats.step}); nothing can be learned: {fix}")
        if self._identical >= self.patience and "identical" not in self._warned:
            self._warned.add("identical")
            due.append(
                f"{stats.identical_share:.0%} of groups had identical rewards for {self._identical} steps (up to step {stats.step}), "
                "so GRPO has no advantage to learn from: lower --learning-rate or raise --warmup-ratio (the choice collapsed), "
                "or raise --num-generations / --temperature"
            )
        return due


class RichProgress:
    """A ``transformers`` trainer callback: a rich progress bar per step and :class:`StepWatch` warnings.

    Args:
        total_steps: The run's optimizer steps.
        watch: The warning logic (default: :class:`StepWatch` with its defaults).
        console: A ``rich`` console (default: standard error).

    Attributes:
        history: The :class:`StepStats` of every logged step.
        warnings: Every warning printed.
    """

    def __init__(self, total_steps: int, *, watch: StepWatch | None = None, console: Any = None) -> None:
        from rich.console import Console

        self.total_steps = total_steps
        self.watch = watch or StepWatch()
        self.console = console or Console(stderr=True)
        self.history: list[StepStats] = []
        self.warnings: list[str] = []
        self._progress: Any = None
        self._task: Any = None

    def _start(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("GRPO"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[figures]}"),
            console=self.console,
        )
        self._task = self._progress.add_task("grpo", total=self.total_steps, figures="generating the first step...")
        self._progress.start()

    # The transformers.TrainerCallback hooks (duck-typed: CallbackHandler calls them by name).
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._progress is None:
            self._start()

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        stats = StepStats.from_log(int(state.global_step), logs or {})
        if stats is None:
            return
        self.history.append(stats)
        figures = f"reward {stats.reward:.3f} | parse {stats.parse_rate:.0%} | identical groups {stats.identical_share:.0%}"
        if self._progress is not None:
            self._progress.update(self._task, completed=stats.step, figures=figures)
        if not self.console.is_terminal:  # a log file gets no live bar: one line per step instead
            self.console.print(f"GRPO step {stats.step}/{self.total_steps}: {figures}")
        for warning in self.watch.update(stats):
            self.warnings.append(warning)
            self.console.print(f"[bold yellow]warning:[/] {warning}")

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda *args, **kwargs: None  # the hooks this callback does not use
        raise AttributeError(name)

    def close(self) -> None:
        """Stops the bar (idempotent)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


class StepBar:
    """A plain rich progress bar with a figure beside it (the format warm start's, per step).

    Args:
        label: The bar's name.
        total: Steps in all.
        console: A ``rich`` console (default: standard error).
    """

    def __init__(self, label: str, total: int, *, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[figures]}"),
            console=console or Console(stderr=True),
        )
        self._task = self._progress.add_task(label, total=total, figures="")
        self._progress.start()

    def step(self, number: int, loss: float) -> None:
        """Moves the bar to step ``number`` and shows its loss."""
        self._progress.update(self._task, completed=number, figures=f"loss {loss:.3f}")

    def close(self) -> None:
        """Stops the bar."""
        self._progress.stop()


def plot_reward_curve(
    rewards: Sequence[float],
    path: str | Path,
    *,
    heldout_before: float | None = None,
    heldout_after: float | None = None,
    title: str = "GRPO reward curve",
) -> Path:
    """Draws the per-step mean reward (and its 4-step moving mean) with the held-out figures.

    Args:
        rewards: Mean env reward per step.
        path: The PNG to write.
        heldout_before, heldout_after: Held-out mean reward before and after GRPO (optional).
        title: The plot's title.

    Returns:
        The path written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    steps = list(range(1, len(rewards) + 1))
    window = 4
    smooth = [sum(rewards[max(0, i - window + 1) : i + 1]) / len(rewards[max(0, i - window + 1) : i + 1]) for i in range(len(rewards))]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, rewards, color="#9ab", lw=1, marker=".", label="batch mean reward")
    ax.plot(steps, smooth, color="#136", lw=2, label=f"moving mean ({window} steps)")
    if heldout_before is not None:
        ax.axhline(heldout_before, color="#888", ls=":", label=f"held-out before GRPO {heldout_before:.2f}")
    if heldout_after is not None:
        ax.axhline(heldout_after, color="#2a2", ls="-.", label=f"held-out after GRPO {heldout_after:.2f}")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("env reward")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
