"""Checks and builds what an evaluation needs, failing early with one clear line per problem.

Everything here runs before the first episode: an unknown env id, a policy spec that does not
parse, a broken pool file or a missing API key is reported up front instead of as a pile of
failed episodes.
"""

from __future__ import annotations

import difflib
import inspect
import json
import os
from typing import Any, Iterable, Mapping, Sequence

import gymnasium as gym

from conductor_env.agents.base import Policy
from conductor_env.suite import TaskSuite
from conductor_env.tasks.registry import SuiteError, get_suite
from conductor_env.workers.pool import PoolError, WorkerPool, load_pool

CONDUCTOR_ENTRY_POINT = "conductor_env.env:ConductorEnv"

#: Environment variables the SDKs read when a pool entry names none (only for the vendors' own
#: endpoints: a ``base_url`` pointing at a local server needs no key).
DEFAULT_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class EvalConfigError(ValueError):
    """An evaluation cannot start; the message names the problem and the fix in one line."""


def conductor_env_ids() -> list[str]:
    """Returns the registered gym ids whose environment is a :class:`ConductorEnv`."""
    import conductor_env  # noqa: F401  (registers the built-in ids)

    return sorted(env_id for env_id, spec in gym.registry.items() if spec.entry_point == CONDUCTOR_ENTRY_POINT)


def _middle(env_id: str) -> str:
    name = env_id.lower()
    name = name[len("conductor-") :] if name.startswith("conductor-") else name
    return name.rsplit("-v", 1)[0] if "-v" in name else name


def check_env_id(env_id: str) -> str:
    """Returns the suite name behind a Conductor gym id.

    Args:
        env_id: A gym id such as ``"Conductor-RG-v0"``.

    Returns:
        The registry name of its suite (``"rg"``).

    Raises:
        EvalConfigError: For an unknown id, naming close matches and the known ids.
    """
    known = conductor_env_ids()
    if env_id not in known:
        by_name = {_middle(k): k for k in known}  # compare "rg" with "rgg", not the shared affixes
        close = difflib.get_close_matches(_middle(env_id), list(by_name), n=2, cutoff=0.6)
        hint = f"did you mean {' or '.join(by_name[c] for c in close)}? " if close else ""
        raise EvalConfigError(f"unknown env id {env_id!r}; {hint}known ids: {', '.join(known)}")
    return str(gym.spec(env_id).kwargs["suite"])


def build_suite(env_id: str, *, split: str | None, sandbox: str | None, options: Mapping[str, Any]) -> tuple[TaskSuite, list[str]]:
    """Builds the suite of an env id once (every environment of the run shares it).

    Args:
        env_id: A Conductor gym id.
        split: The problem split (``None``: the suite's default); checked here.
        sandbox: ``"docker"``, ``"local"``, ``"auto"`` or ``None`` (the suite's default).
        options: Extra suite options (``data_files=...``).

    Returns:
        The suite and warnings to show (e.g. a sandbox given to a suite that runs no code).

    Raises:
        EvalConfigError: When the suite cannot be built or the split is empty.
    """
    name = check_env_id(env_id)
    warnings = []
    suite_options = dict(options)
    try:
        if sandbox is not None:
            try:
                suite = get_suite(name, **suite_options, sandbox=sandbox)
            except SuiteError as error:
                if not isinstance(error.__cause__, TypeError):
                    raise
                warnings.append(f"{env_id} runs no code, so --sandbox {sandbox} is ignored")
                suite = get_suite(name, **suite_options)
        else:
            suite = get_suite(name, **suite_options)
        problems = suite.problems(split)
    except (SuiteError, KeyError, ValueError, FileNotFoundError) as error:
        raise EvalConfigError(f"{env_id}: {_one_line(error)}") from error
    if not problems:
        raise EvalConfigError(f"{env_id} has no problems in split {split!r}; pick another --split")
    return suite, warnings


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


def missing_api_keys(pool: WorkerPool, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Returns ``(worker name, variable)`` for each worker whose API key variable is unset.

    A worker needs a key when its spec names ``api_key_env``, or when it talks to OpenAI's or
    Anthropic's own endpoint (no ``base_url``) and the SDK would read the vendor's variable.
    """
    environ = os.environ if environ is None else environ
    missing = []
    for spec in pool.specs:
        variable = spec.api_key_env or (DEFAULT_KEY_VARIABLES.get(spec.backend) if not spec.base_url else None)
        if variable and not environ.get(variable):
            missing.append((spec.name, variable))
    return missing


def check_api_keys(pool: WorkerPool) -> None:
    """Raises :class:`EvalConfigError` naming the first missing API key variable of ``pool``."""
    missing = missing_api_keys(pool)
    if missing:
        name, variable = missing[0]
        others = f" (and {len(missing) - 1} more workers)" if len(missing) > 1 else ""
        raise EvalConfigError(
            f"pool {pool.name!r}: worker {name!r}{others} needs the API key in ${variable}, which is not set; "
            f"export {variable}=... or remove the worker from the pool"
        )


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
    try:
        from conductor_env.agents import make_policy
    except ImportError as error:  # pragma: no cover - the agents package ships with the env
        raise EvalConfigError(f"the reference policies are not installed ({error})") from error
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


def check_env_options(options: Mapping[str, Any]) -> None:
    """Raises :class:`EvalConfigError` for an option :class:`ConductorEnv` does not take.

    ``suite``, ``pool``, ``split`` and ``sandbox`` have their own arguments and are refused here.
    """
    from conductor_env.env import ConductorEnv

    parameters = inspect.signature(ConductorEnv.__init__).parameters
    reserved = {"self", "suite", "pool", "split", "sandbox", "suite_options"}
    accepted = sorted(p for p in parameters if p not in reserved)
    for key in options:
        if key in reserved:
            raise EvalConfigError(f"--env-option {key}=... is not allowed; use --{key.replace('_', '-')} instead")
        if key not in parameters:
            close = difflib.get_close_matches(key, accepted, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise EvalConfigError(f"unknown --env-option {key!r}; {hint}env options: {', '.join(accepted)}")


def parse_option_values(pairs: Iterable[str], flag: str) -> dict[str, Any]:
    """Parses ``KEY=VALUE`` command-line options; values are JSON when they parse as JSON.

    Args:
        pairs: The raw ``KEY=VALUE`` strings.
        flag: The option's name, for the error message.

    Returns:
        ``{key: value}`` (``max_rounds=2`` gives an int, ``data_files=a.jsonl`` a string).

    Raises:
        EvalConfigError: For an item without ``=``.
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise EvalConfigError(f"{flag} expects KEY=VALUE, got {pair!r}")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        options[key.strip()] = value
    return options


def _one_line(error: BaseException) -> str:
    text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    return " ".join(text.split()) or type(error).__name__
