"""How a description-keyed router (``worker_key = "description"``) finds the shown workers' descriptions.

A router keyed by description knows no worker by name: it scores every worker the episode shows
from the sentence embedding of that worker's description, so it plays pools it never saw (the
generated held-out pools of :mod:`conductor_env.workers.generated`). It reads them from the
observation's ``worker_descriptions`` (entry ``i`` describes shown id ``i``; filled when the env
shows names).

A worker without a description cannot be scored: its episode is refused with a clear reason
(the policy's action says why and the episode scores 0), never routed by a guess; a ``pool``
given when the router is built is checked up front the same way.
"""

from __future__ import annotations

from typing import Any, Sequence

from conductor_env.agents.base import Observation
from conductor_env.agents.baselines import worker_ids


class DescriptionError(ValueError):
    """An observation does not give a description for every shown worker."""


def shown_descriptions(observation: Observation) -> list[tuple[int, str]]:
    """Returns ``(shown id, description)`` for every shown worker, in shown-id order.

    Raises:
        DescriptionError: When names are hidden (and so the descriptions), or a shown worker's
            description is missing or empty.
    """
    names = [str(n) for n in (observation.get("worker_names") or ())]
    texts = [str(t) for t in (observation.get("worker_descriptions") or ())]
    shown = worker_ids(observation)
    if not shown or not all(i < len(names) and names[i] for i in shown):
        raise DescriptionError("the episode hides the workers' names and so their descriptions (show them with --env-option show_names=true)")
    out = []
    for i in shown:
        description = texts[i].strip() if i < len(texts) else ""
        if not description:
            raise DescriptionError(f"worker {i} ({names[i]!r}) has no description, and a description-keyed router scores workers by their descriptions only")
        out.append((i, description))
    return out


def check_pool_descriptions(pool: Any) -> None:
    """Checks that every worker of a pool has a description.

    Args:
        pool: A :class:`~conductor_env.workers.pool.WorkerPool` (a family, whose specs are
            placeholder slots, is not checked: its draws are checked per episode).

    Raises:
        DescriptionError: Naming the workers without one.
    """
    if getattr(pool, "family", None) is not None:
        return
    specs: Sequence[Any] = getattr(pool, "specs", ()) or ()
    empty = [s.name for s in specs if not str(getattr(s, "description", "") or "").strip()]
    if empty:
        raise DescriptionError(f"the pool's workers {empty} have no description, and a description-keyed router scores workers by their descriptions only")
