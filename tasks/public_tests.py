"""Problems graded only on public tests, and the opt-in that training on them needs.

A code problem whose only tests are the examples printed in its statement is not verified by
them: a program that looks the examples up and prints their outputs passes, and RL finds such
programs. These problems are marked everywhere:

- ``Problem.metadata["test_set"]`` is ``"public"`` (``"public+private"`` when hidden tests exist);
- every :class:`~conductor_env.suite.Score` of them, ``info["test_set"]`` of the env step
  and the ``test_set`` field of evaluation records say which tests graded the answer;
- ``conductor-env report`` flags the policies whose episodes were graded on public tests only.

Evaluating on them is allowed (and marked). Training on them needs the suite option
``allow_public_only=True``: without it :func:`check_training_use` raises
:class:`PublicOnlyError` naming the option; with it, it warns once per suite
(:class:`PublicOnlyWarning`).

Problems whose tests run where the program could forge their verdict (BigCodeBench tasks that
load the real ``ctypes``: docs/THREAT_MODEL.md) are *unverified*: ``test_set`` is
``"unverified"``, they are marked alike, and training on them needs ``allow_unverified=True``.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Iterable, Sequence

from conductor_env.suite import Problem, TaskSuite
from conductor_env.tasks.registry import SuiteError

__all__ = [
    "OPT_IN",
    "UNVERIFIED",
    "UNVERIFIED_OPT_IN",
    "PUBLIC_AND_PRIVATE",
    "PUBLIC_ONLY",
    "PublicOnlyError",
    "PublicOnlyWarning",
    "check_training_use",
    "graded_test_set",
    "public_only_problems",
    "resolve_opt_in",
]

#: ``test_set`` of a problem graded on its public tests and hidden (private) tests.
PUBLIC_AND_PRIVATE = "public+private"
#: ``test_set`` of a problem graded only on the examples printed in its statement.
PUBLIC_ONLY = "public"
#: The suite option that allows training on public-only problems.
OPT_IN = "allow_public_only"
#: ``test_set`` of a problem whose tests run where the program could forge their verdict.
UNVERIFIED = "unverified"
#: The suite option that allows training on unverified problems.
UNVERIFIED_OPT_IN = "allow_unverified"

_EXAMPLES_SHOWN = 3
_warned: "weakref.WeakSet[TaskSuite]" = weakref.WeakSet()
_warned_unverified: "weakref.WeakSet[TaskSuite]" = weakref.WeakSet()


class PublicOnlyError(SuiteError):
    """Training would use problems graded only on public tests, and the suite was not told it may."""


class PublicOnlyWarning(UserWarning):
    """Training uses problems graded only on public tests (the suite was told it may)."""


def graded_test_set(problem: Problem) -> str:
    """Returns which tests grade a problem: ``"public+private"``, ``"public"`` or ``""`` (no tests)."""
    return str(problem.metadata.get("test_set") or "")


def public_only_problems(problems: Iterable[Problem]) -> list[Problem]:
    """Returns the problems graded only on the examples printed in their statement."""
    return [problem for problem in problems if graded_test_set(problem) == PUBLIC_ONLY]


def resolve_opt_in(value: object) -> bool:
    """Checks the ``allow_public_only`` suite option.

    Args:
        value: The option's value.

    Returns:
        The value, a bool.

    Raises:
        SuiteError: For anything but ``True`` or ``False`` (a string like ``"no"`` must not opt in).
    """
    if not isinstance(value, bool):
        raise SuiteError(f"{OPT_IN} must be true or false, got {value!r}")
    return value


def _examples(problems: Sequence[Problem]) -> str:
    shown = ", ".join(problem.id for problem in problems[:_EXAMPLES_SHOWN])
    return shown + (", ..." if len(problems) > _EXAMPLES_SHOWN else "")


def check_training_use(suite: TaskSuite, problems: Iterable[Problem], *, what: str) -> None:
    """Refuses training on public-only problems unless the suite opted in; then warns once.

    Args:
        suite: The suite the problems come from (its ``allow_public_only`` is the opt-in).
        problems: The problems training will draw.
        what: What is being trained on, for the messages (``"Conductor-Mix-v0 split 'train'"``).

    Raises:
        PublicOnlyError: When some problems are public-only and ``suite.allow_public_only`` is
            false; the message names the option and how to set it.
    """
    problems = list(problems)
    _check_unverified(suite, problems, what)
    flagged = public_only_problems(problems)
    if not flagged:
        return
    consequence = (
        f"{what} holds {len(flagged)} problem(s) graded only on public tests, the examples printed in "
        f"the statement ({_examples(flagged)}): a program that prints those examples' outputs is paid as correct"
    )
    if not getattr(suite, "allow_public_only", False):
        raise PublicOnlyError(
            f"{consequence}. Training on them needs an explicit opt-in: suite_options={{'{OPT_IN}': True}} "
            f"(--suite-option {OPT_IN}=true); or load rows with hidden tests (private_test_cases, as the "
            "hub's livecodebench/code_generation_lite has)."
        )
    if suite not in _warned:
        _warned.add(suite)
        warnings.warn(f"{consequence}; allowed by {OPT_IN}=True.", PublicOnlyWarning, stacklevel=2)


def _check_unverified(suite: TaskSuite, problems: Sequence[Problem], what: str) -> None:
    flagged = [problem for problem in problems if graded_test_set(problem) == UNVERIFIED]
    if not flagged:
        return
    consequence = (
        f"{what} holds {len(flagged)} unverified problem(s) ({_examples(flagged)}): their tests run where the program can reach raw memory (the real ctypes), so a program could forge its verdict"
    )
    if not getattr(suite, UNVERIFIED_OPT_IN, False):
        raise PublicOnlyError(
            f"{consequence}. Training on them needs an explicit opt-in: suite_options={{'{UNVERIFIED_OPT_IN}': True}} "
            f"(--suite-option {UNVERIFIED_OPT_IN}=true); see docs/THREAT_MODEL.md (BigCodeBench)."
        )
    if suite not in _warned_unverified:
        _warned_unverified.add(suite)
        warnings.warn(f"{consequence}; allowed by {UNVERIFIED_OPT_IN}=True.", PublicOnlyWarning, stacklevel=3)
