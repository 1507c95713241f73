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
import logging
import operator
import random
from dataclasses import dataclass, field
from typing import Any, Sequence

import gymnasium as gym
from gymnasium import spaces

from conductor_env.event_loop import run_sync
from conductor_env.executor import AnswerFrom, Execution, execute_workflow
from conductor_env.info import StepInfo
from conductor_env.prompts import PREFILL, WORKED_EXAMPLES, ExampleSelection, VisibleStep, conductor_prompt, select_examples
from conductor_env.rewards import RewardScheme, round_credit
from conductor_env.spaces import Utf8Text, shorten_text, utf8_size
from conductor_env.suite import Problem, Score, TaskSuite, VerifierError, find_problem
from conductor_env.tasks.registry import get_suite
from conductor_env.calls import Completion, RetryPolicy, SimulationOracle, WorkerError
from conductor_env.workers.pool import WorkerPool, load_pool
from conductor_env.workers.retry import with_retries, with_timeout
from conductor_env.workflow import MAX_ACTION_CHARS, AccessMode, Step, Workflow, WorkflowError, parse_workflow

logger = logging.getLogger(__name__)

#: Default longest question (UTF-8 bytes) the observation space holds; the questions of the shipped
#: suites we measured (LiveCodeBench, MATH-500, AIME, GPQA, MMLU) stay under 6 KB.
MAX_QUESTION_BYTES = 32 * 1024
#: Longest action (UTF-8 bytes) in the action space: four times the parser's limit of
#: :data:`~conductor_env.workflow.MAX_ACTION_CHARS` characters (a character takes at most 4 bytes),
#: so every action the parser reads is in the space; longer ones get the ``too_long`` parse error.
MAX_ACTION_BYTES = 4 * MAX_ACTION_CHARS
#: Each earlier round's rendered workflow and answer are cut (in the middle) to this many UTF-8
#: bytes in ``history``; the workers still see them whole.
HISTORY_PART_BYTES = 8 * 1024


_STR_FIELDS = ("answer", "reason", "test_set", "parse_error", "parse_detail", "infra_error", "problem_id", "domain")


