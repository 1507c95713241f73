"""The evaluation loop: many episodes of several policies concurrently on one event loop.

Each of ``concurrency`` slots owns one environment and plays episodes one after another; every
observation waiting for an action goes to its policy in a batch (so an LLM policy can generate
for many episodes at once); each finished episode is appended to the results file at once.
Problem ``i`` with sample ``s`` is the same episode (same problem, sub-pool and worker seeds)
for every policy, so policies are compared on paired episodes.

Where the environments live is an :class:`EnvHost`: in this process by default, or episode
actors on a Ray cluster (:class:`conductor_env.distributed.RayEnvHost`); either way only this
process writes the results file, and slots pull the next episode when they finish one.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import shutil
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from conductor_env.agents.base import Policy
from conductor_env.agents.episode import PolicyBatcher, play
from conductor_env.env import ConductorEnv
from conductor_env.envs.setup import EnvParts, EnvSetup
from conductor_env.evaluation.records import EpisodeSpec, plan_episodes, record_of
from conductor_env.evaluation.results import ResultsWriter, episode_key, read_manifest, read_results, write_manifest
from conductor_env.evaluation.setup import EvalConfigError, build_parts, setup_for
from conductor_env.event_loop import background_loop
from conductor_env.options import EnvOptions
from conductor_env.tasks.public_tests import public_only_problems

#: Settings that must match between a run and its resumption (others, like the policies or N,
#: may change: new policies and more problems are simply added).
MANIFEST_KEYS = ("env_id", "pool", "seed", "split", "suite_options", "env_options")


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate.

    Attributes:
        setup: The env (id, pool, split, sandbox, suite and env options).
        n: Problems per policy (the first ``n`` of the split, in the suite's order).
        concurrency: Episodes in flight at once.
        seed: Base seed; problem ``i``, sample ``s`` uses ``seed + i * samples + s``.
        samples: Episodes per problem and policy.
        retry_infra_errors: On resume, rerun episodes that ended with an infrastructure error.
    """

    setup: EnvSetup
    n: int = 20
    concurrency: int = 8
    seed: int = 0
    samples: int = 1
    retry_infra_errors: bool = False

    @classmethod
    def for_id(cls, env_id: str, *, n: int = 20, concurrency: int = 8, seed: int = 0, samples: int = 1, retry_infra_errors: bool = False, **setup: Any) -> EvalConfig:
        """Builds a config for a gym id; ``setup`` holds :class:`EnvSetup` fields (``pool``,
        ``split``, ``sandbox``, ``suite_options``) and ``env_options`` (a dict of env options).

        Raises:
            EvalConfigError: For an unknown id or env option.
        """
        return cls(setup_for(env_id, **setup), n=n, concurrency=concurrency, seed=seed, samples=samples, retry_infra_errors=retry_infra_errors)

    @property
    def env_id(self) -> str:
        """The env's gym id (for records)."""
        return self.setup.env_id


class EnvHost(Protocol):
    """Where an evaluation's environments run."""

    def make_envs(self, setup: EnvSetup, parts: EnvParts, count: int) -> list[Any]:
        """Returns ``count`` envs of ``setup`` (``areset``/``astep``/``close``, as :func:`play` needs).

        Args:
            setup: The env to build.
            parts: The suite and pool built in this process (local envs share them).
            count: How many envs (episodes in flight at once).
        """

    def close(self) -> None:
        """Releases what the envs hold (after the run)."""


class LocalEnvHost:
    """Envs in this process, sharing the run's suite and pool."""

    def make_envs(self, setup: EnvSetup, parts: EnvParts, count: int) -> list[Any]:
        """See :meth:`EnvHost.make_envs`."""
        return [setup.make(parts) for _ in range(count)]

    def close(self) -> None:
        """Nothing to release: the run closes the shared parts."""


@dataclass
class EvalResult:
    """What :func:`evaluate` did.

    Attributes:
        records: The record of every planned episode found in the results file or written now.
        new_records: Records written by this run.
        skipped: Planned episodes already present in the results file.
        warnings: Notes for the user (ignored options, a capped ``n``, ...).
    """

    records: list[dict[str, Any]]
    new_records: list[dict[str, Any]]
    skipped: int
    warnings: list[str]


class ProgressReporter:
    """Receives progress events; the default does nothing (see :mod:`.progress` for the bar)."""

    def start(self, total: int, already_done: Sequence[dict[str, Any]]) -> None:
        """Called once before the first episode with the number of episodes to run now."""

    def advance(self, record: dict[str, Any]) -> None:
        """Called after each finished episode has been written."""

    def warn(self, message: str) -> None:
        """Called for a problem worth telling the user while the run goes on."""

    def stop(self) -> None:
        """Called once at the end (also after an error)."""


