"""The sandbox both backends share: requests validated, jobs sent to a warm pool, replies graded here.

A :class:`RunnerSandbox` validates the request, sends the job to a free worker of its
:class:`~conductor_env.sandboxes.warm_pool.WarmPool`, and grades the reply on this side
(:func:`~conductor_env.sandboxes.jobs.report_from_reply`). Open sandboxes are closed at
interpreter exit, and a forked child starts empty pools of its own.
"""

from __future__ import annotations

import abc
import atexit
import os
import weakref
from typing import Any, Mapping, Sequence

from conductor_env.sandboxes.base import Kind, Limits, Report, Sandbox, TestResult
from conductor_env.sandboxes.jobs import build_job, job_timeout, report_from_reply
from conductor_env.sandboxes.warm_pool import RunnerWorker, WarmPool
from conductor_env.sandboxes.wire import ProtocolError


def _graded(job: dict, expected: Sequence[str | None], reply: dict, limits: Limits) -> Report:
    """Grades a reply; grading that fails on what the program produced is a wrong answer."""
    try:
        return report_from_reply(job, expected, reply, limits)
    except Exception as error:  # noqa: BLE001 - never leave an answer unscored because of its output
        detail = f"the output could not be graded ({type(error).__name__}: {error})"[:500]
        return Report(tests=(TestResult(verdict="wrong", detail=detail),))


_OPEN_SANDBOXES: "weakref.WeakSet[RunnerSandbox]" = weakref.WeakSet()


@atexit.register
def _close_open_sandboxes() -> None:
    for sandbox in list(_OPEN_SANDBOXES):
        try:
            sandbox.close()
        except Exception:  # interpreter shutdown: best effort
            pass


class RunnerSandbox(Sandbox):
    """A sandbox backed by a pool of runner workers.

    Args:
        pool_size: Workers kept warm (``None``: the CPU count).
        limits: Default limits when a call passes none.
    """

    name = "runner"
    #: Replace a worker after a test ran out of memory (its instance may have hit its own limit).
    recycle_after_memory = False
    #: Most seconds a job waits for a free worker before it is reported as not run. A job's own
    #: run is bounded by :func:`job_timeout`; together they bound every ``run_tests`` call.
    queue_timeout_s: float = 900.0

    def __init__(self, *, pool_size: int | None = None, limits: Limits | None = None) -> None:
        self.default_limits = limits or Limits()
        self.pool = WarmPool(self._make_worker, pool_size or os.cpu_count() or 1)
        _OPEN_SANDBOXES.add(self)

    @abc.abstractmethod
    def _make_worker(self, slot: int) -> RunnerWorker:
        """Builds an unstarted worker for ``slot``."""

    def run_tests(
        self,
        program: str,
        tests: Sequence[Mapping[str, Any]],
        *,
        kind: Kind = "stdin",
        limits: Limits | None = None,
        func_name: str | None = None,
    ) -> Report:
        """Runs ``program`` against ``tests`` in a warm worker; see :meth:`Sandbox.run_tests`."""
        limits = limits or self.default_limits
        try:
            job, expected = build_job(program, tests or [], kind=kind, limits=limits, func_name=func_name)
        except ValueError as error:
            return Report(error=f"bad request: {error}")
        try:
            worker = self.pool.acquire(self.queue_timeout_s)
        except Exception as error:  # closed, busy too long, or a start failure (daemon gone, image removed)
            return Report(error=f"{self.name} sandbox unavailable: {error}")
        broken = True  # unless the job ends cleanly; every path below gives the worker back
        try:
            reply = worker.request(job, job_timeout(job, limits))
            report = _graded(job, expected, reply, limits)
            hit_memory = self.recycle_after_memory and any(test.verdict == "memory" for test in report.tests)
            broken = bool(reply.get("recycle")) or hit_memory
            return report
        except ProtocolError as error:
            lost = error
        finally:
            self.pool.release(worker, broken=broken)
        return self._attribute_loss(lost)

    def _attribute_loss(self, error: ProtocolError) -> Report:
        """The report of a job whose runner was lost (died, garbled, silent) while it ran.

        The program ran in that sandbox, so the loss is its doing unless the infrastructure is
        failing on its own: a fresh probe job decides. When the probe passes the answer is
        wrong (a ``runtime_error`` saying so); when it fails too, the job is not scored.
        """
        probe_error = self._probe()
        if probe_error is None:
            detail = f"the sandbox was lost while the program ran ({error}); a fresh probe job passed"
            return Report(tests=(TestResult(verdict="runtime_error", detail=detail[:500]),))
        return Report(error=f"{self.name} sandbox failed: {error} (and a fresh probe job failed: {probe_error})")

    def _probe(self) -> str | None:
        """Runs a trivial job on a fresh worker: ``None`` when it passes, else what went wrong."""
        probe_limits = Limits(wall_s=10.0, memory_mb=256, processes=8)
        try:
            job, expected = build_job("print(input())", [{"input": "1", "output": "1"}], kind="stdin", limits=probe_limits, func_name=None)
            worker = self.pool.acquire(min(self.queue_timeout_s, 120.0))
        except Exception as error:  # noqa: BLE001 - no worker: infrastructure
            return f"no worker: {error}"
        broken = True
        try:
            reply = worker.request(job, job_timeout(job, probe_limits))
            report = report_from_reply(job, expected, reply, probe_limits)
            broken = bool(reply.get("recycle"))
            return None if report.passed else (report.error or "the probe answered wrongly")
        except Exception as error:  # noqa: BLE001 - a probe that breaks: infrastructure
            return str(error)
        finally:
            self.pool.release(worker, broken=broken)

    def warm(self, count: int | None = None) -> None:
        """Starts the pool's workers now (otherwise they start on first use).

        Raises:
            ProtocolError: When a worker fails to start.
        """
        self.pool.warm(count)

    def leftover_processes(self) -> list[str]:
        """Processes other than the runners still alive in the pool's instances."""
        leftovers: list[str] = []
        for worker in self.pool.workers():
            leftovers.extend(worker.leftover_processes())
        return leftovers

    def close(self) -> None:
        """Stops every worker (also done at interpreter exit)."""
        self.pool.close()
        _OPEN_SANDBOXES.discard(self)

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the configuration; the pool pickles empty (see :meth:`WarmPool.__getstate__`).

        A copy (``pickle``, ``copy.deepcopy``) is an open sandbox with the same settings whose
        workers start on first use, in the process that uses it; closing either one leaves the
        other working.
        """
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        _OPEN_SANDBOXES.add(self)

    def _forget_inherited(self) -> None:
        """In a forked child: the workers are the parent's processes or containers, so this
        sandbox starts an empty pool of its own and never uses or closes the parent's."""
        _INHERITED_POOLS.append(self.pool)  # kept, so that no finalizer of theirs runs here
        self.pool = WarmPool(self.pool._factory, self.pool.size)


_INHERITED_POOLS: list[WarmPool] = []


def _forget_inherited_sandboxes() -> None:
    for sandbox in list(_OPEN_SANDBOXES):
        sandbox._forget_inherited()


os.register_at_fork(after_in_child=_forget_inherited_sandboxes)
