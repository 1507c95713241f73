"""One round of an episode: parse the workflow, run it on the workers, verify, reward.

:class:`RoundPlayer` holds what every round of an env shares (the suite, the pool, the options,
the reward scheme); :class:`EpisodeState` holds what one episode has done so far. A round returns
its ``info``, reward and end flags; the env turns them into a Gymnasium step result.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any

from conductor_env.calls import CallContext, Completion, SimulationOracle, WorkerError, WorkerPoolLike
from conductor_env.executor import Execution, execute_workflow
from conductor_env.frames import FrameChannel, FrameParseError
from conductor_env.info import FrameInfo, StepInfo, empty_info
from conductor_env.observation import EPISODE_KEY_CHARS, HistoryRound
from conductor_env.options import EnvOptions
from conductor_env.prompts import VisibleStep, worker_chat
from conductor_env.rewards import RewardScheme, round_credit
from conductor_env.suite import Problem, Score, TaskSuite, VerifierError
from conductor_env.verdicts import PublicVerdict
from conductor_env.workflow import Step, Workflow, WorkflowError, parse_workflow

logger = logging.getLogger(__name__)


@dataclass
class Round:
    """What one finished round produced (for history, rewards and the next round's context)."""

    workflow: Workflow
    answer: str
    score: Score
    reward: float
    execution: Execution | None = None


@dataclass
class EpisodeState:
    """The episode in progress: its problem, its pool (the env's, or a generated pool's draw),
    shown sub-pool, seed and finished rounds.

    ``draw`` (the reset option ``worker_draw``) picks another independent set of worker samples
    for the same problem and sub-pool; 0 is the episode seed's own.
    """

    problem: Problem
    pool: WorkerPoolLike
    shown: tuple[int, ...]
    seed: int
    options: EnvOptions
    draw: int = 0
    rounds: list[Round] = field(default_factory=list)
    frames: list[FrameInfo] = field(default_factory=list)
    done: bool = False

    @property
    def key(self) -> str:
        """The episode's name in observations: a hash of its problem, seed and worker draw (16 hex digits)."""
        text = f"{self.problem.id}\0{self.seed}\0{self.draw}"
        return hashlib.blake2b(text.encode(), digest_size=EPISODE_KEY_CHARS // 2).hexdigest()

    def conductor_id(self, depth: int) -> int | None:
        """The Conductor's own worker id in a frame at ``depth`` (``None``: it cannot be called)."""
        return len(self.shown) if self.options.self_call and depth < self.options.max_depth else None

    def shown_count(self, depth: int) -> int:
        """How many worker ids a workflow at ``depth`` may use."""
        return len(self.shown) + (self.conductor_id(depth) is not None)

    def spent_usd(self) -> float:
        """What the finished rounds' workers cost, in USD (a kept or unparsed round costs nothing)."""
        return sum(done.execution.cost_usd for done in self.rounds if done.execution is not None)

    def history(self) -> list[HistoryRound]:
        """The finished rounds as the next round's observation shows them."""
        return [HistoryRound(done.workflow.render(), done.answer) for done in self.rounds]

    def worker_map(self, names: list[str]) -> dict[int, str]:
        """Shown id -> pool worker name (``names`` in canonical order), ``"conductor"`` for its own id."""
        mapping = {i: names[index] for i, index in enumerate(self.shown)}
        conductor = self.conductor_id(0)
        if conductor is not None:
            mapping[conductor] = "conductor"
        return mapping


#: A round's outcome: ``(info, reward, terminated, truncated)``.
RoundOutcome = tuple[StepInfo, float, bool, bool]


class RoundPlayer:
    """Plays the rounds of one env's episodes.

    Args:
        suite: Verifies answers.
        options: The env's options.

    Each episode's steps run on its own pool (:attr:`EpisodeState.pool`).
    """

    def __init__(self, suite: TaskSuite, options: EnvOptions) -> None:
        self.suite = suite
        self.options = options
        self.reward_scheme = RewardScheme(options.reward, options.price_weight)

    def base_info(self, episode: EpisodeState, round_index: int) -> StepInfo:
        """Returns the ``info`` of a step that has produced nothing yet."""
        names = [spec.name for spec in episode.pool.specs]
        return empty_info(
            problem_id=episode.problem.id,
            domain=episode.problem.domain,
            round_index=round_index,
            access=self.options.access,
            worker_map=episode.worker_map(names),
        )

    async def play(self, episode: EpisodeState, action: str, frames: FrameChannel | None) -> RoundOutcome:
        """Plays one round from the Conductor's action.

        Args:
            episode: The episode; the finished round is appended to it.
            action: The workflow text.
            frames: Where self-call frames are posted (``None`` without self-calls).

        Returns:
            The round's ``info``, reward, ``terminated`` and ``truncated``.
        """
        round_index = len(episode.rounds)
        previous = episode.rounds[-1] if episode.rounds else None
        info = self.base_info(episode, round_index)
        try:
            workflow = parse_workflow(
                action,
                num_workers=episode.shown_count(0),
                max_steps=self.options.max_steps,
                access=self.options.access,
                allow_empty=previous is not None,
            )
        except WorkflowError as error:
            return self._unparsed(episode, info, error.reason, error.detail, previous)
        info["workflow"] = workflow.to_dict()
        if workflow.is_empty:
            assert previous is not None
            return self._keep_previous(episode, info, previous)
        try:
            execution = await execute_workflow(
                workflow,
                question=episode.problem.question,
                call_step=self._caller(episode, 0, round_index, frames),
                worker_name=self._worker_name(episode, 0),
                previous_steps=self._visible_previous(previous),
                answer_from=self.options.answer_from,
                worker_template=self.options.worker_template,
            )
        except FrameParseError as error:
            detail = f"in the self-call frame at depth {error.depth}: {error.error.detail}"
            return self._unparsed(episode, info, error.error.reason, detail, previous)
        info.update({"trace": [t.to_dict() for t in execution.traces], "cost_usd": execution.cost_usd, "tokens": execution.tokens, "wall_s": execution.wall_s, "frames": list(episode.frames)})
        if execution.infra_error is not None:
            return self._infra_failure(episode, info, execution.infra_error, "worker failure (not scored)")
        return await self._verified(episode, info, workflow, execution)

    async def _verified(self, episode: EpisodeState, info: StepInfo, workflow: Workflow, execution: Execution) -> RoundOutcome:
        try:
            score = await self.suite.averify(episode.problem, execution.answer)
        except VerifierError as error:
            # Raised only where grading infrastructure failed (a sandbox died, the daemon is gone):
            # not the answer's fault, so flag it like a worker outage instead of scoring it wrong.
            info["answer"] = execution.answer
            return self._infra_failure(episode, info, str(error), "verifier failure (not scored)")
        except Exception as error:  # noqa: BLE001 - a grader failure must not crash the RL loop
            # Anything else failed while reading or comparing the answer. Leaving it unscored would
            # make crashing the grader an escape from a wrong-answer reward, so it is scored wrong.
            logger.warning("verifier of %s raised on an answer: %r", episode.problem.id, error)
            score = Score(False, 0.0, f"the answer could not be graded ({type(error).__name__}: {error})"[:500])
        # A cost-aware reward charges the episode's whole spend: an answer bought in an earlier round
        # and revised (or kept, below) in a later one is not made cheaper by the later round.
        spent = episode.spent_usd() + execution.cost_usd
        reward = self.reward_scheme(parsed=True, correct=score.correct, score=score.score, cost_usd=spent)
        episode.rounds.append(Round(workflow, execution.answer, score, reward, execution))
        terminated = len(episode.rounds) >= self.options.max_rounds
        # Before the episode ends, only the public verdict: the grader's reason may quote the gold
        # answer or a hidden test, which the next round's workflow could copy (see conductor_env.verdicts).
        verdict = PublicVerdict.of(score)
        reason = score.reason if terminated else verdict.reason
        info.update({"answer": execution.answer, "correct": verdict.correct, "score": verdict.score, "reason": reason, "test_set": verdict.test_set})
        return self._finish(episode, info, reward, terminated=terminated)

    @staticmethod
    def _visible_previous(previous: Round | None) -> list[VisibleStep]:
        if previous is None or previous.execution is None:
            return []
        return [VisibleStep(t.worker, t.subtask, t.response) for t in previous.execution.traces]

    def _keep_previous(self, episode: EpisodeState, info: StepInfo, previous: Round) -> RoundOutcome:
        """Three empty lists in a later round: the previous answer is final."""
        score = previous.score
        reward = self.reward_scheme(parsed=True, correct=score.correct, score=score.score, cost_usd=episode.spent_usd())
        episode.rounds.append(Round(previous.workflow, previous.answer, score, reward))
        info.update({"answer": previous.answer, "correct": score.correct, "score": score.score, "reason": "kept the previous answer", "test_set": score.test_set})
        return self._finish(episode, info, reward, terminated=True)

    def _infra_failure(self, episode: EpisodeState, info: StepInfo, error: str, reason: str) -> RoundOutcome:
        info.update({"infra_error": error, "reason": reason, "round_reasons": self._round_reasons(episode)})
        episode.done = True
        return info, 0.0, False, True

    def _unparsed(self, episode: EpisodeState, info: StepInfo, reason: str, detail: str, previous: Round | None) -> RoundOutcome:
        info.update({"parse_error": reason, "parse_detail": detail, "reason": f"unparsed workflow: {reason}", "frames": list(episode.frames)})
        if previous is not None:  # a later round's bad workflow loses nothing already answered
            info.update({"answer": previous.answer, "correct": previous.score.correct, "score": previous.score.score, "test_set": previous.score.test_set})
        episode.rounds.append(Round(Workflow(()), info["answer"], Score(info["correct"], info["score"], info["reason"]), 0.0))
        return self._finish(episode, info, 0.0, terminated=True)

    def _finish(self, episode: EpisodeState, info: StepInfo, reward: float, *, terminated: bool) -> RoundOutcome:
        rewards = [r.reward for r in episode.rounds]
        info["round_rewards"] = rewards
        info["round_credit"] = round_credit(rewards, self.options.round_discount)
        if terminated:
            info["round_reasons"] = self._round_reasons(episode)
        episode.done = terminated
        return info, float(reward), terminated, False

    @staticmethod
    def _round_reasons(episode: EpisodeState) -> list[str]:
        """The grader's reason for every finished round: for the step that ends the episode only."""
        return [done.score.reason for done in episode.rounds]

    # ----------------------------------------------------------------- calling the workers

    def _context(self, problem: Problem) -> CallContext:
        """The workers' call context: the problem's gold and wrong responses, for simulated workers only."""
        oracle = SimulationOracle(problem.domain, self.suite.reference_response(problem), self.suite.wrong_response(problem))
        return CallContext(oracle=oracle)

    def _worker_name(self, episode: EpisodeState, depth: int):
        shown, conductor = episode.shown, episode.conductor_id(depth)
        specs = episode.pool.specs
        return lambda worker: "conductor" if worker == conductor else specs[shown[worker]].name

    def _caller(self, episode: EpisodeState, depth: int, round_index: int, frames: FrameChannel | None):
        """Returns the :data:`~conductor_env.executor.StepCaller` for a frame at ``depth``."""
        options, context, conductor = self.options, self._context(episode.problem), episode.conductor_id(depth)

        async def call_step(index: int, step: Step, message: str) -> tuple[Completion, int]:
            if step.worker == conductor:
                assert frames is not None
                return await self._self_call(episode, message, depth + 1, round_index, frames), 1
            messages: list[dict[str, Any]] = worker_chat(message, options.worker_template, prefill=options.prefill)
            key = (episode.seed, depth, round_index, index) if not episode.draw else (episode.seed, episode.draw, depth, round_index, index)
            seed = hash(key) & 0x7FFFFFFF
            return await episode.pool.call(
                episode.shown[step.worker],
                messages,
                retry=options.retry,
                max_tokens=options.worker_max_tokens,
                temperature=options.worker_temperature,
                seed=seed,
                context=context,
            )

        return call_step

    async def _self_call(self, episode: EpisodeState, question: str, depth: int, round_index: int, frames: FrameChannel) -> Completion:
        """Opens a frame at ``depth``: the policy's sub-workflow for ``question`` answers the step."""
        action = await frames.ask(question, depth)
        try:
            workflow = parse_workflow(action, num_workers=episode.shown_count(depth), max_steps=self.options.max_steps, access=self.options.access)
        except WorkflowError as error:
            raise FrameParseError(error, depth) from error
        execution = await execute_workflow(
            workflow,
            question=question,
            call_step=self._caller(episode, depth, round_index, frames),
            worker_name=self._worker_name(episode, depth),
            answer_from=self.options.answer_from,
            worker_template=self.options.worker_template,
        )
        episode.frames.append({"depth": depth, "workflow": workflow.to_dict(), "trace": [t.to_dict() for t in execution.traces], "answer": execution.answer})
        if execution.infra_error is not None:
            raise WorkerError(f"in a self-call frame: {execution.infra_error}", retryable=False)
        return Completion(
            text=execution.answer,
            prompt_tokens=sum(t.prompt_tokens for t in execution.traces),
            completion_tokens=sum(t.completion_tokens for t in execution.traces),
            cost_usd=execution.cost_usd,
            latency_s=execution.wall_s,
        )
