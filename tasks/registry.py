"""The suite registry: names -> factories, entry-point discovery, and gym id registration."""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any, Callable, Union

import gymnasium as gym

from conductor_env.suite import TaskSuite

SuiteFactory = Callable[..., TaskSuite]
#: A factory, or ``"module:attr"`` naming one (imported on first use so registration is cheap).
FactoryRef = Union[SuiteFactory, str]

ENTRY_POINT_GROUP = "conductor_env.tasks"

_FACTORIES: dict[str, FactoryRef] = {}
_ENV_IDS: dict[str, str] = {}


class SuiteError(ValueError):
    """A suite cannot be built (unknown name, missing data, bad option); the message says why."""


def env_id_for(name: str, env_name: str | None = None) -> str:
    """Returns the gym id of a suite, ``Conductor-<EnvName>-v0``."""
    return f"Conductor-{env_name or name[:1].upper() + name[1:]}-v0"


def register_suite(name: str, factory: FactoryRef, *, env_name: str | None = None, override: bool = False) -> str:
    """Registers a suite and its gym id.

    Args:
        name: Registry name (``get_suite(name)``), lower case by convention.
        factory: A callable returning a :class:`TaskSuite` from keyword options, or the string
            ``"module:attr"`` of one.
        env_name: The part of the gym id between ``Conductor-`` and ``-v0`` (default: ``name``
            with its first letter upper-cased).
        override: Replace an existing registration instead of raising.

    Returns:
        The gym id, e.g. ``"Conductor-LCB-v0"``.

    Raises:
        SuiteError: When the name is taken and ``override`` is false.
    """
    key = name.lower()
    if key in _FACTORIES and not override and _FACTORIES[key] is not factory:
        raise SuiteError(f"suite {name!r} is already registered; pass override=True to replace it")
    _FACTORIES[key] = factory
    env_id = env_id_for(name, env_name)
    _ENV_IDS[key] = env_id
    if env_id not in gym.registry or override:
        gym.register(
            id=env_id,
            entry_point="conductor_env.envs.setup:make_env",
            vector_entry_point="conductor_env.envs.vector:ConductorVectorEnv",
            kwargs={"suite": key},
        )
    return env_id


def discover_entry_points() -> list[str]:
    """Registers every suite advertised in the ``conductor_env.tasks`` entry-point group.

    An entry point ``name = "module:factory"`` becomes suite ``name``; the module is imported
    only when the suite is first built. Returns the names registered.
    """
    found = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name.lower() not in _FACTORIES:
            register_suite(entry.name, entry.value)
            found.append(entry.name)
    return found


def suite_names() -> list[str]:
    """Returns the registered suite names."""
    return sorted(_FACTORIES)


def get_suite(name: str | TaskSuite, **options: Any) -> TaskSuite:
    """Builds a suite by name.

    Args:
        name: A registered name (case-insensitive) or a suite instance (returned unchanged).
        **options: Passed to the suite's factory (``data_files=``, ``split=``, ``sandbox=``, ...).

    Returns:
        The suite.

    Raises:
        SuiteError: For an unknown name (listing the known ones) or a factory that fails on
            its options.
    """
    if isinstance(name, TaskSuite):
        return name
    factory = suite_factory(name)
    try:
        return factory(**options)
    except TypeError as error:
        raise SuiteError(f"suite {name!r} rejected its options {sorted(options)}: {error}") from error


def suite_factory(name: str) -> SuiteFactory:
    """Returns the registered factory of a suite, importing it when registered as ``"module:attr"``.

    Raises:
        SuiteError: For an unknown name (listing the known ones).
    """
    key = name.lower()
    if key not in _FACTORIES:
        discover_entry_points()
    if key not in _FACTORIES:
        raise SuiteError(f"unknown suite {name!r}; registered suites: {', '.join(suite_names())}")
    factory = _FACTORIES[key]
    if isinstance(factory, str):
        module_name, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module_name), attr)
    return factory


def suite_runs_code(name: str | TaskSuite) -> bool:
    """Whether a suite declares that it runs code (:attr:`TaskSuite.runs_code`), read without building it.

    Args:
        name: A registered name, or a suite instance.

    Returns:
        The ``runs_code`` attribute of the instance or of the registered factory (a suite class,
        or a function that carries it); ``False`` when the factory does not declare it.

    Raises:
        SuiteError: For an unknown name.
    """
    source = name if isinstance(name, TaskSuite) else suite_factory(name)
    return getattr(source, "runs_code", False) is True
