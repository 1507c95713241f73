"""Mathematical equivalence with math-verify, bounded in time from any thread.

math-verify bounds its own work with ``signal.alarm``, which only works on the main thread, while
the env verifies answers from worker threads (``averify``) and many episodes at once. So the
comparisons run in its timeout-free mode (``parsing_timeout=None``, ``timeout_seconds=None``)
inside persistent child processes (``python -m conductor_env.tasks.math_equivalence``, a JSON
line per request), and the parent bounds each one with a deadline: a child that misses it is
killed and replaced. One child start (about a second, for sympy) serves every later comparison,
unlike a process per comparison; a small cache answers repeated (gold, answer) pairs, which GRPO
groups produce often. Children are plain subprocesses, not ``multiprocessing``, so user scripts
without a ``__main__`` guard work, and each child gets an address-space limit because sympy can
be driven to huge allocations by hostile input.

math-verify drops units (``\\text{ cm}``, ``^\\circ``, ``\\$``) and base subscripts (``1011_2``)
before comparing, so ``5\\text{ m}`` equals ``5\\text{ cm}`` there; the host-side pre-check
:func:`~conductor_env.tasks.math_notation.notation_mismatch` (no sympy) refuses an answer naming
another unit or base than the gold answer's first, reading both in a normal form in which no
spelling (``\\mathrm``, nested braces, a thin space before a subscript) hides one.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

from conductor_env.tasks.math_notation import notation_mismatch

__all__ = ["Equivalence", "MathEquivalence", "notation_mismatch", "shared_math_equivalence"]

Verdict = Literal["equal", "different", "timeout", "error"]


@dataclass(frozen=True)
class Equivalence:
    """The outcome of one comparison.

    Attributes:
        verdict: ``equal``, ``different``, ``timeout`` (the deadline passed) or ``error``.
        detail: Why, for ``timeout`` and ``error``, and for ``different`` when the pre-check
            (:func:`notation_mismatch`) decided.
    """

    verdict: Verdict
    detail: str = ""

    @property
    def equal(self) -> bool:
        """True only for a successful comparison that found the two equal."""
        return self.verdict == "equal"


class _Child:
    """One verifier subprocess speaking JSON lines on stdin/stdout."""

    def __init__(self, memory_mb: int, startup_timeout_s: float) -> None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        env["CONDUCTOR_MATH_MEMORY_MB"] = str(memory_mb)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "conductor_env.tasks.math_equivalence"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        self._buffer = b""
        ready = self._read_line(startup_timeout_s)
        if not ready:
            self.kill()
            raise RuntimeError(f"the math verifier process did not start within {startup_timeout_s:g} s")

    def ask(self, gold: str, answer: str, timeout_s: float) -> Equivalence:
        """Sends one comparison and waits up to ``timeout_s`` seconds for the verdict."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps({"gold": gold, "answer": answer}).encode() + b"\n")
            self.process.stdin.flush()
        except OSError as error:
            return Equivalence("error", f"verifier process died: {error}")
        line = self._read_line(timeout_s)
        if line is None:
            return Equivalence("timeout", f"no verdict within {timeout_s:g} s")
        if not line:
            return Equivalence("error", "verifier process exited")
        reply = json.loads(line)
        if "error" in reply:
            return Equivalence("error", reply["error"])
        return Equivalence("equal" if reply["equal"] else "different")

    def _read_line(self, timeout_s: float) -> bytes | None:
        """Returns a line, ``b""`` at end of stream, or ``None`` when the deadline passes."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return b""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


class MathEquivalence:
    """Compares a gold answer with a candidate using math-verify, gold first.

    Thread-safe; up to ``processes`` comparisons run at once, each in its own child process.

    Args:
        timeout_s: Deadline per comparison (parse of both sides plus verify).
        processes: Most child processes (started lazily, one per concurrent comparison).
        memory_mb: Address-space limit of each child.
        cache_size: Remembered (gold, answer) verdicts; timeouts and errors are not cached.
        startup_timeout_s: Deadline for a child to import math-verify (not counted in
            ``timeout_s``).
    """

    def __init__(
        self,
        *,
        timeout_s: float = 10.0,
        processes: int = 2,
        memory_mb: int = 2048,
        cache_size: int = 4096,
        startup_timeout_s: float = 120.0,
    ) -> None:
        if timeout_s <= 0 or processes < 1:
            raise ValueError("timeout_s must be > 0 and processes >= 1")
        self.timeout_s = timeout_s
        self.processes = processes
        self.memory_mb = memory_mb
        self.cache_size = cache_size
        self.startup_timeout_s = startup_timeout_s
        self._idle: queue.LifoQueue[_Child] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(processes)
        self._lock = threading.Lock()
        self._children: list[_Child] = []
        self._cache: OrderedDict[tuple[str, str], Equivalence] = OrderedDict()

    def compare(self, gold: str, answer: str) -> Equivalence:
        """Compares two LaTeX answers (the contents of ``\\boxed{}``).

        Args:
            gold: The reference answer.
            answer: The candidate answer.

        Returns:
            The outcome; never raises for bad input. A different unit or base subscript (see
            :func:`notation_mismatch`) is ``different`` without calling math-verify.
        """
        mismatch = notation_mismatch(gold, answer)
        if mismatch is not None:
            return Equivalence("different", mismatch)
        key = (gold, answer)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        with self._slots:
            try:
                child = self._take_child()
            except (OSError, RuntimeError) as error:
                return Equivalence("error", str(error))
            result = child.ask(gold, answer, self.timeout_s)
            if result.verdict in ("timeout", "error") or not child.alive():
                self._discard(child)
            else:
                self._idle.put(child)
        if result.verdict in ("equal", "different"):
            with self._lock:
                self._cache[key] = result
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return result

    def _take_child(self) -> _Child:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            child = _Child(self.memory_mb, self.startup_timeout_s)
            with self._lock:
                self._children.append(child)
            return child

    def _discard(self, child: _Child) -> None:
        child.kill()
        with self._lock:
            if child in self._children:
                self._children.remove(child)

    def close(self) -> None:
        """Stops every child process (a later :meth:`compare` starts new ones)."""
        with self._lock:
            children, self._children = self._children, []
        for child in children:
            child.kill()
        while not self._idle.empty():
            self._idle.get_nowait()

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the settings and the cache; a copy starts its own child processes on demand."""
        state = {key: getattr(self, key) for key in ("timeout_s", "processes", "memory_mb", "cache_size", "startup_timeout_s")}
        with self._lock:
            state["cache"] = OrderedDict(self._cache)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        settings = {key: value for key, value in state.items() if key != "cache"}
        self.__init__(**settings)  # type: ignore[misc]
        self._cache.update(state["cache"])


