"""The task-suite contract the env consumes: problems with gold answers or tests, a verifier for each.

Suites live in :mod:`conductor_env.tasks`; this core module holds only the interface, so the env
knows nothing of any concrete suite."""

from __future__ import annotations

import abc
import asyncio
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence


@dataclass(frozen=True)
class Problem:
    """One verifiable question.

    Attributes:
        id: Stable identifier, unique within a suite (``reset(options={"problem_id": id})``).
        question: The full text shown to the Conductor and the workers.
        domain: Coarse domain used for prompts and simulated skills: ``math``, ``code``,
            ``choice`` (multiple choice), ``reasoning`` or a suite's own.
        answer: Gold answer (string, number or choice letter) when the suite grades answers.
        tests: Tests when the suite grades programs (a list of ``{"input", "output"}`` dicts, or
            a test script), else ``None``.
        metadata: Anything else the suite needs (starter code, func_name, subject, ...).
    """

    id: str
    question: str
    domain: str
    answer: Any = None
    tests: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Score:
    """The verdict on one answer.

    Attributes:
        correct: Whether the answer counts as right (pass@1 for code).
        score: A value in [0, 1] (e.g. the fraction of tests passed); 1.0 when correct.
        reason: A short human-readable explanation (``"match"``, ``"no boxed answer"``, ...).
        test_set: Which tests graded a program: ``"public+private"`` (hidden tests too),
            ``"public"`` (only the examples printed in the statement, which a lookup table of
            them passes; see :mod:`conductor_env.tasks.public_tests`), or ``""`` when no tests
            graded the answer (math, choice and other answer-matching suites).
    """

    correct: bool
    score: float
    reason: str = ""
    test_set: str = ""


class VerifierError(Exception):
    """The verifier could not grade an answer (a sandbox died, a grader crashed).

    It says nothing about the answer, so the env reports it as ``info["infra_error"]`` and
    truncates the episode instead of scoring it as wrong (a false negative would teach the
    policy that a right answer is wrong).
    """


class TaskSuite(abc.ABC):
    """A set of problems and the verifier that grades answers to them.

    Subclasses set :attr:`name`, implement :meth:`problems` and :meth:`verify`, and may override
    :meth:`reference_response` (used by simulated workers and tests) and :meth:`averify`.
    """

    #: Short registry name, e.g. ``"lcb"``.
    name: str = "suite"
    #: Default split for :meth:`problems` when the env is not told otherwise.
    default_split: str = "test"
    #: Whether :meth:`verify` may block (sandbox runs, slow symbolic maths). Suites whose verifier
    #: takes microseconds set it to False so :meth:`averify` skips the thread hop.
    blocking_verify: bool = True
    #: Whether training may use problems graded only on public tests (``metadata["test_set"] ==
    #: "public"``); suites that can hold such problems take it as the ``allow_public_only`` option
    #: (see :func:`conductor_env.tasks.public_tests.check_training_use`).
    allow_public_only: bool = False
    #: Whether the verifier runs the answers as programs, so the suite takes a ``sandbox=`` option.
    #: The env setup reads it from the registered factory (a class, or a function carrying the
    #: attribute) before building the suite; a suite without it runs no code and gets no sandbox.
    runs_code: ClassVar[bool] = False

    @abc.abstractmethod
    def problems(self, split: str | None = None) -> Sequence[Problem]:
        """Returns the problems of a split, in a fixed order.

        Args:
            split: Split name; ``None`` means :attr:`default_split`.

        Returns:
            A sequence of problems (the same order every call).
        """

    @abc.abstractmethod
    def verify(self, problem: Problem, answer: str) -> Score:
        """Grades one answer.

        Args:
            problem: The problem answered.
            answer: The raw final response of the workflow.

        Returns:
            The score. A verifier never raises on bad answers: it returns ``correct=False``
            with a reason.

        Raises:
            VerifierError: When grading itself failed (not the answer's fault).
        """

    async def averify(self, problem: Problem, answer: str) -> Score:
        """Async :meth:`verify`; runs it in a worker thread when :attr:`blocking_verify` is set."""
        if not self.blocking_verify:
            return self.verify(problem, answer)
        return await asyncio.to_thread(self.verify, problem, answer)

    def reference_response(self, problem: Problem) -> str | None:
        """Returns a response text that :meth:`verify` accepts, or ``None`` if unknown.

        Simulated workers answer with it when they "solve" a problem.
        """
        return None

    def wrong_response(self, problem: Problem) -> str:
        """Returns a plausible response that :meth:`verify` rejects (for simulated workers)."""
        return "I am not sure; my best attempt did not reach an answer."

    def close(self) -> None:
        """Releases resources such as sandboxes (default: nothing)."""


def find_problem(problems: Sequence[Problem], problem_id: str) -> Problem:
    """Returns the problem with this id.

    Raises:
        KeyError: With the id and a few valid ids when it is absent.
    """
    for problem in problems:
        if problem.id == problem_id:
            return problem
    sample = ", ".join(p.id for p in problems[:3])
    raise KeyError(f"no problem with id {problem_id!r} (ids look like: {sample})")
