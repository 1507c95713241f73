"""Checks and builds what an evaluation needs, failing early with one clear line per problem.

Everything here runs before the first episode: an unknown env id, a policy spec that does not
parse, a broken pool file or a missing API key is reported up front instead of as a pile of
failed episodes.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from conductor_env.agents.base import Policy
from conductor_env.agents.specs import make_policy
from conductor_env.envs.preflight import missing_api_keys
from conductor_env.envs.setup import EnvParts, EnvSetup, SetupError, suite_of_id
from conductor_env.options import EnvOptionError, EnvOptions, parse_key_values
from conductor_env.tasks.registry import SuiteError
from conductor_env.workers.pool import PoolError, WorkerPool, load_pool

#: Env settings with their own command-line flags, refused as ``--env-option``.
RESERVED_OPTIONS = ("suite", "pool", "split", "sandbox", "suite_options")


class EvalConfigError(ValueError):
    """An evaluation cannot start; the message names the problem and the fix in one line."""


def check_env_id(env_id: str) -> str:
    """Returns the suite name behind a Conductor gym id.

    Raises:
        EvalConfigError: For an unknown id, naming close matches and the known ids.
    """
    try:
        return suite_of_id(env_id)
    except SetupError as error:
        raise EvalConfigError(str(error)) from error


def env_options_of(values: Mapping[str, Any]) -> EnvOptions:
    """Reads ``--env-option`` values into :class:`EnvOptions`.

    Raises:
        EvalConfigError: For a reserved, unknown (naming the closest) or bad option.
    """
    for key in values:
        if key in RESERVED_OPTIONS:
            raise EvalConfigError(f"--env-option {key}=... is not allowed; use --{key.replace('_', '-')} instead")
    try:
        return EnvOptions.from_mapping(values)
    except EnvOptionError as error:
        if not error.unknown:
            raise EvalConfigError(f"--env-option: {error}") from error
        hint = f"did you mean {error.closest}? " if error.closest else ""
        raise EvalConfigError(f"unknown --env-option {error.unknown!r}; {hint}env options: {', '.join(EnvOptions.names())}") from error


def setup_for(
    env_id: str,
    *,
    pool: str | WorkerPool = "simulated",
    split: str | None = None,
    sandbox: str | None = None,
    suite_options: Mapping[str, Any] | None = None,
    env_options: Mapping[str, Any] | None = None,
) -> EnvSetup:
    """Returns the :class:`EnvSetup` of a gym id and command-line settings, checked.

    Raises:
        EvalConfigError: For an unknown id or a reserved, unknown or bad env option.
    """
    check_env_id(env_id)
    return EnvSetup.from_id(env_id, pool=pool, split=split, sandbox=sandbox, suite_options=dict(suite_options or {}), options=env_options_of(env_options or {}))


def build_parts(setup: EnvSetup) -> EnvParts:
    """Builds the suite and pool an evaluation's envs share, checking the pool's API keys.

    Raises:
        EvalConfigError: When the suite or pool cannot be built, the split is empty, or an API
            key is missing.
    """
    try:
        suite, notes = setup.build_suite()
    except (SuiteError, KeyError, ValueError, FileNotFoundError) as error:
        raise EvalConfigError(f"{setup.env_id}: {_one_line(error)}") from error
    try:
        pool = build_pool(setup.pool)
    except BaseException:
        suite.close()
        raise
    return EnvParts(suite, pool, notes)


def build_pool(source: str | WorkerPool) -> WorkerPool:
    """Loads a pool and checks that every API key it needs is set.

    Raises:
        EvalConfigError: With the pool error, or the missing variable and how to set it.
    """
    try:
        pool = load_pool(source)
    except PoolError as error:
        raise EvalConfigError(_one_line(error)) from error
    check_api_keys(pool)
    return pool


def check_api_keys(pool: WorkerPool) -> None:
    """Raises :class:`EvalConfigError` naming the first missing API key variable of ``pool``."""
    missing = missing_api_keys(pool)
    if missing:
        name, variable = missing[0]
        others = f" (and {len(missing) - 1} more workers)" if len(missing) > 1 else ""
        raise EvalConfigError(f"pool {pool.name!r}: worker {name!r}{others} needs the API key in ${variable}, which is not set; export {variable}=... or remove the worker from the pool")


def build_policies(specs: Sequence[str], **options: Any) -> list[Policy]:
    """Builds one policy per spec with :func:`conductor_env.agents.make_policy`.

    Args:
        specs: Policy specs (``single:0``, ``template:plan-solve-verify``, ...).
        **options: Passed to every ``make_policy`` call.

    Returns:
        The policies, with distinct names.

    Raises:
        EvalConfigError: For a spec that does not parse or cannot be built, or duplicate names.
    """
    if not specs:
        raise EvalConfigError("no policy given; pass --policy SPEC (e.g. --policy single:0)")
    policies = []
    for spec in specs:
        try:
            policy = make_policy(spec, **options)
        except (ValueError, LookupError, TypeError, ImportError, OSError) as error:
            # The agents' messages append the whole spec grammar after the first line.
            first = _one_line(Exception(str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__))
            message = first if spec in first else f"policy {spec!r}: {first}"
            raise EvalConfigError(message) from error
        policies.append(policy)
    names = [p.name for p in policies]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EvalConfigError(f"policies {duplicates} were given twice; pass each --policy once")
    return policies


def parse_option_values(pairs: Iterable[str], flag: str) -> dict[str, Any]:
    """Parses ``KEY=VALUE`` command-line options (:func:`conductor_env.options.parse_key_values`).

    Raises:
        EvalConfigError: For an item without ``=``.
    """
    try:
        return parse_key_values(pairs, flag)
    except ValueError as error:
        raise EvalConfigError(str(error)) from error


def _one_line(error: BaseException) -> str:
    text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    return " ".join(text.split()) or type(error).__name__