@dataclass
class PreparedRun:
    """Everything built before the event loop starts (see :func:`prepare`)."""

    config: EvalConfig
    parts: EnvParts
    envs: list[ConductorEnv]
    plan: list[EpisodeSpec]
    done: list[dict[str, Any]]
    warnings: list[str]


def _manifest(config: EvalConfig, pool_name: str) -> dict[str, Any]:
    # Round-tripped through JSON so it compares equal to the copy read back from run.json.
    return _as_json(
        {
            "env_id": config.env_id,
            "pool": pool_name,
            "seed": config.seed,
            "split": config.setup.split,
            "suite_options": dict(config.setup.suite_options),
            "env_options": config.setup.options.changed(),
        }
    )


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, sort_keys=True))


def _check_resumable(out_dir: str, manifest: dict[str, Any]) -> dict[str, Any] | None:
    """Returns the manifest of the run already in ``out_dir`` (``None``: none), refusing another run's."""
    previous = read_manifest(out_dir)
    if previous is not None:
        previous = dict(previous, env_options=_comparable_options(previous.get("env_options")))
        different = [k for k in MANIFEST_KEYS if previous.get(k) != manifest.get(k)]
        if different:
            shown = ", ".join(f"{k}={previous.get(k)!r}" for k in different)
            raise EvalConfigError(f"{out_dir!r} holds a run with {shown}; rerun with those settings to resume, or pick a new --out")
    return previous


def _comparable_options(recorded: Any) -> Any:
    """A manifest's env options as this version records them (those that differ from the
    defaults), so a run whose ``run.json`` spelled out a default (``max_rounds=1``) still resumes."""
    try:
        return _as_json(EnvOptions.from_mapping(recorded or {}).changed())
    except (TypeError, ValueError):  # options this version does not know: compared as written
        return recorded


def _finished_records(out_dir: str, config: EvalConfig, warnings: list[str]) -> list[dict[str, Any]]:
    """Returns the records already in ``out_dir`` that count as done."""
    try:
        existing = read_results(out_dir)
    except FileNotFoundError:
        return []
    if existing.skipped_lines:
        warnings.append(f"ignored {existing.skipped_lines} unreadable line(s) in the results file (a killed run's last write)")
    return [r for r in existing.records if not (config.retry_infra_errors and r.get("infra_error"))]


def _problem_warnings(config: EvalConfig, problems: Sequence[Any]) -> list[str]:
    notes = []
    if config.n > len(problems):
        notes.append(f"{config.env_id} has {len(problems)} problems in this split; evaluating all of them instead of {config.n}")
    public_only = len(public_only_problems(problems[: config.n]))
    if public_only:
        notes.append(f"{public_only} of the problems are graded only on the examples printed in their statement (no hidden tests); their records say test_set=public and the report marks them")
    return notes


def prepare(config: EvalConfig, policies: Sequence[Policy], out_dir: str, host: EnvHost | None = None) -> PreparedRun:
    """Builds the suite, pool and environments, and works out which episodes remain.

    Args:
        config: What to evaluate.
        policies: The policies (their names key the results).
        out_dir: The output folder; results already there are kept and skipped.
        host: Where the environments run (``None``: in this process).

    Returns:
        The prepared run.

    Raises:
        EvalConfigError: For a bad env id, suite, pool, option, or a folder holding another run.
    """
    if config.n < 1 or config.concurrency < 1 or config.samples < 1:
        raise EvalConfigError("--n, --concurrency and --samples must be at least 1")
    parts = build_parts(config.setup)
    try:
        pool_name = parts.pool.name
        manifest = _manifest(config, pool_name)
        previous = _check_resumable(out_dir, manifest)
        problems = parts.suite.problems(config.setup.split)
        warnings = parts.warnings + _problem_warnings(config, problems)
        plan = plan_episodes([p.id for p in problems], [p.name for p in policies], n=config.n, samples=config.samples, seed=config.seed)
        done = _finished_records(out_dir, config, warnings)
        done_keys = {episode_key(r) for r in done}
        remaining = [s for s in plan if (config.env_id, pool_name, s.policy, s.problem_id, s.sample) not in done_keys]
        envs = (host or LocalEnvHost()).make_envs(config.setup, parts, min(config.concurrency, max(1, len(remaining))))
        known = list((previous or {}).get("policies") or [])
        manifest["policies"] = known + [p.name for p in policies if p.name not in known]
        write_manifest(out_dir, manifest)
    except BaseException:
        parts.suite.close()
        raise
    planned_keys = {(config.env_id, pool_name, s.policy, s.problem_id, s.sample) for s in plan}
    done_here = [r for r in done if episode_key(r) in planned_keys]
    return PreparedRun(config, parts, envs, remaining, done_here, warnings)


