"""The sandbox interface: run untrusted code against tests, outside this process."""

from __future__ import annotations

import abc
import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

Kind = Literal["stdin", "functional", "script", "isolated", "unittest"]
Verdict = Literal["pass", "wrong", "timeout", "runtime_error", "memory", "output_limit"]


class SandboxUnavailable(RuntimeError):
    """A sandbox backend cannot be used here; the message says why and how to fix it."""


@dataclass(frozen=True)
class Limits:
    """Resource limits applied to every test run.

    Attributes:
        wall_s: Wall-clock deadline per test; the whole process group is killed at it. This is the
            time limit: 6 s, as LiveCodeBench's per-test alarm.
        cpu_s: CPU seconds per test (RLIMIT_CPU), or ``None`` (the default) for a safety net that
            no test ending within ``wall_s`` can reach: ``ceil(wall_s x the CPUs the test may run
            on) + 1``, worked out in the sandbox. A test's process cannot use more CPU time than
            its wall time on each CPU, so then only the wall-clock deadline ends a test, as in
            LiveCodeBench; the CPU limit ends only a test that outlives its deadline (a runner
            that failed to kill it). A number caps one process at that many CPU seconds.
        memory_mb: Address-space limit per test (RLIMIT_AS).
        processes: Process/thread limit (RLIMIT_NPROC inside the sandbox).
        file_size_mb: Largest file a test may write (RLIMIT_FSIZE).
        open_files: Open file descriptors (RLIMIT_NOFILE).
        output_bytes: Captured stdout/stderr cap; more is an ``output_limit`` verdict.
    """

    wall_s: float = 6.0
    cpu_s: float | None = None
    memory_mb: int = 1024
    processes: int = 64
    file_size_mb: int = 16
    open_files: int = 64
    output_bytes: int = 1 << 20

    @property
    def cpu_floor_s(self) -> float:
        """The least CPU time at which the CPU limit can end a test: ``cpu_s``, else ``wall_s + 1``
        (the derived limit is at least that); a kill at or past it is a time-out."""
        return float(self.cpu_s) if self.cpu_s is not None else float(self.wall_s) + 1.0


@dataclass(frozen=True)
class TestResult:
    """The verdict on one test.

    Attributes:
        verdict: ``pass``, ``wrong``, ``timeout``, ``runtime_error``, ``memory`` or ``output_limit``.
        time_s: Wall time of the test's run.
        stdout_head: The start of what the program printed.
        stderr_head: The start of its stderr (tracebacks).
        detail: Why it did not pass (``""`` when it passed).
    """

    __test__ = False  # not a pytest test class, despite the name

    verdict: Verdict
    time_s: float = 0.0
    stdout_head: str = ""
    stderr_head: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Report:
    """The result of one job: a verdict per test, or an error that prevented running it.

    Attributes:
        tests: Per-test results in test order.
        error: ``None``, or why the job could not be run at all (sandbox failure).
    """

    tests: Sequence[TestResult] = field(default_factory=tuple)
    error: str | None = None

    @property
    def passed(self) -> bool:
        """True when the job ran and every test passed."""
        return self.error is None and len(self.tests) > 0 and all(t.verdict == "pass" for t in self.tests)

    @property
    def pass_fraction(self) -> float:
        """Fraction of tests passed (0.0 when nothing ran)."""
        if self.error is not None or not self.tests:
            return 0.0
        return sum(t.verdict == "pass" for t in self.tests) / len(self.tests)


class Sandbox(abc.ABC):
    """Runs a program against tests in isolation."""

    name: str = "sandbox"

    @abc.abstractmethod
    def run_tests(
        self,
        program: str,
        tests: Sequence[Mapping[str, Any]],
        *,
        kind: Kind = "stdin",
        limits: Limits | None = None,
        func_name: str | None = None,
    ) -> Report:
        """Runs ``program`` against ``tests``.

        Args:
            program: Python source.
            tests: For ``stdin``/``functional``: dicts with ``input`` and ``output`` strings
                (functional inputs are one JSON value per line, the output one JSON value).
                For ``script``: ignored or empty; the program's own checks are the test.
            kind: How to run and grade (LiveCodeBench stdin rules, LeetCode-style functional
                call of ``Solution().func_name``, or a script that must run to its end).
            limits: Resource limits (``None``: defaults).
            func_name: Method name for functional tests.

        Returns:
            The report; infrastructure problems are reported in ``Report.error``, never raised.
        """

    async def arun_tests(self, program: str, tests: Sequence[Mapping[str, Any]], **kwargs: Any) -> Report:
        """Async :meth:`run_tests` (default: in a worker thread)."""
        return await asyncio.to_thread(self.run_tests, program, tests, **kwargs)

    def close(self) -> None:
        """Releases containers and processes."""

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
