"""``conductor-env unseen --routers``: the learned routers, trained on the generated family's training part only.

Each router kind is keyed by description (docs/ROUTERS.md, "Routers on unseen pools"), so it plays
pools it never saw; it is trained on the training part (``generated``), whose names, phrasings and
skill profiles no held-out pool has, so it faces the same shift as a Conductor trained there. The
table-trained kinds share one router-data table of ``single:<i>`` episodes over the family's
fixed draws; MASRouter trains on episodes of the family itself. Every artefact lives under
``<out>/routers/`` and is reused by a rerun.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

from conductor_env.cli.common import UsageError

#: The kinds trained when ``--routers all`` is given.
FAMILY_ROUTERS: tuple[str, ...] = ("knn", "mlp", "routerdc", "masrouter")
#: What the routers train on: the training part's fixed draws ``generated#0`` .. ``#POOLS-1``,
#: QUESTIONS training questions each (two per domain's dataset at ``size`` 10), and MASRouter's
#: episodes of the family; the figures of docs/ROUTERS.md were measured with these.
FAMILY = "generated"
POOLS = 40
QUESTIONS = 60
SUITE_OPTIONS = {"size": 10}
MASROUTER_EPISODES = 1600
FOLDER = "routers"


def parse_router_kinds(text: str | None) -> list[str]:
    """Reads ``--routers`` (``all`` or comma-separated kinds).

    Raises:
        UsageError: For a kind without a description-keyed mode.
    """
    if not text:
        return []
    kinds = list(FAMILY_ROUTERS) if text.strip() == "all" else [kind.strip() for kind in text.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in FAMILY_ROUTERS]
    if unknown or not kinds:
        raise UsageError(f"--routers takes 'all' or kinds from {', '.join(FAMILY_ROUTERS)} (smoothie has no description-keyed mode), got {text!r}")
    return list(dict.fromkeys(kinds))


def family_routers(kinds: Sequence[str], out: str, env_options: dict, say: Callable[[str], None]) -> list[str]:
    """Trains (or reuses) each router kind on the training family; returns their policy specs.

    Args:
        kinds: Router kinds (from :func:`parse_router_kinds`).
        out: The unseen run's output folder.
        env_options: The held-out set's env options (the routers train under the same reward).
        say: Where progress lines go.
    """
    from conductor_env.agents.training.routers.masrouter import train_masrouter
    from conductor_env.agents.training.routers.train import train_router
    from conductor_env.cli.routers import routers_data
    from conductor_env.evaluation.unseen import ENV_ID

    root = os.path.join(out, FOLDER)
    specs, table = [], None
    for kind in kinds:
        folder = os.path.join(root, kind)
        specs.append(f"router:{kind}:{folder}")
        if os.path.isfile(os.path.join(folder, "router.json")):
            say(f"{kind}: reusing {folder}")
            continue
        price_weight = float(env_options.get("price_weight", 0.0))
        if kind == "masrouter":
            trained = train_masrouter(
                ENV_ID, FAMILY, folder, episodes=MASROUTER_EPISODES, price_weight=price_weight, env_options=env_options, suite_options=SUITE_OPTIONS, workers="description", say=say
            )
        else:
            if table is None:
                table = routers_data(env_id=ENV_ID, pool=FAMILY, pools=POOLS, out=os.path.join(root, "data"), n=QUESTIONS, env_options=env_options, suite_options=SUITE_OPTIONS, concurrency=16)
            trained = train_router(kind, table, folder, target="score", price_weight=price_weight, workers="description")
        say(trained.summary())
    return specs
