"""Shared plumbing of the suites that grade programs in a sandbox (LiveCodeBench, HumanEval)."""

from __future__ import annotations

import copy
import threading
from typing import Any, Mapping, Sequence, Union

from conductor_env.sandboxes.base import Limits, Report, Sandbox, TestResult
from conductor_env.suite import Score, TaskSuite, VerifierError
from conductor_env.tasks.registry import SuiteError

__all__ = ["SandboxRef", "SandboxedSuite", "resolve_limits", "run_until_failure", "summarize_report"]

#: A sandbox name for :func:`conductor_env.sandboxes.get_sandbox`, or a sandbox instance.
SandboxRef = Union[str, Sandbox]

_MAX_REASON = 500


def resolve_limits(limits: Limits | Mapping[str, Any] | None) -> Limits | None:
    """Returns :class:`Limits` from a ``Limits``, a dict of its fields (from a config), or ``None``.

    Raises:
        SuiteError: For an unknown field or another type.
    """
    if limits is None or isinstance(limits, Limits):
        return limits
    if isinstance(limits, Mapping):
        try:
            return Limits(**limits)
        except TypeError as error:
            raise SuiteError(f"bad sandbox limits {dict(limits)!r}: {error}") from error
    raise SuiteError(f"limits must be a Limits or a dict of its fields, got {type(limits).__name__}")


def _failure_detail(result: TestResult) -> str:
    if result.detail:
        return result.detail.strip()
    stderr_lines = result.stderr_head.strip().splitlines()
    return stderr_lines[-1].strip() if stderr_lines else ""


def summarize_report(report: Report, total: int | None = None) -> Score:
    """Turns a sandbox report into a score.

    Args:
        report: The sandbox's report on one program.
        total: How many tests the problem has, when the report covers only the first ones (a
            run stopped at a failure); tests not run count as not passed.

    Returns:
        ``correct`` when every test passed; ``score`` the fraction passed; ``reason``
        ``"passed N/N tests"``, the first failing test's number, verdict and detail
        (``"test 3/12: wrong: ..."``).

    Raises:
        VerifierError: When the sandbox could not run the job (the answer was not graded).
    """
    if report.error is not None:
        raise VerifierError(f"sandbox error: {report.error}"[:_MAX_REASON])
    total = max(total or 0, len(report.tests))
    if total == 0:
        return Score(False, 0.0, "no tests ran")
    passed = sum(result.verdict == "pass" for result in report.tests)
    for number, result in enumerate(report.tests, start=1):
        if result.verdict != "pass":
            reason = f"test {number}/{total}: {result.verdict}"
            detail = _failure_detail(result)
            return Score(False, passed / total, (f"{reason}: {detail}" if detail else reason)[:_MAX_REASON])
    if passed < total:
        return Score(False, passed / total, f"only {passed}/{total} tests ran")
    return Score(True, 1.0, f"passed {total}/{total} tests")


def run_until_failure(
    sandbox: Sandbox,
    program: str,
    tests: Sequence[Mapping[str, Any]],
    *,
    first_batch: int = 1,
    **options: Any,
) -> Report:
    """Runs the tests in batches of doubling size and stops after the first batch with a failure.

    LiveCodeBench stops grading at the first failing test; a wrong program that times out would
    otherwise spend the wall-clock limit on every remaining test. Batches keep the sandbox's
    per-job cost low for programs that pass (``1 + log2(n)`` jobs for ``n`` tests).

    Args:
        sandbox: Where to run.
        program: The program.
        tests: All tests, in grading order.
        first_batch: Size of the first batch.
        **options: Passed to :meth:`Sandbox.run_tests` (``kind``, ``limits``, ``func_name``).

    Returns:
        A report on the tests that ran (all of them when everything passed), or the first
        sandbox error.
    """
    results: list[TestResult] = []
    start, size = 0, max(1, first_batch)
    while start < len(tests):
        report = sandbox.run_tests(program, tests[start : start + size], **options)
        if report.error is not None:
            return report
        results.extend(report.tests)
        if any(result.verdict != "pass" for result in report.tests):
            break
        start += size
        size *= 2
    return Report(tests=tuple(results))


class SandboxedSuite(TaskSuite):
    """A suite whose verifier runs programs in a sandbox, started on first use.

    Args:
        sandbox: A name for :func:`conductor_env.sandboxes.get_sandbox` (``"auto"``,
            ``"docker"``, ``"local"``), started when first needed and closed by :meth:`close`;
            or a :class:`Sandbox` instance, which the caller keeps and closes.
        limits: Per-test :class:`Limits` (or a dict of its fields); ``None``: the sandbox's.

    A copy (``pickle``, ``copy.deepcopy``) has its own sandbox, started on first use and closed by
    its :meth:`close`: from the name, or from the settings of the given instance. It never shares
    or closes this suite's sandbox.
    """

    runs_code = True

    def __init__(self, *, sandbox: SandboxRef = "auto", limits: Limits | Mapping[str, Any] | None = None) -> None:
        if not isinstance(sandbox, (str, Sandbox)):
            raise SuiteError(f"sandbox must be a name or a Sandbox, got {type(sandbox).__name__}")
        self.limits = resolve_limits(limits)
        self._sandbox_ref = sandbox
        self._sandbox: Sandbox | None = sandbox if isinstance(sandbox, Sandbox) else None
        self._owns_sandbox = not isinstance(sandbox, Sandbox)
        self._sandbox_lock = threading.Lock()

    def sandbox(self) -> Sandbox:
        """Returns the sandbox, starting it on first use."""
        with self._sandbox_lock:
            if self._sandbox is None:
                self._sandbox = _open_sandbox(self._sandbox_ref)
            return self._sandbox

    def close(self) -> None:
        """Closes the sandbox if this suite started it."""
        with self._sandbox_lock:
            sandbox = self._sandbox if self._owns_sandbox else None
            if self._owns_sandbox:
                self._sandbox = None
        if sandbox is not None:
            sandbox.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the suite without its sandbox handle or lock (see the class notes on copies).

        A sandbox instance given by the caller travels as a template: a runner sandbox pickles
        its settings without workers, and the copy starts a sandbox from it on first use.
        """
        state = self.__dict__.copy()
        del state["_sandbox_lock"]
        state["_sandbox"] = None
        state["_owns_sandbox"] = True  # nobody else can reach the copy's sandbox to close it
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._sandbox_lock = threading.Lock()


def _open_sandbox(ref: SandboxRef) -> Sandbox:
    """Starts a sandbox from a name, or from a template instance (a copied suite's)."""
    if isinstance(ref, Sandbox):
        return copy.deepcopy(ref)
    from conductor_env.sandboxes import get_sandbox

    return get_sandbox(ref)
