"""GRPO's reward graded on Ray: :class:`RayEnvFactory` gives the reward function remote envs.

``ConductorReward(RayEnvFactory(setup, workers=8))`` plays each sampled completion's episode in
an episode actor; the trainer, its model and the follow-up policy stay in the driver. An episode
lost with its actor is re-run from its spec, so every completion gets exactly one reward.
"""

from __future__ import annotations

from typing import Any

from conductor_env.agents.training.reward import EnvFactory
from conductor_env.distributed.episodes import EpisodeActors, RemoteEnv, group_spaces
from conductor_env.distributed.limiter import cluster_limiter
from conductor_env.distributed.runtime import connect
from conductor_env.envs.setup import EnvSetup


class RayEnvFactory(EnvFactory):
    """An :class:`~conductor_env.agents.training.reward.EnvFactory` whose envs run in Ray actors.

    Args:
        setup: The env to train on (checked for training use in this process, as locally).
        address: The cluster (see :func:`~conductor_env.distributed.runtime.connect`).
        workers: Episode actors.
        cluster_limits: Hold the workers' call limits across the cluster.
        actor_options: Ray options for the actors.
    """

    def __init__(self, setup: EnvSetup, *, address: str | None = None, workers: int = 2, cluster_limits: bool = True, actor_options: dict[str, Any] | None = None) -> None:
        super().__init__(setup)
        try:
            connect(address)
            limiter = cluster_limiter() if cluster_limits else None
            self.actors = EpisodeActors(self.setup, workers, limiter, actor_options)  # the training setup: split 'train' by default
            self.spaces = group_spaces(self.actors)
        except BaseException:
            self.parts.close()
            raise

    def __call__(self) -> RemoteEnv:  # type: ignore[override]
        """Returns a new remote env (the reward keeps and reuses it)."""
        return RemoteEnv(self.actors, self.spaces)

    def close(self) -> None:
        """Ends the actors, then closes the local parts."""
        self.actors.shutdown()
        super().close()