_shared: MathEquivalence | None = None
_shared_lock = threading.Lock()


def shared_math_equivalence() -> MathEquivalence:
    """Returns the process-wide comparer the math suites share (stopped at exit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MathEquivalence()
            atexit.register(_shared.close)
        return _shared


# ------------------------------------------------------------------------------- child side


def _compare_in_child(gold: str, answer: str) -> bool:
    from math_verify import parse, verify

    gold_parsed = parse(f"\\boxed{{{gold}}}", parsing_timeout=None)
    answer_parsed = parse(f"\\boxed{{{answer}}}", parsing_timeout=None)
    return bool(verify(gold_parsed, answer_parsed, timeout_seconds=None))


def _serve() -> None:
    """The child loop: one JSON request per stdin line, one JSON verdict per stdout line."""
    import logging
    import resource

    memory_mb = int(os.environ.get("CONDUCTOR_MATH_MEMORY_MB", "0"))
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    logging.disable(logging.WARNING)  # math-verify warns that its own timeout is off: we bound it
    import math_verify  # noqa: F401 - import before the first request, not during its deadline

    out = sys.stdout.buffer
    out.write(b'{"ready": true}\n')
    out.flush()
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            reply: dict[str, object] = {"equal": _compare_in_child(str(request["gold"]), str(request["answer"]))}
        except MemoryError:
            reply = {"error": "out of memory while comparing"}
        except Exception as error:  # noqa: BLE001 - any failure is reported, the loop goes on
            reply = {"error": f"{type(error).__name__}: {error}"[:500]}
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    _serve()
