"""ConductorEnv: a Gymnasium environment in which the action is a workflow for a pool of workers.

One episode: ``reset`` picks a problem and a (possibly random) sub-pool and returns the Conductor
prompt; ``step(workflow_text)`` parses the workflow, runs it on the workers, verifies the answer
and returns the reward. With ``max_rounds > 1`` the Conductor may revise its workflow after
seeing the answer (three empty lists keep it). With ``self_call=True`` the Conductor itself is
one of the worker ids: a step assigned to it opens a nested frame whose observation asks the
policy for a sub-workflow; the sub-workflow's answer becomes that step's response.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any, Sequence

import gymnasium as gym
from gymnasium import spaces

from conductor_env.event_loop import run_sync
from conductor_env.executor import AnswerFrom, Execution, execute_workflow
from conductor_env.prompts import PREFILL, ExampleSelection, VisibleStep, conductor_prompt, select_examples
from conductor_env.rewards import RewardScheme, round_credit
from conductor_env.spaces import AnyText
from conductor_env.tasks.base import Problem, Score, TaskSuite, VerifierError, find_problem
from conductor_env.tasks.registry import get_suite
from conductor_env.workers.base import Completion, WorkerError
from conductor_env.workers.pool import WorkerPool, load_pool
from conductor_env.workers.retry import RetryPolicy, with_retries, with_timeout
from conductor_env.workers.simulated import SimulationOracle
from conductor_env.workflow import AccessMode, Step, Workflow, WorkflowError, parse_workflow

MAX_TEXT = 1 << 20


class _FrameParseError(Exception):
    """A self-call frame's sub-workflow did not parse; ends the episode like any parse error."""

    def __init__(self, error: WorkflowError, depth: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.depth = depth


@dataclass
class _FrameRequest:
    """A pending self-call: the observation to show and the future its action resolves."""

    question: str
    depth: int
    action: asyncio.Future[str]


@dataclass
class _Round:
    """What one finished round produced (for history, rewards and the next round's context)."""

    workflow: Workflow
    answer: str
    score: Score
    reward: float
    execution: Execution | None = None


@dataclass
class _Episode:
    """State of the episode in progress."""

    problem: Problem
    shown: tuple[int, ...]
    seed: int
    rounds: list[_Round] = field(default_factory=list)
    frames: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False


class ConductorEnv(gym.Env[dict, str]):
    """The Conductor environment.

    Observation: a ``dict`` with ``prompt`` (the full Conductor prompt), ``question``, ``workers``
    (the shown pool, numbered ids), ``history`` (earlier rounds' workflows and answers), ``round``
    and ``depth`` (0 at the top, ``d`` inside a self-call frame of depth ``d``).

    Action: the workflow text (free reasoning then the three lists).

    Reward: see :class:`~conductor_env.rewards.RewardScheme`; with rounds, each step returns the
    raw reward of its round and ``info["round_credit"]`` holds the paper's discounted credit.

    ``info`` always carries ``answer``, ``correct``, ``score``, ``reason``, ``parse_error``,
    ``parse_detail``, ``workflow``, ``trace``, ``cost_usd``, ``tokens``, ``infra_error``,
    ``problem_id``, ``domain``, ``round``, ``round_rewards``, ``round_credit``, ``frames``,
    ``worker_map`` and ``wall_s``.

    Args:
        suite: A suite name (``"rg"``, ``"lcb"``, ...) or a :class:`TaskSuite`.
        pool: A pool preset name, a ``.toml`` path, or a :class:`WorkerPool`.
        split: The problem split (``None``: the suite's default).
        suite_options: Keyword options for the suite's factory (``data_files=...``, ...).
        sandbox: Sandbox for code suites (``"docker"``, ``"local"``, ``"auto"`` or an instance);
            forwarded into ``suite_options``.
        reward: ``"paper"``, ``"paper_code"``, ``"correctness"`` or ``"cost_aware"``.
        price_weight: Reward lost per USD (``cost_aware``).
        max_steps: Most steps per workflow.
        access: ``"binary"`` (the paper) or ``"indices"`` (fine-grained lists).
        max_rounds: Rounds per episode (the original code's recursion; 1 = single round).
        round_discount: Base discount of the round credit (0.25 in the paper's checkpoints).
        subpool_size: ``None`` (whole pool, canonical order), an int, or ``(min, max)``: a random
            sub-pool per episode with renumbered ids.
        show_names: Reveal worker names and descriptions (hidden by default, as in the paper).
        self_call: Offer the Conductor itself as the last worker id.
        max_depth: Deepest self-call frame.
        examples: Which worked examples the prompt shows (``"out_of_domain"`` by default).
        num_examples: How many worked examples.
        worker_max_tokens: Output-token limit per worker call (``None``: each worker's default).
        worker_temperature: Temperature per worker call (``None``: each worker's default).
        prefill: Prefill the worker's answer with "Let me solve this step by step." as the
            released code does (only for backends that accept an assistant prefill).
        answer_from: ``"last"`` step's response (the paper) or ``"last_nonempty"``.
        retry: Retry policy for worker calls.
        render_mode: ``None`` or ``"ansi"``.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        suite: str | TaskSuite = "rg",
        pool: str | WorkerPool = "simulated",
        *,
        split: str | None = None,
        suite_options: dict[str, Any] | None = None,
        sandbox: Any = None,
        reward: str = "paper",
        price_weight: float = 0.0,
        max_steps: int = 5,
        access: AccessMode = "binary",
        max_rounds: int = 1,
        round_discount: float = 0.25,
        subpool_size: int | tuple[int, int] | None = None,
        show_names: bool = False,
        self_call: bool = False,
        max_depth: int = 1,
        examples: ExampleSelection = "out_of_domain",
        num_examples: int = 4,
        worker_max_tokens: int | None = None,
        worker_temperature: float | None = None,
        prefill: bool = False,
        answer_from: AnswerFrom = "last",
        retry: RetryPolicy | None = None,
        render_mode: str | None = None,
    ) -> None:
        if access not in ("binary", "indices"):
            raise ValueError(f"access must be 'binary' or 'indices', got {access!r}")
        if max_rounds < 1 or max_steps < 1 or max_depth < 0:
            raise ValueError("max_rounds and max_steps must be >= 1 and max_depth >= 0")
        options = dict(suite_options or {})
        if sandbox is not None:
            options["sandbox"] = sandbox
        self.suite: TaskSuite = get_suite(suite, **options)
        self.pool: WorkerPool = load_pool(pool)
        self.split = split
        self.problems: Sequence[Problem] = self.suite.problems(split)
        if not self.problems:
            raise ValueError(f"suite {self.suite.name!r} has no problems in split {split!r}")
        self.reward_scheme = RewardScheme(reward, price_weight)
        self.max_steps = max_steps
        self.access: AccessMode = access
        self.max_rounds = max_rounds
        self.round_discount = round_discount
        self.subpool_size = subpool_size
        self.show_names = show_names
        self.self_call = self_call
        self.max_depth = max_depth if self_call else 0
        self.examples = examples
        self.num_examples = num_examples
        self.worker_max_tokens = worker_max_tokens
        self.worker_temperature = worker_temperature
        self.prefill = prefill
        self.answer_from: AnswerFrom = answer_from
        self.retry = retry or RetryPolicy()
        self.render_mode = render_mode

        self.observation_space = spaces.Dict(
            {
                "prompt": AnyText(MAX_TEXT),
                "question": AnyText(MAX_TEXT),
                "workers": AnyText(MAX_TEXT),
                "history": AnyText(MAX_TEXT),
                "round": spaces.Discrete(max_rounds),
                "depth": spaces.Discrete(self.max_depth + 1),
            }
        )
        self.action_space = AnyText(MAX_TEXT)
        self._episode: _Episode | None = None
        self._round_task: asyncio.Task[tuple[dict, float, bool, bool, dict]] | None = None
        self._frames: asyncio.Queue[_FrameRequest] | None = None
        self._waiting: _FrameRequest | None = None
        self._last_observation: dict[str, Any] | None = None

    # ----------------------------------------------------------------- observation building

    def _shown_count(self, depth: int) -> int:
        assert self._episode is not None
        return len(self._episode.shown) + (1 if self.self_call and depth < self.max_depth else 0)

    def _conductor_id(self, depth: int) -> int | None:
        assert self._episode is not None
        return len(self._episode.shown) if self.self_call and depth < self.max_depth else None

    def _worker_lines(self, depth: int) -> list[str]:
        assert self._episode is not None
        lines = []
        for shown_id, index in enumerate(self._episode.shown):
            spec = self.pool.specs[index]
            if self.show_names:
                about = f" ({spec.description})" if spec.description else ""
                lines.append(f"Model id {shown_id}: {spec.model or spec.name}{about}")
            else:
                lines.append(f"Model id {shown_id}")
        conductor = self._conductor_id(depth)
        if conductor is not None:
            lines.append(f"Model id {conductor}: yourself (the Conductor; its step gets its own workflow)")
        return lines

    def _history_text(self) -> str:
        assert self._episode is not None
        blocks = []
        for k, done in enumerate(self._episode.rounds):
            blocks.append(f"Round {k + 1} workflow:\n{done.workflow.render()}\nRound {k + 1} answer:\n{done.answer}")
        return "\n\n".join(blocks)

    def _observation(self, question: str, depth: int) -> dict[str, Any]:
        assert self._episode is not None
        workers = "\n".join(self._worker_lines(depth))
        history = self._history_text() if depth == 0 else ""
        prompt = conductor_prompt(
            question,
            workers,
            examples=select_examples(self._episode.problem.domain, self.examples, self.num_examples),
            max_steps=self.max_steps,
            access=self.access,
            history=history,
        )
        return {
            "prompt": prompt,
            "question": question,
            "workers": workers,
            "history": history,
            "round": len(self._episode.rounds) if depth == 0 else 0,
            "depth": depth,
        }

    # ----------------------------------------------------------------------------- reset

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Starts an episode.

        Args:
            seed: Seeds the problem choice, the sub-pool and the workers' sampling.
            options: ``{"problem_id": id}`` or ``{"problem_index": i}`` picks the problem (so a
                GRPO group can share one question); otherwise it is drawn with the seed.

        Returns:
            The observation and ``info`` (``problem_id``, ``domain``, ``worker_map``).
        """
        super().reset(seed=seed)
        self._cancel_round()
        options = options or {}
        if "problem_id" in options:
            problem = find_problem(self.problems, str(options["problem_id"]))
        elif "problem_index" in options:
            problem = self.problems[int(options["problem_index"]) % len(self.problems)]
        else:
            problem = self.problems[int(self.np_random.integers(len(self.problems)))]
        episode_seed = int(self.np_random.integers(2**31))
        shown = self.pool.sample_subpool(random.Random(episode_seed), self.subpool_size)
        self._episode = _Episode(problem=problem, shown=shown, seed=episode_seed)
        observation = self._observation(problem.question, depth=0)
        self._last_observation = observation
        return observation, {"problem_id": problem.id, "domain": problem.domain, "worker_map": self.worker_map()}

    def worker_map(self) -> dict[int, str]:
        """Returns shown id -> pool worker name for the current episode (for analysis only)."""
        assert self._episode is not None
        mapping = {i: self.pool.specs[index].name for i, index in enumerate(self._episode.shown)}
        conductor = self._conductor_id(0)
        if conductor is not None:
            mapping[conductor] = "conductor"
        return mapping

    # ------------------------------------------------------------------------------ step

    def step(self, action: str) -> tuple[dict, float, bool, bool, dict]:
        """Runs a workflow (or a self-call frame's sub-workflow); see :meth:`astep`."""
        return run_sync(self.astep(action))

    async def astep(self, action: str) -> tuple[dict, float, bool, bool, dict]:
        """Async :meth:`step`: many environments can step concurrently on one event loop.

        Args:
            action: The workflow text.

        Returns:
            ``(observation, reward, terminated, truncated, info)``. Inside a self-call, the
            returned observation is the frame's (``depth > 0``) with reward 0, and the next
            action is that frame's sub-workflow.

        Raises:
            RuntimeError: When called before :meth:`reset` or after the episode ended.
        """
        if self._episode is None or self._episode.done:
            raise RuntimeError("call reset() before step() (the episode is over or never started)")
        if not self.self_call:  # no frames can open: run the round inline (no extra tasks)
            self._frames = None
            result = await self._play_round(action)
            self._last_observation = result[0]
            return result
        if self._waiting is not None:
            waiting, self._waiting = self._waiting, None
            waiting.action.set_result(action if isinstance(action, str) else str(action))
        else:
            self._frames = asyncio.Queue()
            self._round_task = asyncio.ensure_future(self._play_round(action))
        assert self._round_task is not None and self._frames is not None
        frame_task = asyncio.ensure_future(self._frames.get())
        try:
            await asyncio.wait({self._round_task, frame_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not frame_task.done():
                frame_task.cancel()
        if frame_task.done() and not frame_task.cancelled():
            request = frame_task.result()
            self._waiting = request
            observation = self._observation(request.question, depth=request.depth)
            self._last_observation = observation
            info = {"frame": {"depth": request.depth}, "problem_id": self._episode.problem.id}
            return observation, 0.0, False, False, info
        result = self._round_task.result()
        self._round_task = None
        self._last_observation = result[0]
        return result

    def _cancel_round(self) -> None:
        if self._round_task is not None and not self._round_task.done():
            self._round_task.get_loop().call_soon_threadsafe(self._round_task.cancel)
        self._round_task = None
        self._waiting = None

    # ----------------------------------------------------------------------- one round

    def _oracle(self) -> SimulationOracle:
        assert self._episode is not None
        problem = self._episode.problem
        return SimulationOracle(problem.domain, self.suite.reference_response(problem), self.suite.wrong_response(problem))

    def _caller(self, depth: int, round_index: int):
        """Returns the :data:`~conductor_env.executor.StepCaller` for a frame at ``depth``."""
        assert self._episode is not None
        episode = self._episode
        oracle = self._oracle()
        conductor = self._conductor_id(depth)

        async def call_step(index: int, step: Step, message: str) -> tuple[Completion, int]:
            if step.worker == conductor:
                return await self._self_call(message, depth + 1, round_index), 1
            pool_index = episode.shown[step.worker]
            worker = self.pool.worker(pool_index)
            semaphore = self.pool.semaphore(pool_index)
            spec = self.pool.specs[pool_index]
            messages = [{"role": "user", "content": message}]
            if self.prefill:
                messages.append({"role": "assistant", "content": PREFILL})
            seed = hash((episode.seed, depth, round_index, index)) & 0x7FFFFFFF

            async def attempt() -> Completion:
                async with semaphore:
                    call = worker.complete(
                        messages,
                        max_tokens=self.worker_max_tokens,
                        temperature=self.worker_temperature,
                        seed=seed,
                        oracle=oracle,
                    )
                    return await with_timeout(call, spec.timeout_s)

            return await with_retries(attempt, self.retry)

        return call_step

    def _worker_name(self, depth: int):
        assert self._episode is not None
        shown, conductor = self._episode.shown, self._conductor_id(depth)
        return lambda worker: "conductor" if worker == conductor else self.pool.specs[shown[worker]].name

    async def _self_call(self, question: str, depth: int, round_index: int) -> Completion:
        assert self._episode is not None and self._frames is not None
        request = _FrameRequest(question=question, depth=depth, action=asyncio.get_running_loop().create_future())
        await self._frames.put(request)
        action = await request.action
        try:
            workflow = parse_workflow(action, num_workers=self._shown_count(depth), max_steps=self.max_steps, access=self.access)
        except WorkflowError as error:
            raise _FrameParseError(error, depth) from error
        execution = await execute_workflow(
            workflow,
            question=question,
            call_step=self._caller(depth, round_index),
            worker_name=self._worker_name(depth),
            answer_from=self.answer_from,
        )
        self._episode.frames.append(
            {"depth": depth, "workflow": workflow.to_dict(), "trace": [t.to_dict() for t in execution.traces], "answer": execution.answer}
        )
        if execution.infra_error is not None:
            raise WorkerError(f"in a self-call frame: {execution.infra_error}", retryable=False)
        return Completion(
            text=execution.answer,
            prompt_tokens=sum(t.prompt_tokens for t in execution.traces),
            completion_tokens=sum(t.completion_tokens for t in execution.traces),
            cost_usd=execution.cost_usd,
            latency_s=execution.wall_s,
        )

    async def _play_round(self, action: str) -> tuple[dict, float, bool, bool, dict]:
        episode = self._episode
        assert episode is not None
        round_index = len(episode.rounds)
        previous = episode.rounds[-1] if episode.rounds else None
        info = self._base_info(round_index)
        try:
            workflow = parse_workflow(
                action,
                num_workers=self._shown_count(0),
                max_steps=self.max_steps,
                access=self.access,
                allow_empty=previous is not None,
            )
        except WorkflowError as error:
            return self._finish_unparsed(info, error.reason, error.detail, previous)
        info["workflow"] = workflow.to_dict()
        if workflow.is_empty:
            assert previous is not None
            reward = self.reward_scheme(parsed=True, correct=previous.score.correct, score=previous.score.score)
            episode.rounds.append(_Round(workflow=previous.workflow, answer=previous.answer, score=previous.score, reward=reward))
            info.update(answer=previous.answer, correct=previous.score.correct, score=previous.score.score, reason="kept the previous answer")
            return self._finish(info, reward, terminated=True)
        previous_steps = (
            [VisibleStep(t.worker, t.subtask, t.response) for t in previous.execution.traces]
            if previous is not None and previous.execution is not None
            else []
        )
        try:
            execution = await execute_workflow(
                workflow,
                question=episode.problem.question,
                call_step=self._caller(0, round_index),
                worker_name=self._worker_name(0),
                previous_steps=previous_steps,
                answer_from=self.answer_from,
            )
        except _FrameParseError as error:
            return self._finish_unparsed(info, error.error.reason, f"in the self-call frame at depth {error.depth}: {error.error.detail}", previous)
        info.update(
            trace=[t.to_dict() for t in execution.traces],
            cost_usd=execution.cost_usd,
            tokens=execution.tokens,
            wall_s=execution.wall_s,
            frames=list(episode.frames),
        )
        if execution.infra_error is not None:
            info.update(infra_error=execution.infra_error, reason="worker failure (not scored)")
            episode.done = True
            return dict(self._last_observation or {}), 0.0, False, True, info
        try:
            score = await self.suite.averify(episode.problem, execution.answer)
        except Exception as error:  # noqa: BLE001 - a grader failure must not crash the RL loop
            # Not the answer's fault: flag it like a worker outage instead of scoring it wrong.
            kind = "" if isinstance(error, VerifierError) else f"verifier crashed ({type(error).__name__}): "
            info.update(answer=execution.answer, infra_error=f"{kind}{error}", reason="verifier failure (not scored)")
            episode.done = True
            return dict(self._last_observation or {}), 0.0, False, True, info
        reward = self.reward_scheme(parsed=True, correct=score.correct, score=score.score, cost_usd=execution.cost_usd)
        episode.rounds.append(_Round(workflow=workflow, answer=execution.answer, score=score, reward=reward, execution=execution))
        info.update(answer=execution.answer, correct=score.correct, score=score.score, reason=score.reason)
        return self._finish(info, reward, terminated=len(episode.rounds) >= self.max_rounds)

    def _base_info(self, round_index: int) -> dict[str, Any]:
        assert self._episode is not None
        return {
            "answer": "",
            "correct": False,
            "score": 0.0,
            "reason": "",
            "parse_error": None,
            "parse_detail": None,
            "workflow": None,
            "trace": [],
            "cost_usd": 0.0,
            "tokens": 0,
            "wall_s": 0.0,
            "infra_error": None,
            "problem_id": self._episode.problem.id,
            "domain": self._episode.problem.domain,
            "round": round_index,
            "round_rewards": [],
            "round_credit": [],
            "frames": [],
            "worker_map": self.worker_map(),
        }

    def _finish_unparsed(self, info: dict[str, Any], reason: str, detail: str, previous: _Round | None) -> tuple[dict, float, bool, bool, dict]:
        assert self._episode is not None
        info.update(parse_error=reason, parse_detail=detail, reason=f"unparsed workflow: {reason}", frames=list(self._episode.frames))
        if previous is not None:  # a later round's bad workflow loses nothing already answered
            info.update(answer=previous.answer, correct=previous.score.correct, score=previous.score.score)
        self._episode.rounds.append(
            _Round(workflow=Workflow(()), answer=info["answer"], score=Score(info["correct"], info["score"], info["reason"]), reward=0.0)
        )
        return self._finish(info, 0.0, terminated=True)

    def _finish(self, info: dict[str, Any], reward: float, *, terminated: bool) -> tuple[dict, float, bool, bool, dict]:
        episode = self._episode
        assert episode is not None
        rewards = [r.reward for r in episode.rounds]
        info["round_rewards"] = rewards
        info["round_credit"] = round_credit(rewards, self.round_discount)
        episode.done = terminated
        # A new dict every call: Gymnasium users may keep and mutate what they are given.
        observation = self._observation(episode.problem.question, depth=0) if not terminated else dict(self._last_observation or {})
        return observation, float(reward), terminated, False, info

    # --------------------------------------------------------------------------- misc

    def render(self) -> str | None:
        """Returns the current Conductor prompt (``render_mode="ansi"``)."""
        if self.render_mode == "ansi" and self._last_observation is not None:
            return self._last_observation["prompt"]
        return None

    def close(self) -> None:
        """Closes workers' clients and the suite's resources (safe to call twice)."""
        self._cancel_round()
        if getattr(self, "pool", None) is not None:
            run_sync(self.pool.aclose())
        if getattr(self, "suite", None) is not None:
            self.suite.close()
        super().close()
