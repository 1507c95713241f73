"""Episodes on Ray: actors that hold envs, and the driver-side env that talks to one.

An :class:`EpisodeActor` builds an :class:`~conductor_env.envs.EnvSetup`'s parts once and runs
many episodes at once on its event loop, one env per episode in flight. The driver keeps the
policy: a :class:`RemoteEnv` has the env's ``areset``/``astep``, so the one episode loop
(:func:`conductor_env.agents.episode.play`) and its batched policy run unchanged. When the
actor dies (or its node goes), the :class:`RemoteEnv` moves to another actor and raises
:class:`~conductor_env.env.EnvLost`; the episode loop then re-runs the episode from its spec.
"""

from __future__ import annotations

import uuid
from typing import Any

from conductor_env.distributed.limiter import RayCallLimiter
from conductor_env.distributed.runtime import is_lost, require_ray
from conductor_env.env import EnvLost
from conductor_env.envs.setup import EnvSetup
from conductor_env.event_loop import run_sync


class MissingEpisode(KeyError):
    """The actor does not hold the episode: it restarted since the episode's reset."""


class EpisodeActor:
    """The actor: an env setup's shared parts and the envs of the episodes in flight.

    Args:
        setup: The env to run.
        limiter: The cluster's call limiter (``None``: limits per actor).
    """

    def __init__(self, setup: EnvSetup, limiter: RayCallLimiter | None = None) -> None:
        self.setup = setup
        self.parts = setup.build()
        if limiter is not None:
            self.parts.pool.use_limiter(limiter)
        self.envs: dict[str, Any] = {}
        self.steps = 0

    def _env(self, key: str) -> Any:
        if key not in self.envs:
            self.envs[key] = self.setup.make(self.parts)
        return self.envs[key]

    async def spaces(self) -> tuple[Any, Any]:
        """The env's observation and action spaces."""
        env = self._env("__spaces__")
        return env.observation_space, env.action_space

    async def reset(self, key: str, seed: int | None, options: dict[str, Any] | None) -> tuple[dict, dict]:
        """Resets (creating if needed) the env of episode ``key``."""
        return self._env(key).reset(seed=seed, options=options)

    async def step(self, key: str, action: str) -> tuple[dict, float, bool, bool, dict]:
        """Steps the env of episode ``key``.

        Raises:
            MissingEpisode: When this actor never reset ``key`` (it restarted since).
        """
        env = self.envs.get(key)
        if env is None:
            raise MissingEpisode(key)
        self.steps += 1
        return await env.astep(action)

    async def drop(self, key: str) -> None:
        """Closes and forgets the env of ``key``."""
        env = self.envs.pop(key, None)
        if env is not None:
            env.close()

    async def stats(self) -> dict[str, Any]:
        """The actor's process, node, envs held and steps run."""
        import os

        ray = require_ray()
        return {"pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id(), "envs": len(self.envs), "steps": self.steps}

    async def shutdown(self) -> None:
        """Closes every env and the shared parts."""
        for env in self.envs.values():
            env.close()
        self.envs.clear()
        await self.parts.aclose()


class EpisodeActors:
    """A group of episode actors for one setup, and which envs each one holds.

    Args:
        setup: The env every actor runs.
        count: Actors to start (spread over the cluster's nodes).
        limiter: The cluster's call limiter (``None``: limits per actor).
        actor_options: Ray options for each actor (default: a quarter CPU, spread, restarted on
            failure).
    """

    def __init__(self, setup: EnvSetup, count: int, limiter: RayCallLimiter | None = None, actor_options: dict[str, Any] | None = None) -> None:
        if count < 1:
            raise ValueError(f"need at least one episode actor, got {count}")
        ray = require_ray()
        options = {"num_cpus": 0.25, "scheduling_strategy": "SPREAD", "max_restarts": -1, "max_concurrency": 10_000, **(actor_options or {})}
        actor = ray.remote(EpisodeActor).options(**options)
        self.handles = [actor.remote(setup, limiter) for _ in range(count)]
        self.assigned = [0] * count
        self.lost = 0

    def assign(self, avoid: int | None = None) -> int:
        """Picks the actor holding the fewest envs (another than ``avoid`` when there is one)."""
        choices = [i for i in range(len(self.handles)) if i != avoid] or [avoid or 0]
        index = min(choices, key=lambda i: self.assigned[i])
        self.assigned[index] += 1
        return index

    def release(self, index: int) -> None:
        """Forgets one env of actor ``index``."""
        self.assigned[index] = max(0, self.assigned[index] - 1)

    def stats(self) -> list[dict[str, Any]]:
        """Each alive actor's :meth:`EpisodeActor.stats`."""
        ray = require_ray()
        found = []
        for handle in self.handles:
            try:
                found.append(ray.get(handle.stats.remote(), timeout=10))
            except Exception:  # noqa: BLE001 - a dead actor has no stats
                continue
        return found

    def shutdown(self) -> None:
        """Closes the actors' envs and ends the actors."""
        ray = require_ray()
        for handle in self.handles:
            try:
                ray.get(handle.shutdown.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - an actor already gone is fine
                pass
            ray.kill(handle, no_restart=True)


class RemoteEnv:
    """A driver-side env whose episodes run in an :class:`EpisodeActor`.

    It has the env's ``areset``/``astep`` (and sync ``reset``/``step``), its spaces, and
    ``close``. When its actor is lost it binds to another and raises
    :class:`~conductor_env.env.EnvLost` (the episode must be re-run from its reset).

    Args:
        actors: The group to take an actor from.
        spaces: The observation and action spaces (asked once per group).
    """

    def __init__(self, actors: EpisodeActors, spaces: tuple[Any, Any]) -> None:
        self.actors = actors
        self.observation_space, self.action_space = spaces
        self.index = actors.assign()
        self.key = uuid.uuid4().hex

    @property
    def unwrapped(self) -> RemoteEnv:
        """This env (there is no wrapper on the driver side)."""
        return self

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Resets the remote env (see :meth:`ConductorEnv.reset`)."""
        return await self._call("reset", seed, options)

    async def astep(self, action: str) -> tuple[dict, float, bool, bool, dict]:
        """Steps the remote env (see :meth:`ConductorEnv.astep`)."""
        return await self._call("step", action)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Sync :meth:`areset`."""
        return run_sync(self.areset(seed=seed, options=options))

    def step(self, action: str) -> tuple[dict, float, bool, bool, dict]:
        """Sync :meth:`astep`."""
        return run_sync(self.astep(action))

    async def _call(self, method: str, *args: Any) -> Any:
        handle = self.actors.handles[self.index]
        try:
            return await getattr(handle, method).remote(self.key, *args)
        except Exception as error:
            if not (is_lost(error) or isinstance(error, MissingEpisode)):
                raise
            self._move()
            raise EnvLost(f"episode actor {self.index} lost its episode ({type(error).__name__})") from error

    def _move(self) -> None:
        self.actors.lost += 1
        self.actors.release(self.index)
        self.index = self.actors.assign(avoid=self.index)

    def close(self) -> None:
        """Drops the remote env (the actor stays for the group's other envs)."""
        if self.key:
            try:
                self.actors.handles[self.index].drop.remote(self.key)
            except Exception:  # noqa: BLE001 - the actor may be gone already
                pass
            self.actors.release(self.index)
            self.key = ""


def group_spaces(actors: EpisodeActors, *, every: bool = False) -> tuple[Any, Any]:
    """Asks the group's actors for the env's spaces.

    Args:
        actors: The group.
        every: Wait for every actor to answer (all have built their env), not just the first.

    Raises:
        RuntimeError: When no actor can build the env (the actor's own error is chained).
    """
    ray = require_ray()
    refs = [handle.spaces.remote() for handle in actors.handles]
    found: tuple[Any, Any] | None = None
    failure: BaseException | None = None
    for ref in refs:
        try:
            found = found or ray.get(ref, timeout=300)
            if not every:
                break
        except Exception as error:  # noqa: BLE001 - another actor may answer; the last error is raised
            failure = error
    if found is None:
        raise RuntimeError(f"no episode actor could build the env: {failure}") from failure
    return found
