"""Learned routers as Conductor policies (``router:<kind>:<checkpoint folder>``; docs/ROUTERS.md).

One module per router kind, each one router class whose checkpoint says how it knows a worker
(``worker_key``: by pool ``name``, or by the embedding of its ``description``, so it plays pools it
never saw): :mod:`.knn`, :mod:`.mlp`, :mod:`.routerdc`, :mod:`.smoothie` (by name only) and
:mod:`.masrouter` (its torch network in :mod:`.masrouter_net`). Shared by every kind:
:mod:`.base` (the :class:`Router` policy, worker matching, the kinds' registry and
:func:`load_router`), :mod:`.checkpoint` (the folder format) and :mod:`.encoder` (the offline
sentence encoder). Training mirrors these module names in
:mod:`conductor_env.agents.training.routers`; policies never import it.
"""

from conductor_env.agents.routers.base import ROUTER_KINDS, UNROUTABLE, Router, RouterError, ScoreRouter, load_router, pool_names, router_class
from conductor_env.agents.routers.checkpoint import CheckpointError, RouterCheckpoint

__all__ = ["ROUTER_KINDS", "UNROUTABLE", "CheckpointError", "Router", "RouterCheckpoint", "RouterError", "ScoreRouter", "load_router", "pool_names", "router_class"]
