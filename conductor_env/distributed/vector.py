"""``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point", backend="ray")``.

:class:`~conductor_env.envs.vector.ConductorVectorEnv` calls :func:`remote_envs` for the ``ray``
backend: its sub-environments are :class:`~conductor_env.distributed.episodes.RemoteEnv` s in
episode actors, stepped concurrently as the local ones are.
"""

from __future__ import annotations

from typing import Any, Callable

from conductor_env.distributed.episodes import EpisodeActors, RemoteEnv, group_spaces
from conductor_env.distributed.limiter import cluster_limiter
from conductor_env.distributed.runtime import connect
from conductor_env.envs.setup import EnvSetup


def remote_envs(
    setup: EnvSetup,
    num_envs: int,
    *,
    address: str | None = None,
    workers: int | None = None,
    cluster_limits: bool = True,
    actor_options: dict[str, Any] | None = None,
) -> tuple[list[RemoteEnv], Callable[[], None]]:
    """Starts episode actors and returns ``num_envs`` remote envs and a function ending the actors.

    Args:
        setup: The env.
        num_envs: Sub-environments.
        address: The cluster (see :func:`~conductor_env.distributed.runtime.connect`).
        workers: Episode actors (``None``: one per 8 sub-environments, at least one).
        cluster_limits: Hold the workers' call limits across the cluster.
        actor_options: Ray options for the actors.

    Returns:
        The envs and the closer.
    """
    connect(address)
    limiter = cluster_limiter() if cluster_limits else None
    actors = EpisodeActors(setup, workers or max(1, (num_envs + 7) // 8), limiter, actor_options)
    try:
        spaces = group_spaces(actors)
    except BaseException:
        actors.shutdown()
        raise
    return [RemoteEnv(actors, spaces) for _ in range(num_envs)], actors.shutdown
