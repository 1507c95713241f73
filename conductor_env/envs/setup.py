"""One way to build an env: :class:`EnvSetup` describes it, :class:`EnvParts` is what it shares.

An :class:`EnvSetup` is a frozen, picklable description of a Conductor env: the suite, the pool,
the split, the sandbox, the suite's options and the env's :class:`~conductor_env.options.EnvOptions`.
``gym.make`` (through :func:`make_env`), the vector env, evaluation, GRPO and the SB3 wrapper all
build through it, and a remote worker receives one. Many envs share one suite, pool and sandbox::

    setup = EnvSetup.from_id("Conductor-RG-v0", pool="simulated", max_rounds=2)
    parts = setup.build()                 # the suite (with its sandbox) and the pool, once
    envs = [setup.make(parts) for _ in range(8)]
    ...
    parts.close()                         # the owner closes what the envs share
"""

from __future__ import annotations

import dataclasses
import difflib
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import gymnasium as gym

from conductor_env.env import ConductorEnv
from conductor_env.envs.training import ALLOW_TEST_SPLIT, TRAIN_SPLIT, check_training
from conductor_env.event_loop import run_sync
from conductor_env.options import EnvOptionError, EnvOptions
from conductor_env.suite import Problem, TaskSuite
from conductor_env.tasks.registry import SuiteError, env_id_for, get_suite, suite_runs_code
from conductor_env.workers.pool import WorkerPool, load_pool

#: The gym entry point of every Conductor id (:func:`conductor_env.tasks.register_suite` registers it).
ENTRY_POINT = "conductor_env.envs.setup:make_env"
VECTOR_ENTRY_POINT = "conductor_env.envs.vector:ConductorVectorEnv"


class SetupError(ValueError):
    """An env cannot be built; the message names the problem and the fix in one line."""


def conductor_env_ids() -> list[str]:
    """Returns the registered gym ids whose environment is a Conductor env."""
    return sorted(env_id for env_id, spec in gym.registry.items() if spec.entry_point == ENTRY_POINT)


def _middle(env_id: str) -> str:
    name = env_id.lower()
    name = name[len("conductor-") :] if name.startswith("conductor-") else name
    return name.rsplit("-v", 1)[0] if "-v" in name else name


def suite_of_id(env_id: str) -> str:
    """Returns the suite name behind a Conductor gym id.

    Raises:
        SetupError: For an unknown id, naming close matches and the known ids.
    """
    known = conductor_env_ids()
    if env_id not in known:
        by_name = {_middle(k): k for k in known}  # compare "rg" with "rgg", not the shared affixes
        close = difflib.get_close_matches(_middle(env_id), list(by_name), n=2, cutoff=0.6)
        hint = f"did you mean {' or '.join(by_name[c] for c in close)}? " if close else ""
        raise SetupError(f"unknown env id {env_id!r}; {hint}known ids: {', '.join(known)}")
    return str(gym.spec(env_id).kwargs["suite"])


@dataclass
class EnvParts:
    """What many envs of one setup share: the suite (with its sandbox) and the worker pool.

    Attributes:
        suite: The built suite.
        pool: The pool (its worker clients are built on first use).
        warnings: Notes for the user (e.g. a sandbox given to a suite that runs no code).
    """

    suite: TaskSuite
    pool: WorkerPool
    warnings: list[str] = field(default_factory=list)

    async def aclose(self) -> None:
        """Closes the pool's clients and the suite's resources (on the pool's event loop)."""
        await self.pool.aclose()
        self.suite.close()

    def close(self) -> None:
        """Closes the pool's clients and the suite's resources."""
        run_sync(self.pool.aclose())
        self.suite.close()


