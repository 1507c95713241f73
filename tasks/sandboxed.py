"""Shared plumbing of the suites that grade programs in a sandbox (LiveCodeBench, HumanEval)."""

from __future__ import annotations

import threading
from typing import Any, Mapping, Union

from conductor_env.sandboxes.base import Limits, Report, Sandbox, TestResult
from conductor_env.tasks.base import Score, TaskSuite
from conductor_env.tasks.registry import SuiteError

__all__ = ["SandboxRef", "SandboxedSuite", "resolve_limits", "summarize_report"]

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


def summarize_report(report: Report) -> Score:
    """Turns a sandbox report into a score.

    Args:
        report: The sandbox's report on one program.

    Returns:
        ``correct`` when every test passed; ``score`` the fraction passed; ``reason``
        ``"passed N/N tests"``, the first failing test's number, verdict and detail
        (``"test 3/12: wrong: ..."``), or ``"sandbox error: ..."``.
    """
    if report.error is not None:
        return Score(False, 0.0, f"sandbox error: {report.error}"[:_MAX_REASON])
    total = len(report.tests)
    if total == 0:
        return Score(False, 0.0, "no tests ran")
    for number, result in enumerate(report.tests, start=1):
        if result.verdict != "pass":
            reason = f"test {number}/{total}: {result.verdict}"
            detail = _failure_detail(result)
            return Score(False, report.pass_fraction, (f"{reason}: {detail}" if detail else reason)[:_MAX_REASON])
    return Score(True, 1.0, f"passed {total}/{total} tests")


class SandboxedSuite(TaskSuite):
    """A suite whose verifier runs programs in a sandbox, started on first use.

    Args:
        sandbox: A name for :func:`conductor_env.sandboxes.get_sandbox` (``"auto"``,
            ``"docker"``, ``"local"``), started when first needed and closed by :meth:`close`;
            or a :class:`Sandbox` instance, which the caller keeps and closes.
        limits: Per-test :class:`Limits` (or a dict of its fields); ``None``: the sandbox's.
    """

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
                from conductor_env.sandboxes import get_sandbox

                self._sandbox = get_sandbox(str(self._sandbox_ref))
            return self._sandbox

    def close(self) -> None:
        """Closes the sandbox if this suite started it."""
        with self._sandbox_lock:
            sandbox = self._sandbox if self._owns_sandbox else None
            if self._owns_sandbox:
                self._sandbox = None
        if sandbox is not None:
            sandbox.close()
