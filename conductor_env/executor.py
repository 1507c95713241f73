"""Async execution of one workflow.

Steps are scheduled as a DAG over their access lists: a step starts as soon as every step it may
read has finished, so steps that cannot see each other run concurrently. Because each step's
input depends only on the steps it reads, the results equal those of running the steps in order.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Awaitable, Callable, Literal, Sequence, cast

from conductor_env.calls import Completion, WorkerError
from conductor_env.prompts import VisibleStep, worker_message
from conductor_env.templates import PromptTemplate
from conductor_env.workflow import Step, Workflow

if TYPE_CHECKING:
    from conductor_env.info import TraceInfo

AnswerFrom = Literal["last", "last_nonempty"]


@dataclass
class StepTrace:
    """What one step did and cost.

    Attributes:
        index: Step index in the workflow.
        worker: Worker id as shown to the Conductor.
        worker_name: The pool's name for the worker (for analysis; never shown to the Conductor).
        subtask: The instruction given.
        visible: Indices of the earlier steps the worker read.
        response: The worker's response ("" if the step failed).
        prompt_tokens: Input tokens billed.
        completion_tokens: Output tokens billed.
        cost_usd: Price of the step.
        latency_s: Duration of the successful call.
        start_s: Start time relative to the start of the workflow.
        end_s: End time relative to the start of the workflow.
        attempts: Calls made, including retries.
        error: ``None``, or why the step failed after retries.
    """

    index: int
    worker: int
    worker_name: str
    subtask: str
    visible: tuple[int, ...]
    response: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    start_s: float = 0.0
    end_s: float = 0.0
    attempts: int = 0
    error: str | None = None

    def to_dict(self) -> TraceInfo:
        """Returns a JSON-friendly copy."""
        record = dict(vars(self))  # shallow: every field is a scalar or a tuple of ints
        record["visible"] = list(self.visible)
        return cast("TraceInfo", record)


@dataclass
class Execution:
    """The outcome of one workflow.

    Attributes:
        traces: One trace per step, in step order (steps never started are absent).
        answer: The final answer (see ``answer_from`` of :func:`execute_workflow`).
        infra_error: ``None``, or the error of a step that kept failing after retries.
        wall_s: Wall time of the whole workflow.
    """

    traces: list[StepTrace] = field(default_factory=list)
    answer: str = ""
    infra_error: str | None = None
    wall_s: float = 0.0

    @property
    def cost_usd(self) -> float:
        """Total worker spend."""
        return sum(t.cost_usd for t in self.traces)

    @property
    def tokens(self) -> int:
        """Total prompt plus completion tokens."""
        return sum(t.prompt_tokens + t.completion_tokens for t in self.traces)


async def _first_failure_in_step_order(
    tasks: Sequence[asyncio.Task[StepTrace]],
) -> tuple[int, WorkerError] | None:
    """Waits for the step tasks and returns the lowest-numbered step that failed, if any.

    When step ``j`` fails, steps after ``j`` are cancelled but steps before it are awaited, since
    one of them may fail too and then it is the one to report. Steps only read earlier steps, so
    every step before the reported one ran to completion.

    Args:
        tasks: One task per step, in step order.

    Returns:
        ``None`` when every step succeeded, else ``(index, error)`` of the lowest failing step.

    Raises:
        Exception: Anything a step raised that is not a :class:`WorkerError` (a bug).
    """
    position = {task: index for index, task in enumerate(tasks)}
    pending: set[asyncio.Task[StepTrace]] = set(tasks)
    failure: tuple[int, WorkerError] | None = None
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.cancelled():
                continue
            error = task.exception()
            if error is None:
                continue
            if not isinstance(error, WorkerError):
                raise error
            if failure is None or position[task] < failure[0]:
                failure = (position[task], error)
        if failure is not None:
            for task in pending:
                if position[task] > failure[0]:
                    task.cancel()
    return failure


#: ``(step_index, step, message) -> (completion, attempts)``: runs one step's worker call,
#: including retries; raises :class:`WorkerError` when the worker stays down.
StepCaller = Callable[[int, Step, str], Awaitable[tuple[Completion, int]]]
#: Maps a shown worker id to the pool's name for it (traces only).
WorkerNamer = Callable[[int], str]


async def execute_workflow(
    workflow: Workflow,
    *,
    question: str,
    call_step: StepCaller,
    worker_name: WorkerNamer = str,
    previous_steps: Sequence[VisibleStep] = (),
    answer_from: AnswerFrom = "last",
    worker_template: str | PromptTemplate = "default",
) -> Execution:
    """Runs a workflow, each step as soon as the steps it reads are done.

    Args:
        workflow: The parsed workflow.
        question: The overall task shown to every worker.
        call_step: Performs one step's worker call (see :data:`StepCaller`).
        worker_name: Names workers in traces.
        previous_steps: The previous round's steps; steps with ``"all"`` access see them first.
        answer_from: ``"last"`` (the paper: the last step's response) or ``"last_nonempty"``
            (the paper's evaluation: the last non-empty response).
        worker_template: The worker template that words each step's user message (a name, a
            path or the template; see :mod:`conductor_env.templates`).

    Returns:
        The execution. On a worker failure, ``infra_error`` names the lowest-numbered step that
        failed: steps before it always run to the end, steps after it are cancelled and left out
        of the traces, so the outcome does not depend on which concurrent call failed first (a
        recorded run replays the same way).
    """
    run = _WorkflowRun(question, call_step, worker_name, previous_steps, worker_template)
    for index, step in enumerate(workflow.steps):
        run.tasks.append(asyncio.ensure_future(run.step(index, step)))
    try:
        failure = await _first_failure_in_step_order(run.tasks)
    finally:
        for task in run.tasks:
            task.cancel()
        await asyncio.gather(*run.tasks, return_exceptions=True)
    return run.outcome(failure, answer_from)


class _WorkflowRun:
    """One :func:`execute_workflow` call: its step tasks and the traces they fill in.

    Args:
        question: The overall task shown to every worker.
        call_step: Performs one step's worker call.
        worker_name: Names workers in traces.
        previous_steps: The previous round's steps, seen first by steps with ``"all"`` access.
        worker_template: Words each step's user message.
    """

    def __init__(
        self,
        question: str,
        call_step: StepCaller,
        worker_name: WorkerNamer,
        previous_steps: Sequence[VisibleStep],
        worker_template: str | PromptTemplate = "default",
    ) -> None:
        self.question = question
        self.worker_template = worker_template
        self.call_step = call_step
        self.worker_name = worker_name
        self.previous_steps = previous_steps
        self.started = time.perf_counter()
        self.traces: dict[int, StepTrace] = {}
        self.tasks: list[asyncio.Task[StepTrace]] = []

    def _elapsed(self) -> float:
        return time.perf_counter() - self.started

    async def step(self, index: int, step: Step) -> StepTrace:
        """Runs step ``index`` once the steps it reads are done and returns its trace.

        Raises:
            WorkerError: When the worker stays down (the trace, kept, records the error).
        """
        if step.access:
            await asyncio.gather(*(self.tasks[j] for j in step.access))
        traces = self.traces
        visible = list(self.previous_steps) if step.access_all else []
        visible += [VisibleStep(traces[j].worker, traces[j].subtask, traces[j].response) for j in step.access]
        trace = StepTrace(
            index=index,
            worker=step.worker,
            worker_name=self.worker_name(step.worker),
            subtask=step.subtask,
            visible=step.access,
            start_s=self._elapsed(),
        )
        traces[index] = trace
        try:
            message = worker_message(self.question, step.subtask, visible, self.worker_template)
            completion, attempts = await self.call_step(index, step, message)
        except WorkerError as error:
            trace.attempts = getattr(error, "attempts", 1)
            trace.error = str(error) or type(error).__name__
            trace.end_s = self._elapsed()
            raise
        trace.response = completion.text
        trace.prompt_tokens = completion.prompt_tokens
        trace.completion_tokens = completion.completion_tokens
        trace.cost_usd = completion.cost_usd
        trace.latency_s = completion.latency_s
        trace.attempts = attempts
        trace.end_s = self._elapsed()
        return trace

    def outcome(self, failure: tuple[int, WorkerError] | None, answer_from: AnswerFrom) -> Execution:
        """Builds the execution once every step task has ended.

        Args:
            failure: The lowest-numbered failed step and its error, or ``None``.
            answer_from: Which response is the answer (see :func:`execute_workflow`).
        """
        traces = self.traces
        execution = Execution()
        if failure is None:
            execution.traces = [traces[i] for i in sorted(traces)]
        else:
            failed_index, error = failure
            # Later steps were cancelled at a point that depends on timing; keep only what replays.
            execution.traces = [traces[i] for i in sorted(traces) if i <= failed_index]
            failed = traces[failed_index]
            where = f"step {failed_index} (worker {failed.worker}, {failed.worker_name})"
            execution.infra_error = f"{where} failed after {getattr(error, 'attempts', 1)} attempt(s): {error}"
        execution.wall_s = self._elapsed()
        if execution.infra_error is None and execution.traces:
            execution.answer = _answer([t.response for t in execution.traces], answer_from)
        return execution


def _answer(responses: Sequence[str], answer_from: AnswerFrom) -> str:
    """Picks the final answer among the steps' responses, in step order."""
    if answer_from == "last_nonempty":
        return next((r for r in reversed(responses) if r.strip()), "")
    return responses[-1]
