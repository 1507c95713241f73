"""Evaluation on Ray: :class:`RayEnvHost` puts an evaluation's envs in episode actors.

``evaluate(config, policies, out, host=RayEnvHost(workers=8))`` (or ``conductor-env eval ...
--ray auto --ray-workers 8``) plays the same plan as a local run: the driver keeps the policies
(batched across episodes) and is the only writer of ``results.jsonl``; ``--concurrency`` slots
each pull their next episode when they finish one, so a slow episode never holds up a chunk.
An episode whose actor dies is re-run from its spec (its worker calls are paid again), and a
killed run resumes from the results file like a local one.
"""

from __future__ import annotations

from typing import Any

from conductor_env.distributed.episodes import EpisodeActors, RemoteEnv, group_spaces
from conductor_env.distributed.limiter import RayCallLimiter, cluster_limiter
from conductor_env.distributed.runtime import connect
from conductor_env.envs.setup import EnvParts, EnvSetup


class RayEnvHost:
    """An :class:`~conductor_env.evaluation.runner.EnvHost` whose envs run in Ray actors.

    Args:
        address: The cluster (see :func:`~conductor_env.distributed.runtime.connect`).
        workers: Episode actors (spread over the nodes).
        cluster_limits: Hold every worker's ``max_concurrency`` and ``requests_per_minute``
            across the cluster (one limiter actor) rather than per actor.
        actor_options: Ray options for the episode actors (``num_cpus``, ``resources``, ...).
    """

    def __init__(self, address: str | None = None, *, workers: int = 2, cluster_limits: bool = True, actor_options: dict[str, Any] | None = None) -> None:
        if workers < 1:
            raise ValueError(f"--ray-workers must be at least 1, got {workers}")
        self.address, self.workers, self.cluster_limits, self.actor_options = address, workers, cluster_limits, actor_options
        self.actors: EpisodeActors | None = None
        self._setup: EnvSetup | None = None
        self._spaces: tuple[Any, Any] | None = None
        self._limiter: RayCallLimiter | None = None

    def start(self, setup: EnvSetup) -> None:
        """Starts the actors for ``setup`` and waits until each has built its env (optional:
        :meth:`make_envs` starts them when needed; starting first keeps start-up out of a timing)."""
        if self.actors is not None and self._setup == setup:
            return
        self.close()
        connect(self.address)
        self._limiter = cluster_limiter() if self.cluster_limits else None
        self.actors = EpisodeActors(setup, self.workers, self._limiter, self.actor_options)
        self._setup = setup
        self._spaces = group_spaces(self.actors, every=True)

    def make_envs(self, setup: EnvSetup, parts: EnvParts, count: int) -> list[RemoteEnv]:
        """Returns ``count`` remote envs spread over the actors (started for ``setup`` if not yet).

        The driver's own pool (``parts.pool``) takes its slots from the cluster limiter too.
        """
        self.start(setup)
        assert self.actors is not None and self._spaces is not None
        if self._limiter is not None:
            parts.pool.use_limiter(self._limiter)
        return [RemoteEnv(self.actors, self._spaces) for _ in range(count)]

    @property
    def lost(self) -> int:
        """Episodes that lost their actor (each was re-run)."""
        return self.actors.lost if self.actors is not None else 0

    def close(self) -> None:
        """Ends the episode actors."""
        if self.actors is not None:
            self.actors.shutdown()
            self.actors = None
            self._setup = self._spaces = None