async def run_prepared(run: PreparedRun, policies: Sequence[Policy], writer: ResultsWriter, progress: ProgressReporter) -> list[dict[str, Any]]:
    """Plays the remaining episodes of a prepared run; returns the new records.

    Must run on the event loop that owns the pool's clients (the package's background loop).
    """
    queue = collections.deque(run.plan)
    batchers = {p.name: PolicyBatcher(p) for p in policies}
    new_records: list[dict[str, Any]] = []
    env_id, pool_name = run.config.env_id, run.parts.pool.name

    async def slot(env: ConductorEnv) -> None:
        while queue:
            spec = queue.popleft()
            started = time.perf_counter()
            played = await play(env, batchers[spec.policy], seed=spec.seed, reset_options={"problem_index": spec.problem_index})
            record = record_of(played, spec, env_id=env_id, pool=pool_name, wall_s=time.perf_counter() - started)
            writer.append(record)
            new_records.append(record)
            if record["infra_error"]:
                progress.warn(f"{spec.policy} on {spec.problem_id}: {record['infra_error']}")
            if record["reruns"]:
                progress.warn(f"{spec.policy} on {spec.problem_id}: re-run {record['reruns']} time(s) after its env's host died")
            progress.advance(record)

    tasks = [asyncio.ensure_future(slot(env)) for env in run.envs]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return new_records


async def _close_async(parts: EnvParts, policies: Sequence[Policy]) -> None:
    for policy in policies:
        try:
            await policy.aclose()
        except Exception:  # noqa: BLE001 - closing must not hide the run's outcome
            pass
    await parts.pool.aclose()


def run_on_background_loop(coroutine_factory: Callable[[], Any]) -> Any:
    """Runs a coroutine on the package's background loop; Ctrl-C cancels it cleanly.

    Args:
        coroutine_factory: Returns the coroutine (created here, after the loop exists).
    """
    future = asyncio.run_coroutine_threadsafe(coroutine_factory(), background_loop())
    try:
        return future.result()
    except KeyboardInterrupt:
        future.cancel()
        try:
            future.result(timeout=5)
        except BaseException:  # noqa: BLE001 - already interrupted
            pass
        raise


def evaluate(
    config: EvalConfig,
    policies: Sequence[Policy],
    out_dir: str,
    *,
    progress: ProgressReporter | None = None,
    host: EnvHost | None = None,
) -> EvalResult:
    """Evaluates policies on an env and pool, appending each finished episode to ``out_dir``.

    Rerunning with the same arguments skips the episodes already in ``out_dir/results.jsonl``.

    Args:
        config: What to evaluate.
        policies: The policies (distinct names).
        out_dir: Output folder (``results.jsonl`` and ``run.json``).
        progress: Progress events receiver (``None``: silent).
        host: Where the environments run (``None``: in this process; see
            :class:`conductor_env.distributed.RayEnvHost`). The caller closes it.

    Returns:
        The run's records and bookkeeping.

    Raises:
        EvalConfigError: When the run cannot start (nothing has been run then).
    """
    progress = progress or ProgressReporter()
    names = [p.name for p in policies]
    if len(set(names)) != len(names):
        raise EvalConfigError(f"policy names must be distinct, got {names}")
    created = not os.path.exists(out_dir)
    try:
        writer = ResultsWriter(out_dir)
    except RuntimeError as error:
        raise EvalConfigError(f"{error}; wait for it to finish or pick another --out") from error
    try:
        try:
            run = prepare(config, policies, out_dir, host)
        except EvalConfigError:
            if created:  # a typo in the arguments should not leave an empty results folder behind
                writer.close()
                shutil.rmtree(out_dir, ignore_errors=True)
            raise
        progress.start(len(run.plan), run.done)
        try:
            new_records = run_on_background_loop(lambda: run_prepared(run, policies, writer, progress))
        finally:
            progress.stop()
            run_on_background_loop(lambda: _close_async(run.parts, policies))
            run.parts.suite.close()
    finally:
        writer.close()
    return EvalResult(records=run.done + new_records, new_records=new_records, skipped=len(run.done), warnings=run.warnings)
