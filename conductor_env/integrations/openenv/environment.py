"""The server side: an OpenEnv ``Environment`` per session, each wrapping a :class:`ConductorEnv`.

All sessions of a server share one suite and one worker pool (a :class:`ConductorHub` builds them
once), so a session costs one light :class:`ConductorEnv`. Steps run on the package's background
event loop (:mod:`conductor_env.event_loop`), where the pool's clients live, and never block the
server's own loop: many sessions step concurrently.

Every episode a session starts is a row (``problem_id``, ``episode_seed``): ``reset`` without a
problem draws one from the seed (itself drawn when absent) and the observation names the row. An
action that carries a row is played in that episode even by a session that has never seen it,
which is how OpenEnv's stateless HTTP ``/step`` (a new environment per request) plays one step.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic import ValidationError

from conductor_env.env import ConductorEnv
from conductor_env.envs import EnvParts, EnvSetup
from conductor_env.event_loop import background_loop, run_sync
from conductor_env.integrations.openenv.models import ConductorAction, ConductorObservation, ConductorRow, ConductorState, observation_model

__all__ = ["ConductorEnvironment", "ConductorHub", "ConductorRequestError"]


class ConductorRequestError(ValueError):
    """A request the env cannot serve: the message says why and what to do instead.

    Attributes:
        status_code: The HTTP status the server answers with (400, 404 or 409).
        code: A short machine-readable reason.
    """

    def __init__(self, message: str, *, status_code: int = 400, code: str = "bad_request") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code


@dataclass
class HubCounters:
    """What a server has done: sessions, steps, and the most steps in flight at once."""

    environments: int = 0
    steps_started: int = 0
    steps_finished: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def snapshot(self) -> dict[str, int]:
        """Returns the counters as a dict."""
        with self.lock:
            return {name: getattr(self, name) for name in ("environments", "steps_started", "steps_finished", "in_flight", "peak_in_flight")}


class ConductorHub:
    """What every session of one server shares: the setup, its built suite and pool, the counters.

    Args:
        setup: The env every session plays. A server serves training episodes, so it is built
            with ``training=True``: the ``train`` split unless the setup names another, a test
            split only with ``allow_test_split=True``, and the suite's opt-ins enforced
            (:func:`conductor_env.envs.training.check_training`).
    """

    def __init__(self, setup: EnvSetup) -> None:
        self.setup = setup if setup.training else setup.replace(training=True)
        self.counters = HubCounters()
        self._parts: EnvParts | None = None
        self._lock = threading.Lock()

    @property
    def parts(self) -> EnvParts:
        """The suite and pool, built on first use (once, whatever the number of threads asking)."""
        with self._lock:
            if self._parts is None:
                self._parts = self.setup.build()
            return self._parts

    def make_env(self) -> ConductorEnv:
        """Returns a new env on the shared parts (closing it leaves them open)."""
        with self.counters.lock:
            self.counters.environments += 1
        return self.setup.make(self.parts)

    def step_started(self) -> None:
        with self.counters.lock:
            self.counters.steps_started += 1
            self.counters.in_flight += 1
            self.counters.peak_in_flight = max(self.counters.peak_in_flight, self.counters.in_flight)

    def step_finished(self) -> None:
        with self.counters.lock:
            self.counters.steps_finished += 1
            self.counters.in_flight -= 1

    def close(self) -> None:
        """Closes the shared suite and pool (when they were built)."""
        with self._lock:
            parts, self._parts = self._parts, None
        if parts is not None:
            parts.close()


class ConductorEnvironment(Environment[ConductorAction, ConductorObservation, ConductorState]):
    """One session's Conductor env, behind OpenEnv's ``reset``/``step``/``state``.

    Args:
        hub: The server's shared parts.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, hub: ConductorHub) -> None:
        super().__init__()
        self.hub = hub
        self.env = hub.make_env()
        self._row: ConductorRow | None = None
        self._state = ConductorState()

    # ----------------------------------------------------------------------------- reset

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ConductorObservation:
        """Starts an episode.

        Args:
            seed: The episode seed (drawn when absent, so the episode is always a row).
            episode_id: A name for the episode (kept in the state; default: the row).
            **kwargs: ``row`` (``{"problem_id", "episode_seed"}``), ``problem_id`` or
                ``problem_index`` (else the seed draws the problem), ``worker_draw``.

        Returns:
            The first observation (``messages`` holds the system and user prompt).

        Raises:
            ConductorRequestError: For an unknown option or problem, or a malformed row.
        """
        unknown = sorted(set(kwargs) - {"row", "problem_id", "problem_index", "worker_draw"})
        if unknown:
            raise ConductorRequestError(f"{len(unknown)} unknown reset option(s): use only row, problem_id, problem_index or worker_draw")
        row = self._row_of(seed, kwargs)
        options: dict[str, Any] = {"row": row.model_dump()}
        if "worker_draw" in kwargs:
            options["worker_draw"] = kwargs["worker_draw"]
        try:
            observation, info = self.env.reset(options=options)
        except KeyError:
            raise ConductorRequestError("unknown problem_id: no problem of this server's split has it", status_code=404, code="unknown_problem") from None
        except (IndexError, ValueError, TypeError) as error:
            raise ConductorRequestError(str(error)[:200]) from None
        self._row = row
        self._state = ConductorState(
            episode_id=episode_id or f"{row.problem_id}@{row.episode_seed}", problem_id=row.problem_id, episode_seed=row.episode_seed, domain=info["domain"], split=str(self.hub.setup.split)
        )
        return observation_model(observation, row, info)

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ConductorObservation:
        """Async :meth:`reset` (a reset does no I/O)."""
        return self.reset(seed=seed, episode_id=episode_id, **kwargs)

    def _row_of(self, seed: int | None, kwargs: dict[str, Any]) -> ConductorRow:
        """The row a reset starts: the given one, or the problem (given or drawn) with the seed."""
        try:
            if kwargs.get("row") is not None:
                if "problem_id" in kwargs or "problem_index" in kwargs:
                    raise ConductorRequestError("the reset option 'row' picks the problem: pass it without problem_id or problem_index")
                row = ConductorRow.model_validate(kwargs["row"])
                if seed is not None and seed != row.episode_seed:
                    raise ConductorRequestError(f"seed {seed} disagrees with the row's episode_seed {row.episode_seed}; pass one of them")
                return row
            episode_seed = secrets.randbelow(2**31) if seed is None else seed
            problems = self.env.problems
            if kwargs.get("problem_id") is not None:
                problem_id = str(kwargs["problem_id"])
            elif kwargs.get("problem_index") is not None:
                index = kwargs["problem_index"]
                if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(problems):
                    raise ConductorRequestError(f"problem_index must be an int from 0 to {len(problems) - 1}")
                problem_id = problems[index].id
            else:
                problem_id = problems[random.Random(episode_seed).randrange(len(problems))].id
            return ConductorRow(problem_id=problem_id, episode_seed=episode_seed)
        except ValidationError as error:
            raise ConductorRequestError(f"malformed row: {error.errors(include_url=False, include_input=False)}"[:500]) from None

    # ------------------------------------------------------------------------------ step

    def step(self, action: ConductorAction, timeout_s: float | None = None, **kwargs: Any) -> ConductorObservation:
        """Plays one action (see :meth:`step_async`)."""
        return run_sync(self._play(action))

    async def step_async(self, action: ConductorAction, timeout_s: float | None = None, **kwargs: Any) -> ConductorObservation:
        """Plays one action on the package's event loop, without blocking the caller's.

        Args:
            action: The workflow; with ``row``, the episode it belongs to (started when this
                session does not hold it: a one-shot step).
            timeout_s: Accepted for OpenEnv's signature; the pool's retry policy bounds a step.

        Returns:
            The next observation, with the step's reward, ``done`` and ``info`` summary.

        Raises:
            ConductorRequestError: Before any reset without a row, after the episode ended, or
                for a row that is not this session's running episode.
        """
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._play(action), background_loop()))

    async def _play(self, action: ConductorAction) -> ConductorObservation:
        self._enter_episode(action.row)
        row = self._row
        assert row is not None
        self.hub.step_started()
        try:
            observation, reward, terminated, truncated, info = await self.env.astep(action.env_action())
        finally:
            self.hub.step_finished()
        done = bool(terminated or truncated)
        self._state.step_count += 1
        self._state.round = int(info["round"]) + (1 if info["frame_depth"] == 0 else 0)
        self._state.done = done
        self._state.last_reward = float(reward)
        return observation_model(observation, row, info, reward=float(reward), done=done, truncated=bool(truncated))

    def _enter_episode(self, row: ConductorRow | None) -> None:
        """Makes sure the session is in the action's episode (starting it for a one-shot step)."""
        running = self._row is not None and not self._state.done
        if row is not None and (not running or row != self._row):
            if running:
                raise ConductorRequestError(
                    f"the action's row is not this session's running episode ({self._state.problem_id!r}, seed {self._state.episode_seed}); finish it or reset",
                    status_code=409,
                    code="wrong_episode",
                )
            self.reset(row=row.model_dump())
            return
        if self._row is None:
            raise ConductorRequestError(
                "step before reset: reset first, or (stateless HTTP /step) put the episode's row (problem_id, episode_seed from the reset's observation) in the action",
                status_code=409,
                code="no_episode",
            )
        if self._state.done:
            raise ConductorRequestError("the episode is over: reset for a new one", status_code=409, code="episode_over")

    # ----------------------------------------------------------------------------- misc

    @property
    def state(self) -> ConductorState:
        """The session's episode (empty before the first reset)."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """Names the env id and pool the server plays."""
        setup = self.hub.setup
        pool = setup.pool if isinstance(setup.pool, str) else setup.pool.name
        return EnvironmentMetadata(
            name="conductor-env",
            description=f"{setup.env_id} with pool {pool}: the Conductor writes a workflow for a pool of worker LLMs; a verifier scores the answer.",
            version=_package_version(),
        )

    def close(self) -> None:
        """Closes this session's env (the shared suite and pool stay open)."""
        self.env.close()


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("conductor-env")
    except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
        return "0"