@dataclass(frozen=True)
class EnvSetup:
    """A frozen, picklable description of a Conductor env.

    Attributes:
        suite: A registered suite name (``"rg"``, ``"lcb"``, ...) or a built suite.
        pool: A pool preset name, a ``.toml`` path, or a :class:`WorkerPool`.
        split: The problem split (``None``: the suite's default).
        sandbox: Where code suites run programs (``"docker"``, ``"local"``, ``"auto"``, a sandbox
            instance, or ``None`` for the suite's default); ignored, with a warning, by suites
            that run no code.
        suite_options: Keyword options for the suite's factory (``data_files=...``, ...).
        options: The env's options.
        render_mode: ``None`` or ``"ansi"``.
        training: The envs are for training: the split defaults to ``"train"``, and building the
            suite runs :func:`conductor_env.envs.training.check_training` (a test split, and
            problems needing the suite's opt-ins, are refused; what was opted in warns once).
            Every training path sets it (the trainer's ``EnvFactory``, the framework adapters,
            the OpenEnv server); ``gym.make`` and evaluation leave it off.
        allow_test_split: With ``training``, allow a test split named in ``split`` (warns once).

    Names (strings) are the cheapest to send to another process; built suites and pools pickle
    too, without their process-local clients and sandboxes.
    """

    suite: str | TaskSuite = "rg"
    pool: str | WorkerPool = "simulated"
    split: str | None = None
    sandbox: Any = None
    suite_options: Mapping[str, Any] = field(default_factory=dict)
    options: EnvOptions = field(default_factory=EnvOptions)
    render_mode: str | None = None
    training: bool = False
    allow_test_split: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "suite_options", dict(self.suite_options or {}))
        if isinstance(self.options, Mapping):
            object.__setattr__(self, "options", EnvOptions.from_mapping(self.options))
        for name in ("training", "allow_test_split"):
            if not isinstance(getattr(self, name), bool):  # a string such as "no" must not switch it on
                raise SetupError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.training and self.split is None:
            object.__setattr__(self, "split", TRAIN_SPLIT)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> EnvSetup:
        """Builds a setup from ``gym.make``-style keyword arguments.

        The setup's own fields (``suite``, ``pool``, ``split``, ``sandbox``, ``suite_options``,
        ``options``, ``render_mode``) are taken as they are; every other keyword is an env option
        (``max_rounds=2``, ``reward="cost_aware"``, ...).

        Raises:
            EnvOptionError: For an unknown option (naming the closest one) or a bad value.
        """
        own = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in kwargs.items() if k in own}
        rest = {k: v for k, v in kwargs.items() if k not in own}
        fields["options"] = EnvOptions.from_mapping(fields.get("options"), **rest)
        return cls(**fields)

    @classmethod
    def from_id(cls, env_id: str, **kwargs: Any) -> EnvSetup:
        """Builds a setup for a gym id (``"Conductor-LCB-v0"``) and ``gym.make``-style kwargs.

        Raises:
            SetupError: For an id that is not a registered Conductor env.
            EnvOptionError: For an unknown or bad env option.
        """
        spec_kwargs = dict(gym.spec(env_id).kwargs) if env_id in gym.registry else {}
        suite = suite_of_id(env_id)
        return cls.from_kwargs(**{**spec_kwargs, "suite": suite, **kwargs})

    @property
    def suite_name(self) -> str:
        """The suite's registry name (or a built suite's own name)."""
        return self.suite if isinstance(self.suite, str) else self.suite.name

    @property
    def env_id(self) -> str:
        """The gym id registered for this setup's suite (``Conductor-<Name>-v0``)."""
        name = self.suite_name.lower()
        for env_id in conductor_env_ids():
            if str(gym.spec(env_id).kwargs.get("suite", "")).lower() == name:
                return env_id
        return env_id_for(self.suite_name)

    def replace(self, **changes: Any) -> EnvSetup:
        """Returns a copy with some fields (or env options, by name) changed."""
        own = {f.name for f in dataclasses.fields(self)}
        options = EnvOptions.from_mapping(changes.pop("options", self.options), **{k: changes.pop(k) for k in list(changes) if k not in own})
        return dataclasses.replace(self, options=options, **changes)

    def build_suite(self) -> tuple[TaskSuite, list[str]]:
        """Builds the suite, handing it the sandbox; checks that the split has problems.

        Returns:
            The suite and warnings to show.

        Raises:
            SuiteError: When the suite cannot be built (an unknown name, missing data, a bad option).
            ValueError: When the split is empty.
        """
        notes: list[str] = []
        suite = self._suite_with_sandbox(dict(self.suite_options), notes)
        try:
            problems = self._problems(suite)
            if problems and self.training:
                check_training(suite, str(self.split), problems, allow_test_split=self.allow_test_split, what=f"training on {self.env_id} split {self.split!r}")
        except BaseException:
            suite.close()
            raise
        if not problems:
            suite.close()
            raise ValueError(f"suite {self.suite_name!r} has no problems in split {self.split!r}; pick another split")
        return suite, notes

    def _problems(self, suite: TaskSuite) -> Sequence[Problem]:
        """The split's problems; for training, a suite without the split says how to name another."""
        try:
            return suite.problems(self.split)
        except SuiteError as error:
            if not self.training:
                raise
            raise SuiteError(
                f"{error}. Training reads split {self.split!r}: name a split the suite has (split='validation', ...), or split='test' with {ALLOW_TEST_SPLIT}=True to train on its test rows anyway"
            ) from error

    def _suite_with_sandbox(self, options: dict[str, Any], notes: list[str]) -> TaskSuite:
        """Builds the suite, passing the sandbox only to a suite that declares it runs code."""
        if self.sandbox is None or not isinstance(self.suite, str):
            return get_suite(self.suite, **options)
        if suite_runs_code(self.suite):
            return get_suite(self.suite, **options, sandbox=self.sandbox)
        notes.append(f"suite {self.suite_name!r} runs no code, so sandbox={self.sandbox!r} is ignored")
        return get_suite(self.suite, **options)

    def build_pool(self) -> WorkerPool:
        """Loads the pool.

        Raises:
            PoolError: For an unknown preset or a broken pool file.
        """
        return load_pool(self.pool)

    def build(self) -> EnvParts:
        """Builds the parts envs of this setup share (the caller closes them).

        Raises:
            SuiteError, PoolError, ValueError: When the suite or the pool cannot be built.
        """
        suite, notes = self.build_suite()
        try:
            pool = self.build_pool()
        except BaseException:
            suite.close()
            raise
        return EnvParts(suite, pool, notes)

    def make(self, parts: EnvParts | None = None) -> ConductorEnv:
        """Builds an env.

        Args:
            parts: Shared parts from :meth:`build` (the env then leaves closing them to their
                owner); ``None`` builds the env its own, which its ``close()`` closes.

        Returns:
            The env.
        """
        owned = parts is None
        if parts is None:
            parts = self.build()
            for note in parts.warnings:
                warnings.warn(note, stacklevel=3)
        try:
            return ConductorEnv(parts.suite, parts.pool, split=self.split, options=self.options, render_mode=self.render_mode, owns_parts=owned)
        except BaseException:
            if owned:
                parts.close()
            raise


def make_env(**kwargs: Any) -> ConductorEnv:
    """The gym entry point of every ``Conductor-*-v0`` id: ``gym.make(id, **kwargs)`` calls it.

    Args:
        **kwargs: The id's registered ``suite`` and the user's keywords: ``pool``, ``split``,
            ``sandbox``, ``suite_options``, ``render_mode``, and any env option by name (see
            :class:`~conductor_env.options.EnvOptions`).

    Returns:
        A new env that owns its suite and pool.

    Raises:
        EnvOptionError: For an unknown or bad env option.
        SuiteError, PoolError, ValueError: When the suite or pool cannot be built.
    """
    return EnvSetup.from_kwargs(**kwargs).make()


__all__ = [
    "ENTRY_POINT",
    "VECTOR_ENTRY_POINT",
    "EnvOptionError",
    "EnvParts",
    "EnvSetup",
    "SetupError",
    "conductor_env_ids",
    "make_env",
    "suite_of_id",
]
