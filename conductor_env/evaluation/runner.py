"""The evaluation loop: many episodes of several policies concurrently on one event loop.

Each of ``concurrency`` slots owns one environment and plays episodes one after another; every
observation waiting for an action goes to its policy in a batch (so an LLM policy can generate
for many episodes at once); each finished episode is appended to the results file at once.
Problem ``i`` with sample ``s`` is the same episode (same problem, sub-pool and worker seeds)
for every policy, so policies are compared on paired episodes.
"""

from __future__ import annotations

import asyncio
import collections
import datetime as _dt
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import gymnasium as gym

from conductor_env.agents.base import ActionUsage, Observation, Policy
from conductor_env.env import ConductorEnv
from conductor_env.evaluation.results import (
    ResultsWriter,
    episode_key,
    read_manifest,
    read_results,
    truncate_text,
    write_manifest,
)
from conductor_env.evaluation.setup import EvalConfigError, build_pool, build_suite, check_env_options
from conductor_env.event_loop import background_loop
from conductor_env.suite import TaskSuite
from conductor_env.tasks.public_tests import public_only_problems
from conductor_env.workers.pool import WorkerPool

#: Characters kept per text field in a record (a results file must stay small enough to read).
QUESTION_CHARS = 4000
ANSWER_CHARS = 4000
ACTION_CHARS = 4000
SUBTASK_CHARS = 2000
RESPONSE_CHARS = 4000
#: Actions one episode may take before it is stopped (rounds times self-call frames).
MAX_ACTIONS_PER_EPISODE = 256