def _typed(result: tuple[dict, float, bool, bool, dict]) -> tuple[dict, float, bool, bool, dict]:
    """Gives a step's result the types of :class:`~conductor_env.info.StepInfo` and Gymnasium.

    Vector envs type a merged info array by the first value they see (an ``int`` cost of 0 would
    truncate the other envs' costs), so every number keeps one Python type.
    """
    observation, reward, terminated, truncated, info = result
    for key in _STR_FIELDS:
        info[key] = "" if info[key] is None else str(info[key])
    info.update(
        correct=bool(info["correct"]),
        score=float(info["score"]),
        cost_usd=float(info["cost_usd"]),
        tokens=int(info["tokens"]),
        wall_s=float(info["wall_s"]),
        round=int(info["round"]),
        frame_depth=int(info["frame_depth"]),
        round_rewards=[float(r) for r in info["round_rewards"]],
        round_credit=[float(c) for c in info["round_credit"]],
    )
    return observation, float(reward), bool(terminated), bool(truncated), info


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
    and ``depth`` (0 at the top, ``d`` inside a self-call frame of depth ``d``). The text entries
    are :class:`~conductor_env.spaces.Utf8Text` spaces bounded in UTF-8 bytes: ``question`` by
    ``max_question_bytes`` (a self-call frame's question, which quotes workers' responses, is cut
    in the middle to fit), ``history`` by ``max_rounds - 1`` rounds of twice
    :data:`HISTORY_PART_BYTES`, ``workers`` by the whole pool's listing, and ``prompt`` by their
    sum plus the fixed instructions and worked examples.

    Action: the workflow text (free reasoning then the three lists), a ``Utf8Text`` of up to
    :data:`MAX_ACTION_BYTES`. Any string is answered: one the parser cannot read (too long
    included) ends the episode with a parse error.

    Reward: see :class:`~conductor_env.rewards.RewardScheme`; with rounds, each step returns the
    raw reward of its round and ``info["round_credit"]`` holds the paper's discounted credit.

    Episode end: ``terminated`` when the answer is final: the last round was scored, three empty
    lists kept the previous answer, or the action did not parse. ``truncated`` when infrastructure
    failed (``info["infra_error"]``: a worker still failing after retries, a dead sandbox); the
    answer is then unscored (reward 0). A step that opens a self-call frame ends nothing.

    ``info``, from ``reset`` and every ``step``, has the keys and types of
    :class:`~conductor_env.info.StepInfo`, whatever happened.

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
        max_question_bytes: Longest question (UTF-8 bytes) the observation space holds;
            ``reset`` on a longer problem raises ``ValueError``.
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
        max_question_bytes: int = MAX_QUESTION_BYTES,
        render_mode: str | None = None,
    ) -> None:
        if access not in ("binary", "indices"):
            raise ValueError(f"access must be 'binary' or 'indices', got {access!r}")
        if max_rounds < 1 or max_steps < 1 or max_depth < 0:
            raise ValueError("max_rounds and max_steps must be >= 1 and max_depth >= 0")
        if max_question_bytes < 1:
            raise ValueError(f"max_question_bytes must be >= 1, got {max_question_bytes!r}")
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
        self.max_question_bytes = max_question_bytes
        self.render_mode = render_mode

        self.text_limits = self._text_limits()
        self.observation_space = spaces.Dict(
            {
                **{name: Utf8Text(limit) for name, limit in self.text_limits.items()},
                "round": spaces.Discrete(max_rounds),
                "depth": spaces.Discrete(self.max_depth + 1),
            }
        )
        self.action_space = Utf8Text(MAX_ACTION_BYTES)
        self._episode: _Episode | None = None
        self._round_task: asyncio.Task[tuple[dict, float, bool, bool, dict]] | None = None
        self._frames: asyncio.Queue[_FrameRequest] | None = None
        self._waiting: _FrameRequest | None = None
        self._last_observation: dict[str, Any] | None = None
        # The last top-level (depth 0) observation: what an episode ends on, even from inside a frame.
        self._top_observation: dict[str, Any] | None = None

    def _text_limits(self) -> dict[str, int]:
        """Returns the most UTF-8 bytes each text entry of an observation can take."""
        id_width = len(str(len(self.pool.specs)))  # the widest shown id, the conductor's included
        lines = []
        for spec in self.pool.specs:
            about = f" ({spec.description})" if spec.description else ""
            lines.append("Model id " + "9" * id_width + (f": {spec.model or spec.name}{about}" if self.show_names else ""))
        if self.self_call:
            lines.append("Model id " + "9" * id_width + ": yourself (the Conductor; its step gets its own workflow)")
        workers = utf8_size("\n".join(lines))
        history_round = len(f"Round {self.max_rounds} workflow:\n\nRound {self.max_rounds} answer:\n\n\n") + 2 * HISTORY_PART_BYTES
        history = (self.max_rounds - 1) * history_round
        # Every worked example (a superset of any selection) and the text that comes with a history.
        fixed = utf8_size(
            conductor_prompt("", "", examples=WORKED_EXAMPLES, max_steps=self.max_steps, access=self.access, history="-")
        )
        return {
            "prompt": fixed + self.max_question_bytes + workers + history,
            "question": self.max_question_bytes,
            "workers": workers,
            "history": history,
        }

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
            workflow = shorten_text(done.workflow.render(), HISTORY_PART_BYTES)
            answer = shorten_text(done.answer, HISTORY_PART_BYTES)
            blocks.append(f"Round {k + 1} workflow:\n{workflow}\nRound {k + 1} answer:\n{answer}")
        return "\n\n".join(blocks)

    def _observation(self, question: str, depth: int) -> dict[str, Any]:
        assert self._episode is not None
        workers = "\n".join(self._worker_lines(depth))
        history = self._history_text() if depth == 0 else ""
        question = shorten_text(question, self.max_question_bytes)
        prompt = conductor_prompt(
            question,
            workers,
            examples=select_examples(self._episode.problem.domain, self.examples, self.num_examples),
            max_steps=self.max_steps,
            access=self.access,
            history=history,
        )
        observation = {
            "prompt": prompt,
            "question": question,
            "workers": workers,
            "history": history,
            "round": len(self._episode.rounds) if depth == 0 else 0,
            "depth": depth,
        }
        for name, limit in self.text_limits.items():
            if utf8_size(observation[name]) > limit:  # a bug in the bounds above, never the policy's fault
                raise RuntimeError(f"observation {name!r} is {utf8_size(observation[name])} UTF-8 bytes, over its bound {limit}")
        if depth == 0:
            self._top_observation = dict(observation)
        return observation

    # ----------------------------------------------------------------------------- reset

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """Starts an episode.

        Args:
            seed: Seeds the problem choice, the sub-pool and the workers' sampling.
            options: ``{"problem_id": id}`` or ``{"problem_index": i}`` (``0 <= i <`` the number
                of problems in the split) picks the problem (so a GRPO group can share one
                question); otherwise it is drawn with the seed.

        Returns:
            The observation and ``info`` (a :class:`~conductor_env.info.StepInfo` with the
            problem's ``problem_id``, ``domain`` and ``worker_map``; the rest empty).

        Raises:
            KeyError: For an unknown ``problem_id``.
            IndexError: For a ``problem_index`` outside the split (the message names the range).
            ValueError: When the problem's question is longer than ``max_question_bytes``.
        """
        super().reset(seed=seed)
        self._cancel_round()
        options = options or {}
        if "problem_id" in options:
            problem = find_problem(self.problems, str(options["problem_id"]))
        elif "problem_index" in options:
            problem = self.problems[self._problem_index(options["problem_index"])]
        else:
            problem = self.problems[int(self.np_random.integers(len(self.problems)))]
        if utf8_size(problem.question) > self.max_question_bytes:
            raise ValueError(
                f"the question of problem {problem.id!r} is {utf8_size(problem.question)} UTF-8 bytes, more than the "
                f"observation space holds (max_question_bytes={self.max_question_bytes}); pass a larger max_question_bytes"
            )
        episode_seed = int(self.np_random.integers(2**31))
        shown = self.pool.sample_subpool(random.Random(episode_seed), self.subpool_size)
        self._episode = _Episode(problem=problem, shown=shown, seed=episode_seed)
        observation = self._observation(problem.question, depth=0)
        self._last_observation = observation
        return observation, self._base_info(0)

    def _problem_index(self, value: Any) -> int:
        count = len(self.problems)
        try:
            index = operator.index(value)
        except TypeError:
            raise TypeError(f"problem_index must be an int, got {value!r}") from None
        if not 0 <= index < count:
            split = self.split if self.split is not None else self.suite.default_split
            raise IndexError(f"problem_index {index} is out of range: split {split!r} of {self.suite.name!r} has problems 0 to {count - 1}")
        return index

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
            returned observation is the frame's (``depth > 0``) with reward 0 and
            ``info["frame_depth"]`` its depth, and the next action is that frame's sub-workflow.
            When the episode ends, the observation is the last top-level one (``depth`` 0).

        Raises:
            RuntimeError: When called before :meth:`reset` or after the episode ended.
        """
        if self._episode is None or self._episode.done:
            raise RuntimeError("call reset() before step() (the episode is over or never started)")
        if not self.self_call:  # no frames can open: run the round inline (no extra tasks)
            self._frames = None
            result = await self._play_round(action)
            self._last_observation = result[0]
            return _typed(result)
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
            info = self._base_info(len(self._episode.rounds))
            info.update(frame_depth=request.depth, frames=list(self._episode.frames))
            return observation, 0.0, False, False, info
        result = self._round_task.result()
        self._round_task = None
        self._last_observation = result[0]
        return _typed(result)

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
            info.update(answer=previous.answer, correct=previous.score.correct, score=previous.score.score, reason="kept the previous answer", test_set=previous.score.test_set)
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
            return self._end_observation(), 0.0, False, True, info
        try:
            score = await self.suite.averify(episode.problem, execution.answer)
        except VerifierError as error:
            # Raised only where grading infrastructure failed (a sandbox died, the daemon is gone):
            # not the answer's fault, so flag it like a worker outage instead of scoring it wrong.
            info.update(answer=execution.answer, infra_error=str(error), reason="verifier failure (not scored)")
            episode.done = True
            return self._end_observation(), 0.0, False, True, info
        except Exception as error:  # noqa: BLE001 - a grader failure must not crash the RL loop
            # Anything else failed while reading or comparing the answer. Leaving it unscored would
            # make crashing the grader an escape from a wrong-answer reward, so it is scored wrong.
            logger.warning("verifier of %s raised on an answer: %r", episode.problem.id, error)
            score = Score(False, 0.0, f"the answer could not be graded ({type(error).__name__}: {error})"[:500])
        reward = self.reward_scheme(parsed=True, correct=score.correct, score=score.score, cost_usd=execution.cost_usd)
        episode.rounds.append(_Round(workflow=workflow, answer=execution.answer, score=score, reward=reward, execution=execution))
        info.update(answer=execution.answer, correct=score.correct, score=score.score, reason=score.reason, test_set=score.test_set)
        return self._finish(info, reward, terminated=len(episode.rounds) >= self.max_rounds)

    def _base_info(self, round_index: int) -> StepInfo:
        assert self._episode is not None
        return {
            "answer": "",
            "correct": False,
            "score": 0.0,
            "reason": "",
            "test_set": "",  # which tests graded the answer: "public+private", "public" (statement examples only) or ""
            "parse_error": "",
            "parse_detail": "",
            "workflow": Workflow((), access_mode=self.access).to_dict(),
            "trace": [],
            "cost_usd": 0.0,
            "tokens": 0,
            "wall_s": 0.0,
            "infra_error": "",
            "problem_id": self._episode.problem.id,
            "domain": self._episode.problem.domain,
            "round": round_index,
            "round_rewards": [],
            "round_credit": [],
            "frames": [],
            "frame_depth": 0,
            "worker_map": self.worker_map(),
        }

    def _end_observation(self) -> dict[str, Any]:
        """Returns the observation an episode ends on: the last top-level one (a new dict, so
        callers may keep and mutate it), also when the round ended inside a self-call frame."""
        assert self._top_observation is not None
        return dict(self._top_observation)

    def _finish_unparsed(self, info: dict[str, Any], reason: str, detail: str, previous: _Round | None) -> tuple[dict, float, bool, bool, dict]:
        assert self._episode is not None
        info.update(parse_error=reason, parse_detail=detail, reason=f"unparsed workflow: {reason}", frames=list(self._episode.frames))
        if previous is not None:  # a later round's bad workflow loses nothing already answered
            info.update(answer=previous.answer, correct=previous.score.correct, score=previous.score.score, test_set=previous.score.test_set)
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
        observation = self._observation(episode.problem.question, depth=0) if not terminated else self._end_observation()
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

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the env with its episode in progress; ``copy.deepcopy`` uses this too.

        The copy continues the episode from where this env stands (problem, sub-pool, finished
        rounds, random state), so both can step on from the same point. Process-local resources
        are not copied: the copy's pool builds its own worker clients and its suite starts its own
        sandbox on first use, and closing one env never closes the other's.

        Raises:
            TypeError: While a self-call frame waits for its sub-workflow: the suspended round is
                running code, not state. Copy before the step that opens the frame or after the
                round ends.
        """
        if self._waiting is not None or (self._round_task is not None and not self._round_task.done()):
            raise TypeError(
                "cannot copy a ConductorEnv while a self-call frame waits for its sub-workflow; "
                "copy it before the step that opens the frame or after the round ends"
            )
        state = self.__dict__.copy()
        state.update(_round_task=None, _frames=None, _waiting=None)
        return state
