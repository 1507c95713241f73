"""Warm runner servers and the sandbox that dispatches jobs to them.

A :class:`RunnerWorker` is one runner server in one sandbox instance (a container, a bubblewrap
jail); it serves jobs one at a time. A :class:`WorkerPool` keeps up to ``size`` of them warm,
starts them on demand, and replaces one that broke or asked to be recycled. A
:class:`RunnerSandbox` is the :class:`Sandbox` both backends share: it validates the request,
sends the job to a free worker, and grades the reply on this side.
"""

from __future__ import annotations

import abc
import atexit
import logging
import os
import threading
import time
import weakref
from typing import Any, Callable, Mapping, Sequence

from conductor_env.sandboxes.base import Kind, Limits, Report, Sandbox, TestResult
from conductor_env.sandboxes.protocol import (
    ProtocolError,
    build_job,
    encode_job,
    job_timeout,
    parse_line,
    report_from_reply,
    runner_source,
)

logger = logging.getLogger(__name__)

#: Seconds a runner may take to start and say it is ready.
START_TIMEOUT_S = 60.0


class _Identities:
    """Hands every live worker of this process an index of its own, from which backends derive
    its uid: workers of different sandboxes in one process (an env and its copy, say) then never
    share a uid, so one's fork bomb cannot exhaust the other's per-uid process limit."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._free = list(range(count))
        self._lock = threading.Lock()
        self._overflow = 0

    def take(self) -> int:
        """The lowest free index (when all are taken, indices are shared in turn)."""
        with self._lock:
            if self._free:
                return self._free.pop(0)
            self._overflow += 1
            logger.warning("more than %d sandbox workers alive in this process: some share a uid", self._count)
            return self._overflow % self._count

    def give_back(self, index: int) -> None:
        with self._lock:
            if index not in self._free:
                self._free.append(index)
                self._free.sort()


#: Identity indices 0..254 (255 is the local backend's probe uid).
IDENTITIES = _Identities(255)


class RunnerWorker(abc.ABC):
    """One runner server: started once, then one job at a time over a byte stream.

    Args:
        slot: The pool slot it fills.

    Attributes:
        identity: An index no other live worker of this process holds; backends derive the
            worker's uid from it. Given back when the pool closes the worker.
    """

    def __init__(self, slot: int) -> None:
        self.slot = slot
        self.identity = IDENTITIES.take()
        self.jobs_served = 0
        self._buffer = bytearray()
        self.hello: dict = {}

    # -- what a backend provides ---------------------------------------------------------------

    @abc.abstractmethod
    def _launch(self) -> None:
        """Starts the sandbox instance with the runner's boot command (stdin/stdout attached)."""

    @abc.abstractmethod
    def _send(self, data: bytes) -> None:
        """Writes bytes to the runner's stdin."""

    @abc.abstractmethod
    def _receive(self, timeout: float) -> bytes:
        """Returns the next bytes of the runner's stdout; ``b""`` when it closed.

        Raises:
            TimeoutError: When nothing arrived within ``timeout`` seconds.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Stops the instance and releases everything it holds (idempotent)."""

    def diagnostics(self) -> str:
        """What the runner wrote to its stderr, for error messages."""
        return ""

    def leftover_processes(self) -> list[str]:
        """Processes in the instance other than the runner (should be none between jobs)."""
        return []

    # -- the protocol ----------------------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Launches the instance, sends the runner, and waits until it is ready.

        Raises:
            ProtocolError: When it does not come up.
        """
        self._launch()
        try:
            self._send(runner_source())
        except OSError as error:
            raise ProtocolError(f"the runner did not start: {error}: {self.diagnostics()[-500:]}") from error
        hello = parse_line(self._read_line(timeout))
        if not hello.get("ready"):
            raise ProtocolError(f"the runner did not start: {hello!r}")
        self.hello = hello

    def request(self, job: dict, timeout: float) -> dict:
        """Sends one job and returns the runner's reply.

        Raises:
            ProtocolError: When the runner dies, garbles the reply or exceeds ``timeout``.
        """
        try:
            self._send(encode_job(job))
        except OSError as error:
            detail = self.diagnostics().strip()
            raise ProtocolError(f"lost the runner: {error}" + (f": {detail[-500:]}" if detail else "")) from error
        reply = parse_line(self._read_line(timeout))
        self.jobs_served += 1
        return reply

    def _read_line(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProtocolError(f"the runner did not answer within {timeout:.0f}s")
            try:
                chunk = self._receive(remaining)
            except TimeoutError:
                raise ProtocolError(f"the runner did not answer within {timeout:.0f}s") from None
            except OSError as error:
                raise ProtocolError(f"lost the runner: {error}") from error
            if not chunk:
                detail = self.diagnostics().strip()
                raise ProtocolError("the runner exited" + (f": {detail[-500:]}" if detail else ""))
            self._buffer += chunk


class WorkerPool:
    """Up to ``size`` warm workers, started on demand and replaced when broken.

    Args:
        factory: Builds an unstarted worker for a slot number.
        size: Most workers alive at once.
    """

    def __init__(self, factory: Callable[[int], RunnerWorker], size: int) -> None:
        if size < 1:
            raise ValueError(f"pool size must be at least 1, got {size}")
        self._factory = factory
        self.size = size
        self._idle: list[RunnerWorker] = []
        self._busy: set[RunnerWorker] = set()
        self._free_slots = list(range(size))
        self._condition = threading.Condition()
        self._closed = False

    def acquire(self, timeout: float | None = None) -> RunnerWorker:
        """Returns a ready worker, starting one if a slot is free and none is idle.

        Args:
            timeout: Most seconds to wait for a slot (``None``: no limit).

        Raises:
            ProtocolError: When a new worker fails to start.
            RuntimeError: When the pool is closed.
            TimeoutError: When no slot became free within ``timeout``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            while True:
                if self._closed:
                    raise RuntimeError("the sandbox is closed")
                if self._idle:
                    worker = self._idle.pop()
                    self._busy.add(worker)
                    return worker
                if self._free_slots:
                    slot = self._free_slots.pop(0)
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError(f"no sandbox worker became free within {timeout:.0f}s ({self.size} busy)")
                self._condition.wait(remaining)
        worker = self._factory(slot)
        try:
            worker.start()
        except BaseException:
            _close_quietly(worker)
            with self._condition:
                self._free_slots.append(slot)
                self._condition.notify()
            raise
        with self._condition:
            if self._closed:
                _close_quietly(worker)
                raise RuntimeError("the sandbox is closed")
            self._busy.add(worker)
        return worker

    def release(self, worker: RunnerWorker, *, broken: bool = False) -> None:
        """Returns a worker; a broken one is closed (in the background) and its slot freed."""
        with self._condition:
            self._busy.discard(worker)
            if broken or self._closed:
                self._free_slots.append(worker.slot)
            else:
                self._idle.append(worker)
            self._condition.notify()
        if broken or self._closed:
            threading.Thread(target=_close_quietly, args=(worker,), daemon=True).start()

    def warm(self, count: int | None = None) -> None:
        """Starts workers (all slots by default) in parallel so the first jobs do not wait."""
        count = self.size if count is None else min(count, self.size)
        workers: list[RunnerWorker] = []
        errors: list[BaseException] = []
        lock = threading.Lock()

        def start_one() -> None:
            try:
                worker = self.acquire()
            except BaseException as error:  # reported below
                with lock:
                    errors.append(error)
                return
            with lock:
                workers.append(worker)

        threads = [threading.Thread(target=start_one) for _ in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for worker in workers:
            self.release(worker)
        if errors:
            raise errors[0]

    def workers(self) -> list[RunnerWorker]:
        """The live workers (idle and busy)."""
        with self._condition:
            return [*self._idle, *self._busy]

    def close(self) -> None:
        """Closes every worker; busy ones are closed when released."""
        with self._condition:
            self._closed = True
            idle, self._idle = self._idle, []
            busy = list(self._busy)
            self._condition.notify_all()
        for worker in idle + busy:
            _close_quietly(worker)

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the factory and the size only: workers are processes or containers of this
        process, so a copy (``pickle``, ``copy.deepcopy``) starts empty and open, and starts its
        own workers on demand; it never shares or closes this pool's."""
        return {"factory": self._factory, "size": self.size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["factory"], state["size"])  # type: ignore[misc]


def _graded(job: dict, expected: Sequence[str | None], reply: dict, limits: Limits) -> Report:
    """Grades a reply; grading that fails on what the program produced is a wrong answer."""
    try:
        return report_from_reply(job, expected, reply, limits)
    except Exception as error:  # noqa: BLE001 - never leave an answer unscored because of its output
        detail = f"the output could not be graded ({type(error).__name__}: {error})"[:500]
        return Report(tests=(TestResult(verdict="wrong", detail=detail),))


def _close_quietly(worker: RunnerWorker) -> None:
    try:
        worker.close()
    except Exception as error:  # closing is best effort; the label sweep catches leftovers
        logger.warning("closing sandbox worker %s failed: %s", worker.slot, error)
    finally:
        IDENTITIES.give_back(worker.identity)


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
        self.pool = WorkerPool(self._make_worker, pool_size or os.cpu_count() or 1)
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
            return Report(error=f"{self.name} sandbox failed: {error}")
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
        """Pickles the configuration; the pool pickles empty (see :meth:`WorkerPool.__getstate__`).

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
        self.pool = WorkerPool(self.pool._factory, self.pool.size)


_INHERITED_POOLS: list[WorkerPool] = []


def _forget_inherited_sandboxes() -> None:
    for sandbox in list(_OPEN_SANDBOXES):
        sandbox._forget_inherited()


os.register_at_fork(after_in_child=_forget_inherited_sandboxes)
