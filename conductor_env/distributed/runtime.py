"""Connecting to Ray: the one place that decides how this process joins a cluster.

Every distributed backend calls :func:`connect` before it creates actors. It never starts a
dashboard and turns off usage statistics. Clusters that use Ray's token authentication
(``RAY_AUTH_MODE=token``) are joined with the token Ray itself reads (``RAY_AUTH_TOKEN``,
``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``); a refused connection says so.
"""

from __future__ import annotations

import os
from typing import Any

#: The Ray namespace the package's named actors (limiter, sandbox hosts) live in.
NAMESPACE = "conductor-env"


class RayUnavailable(RuntimeError):
    """Ray is not installed or the cluster cannot be joined; the message says how to fix it."""


def require_ray() -> Any:
    """Returns the ``ray`` module.

    Raises:
        RayUnavailable: When Ray is not installed (naming the extra to install).
    """
    try:
        import ray
    except ImportError as error:
        raise RayUnavailable("this needs Ray: pip install 'conductor-env[ray]'") from error
    return ray


def connect(address: str | None = None) -> Any:
    """Joins a Ray cluster once per process (later calls return at once).

    Args:
        address: ``"auto"`` (the cluster ``ray start`` made on this machine), ``"ray://host:port"``
            or ``"host:port"`` of a head node, ``"local"`` (a new single-node cluster for this
            process), or ``None``: ``RAY_ADDRESS`` when set, else ``"local"``.

    Returns:
        The ``ray`` module, connected.

    Raises:
        RayUnavailable: When Ray is missing or the cluster refuses or cannot be reached.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    target = address or os.environ.get("RAY_ADDRESS") or "local"
    options: dict[str, Any] = {"namespace": NAMESPACE, "log_to_driver": False, "configure_logging": False}
    if target == "local":
        options.update(include_dashboard=False, address="local")
    else:
        options["address"] = target
    try:
        ray.init(**options)
    except Exception as error:  # noqa: BLE001 - reworded with the fix
        raise RayUnavailable(_reason(target, error)) from error
    return ray


def _reason(target: str, error: BaseException) -> str:
    text = " ".join(str(error).split())[:300]
    if "auth" in text.lower() or "token" in text.lower():
        return f"the Ray cluster at {target!r} refused this process ({text}); set RAY_AUTH_TOKEN to the cluster's token"
    if target == "auto":
        return f"no Ray cluster found on this machine ({text}); start one with `ray start --head` or pass an address"
    return f"cannot join the Ray cluster at {target!r}: {text}"


def is_lost(error: BaseException) -> bool:
    """Whether ``error`` means the called actor (or its node) died, not a failure of its task.

    A task that itself failed on a dead actor it called (``RayTaskError(ActorDiedError)``) is
    the task's failure: the actor that ran it is alive.
    """
    ray = require_ray()
    lost = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError, ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError)
    return isinstance(error, lost) and not isinstance(error, ray.exceptions.RayTaskError)