#: Settings that must match between a run and its resumption (others, like the policies or N,
#: may change: new policies and more problems are simply added).
MANIFEST_KEYS = ("env_id", "pool", "seed", "split", "suite_options", "env_options")


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate.

    Attributes:
        env_id: A Conductor gym id (``"Conductor-RG-v0"``).
        pool: A pool preset name, a ``.toml`` path, or a :class:`WorkerPool`.
        n: Problems per policy (the first ``n`` of the split, in the suite's order).
        concurrency: Episodes in flight at once.
        seed: Base seed; problem ``i``, sample ``s`` uses ``seed + i * samples + s``.
        samples: Episodes per problem and policy.
        sandbox: ``"docker"``, ``"local"``, ``"auto"`` or ``None`` (the suite's default).
        split: Problem split (``None``: the suite's default).
        suite_options: Extra suite options (``data_files`` ...).
        env_options: Extra :class:`ConductorEnv` options (``max_rounds``, ``subpool_size`` ...).
        retry_infra_errors: On resume, rerun episodes that ended with an infrastructure error.
    """

    env_id: str
    pool: str | WorkerPool = "simulated"
    n: int = 20
    concurrency: int = 8
    seed: int = 0
    samples: int = 1
    sandbox: str | None = None
    split: str | None = None
    suite_options: Mapping[str, Any] = field(default_factory=dict)
    env_options: Mapping[str, Any] = field(default_factory=dict)
    retry_infra_errors: bool = False


@dataclass(frozen=True)
class EpisodeSpec:
    """One planned episode."""

    policy: str
    problem_index: int
    problem_id: str
    sample: int
    seed: int


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


class PolicyBatcher:
    """Collects the observations waiting for one policy and asks for their actions in batches.

    One batch is in flight per policy at a time; observations arriving meanwhile form the next
    batch. A policy failure fails only the episodes of that batch.

    Args:
        policy: The policy.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._pending: list[tuple[Observation, asyncio.Future[tuple[str, ActionUsage | None]]]] = []
        self._task: asyncio.Task[None] | None = None
        self.batches = 0

    async def act_with_usage(self, observation: Observation) -> tuple[str, ActionUsage | None]:
        """Returns the policy's action for one observation (batched with concurrent calls) and
        what writing it cost the policy (``None``: no model call)."""
        future: asyncio.Future[tuple[str, ActionUsage | None]] = asyncio.get_running_loop().create_future()
        self._pending.append((observation, future))
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        await asyncio.sleep(0)  # let episodes finishing in the same tick join this batch
        while self._pending:
            batch, self._pending = self._pending, []
            batch = [(o, f) for o, f in batch if not f.done()]
            if not batch:
                continue
            self.batches += 1
            try:
                results = await self.policy.aact_with_usage([o for o, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"policy {self.policy.name!r} returned {len(results)} actions for {len(batch)} observations")
                actions = [self._action_and_usage(result) for result in results]
            except asyncio.CancelledError:
                for _, future in batch:
                    future.cancel()
                raise
            except Exception as error:  # noqa: BLE001 - reported per episode, the run goes on
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            for (_, future), action in zip(batch, actions):
                if not future.done():
                    future.set_result(action)

    def _action_and_usage(self, result: Any) -> tuple[str, ActionUsage | None]:
        """Checks one ``aact_with_usage`` result (a bad one fails the batch, not the run)."""
        if not isinstance(result, tuple) or len(result) != 2 or not (result[1] is None or isinstance(result[1], ActionUsage)):
            raise TypeError(f"policy {self.policy.name!r}: aact_with_usage must return (action, ActionUsage or None) pairs, got {result!r:.200}")
        action, usage = result
        return (action if isinstance(action, str) else str(action)), usage


def plan_episodes(problem_ids: Sequence[str], policies: Sequence[str], *, n: int, samples: int, seed: int) -> list[EpisodeSpec]:
    """Lists the episodes of a run, problem-major so a partial run covers every policy evenly.

    Args:
        problem_ids: The split's problem ids in order.
        policies: Policy names.
        n: Problems per policy (capped at the split size).
        samples: Episodes per problem and policy.
        seed: Base seed.

    Returns:
        The episodes in the order they start.
    """
    plan = []
    for index in range(min(n, len(problem_ids))):
        for sample in range(samples):
            for policy in policies:
                plan.append(EpisodeSpec(policy, index, problem_ids[index], sample, seed + index * samples + sample))
    return plan


def _truncate_trace(trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    steps = []
    for step in trace or []:
        step = dict(step)
        step["subtask"] = truncate_text(step.get("subtask"), SUBTASK_CHARS)
        step["response"] = truncate_text(step.get("response"), RESPONSE_CHARS)
        steps.append(step)
    return steps


def _truncate_workflow(workflow: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not workflow:
        return None
    steps = [dict(s, subtask=truncate_text(s.get("subtask"), SUBTASK_CHARS)) for s in workflow.get("steps", [])]
    return dict(workflow, steps=steps)


def _truncate_frames(frames: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        dict(frame, workflow=_truncate_workflow(frame.get("workflow")), trace=_truncate_trace(frame.get("trace", [])), answer=truncate_text(frame.get("answer"), ANSWER_CHARS))
        for frame in frames or []
    ]


def round_record(action: str, reward: float, info: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the compact record of one finished round (an ``astep`` that was not a frame).

    Args:
        action: The workflow text the policy wrote.
        reward: The step's reward.
        info: The step's ``info``.
    """
    return {
        "round": int(info.get("round", 0)),
        "action": truncate_text(action, ACTION_CHARS),
        "workflow": None if info.get("parse_error") else _truncate_workflow(info.get("workflow")),
        "trace": _truncate_trace(info.get("trace", [])),
        "frames": _truncate_frames(info.get("frames", [])),
        "answer": truncate_text(info.get("answer"), ANSWER_CHARS),
        "correct": bool(info.get("correct")),
        "score": float(info.get("score") or 0.0),
        "reward": float(reward),
        "reason": str(info.get("reason") or ""),
        "test_set": str(info.get("test_set") or ""),
        # Records keep JSON null for "none" (info uses ""), so results files stay as they were.
        "parse_error": info.get("parse_error") or None,
        "parse_detail": info.get("parse_detail") or None,
        "infra_error": info.get("infra_error") or None,
        "cost_usd": float(info.get("cost_usd") or 0.0),
        "tokens": int(info.get("tokens") or 0),
        "wall_s": float(info.get("wall_s") or 0.0),
    }


def episode_record(
    spec: EpisodeSpec,
    *,
    env_id: str,
    pool: str,
    question: str,
    domain: str,
    worker_map: Mapping[Any, str],
    rounds: Sequence[dict[str, Any]],
    wall_s: float,
    error: str | None = None,
    conductor: Sequence[ActionUsage] = (),
) -> dict[str, Any]:
    """Builds the results record of one episode.

    The final round's fields are at the top level; earlier rounds (``max_rounds > 1``) are in
    ``earlier_rounds``. Cost, tokens and worker time are summed over all rounds; ``wall_s`` is
    the episode's wall time including the policy's. ``cost_usd`` and ``tokens`` are the workers'
    (as in the paper); ``conductor_tokens`` and ``conductor_cost_usd`` are the policy's own, over
    all its actions (rounds and self-call frames), for policies that call a model. ``test_set``
    says which tests graded the final answer (``"public"``: only the examples printed in the
    statement, so ``correct`` is not hidden-test accuracy; ``""`` for suites without tests).

    Args:
        spec: The planned episode.
        env_id: The gym id.
        pool: The pool's name.
        question: The problem text.
        domain: The problem's domain.
        worker_map: Shown worker id -> pool worker name.
        rounds: :func:`round_record` of each finished round.
        wall_s: Episode wall time.
        error: A failure outside the workers (policy or env) that ended the episode early.
        conductor: The usage of each of the policy's actions that called a model.

    Returns:
        A JSON-serialisable record.
    """
    final = dict(rounds[-1]) if rounds else round_record("", 0.0, {})
    infra_error = final.get("infra_error") or error
    record: dict[str, Any] = {
        "env_id": env_id,
        "pool": pool,
        "policy": spec.policy,
        "problem_id": spec.problem_id,
        "problem_index": spec.problem_index,
        "sample": spec.sample,
        "seed": spec.seed,
        "domain": domain,
        "question": truncate_text(question, QUESTION_CHARS),
        "correct": bool(final["correct"]) and not infra_error,
        "score": final["score"],
        "reward": final["reward"],
        "reason": final["reason"] if not error else f"not scored: {error}",
        "test_set": str(final.get("test_set") or ""),
        "answer": final["answer"],
        "parse_error": final["parse_error"],
        "parse_detail": final["parse_detail"],
        "infra_error": infra_error,
        "cost_usd": sum(r["cost_usd"] for r in rounds),
        "tokens": sum(r["tokens"] for r in rounds),
        "conductor_tokens": sum(u.tokens for u in conductor),
        "conductor_cost_usd": sum(u.cost_usd for u in conductor),
        "wall_s": wall_s,
        "worker_wall_s": sum(r["wall_s"] for r in rounds),
        "rounds": len(rounds),
        "action": final["action"],
        "workflow": final["workflow"],
        "trace": final["trace"],
        "frames": final["frames"],
        "earlier_rounds": [dict(r) for r in rounds[:-1]],
        "worker_map": {str(k): v for k, v in worker_map.items()},
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    return record


async def play_episode(env: ConductorEnv, spec: EpisodeSpec, batcher: PolicyBatcher, *, env_id: str, pool: str) -> dict[str, Any]:
    """Plays one episode to its end and returns its record (never raises for policy or env errors).

    Args:
        env: The (unwrapped) environment; only this coroutine uses it meanwhile.
        spec: Which problem, sample and seed.
        batcher: The policy's batcher.
        env_id: The gym id (for the record).
        pool: The pool's name (for the record).
    """
    started = time.perf_counter()
    observation, info = env.reset(seed=spec.seed, options={"problem_index": spec.problem_index})
    question = str(observation.get("question", ""))
    domain, worker_map = str(info.get("domain", "")), dict(info.get("worker_map", {}))
    rounds: list[dict[str, Any]] = []
    conductor: list[ActionUsage] = []
    error: str | None = None
    stage = "policy"
    try:
        for _ in range(MAX_ACTIONS_PER_EPISODE):
            stage = "policy"
            action, usage = await batcher.act_with_usage(observation)
            if usage is not None:
                conductor.append(usage)
            stage = "env"
            observation, reward, terminated, truncated, info = await env.astep(action)
            if not info.get("frame_depth"):  # a step that opened a self-call frame finished no round
                rounds.append(round_record(action, reward, info))
            if terminated or truncated:
                break
        else:
            error = f"episode stopped after {MAX_ACTIONS_PER_EPISODE} actions"
    except asyncio.CancelledError:
        raise
    except Exception as failure:  # noqa: BLE001 - one bad episode must not end the run
        error = f"{stage} failed: {type(failure).__name__}: {' '.join(str(failure).split())[:500]}"
    return episode_record(
        spec,
        env_id=env_id,
        pool=pool,
        question=question,
        domain=domain,
        worker_map=worker_map,
        rounds=rounds,
        wall_s=time.perf_counter() - started,
        error=error,
        conductor=conductor,
    )


@dataclass
class PreparedRun:
    """Everything built before the event loop starts (see :func:`prepare`)."""

    config: EvalConfig
    suite: TaskSuite
    pool: WorkerPool
    envs: list[ConductorEnv]
    plan: list[EpisodeSpec]
    done: list[dict[str, Any]]
    warnings: list[str]


def _manifest(config: EvalConfig, pool: WorkerPool) -> dict[str, Any]:
    # Round-tripped through JSON so it compares equal to the copy read back from run.json.
    return _as_json({
        "env_id": config.env_id,
        "pool": pool.name,
        "seed": config.seed,
        "split": config.split,
        "suite_options": dict(config.suite_options),
        "env_options": dict(config.env_options),
    })


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, sort_keys=True))


def prepare(config: EvalConfig, policies: Sequence[Policy], out_dir: str) -> PreparedRun:
    """Builds the suite, pool and environments, and works out which episodes remain.

    Args:
        config: What to evaluate.
        policies: The policies (their names key the results).
        out_dir: The output folder; results already there are kept and skipped.

    Returns:
        The prepared run.

    Raises:
        EvalConfigError: For a bad env id, suite, pool, option, or a folder holding another run.
    """
    if config.n < 1 or config.concurrency < 1 or config.samples < 1:
        raise EvalConfigError("--n, --concurrency and --samples must be at least 1")
    check_env_options(config.env_options)
    suite, warnings = build_suite(config.env_id, split=config.split, sandbox=config.sandbox, options=config.suite_options)
    try:
        pool = build_pool(config.pool)
        manifest = _manifest(config, pool)
        previous = read_manifest(out_dir)
        if previous is not None:
            different = [k for k in MANIFEST_KEYS if previous.get(k) != manifest.get(k)]
            if different:
                shown = ", ".join(f"{k}={previous.get(k)!r}" for k in different)
                raise EvalConfigError(f"{out_dir!r} holds a run with {shown}; rerun with those settings to resume, or pick a new --out")
        problems = suite.problems(config.split)
        if config.n > len(problems):
            warnings.append(f"{config.env_id} has {len(problems)} problems in this split; evaluating all of them instead of {config.n}")
        public_only = len(public_only_problems(problems[: config.n]))
        if public_only:
            warnings.append(
                f"{public_only} of the problems are graded only on the examples printed in their statement (no hidden tests); "
                "their records say test_set=public and the report marks them"
            )
        plan = plan_episodes([p.id for p in problems], [p.name for p in policies], n=config.n, samples=config.samples, seed=config.seed)
        done: list[dict[str, Any]] = []
        try:
            existing = read_results(out_dir)
            if existing.skipped_lines:
                warnings.append(f"ignored {existing.skipped_lines} unreadable line(s) in the results file (a killed run's last write)")
            done = [
                r for r in existing.records if not (config.retry_infra_errors and r.get("infra_error"))
            ]
        except FileNotFoundError:
            pass
        done_keys = {episode_key(r) for r in done}
        remaining = [s for s in plan if (config.env_id, pool.name, s.policy, s.problem_id, s.sample) not in done_keys]
        envs = []
        for _ in range(min(config.concurrency, max(1, len(remaining)))):
            try:
                made = gym.make(config.env_id, suite=suite, pool=pool, split=config.split, **dict(config.env_options))
            except (TypeError, ValueError) as error:
                message = str(error).split(" was raised from the environment creator")[0]
                raise EvalConfigError(f"{config.env_id}: bad env option: {message}") from error
            envs.append(made.unwrapped)
        known = list((previous or {}).get("policies") or [])
        manifest["policies"] = known + [p.name for p in policies if p.name not in known]
        write_manifest(out_dir, manifest)
    except BaseException:
        suite.close()
        raise
    planned_keys = {(config.env_id, pool.name, s.policy, s.problem_id, s.sample) for s in plan}
    done_here = [r for r in done if episode_key(r) in planned_keys]
    return PreparedRun(config, suite, pool, envs, remaining, done_here, warnings)


async def run_prepared(run: PreparedRun, policies: Sequence[Policy], writer: ResultsWriter, progress: ProgressReporter) -> list[dict[str, Any]]:
    """Plays the remaining episodes of a prepared run; returns the new records.

    Must run on the event loop that owns the pool's clients (the package's background loop).
    """
    queue = collections.deque(run.plan)
    batchers = {p.name: PolicyBatcher(p) for p in policies}
    new_records: list[dict[str, Any]] = []
    env_id, pool_name = run.config.env_id, run.pool.name

    async def slot(env: ConductorEnv) -> None:
        while queue:
            spec = queue.popleft()
            record = await play_episode(env, spec, batchers[spec.policy], env_id=env_id, pool=pool_name)
            writer.append(record)
            new_records.append(record)
            if record["infra_error"]:
                progress.warn(f"{spec.policy} on {spec.problem_id}: {record['infra_error']}")
            progress.advance(record)

    tasks = [asyncio.ensure_future(slot(env)) for env in run.envs]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return new_records


async def _close_async(pool: WorkerPool, policies: Sequence[Policy]) -> None:
    for policy in policies:
        try:
            await policy.aclose()
        except Exception:  # noqa: BLE001 - closing must not hide the run's outcome
            pass
    await pool.aclose()


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
) -> EvalResult:
    """Evaluates policies on an env and pool, appending each finished episode to ``out_dir``.

    Rerunning with the same arguments skips the episodes already in ``out_dir/results.jsonl``.

    Args:
        config: What to evaluate.
        policies: The policies (distinct names).
        out_dir: Output folder (``results.jsonl`` and ``run.json``).
        progress: Progress events receiver (``None``: silent).

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
            run = prepare(config, policies, out_dir)
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
            run_on_background_loop(lambda: _close_async(run.pool, policies))
            run.suite.close()
    finally:
        writer.close()
    return EvalResult(records=run.done + new_records, new_records=new_records, skipped=len(run.done), warnings=run.warnings)
