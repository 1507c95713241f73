"""Part 2 of ``conductor-env demo``: learned routers trained on the spot beside the trained Conductor.

The routers (docs/ROUTERS.md) learn from the training split of the same env the Conductor was
trained on: every worker alone on each question (``conductor-env routers data``), then each kind
fitted on that table (``conductor-env train router``), predicting the cost-aware reward; MASRouter
learns from episodes of the env instead (REINFORCE). Folders already trained in the demo's output
are reused.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from rich.console import Console

#: The router kinds part 2 trains and plays.
DEMO_ROUTER_KINDS: tuple[str, ...] = ("knn", "mlp", "routerdc", "smoothie", "masrouter")
#: MASRouter's training episodes in the demo (half of docs/ROUTERS.md's run: it settles on one workflow either way).
MASROUTER_EPISODES = 1600
#: Training questions per dataset of the recipe's env (six datasets: 600 questions, 1,800 episodes).
ROUTER_QUESTIONS_PER_DATASET = 100


def train_demo_routers(
    *,
    out: str,
    env: dict[str, Any],
    env_options: dict[str, Any],
    kinds: Sequence[str] = DEMO_ROUTER_KINDS,
    per_dataset: int = ROUTER_QUESTIONS_PER_DATASET,
    console: Console | None = None,
) -> list[str]:
    """Trains each router kind on the env's training split; returns their policy specs.

    Args:
        out: Folder for the router-data table and the router folders.
        env: The recipe's env settings (``pool``, ``suite_options``).
        env_options: The env options part 2 plays with (the routers' data is played with them too).
        kinds: Router kinds to train.
        per_dataset: Training questions per dataset of the suite.
        console: Where to print.

    Returns:
        ``router:<kind>:<folder>`` specs, in ``kinds`` order.
    """
    from conductor_env.agents.training.routers.masrouter import train_masrouter
    from conductor_env.agents.training.routers.train import train_router
    from conductor_env.cli.routers import routers_data

    console = console or Console(stderr=True)
    datasets = env["suite_options"]["datasets"]
    table = routers_data(
        env_id="Conductor-RG-v0",
        pool=env["pool"],
        out=os.path.join(out, "router_data"),
        split="train",
        n=per_dataset * len(datasets),
        env_options=env_options,
        suite_options={**env["suite_options"], "size": per_dataset},
        concurrency=64,
        console=console,
    )
    specs = []
    for kind in kinds:
        folder = os.path.join(out, "routers", kind)
        if os.path.isfile(os.path.join(folder, "router.json")):
            pass
        elif kind == "masrouter":
            suite_options = {**env["suite_options"], "size": per_dataset}
            train_masrouter("Conductor-RG-v0", env["pool"], folder, episodes=MASROUTER_EPISODES, env_options=env_options, suite_options=suite_options)
            console.print(f"trained the masrouter router on {MASROUTER_EPISODES} episodes", highlight=False, markup=False)
        else:
            trained = train_router(kind, table, folder, target="reward")
            console.print(f"trained the {kind} router on {trained.rows} questions", highlight=False, markup=False)
        specs.append(f"router:{kind}:{folder}")
    return specs


def router_verdict(means: dict[str, float], conductor: str) -> str:
    """One line: whether a learned router beats the trained Conductor on these episodes.

    Args:
        means: Each policy's mean reward.
        conductor: The trained Conductor's spec (a key of ``means``).
    """
    routers = {policy: mean for policy, mean in means.items() if policy.startswith("router:")}
    if not routers or conductor not in means:
        return ""
    best, best_mean = max(routers.items(), key=lambda item: item[1])
    kind = best.split(":")[1]
    if best_mean > means[conductor]:
        return f"a learned router beats the trained Conductor here: {kind} {best_mean:.3f} against {means[conductor]:.3f}"
    return f"the trained Conductor ({means[conductor]:.3f}) beats every learned router here (best: {kind} {best_mean:.3f})"
