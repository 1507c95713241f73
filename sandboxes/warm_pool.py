"""The warm pool: runner servers started once and kept ready, each serving one job at a time.

A :class:`RunnerWorker` is one runner server in one sandbox instance (a container, a bubblewrap
jail); it serves jobs one at a time. A :class:`WarmPool` keeps up to ``size`` of them warm,
starts them on demand, and replaces one that broke or asked to be recycled. The sandbox both
backends share (:class:`~conductor_env.sandboxes.pooled_sandbox.RunnerSandbox`) sends its jobs
through one.
"""

from __future__ import annotations

import abc
import logging
import threading
import time
from typing import Any, Callable

from conductor_env.sandboxes.wire import ProtocolError, decode_hello, encode_job, parse_line, runner_source

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
        self.hello = decode_hello(self._read_line(timeout))

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


class WarmPool:
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


def _close_quietly(worker: RunnerWorker) -> None:
    try:
        worker.close()
    except Exception as error:  # closing is best effort; the label sweep catches leftovers
        logger.warning("closing sandbox worker %s failed: %s", worker.slot, error)
    finally:
        IDENTITIES.give_back(worker.identity)
