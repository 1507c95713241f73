"""The sandbox runner: runs an untrusted program test by test, inside the sandbox (stdlib only).

The backends send this file's source to a fresh ``python3 -I -c BOOT`` inside the sandbox (a
Docker container or a bubblewrap jail), where it runs as a small server: it reads jobs, one framed JSON
object each, and answers each with one JSON line. One sandbox start serves many jobs.

Job, framed as ``<length>\\n<header JSON>`` (then, for ``isolated``, ``checks_bytes`` bytes of
``{"checks": str, "call": str}``)::

    {"id": str, "program": str, "kind": "stdin" | "functional" | "script" | "isolated",
     "tests": [{"input": str}, ...], "func_name": str | null, "limits": {Limits fields},
     "checks_bytes": int (isolated only)}

Reply::

    {"id": str, "outcomes": [outcome, ...], "recycle": bool, "error": str | null}

For each test the runner forks a fresh child: a new session and process group, rlimits (CPU
seconds, address space, processes, file size, open files, no core), a fresh private working
directory, an environment built from scratch (``PATH``, ``LANG``, ``HOME`` = the work directory),
the test's input on stdin, stdout and stderr captured up to ``output_bytes`` (more kills the test:
``output_limit``), and everything the test started killed at the wall-clock deadline and again
when it ends. An *outcome* says how the child ended (its completion record, exit status or
signal, whether the runner killed it and why, CPU and wall time), with its stdout and the head of
its stderr. :func:`grade_outcome` turns an outcome into a verdict: ``pass``, ``wrong``,
``timeout``, ``runtime_error``, ``memory`` or ``output_limit``.

Kinds (LiveCodeBench's rules for ``stdin`` and ``functional``):

- ``stdin``: the program reads the input and prints the answer. The whole output stripped, split
  into lines, each line stripped, must have the expected number of lines, and each line must be
  equal or have all its whitespace-separated tokens equal as decimals. ``SystemExit`` ends the
  program normally (LiveCodeBench ignores it); an uncaught exception is a runtime error.
- ``functional``: the program defines ``class Solution`` with method ``func_name`` (or a
  top-level function of that name); each test's input is one JSON value per line, the positional
  arguments; the result, with tuples made lists (recursively), must equal the expected JSON value.
- ``script``: the program carries its own checks; it passes when its top level ran to its end.
- ``isolated``: the checks are a separate party (HumanEval). The job's header carries the
  program; the checks follow it on the stream, and a checker child reads them itself and runs
  them with the candidate's function bound to a proxy. The candidate is forked after that, from a
  runner that never held the checks, and answers calls with plain data over a pipe
  (:mod:`conductor_env.sandboxes.proxy`). It passes when the checks ran to their end.

Integrity (why a program cannot talk its way into a pass)
---------------------------------------------------------
Policies trained against a grader learn its weaknesses: exiting with status 0 before the checks,
printing what the grader looks for, killing the grader. Here:

1. **Expected outputs never enter the sandbox.** The job carries inputs only; the caller grades
   the outcome with :func:`grade_outcome` (this module's own comparison) on its side. A program
   cannot read, print or return what it cannot see, so for ``stdin`` and ``functional`` a pass
   means the program produced the answer.
2. **Exit statuses and printed markers prove nothing.** For ``script`` (and to tell a normal end
   from a crash for the other kinds) the verdict needs the *completion record*: a line written
   by the runner's code in the child on a dedicated pipe, only after the program's top level
   returned (and, as Python would, after its non-daemon threads and ``atexit`` handlers ran). It
   starts with a per-test random nonce that the server generates before the fork; the server
   accepts exactly one record carrying that nonce. ``sys.exit(0)`` and ``os._exit(0)`` end the
   program without one; printed text goes to the captured stdout, never to that pipe; writing to
   every descriptor cannot guess the nonce; a forked process that finishes the program writes
   nothing (the record is written only by the process the server forked).
3. **The nonce is out of the program's reach.** User code runs in the same process as the
   runner's child code, so the design removes every path from user code to the runner's state.
   The nonce lives only in local variables of runner frames, never in a global; the runner
   defines no classes (``object.__subclasses__`` finds none of its functions) and hands the
   program nothing whose ``__globals__`` is the runner's (the helpers it gives out are compiled
   in a namespace of their own); ``__main__`` is a fresh module for the program. Before the
   program starts, the child installs an audit hook (which cannot be removed) that refuses every
   way to a frame -- ``sys._getframe``, ``sys._current_frames``, the ``tb_frame``/``gi_frame``/
   ``cr_frame``/``ag_frame`` attributes, ``sys.settrace``/``sys.setprofile`` -- with a
   ``ValueError`` (which ``namedtuple``, ``typing``, ``enum`` and ``logging`` already tolerate);
   heap walks (``gc.get_objects``/``get_referrers``/``get_referents``); and raw memory:
   ``ctypes`` and the C-API test modules cannot be imported, ``/proc/*/mem`` cannot be opened
   (nor linked to). Signal handlers would receive the interrupted frame, so ``signal.signal``
   goes through the hook, which alone holds the real function and wraps each handler to receive
   ``None``; it also holds the real ``_imp.create_builtin``, so a fresh ``_signal`` module (with
   the real function in it) cannot be made. The runner's post-program path uses only callables
   bound to locals before the program ran and builds the record with methods of built-in types,
   so monkeypatching ``os``, ``json`` or ``builtins`` neither sees the nonce nor shapes the
   record. The processes are not dumpable, so another process of the same user (a program's
   ``subprocess``, where the hook does not exist) can neither ptrace them nor read their memory.
   This is defence in depth, not a proof: an interpreter bug that hands out a frame or raw
   memory would reopen the way, and the OS sandbox would still contain what follows.
4. **The runner survives the program.** In the sandboxes the runner is PID 1 of its own PID
   namespace, which the kernel protects from ``SIGKILL``/``SIGSTOP`` sent from inside, so
   ``os.kill(os.getppid(), 9)`` and ``os.kill(-1, 9)`` do nothing to it; after each test it kills
   every other process in the namespace (daemonised children included) and wipes ``/tmp`` and
   ``/dev/shm``. Without a PID namespace (the weaker local fallback) it is a child subreaper, kills
   the test's process group and then every orphan re-parented to it, and, when it runs as root,
   runs the program under a separate unprivileged uid.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import resource
import select
import signal
import sys
import time
from decimal import Decimal, InvalidOperation
from typing import Any

#: Bytes of stderr (and of stdout, for kinds that do not compare it) returned per test.
HEAD_BYTES = 4096
#: File descriptor of the completion-record pipe in the child.
RECORD_FD = 3
#: Largest completion record accepted (a functional result); bigger is an ``output_limit``.
RECORD_LIMIT_FACTOR = 4
#: Modules the program may not import (raw memory access; see "Integrity").
BLOCKED_MODULES = frozenset(
    {"ctypes", "_ctypes", "_testcapi", "_testinternalcapi", "_testbuffer", "_xxsubinterpreters", "_interpreters",
     "_signal"}
)
#: Modules the runner itself loaded that must not stay importable from the cache in the child.
PURGED_MODULES = frozenset({"ctypes", "_ctypes"})
#: Audit events refused in the child (frame access, heap walks, tracing).
BLOCKED_EVENTS = frozenset(
    {
        "sys._getframe",
        "sys._current_frames",
        "sys._current_exceptions",
        "sys.settrace",
        "sys.setprofile",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "ctypes.dlopen",
        "ctypes.dlsym",
        "ctypes.PyObj_FromPtr",
    }
)
#: Attributes whose read hands out a frame.
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
#: Modules imported once by the server so that children start with them loaded (LiveCodeBench's
#: import header and what HumanEval programs import). Not ``threading``: once it is imported,
#: every fork costs about 2 ms more (measured), so children import it only when they use it.
PRELOADED_MODULES = (
    "string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
    "statistics", "itertools", "functools", "operator", "io", "json", "typing", "fractions",
    "decimal", "atexit", "traceback", "hashlib", "dataclasses", "enum", "importlib.machinery",
)
CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"

# =============================================================================================
# Grading (pure functions; the caller grades outcomes with them, on its side of the sandbox)
# =============================================================================================


def stripped_lines(text: str) -> list[str]:
    """LiveCodeBench's normalisation: the text stripped, split into lines, each line stripped."""
    return [line.strip() for line in text.strip().split("\n")]


def _decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except (InvalidOperation, ValueError):
        return None


def _same_decimals(got: list[Decimal], want: list[Decimal]) -> bool:
    """Token-wise equality; a signalling NaN (whose comparison raises) equals nothing."""
    try:
        return got == want
    except (InvalidOperation, ValueError, ArithmeticError):
        return False


def compare_stdin_output(actual: str, expected: str) -> tuple[bool, str]:
    """Compares a program's output with the expected output as LiveCodeBench does.

    Args:
        actual: What the program printed.
        expected: The test's expected output.

    Returns:
        ``(True, "")`` when they match, else ``(False, reason)``.
    """
    actual_lines = stripped_lines(actual)
    expected_lines = stripped_lines(expected)
    if len(actual_lines) != len(expected_lines):
        return False, f"expected {len(expected_lines)} lines of output, got {len(actual_lines)}"
    for number, (got, want) in enumerate(zip(actual_lines, expected_lines), start=1):
        if got == want:
            continue
        got_numbers, want_numbers = _decimals(got), _decimals(want)
        if got_numbers is None or want_numbers is None or not _same_decimals(got_numbers, want_numbers):
            return False, f"line {number}: expected {_clip(want)!r}, got {_clip(got)!r}"
    return True, ""


def compare_functional_result(actual_json: str, expected_json: str) -> tuple[bool, str]:
    """Compares a serialised call result with the expected JSON value.

    Args:
        actual_json: The result as the runner serialised it (tuples already lists).
        expected_json: The test's expected output, one JSON value.

    Returns:
        ``(True, "")`` when equal, else ``(False, reason)``.

    Raises:
        ValueError: When ``expected_json`` is not JSON (a bad test, not a bad program).
    """
    expected = json.loads(expected_json)
    try:
        actual = json.loads(actual_json)
    except (ValueError, RecursionError) as error:
        return False, f"the result could not be read: {_clip(str(error))}"
    if actual == expected:
        return True, ""
    return False, f"expected {_clip(expected_json.strip())}, got {_clip(actual_json)}"


def _clip(text: Any, limit: int = 200) -> str:
    text = text if isinstance(text, str) else repr(text)
    return text if len(text) <= limit else text[: limit // 2] + " ... " + text[-limit // 2 :]


def grade_outcome(kind: str, outcome: dict, expected: str | None, cpu_limit_s: float) -> tuple[str, str]:
    """Turns a test's outcome into a verdict; never raises on what the program produced.

    Args:
        kind: ``stdin``, ``functional``, ``script`` or ``isolated``.
        outcome: One element of a reply's ``outcomes``.
        expected: The expected output (``None`` for ``script`` and ``isolated``).
        cpu_limit_s: The CPU limit the test ran under (to tell a CPU-limit kill).

    Returns:
        ``(verdict, detail)``; the verdict is one of ``pass``, ``wrong``, ``timeout``,
        ``runtime_error``, ``memory``, ``output_limit``. Output that cannot be read or compared
        is ``wrong``, with the reason.
    """
    try:
        return _grade(kind, outcome, expected, cpu_limit_s)
    except Exception as error:  # noqa: BLE001 - a grader that raises would leave the answer unscored
        return "wrong", _clip(f"the output could not be graded ({type(error).__name__}: {error})")


def _grade(kind: str, outcome: dict, expected: str | None, cpu_limit_s: float) -> tuple[str, str]:
    killed = outcome.get("killed")
    if killed == "output":
        return "output_limit", "output exceeded the limit"
    if killed == "wall":
        return "timeout", f"killed at the wall-clock limit after {outcome.get('time_s', 0):.1f}s"
    record = outcome.get("record")
    sig = outcome.get("signal")
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and outcome.get("cpu_s", 0.0) >= cpu_limit_s - 0.05):
        return "timeout", f"CPU time limit ({cpu_limit_s:g}s) exceeded"
    if kind == "isolated":
        return _isolated_verdict(outcome, record, cpu_limit_s)
    if record is not None and record.get("status") == "exception":
        message = f"{record.get('type', 'Exception')}: {record.get('message', '')}".rstrip(": ")
        return ("memory" if record.get("memory") else "runtime_error"), message
    if sig is not None:
        name = _signal_name(sig)
        stderr = outcome.get("stderr", "")
        if sig == signal.SIGKILL and outcome.get("oom_killed", True):
            return "memory", "killed by SIGKILL (out of memory)"
        if "MemoryError" in stderr or "Cannot allocate memory" in stderr:
            return "memory", f"killed by {name} after running out of memory"
        return "runtime_error", f"killed by signal {name}"
    if outcome.get("record_error"):
        return "runtime_error", outcome["record_error"]
    status = record.get("status") if record is not None else None
    if kind == "script":
        if status == "ok":
            return "pass", ""
        if status == "exit":
            return "runtime_error", f"the program called sys.exit({record.get('code')}) before its end"
        return "runtime_error", f"the program exited (status {outcome.get('exit_code')}) before its end"
    if kind == "functional":
        if status == "ok" and "result" in record:
            return _functional_verdict(record["result"], expected if expected is not None else "null")
        if status == "unserialisable":
            return "wrong", f"the result is not a JSON value ({record.get('message', '')})"
        if status in ("missing", "exit"):
            detail = record.get("message") or f"the program called sys.exit({record.get('code')})"
            return "runtime_error", detail
        return "runtime_error", f"the program exited (status {outcome.get('exit_code')}) before returning"
    # stdin: the output decides; an uncaught exception (above) or a failing exit status does not pass.
    if record is None and outcome.get("exit_code") not in (0, None):
        return "runtime_error", f"exit status {outcome.get('exit_code')}"
    same, reason = compare_stdin_output(outcome.get("stdout", ""), expected or "")
    return ("pass", "") if same else ("wrong", reason)


def _isolated_verdict(outcome: dict, record: dict | None, cpu_limit_s: float) -> tuple[str, str]:
    """The verdict of the checker (its record) on a candidate that ran apart from it."""
    status = record.get("status") if record is not None else None
    if status == "ok":
        return "pass", ""
    callee_signal = outcome.get("callee_signal")
    if callee_signal == signal.SIGXCPU or (
        callee_signal == signal.SIGKILL and outcome.get("callee_cpu_s", 0.0) >= cpu_limit_s - 0.05
    ):
        return "timeout", f"CPU time limit ({cpu_limit_s:g}s) exceeded by the program"
    if status == "exception":
        message = _clip(f"{record.get('type', 'Exception')}: {record.get('message', '')}".rstrip(": "), 500)
        if record.get("memory"):
            return "memory", message
        if record.get("proxy") or record.get("type") == "AssertionError":
            return "wrong", message
        return "runtime_error", message
    if callee_signal is not None:
        return "runtime_error", f"the program was killed by signal {_signal_name(callee_signal)}"
    sig = outcome.get("signal")
    if sig is not None:
        return "runtime_error", f"the checks were killed by signal {_signal_name(sig)}"
    return "runtime_error", outcome.get("record_error") or f"the checks ended without a verdict (status {outcome.get('exit_code')})"


def _functional_verdict(actual_json: str, expected_json: str) -> tuple[str, str]:
    same, reason = compare_functional_result(actual_json, expected_json)
    return ("pass", "") if same else ("wrong", reason)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


# =============================================================================================
# The child: runs the program (user code shares this process; see "Integrity")
# =============================================================================================


#: Source of the helpers the child hands to the program, compiled in a namespace of their own
#: (a function's ``__globals__`` would otherwise lead from the program to this module).
_CHILD_HELPERS = """
def make_frameless(handler):
    def frameless(signum, frame):
        return handler(signum, None)
    return frameless

def make_signal(audit, getsignal):
    def signal(signalnum, handler):
        previous = getsignal(signalnum)
        audit("conductor.signal", signalnum, handler)
        return previous
    return signal

def make_create_builtin(audit):
    def create_builtin(spec):
        box = []
        audit("conductor.create_builtin", spec, box)
        return box[0]
    return create_builtin
"""
_CHILD_HELPERS_CODE = compile(_CHILD_HELPERS, "<sandbox>", "exec")


def _make_guard(blocked_events: frozenset, frame_attributes: frozenset, blocked_modules: frozenset, helpers: dict,
                real_signal: Any, real_create_builtin: Any):
    """Returns the audit hook installed in the child before the program runs.

    Besides refusing the events above, it is the only holder of the real ``signal.signal``: the
    program's ``signal.signal`` raises the event ``conductor.signal``, and the hook installs the
    handler wrapped so that it receives ``None`` instead of the interrupted frame (whose
    ``f_back`` chain would lead to the runner's frames). Likewise it holds the real
    ``_imp.create_builtin``, so that a fresh ``_signal`` (or ``_imp``) module, with the real
    function in it, cannot be made.
    """
    from importlib.machinery import ModuleSpec

    make_frameless = helpers["make_frameless"]
    text = str.__str__
    realpath, fspath = os.path.realpath, os.fspath

    def refused_path(path: Any) -> bool:
        try:
            text = fspath(path)
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
        except TypeError:
            return False  # a file descriptor
        if text.rstrip("/").rsplit("/", 1)[-1] == "mem":
            return True
        try:
            real = realpath(text)
        except (OSError, ValueError):
            return False
        return real.startswith("/proc/") and real.endswith("/mem")

    def guard(event: str, args: tuple) -> None:
        if event in blocked_events:
            raise ValueError(f"{event} is not available in the sandbox")
        if event == "object.__getattr__":
            if len(args) > 1 and args[1] in frame_attributes:
                raise ValueError(f"{args[1]} is not available in the sandbox")
        elif event == "import":
            name = args[0] if args else ""
            if isinstance(name, str) and (
                name.split(".", 1)[0] in blocked_modules or name.rsplit(".", 1)[-1] in blocked_modules
            ):
                raise ImportError(f"module {name!r} is not available in the sandbox")
        elif event == "open":
            if args and refused_path(args[0]):
                raise PermissionError(f"{args[0]!r} is not available in the sandbox")
        elif event == "os.symlink":
            target = args[0] if args else ""
            try:
                target = fspath(target)
            except TypeError:
                target = ""
            if isinstance(target, bytes):
                target = target.decode("utf-8", "replace")
            if "proc" in target:
                raise PermissionError("links into /proc are not available in the sandbox")
        elif event == "conductor.signal":
            signalnum, handler = args
            if isinstance(handler, int):
                handler = int(handler)  # SIG_IGN / SIG_DFL, possibly as signal.Handlers members
            elif callable(handler):
                handler = make_frameless(handler)
            real_signal(int(signalnum), handler)
        elif event == "conductor.create_builtin":
            spec, box = args
            name = text(spec.name)  # read once, as a plain string: no second answer
            if name in ("_signal", "_imp") or name.split(".", 1)[0] in blocked_modules:
                raise ImportError(f"module {name!r} is not available in the sandbox")
            box.append(real_create_builtin(ModuleSpec(name, None, origin="built-in")))

    return guard


def _install_guard() -> None:
    """Installs the guard and routes ``signal.signal`` through it (see :func:`_make_guard`)."""
    import _imp

    c_signal = signal._signal  # the C module object that signal.py and sys.modules share
    helpers: dict = {"__builtins__": __builtins__}
    exec(_CHILD_HELPERS_CODE, helpers)  # noqa: S102 - our own source
    guard = _make_guard(
        BLOCKED_EVENTS, FRAME_ATTRIBUTES, BLOCKED_MODULES, helpers, c_signal.signal, _imp.create_builtin
    )
    wrapper = helpers["make_signal"](sys.audit, signal.getsignal)
    wrapper.__name__ = wrapper.__qualname__ = "signal"
    c_signal.signal = wrapper
    signal.signal = wrapper  # replaces signal.py's wrapper, whose __wrapped__ is the real one
    _imp.create_builtin = helpers["make_create_builtin"](sys.audit)
    helpers.clear()
    sys.addaudithook(guard)


def _jsonable_problem(value: Any, limit: int = 1_000_000, type: Any = type, dict: Any = dict) -> str | None:  # noqa: A002
    """Returns why ``value`` is not a plain JSON value (``None`` when it is).

    ``type`` and ``dict`` are bound when the runner loads, so a program that patches ``builtins``
    cannot change the answer.
    """
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > limit:
            return "too large"
        kind = type(item)  # exact types: a subclass could serialise as something else
        if item is None or kind is bool or kind is int or kind is str or kind is float:
            continue
        if kind is list or kind is tuple:
            stack.extend(item)
        elif kind is dict:
            for key, element in dict.items(item):
                if type(key) is not str:
                    return f"dict key of type {type(key).__name__}"
                stack.append(element)
        else:
            return f"value of type {kind.__name__}"
    return None


def _child_main(job: dict, test_input: str, nonce: bytes, fds: dict, workdir: str, config: dict) -> None:
    """Sets the child up, runs the program, writes the completion record; never returns.

    Everything used after the program ran is bound to locals before it runs, and the record is
    assembled from constants and hex-encoded fields with methods of built-in types only, so
    nothing the program patches (``os``, ``json``, ``builtins``) sees the nonce or shapes the
    record.
    """
    write, exit_now, getpid = os.write, os._exit, os.getpid
    text_type, builtin_type, builtin_isinstance = str, type, isinstance
    to_text, encode, to_hex = str.__str__, str.encode, bytes.hex
    memory_error, system_exit, base_exception = MemoryError, SystemExit, BaseException
    dumps, jsonable_problem = json.dumps, _jsonable_problem
    record_fd, sys_module = RECORD_FD, sys
    my_pid = getpid()
    kind = job["kind"]
    try:
        _setup_child(fds, workdir, job["limits"], config)
        stdout, stderr = sys.stdout, sys.stderr
        original_excepthook = sys.__excepthook__
        args: list = []
        if kind == "functional":
            args = [json.loads(line) for line in test_input.split("\n") if line.strip()]
        program_path = os.path.join(workdir, "main.py")
        with open(program_path, "w", encoding="utf-8") as handle:
            handle.write(job["program"])
        namespace = _fresh_main(program_path)
        func_name = job.get("func_name") or ""
        _install_guard()
    except BaseException as error:  # the runner's own set-up failed: report it, run nothing
        os.write(2, f"sandbox set-up failed: {error!r}\n".encode())
        os._exit(71)

    status = b"ok"
    fields: dict = {}
    try:
        code = compile(job["program"], program_path, "exec", dont_inherit=True)
        exec(code, namespace)  # noqa: S102 - this is the sandboxed child
        if kind == "functional":
            target = namespace.get("Solution")
            if builtin_isinstance(target, builtin_type):
                function = getattr(target(), func_name, None)
            else:
                function = namespace.get(func_name)
            if function is None or not callable(function):
                status = b"missing"
                fields[b"message"] = f"the program defines no Solution.{func_name} (nor a function {func_name})"
            else:
                result = function(*args)
                problem = jsonable_problem(result)
                if problem is None:
                    fields[b"result"] = dumps(result, allow_nan=True)
                else:
                    status = b"unserialisable"
                    fields[b"message"] = problem
    except system_exit as error:
        status = b"ok" if kind == "stdin" else b"exit"
        fields = {b"code": repr(error.code) if error.code is None or builtin_isinstance(error.code, int) else "1"}
    except base_exception as error:
        status = b"exception"
        try:
            message = text_type(error)[:1000]
        except base_exception:
            message = "<unprintable exception>"
        fields = {
            b"type": builtin_type(error).__name__,
            b"message": message,
            b"memory": "1" if builtin_isinstance(error, memory_error) else "",
        }
        try:
            trace = error.__traceback__
            trace = trace.tb_next if trace is not None else None  # drop the runner's own frame
            error.__traceback__ = trace
            original_excepthook(builtin_type(error), error, trace)
        except base_exception:
            pass
    # As Python does at exit: wait for non-daemon threads, run atexit handlers, flush.
    try:
        threading_module = sys_module.modules.get("threading")
        if threading_module is not None:
            threading_module._shutdown()
        atexit_module = sys_module.modules.get("atexit")
        if atexit_module is not None:
            atexit_module._run_exitfuncs()
    except base_exception:
        pass
    for stream in (sys_module.stdout, sys_module.stderr, stdout, stderr):
        try:
            stream.flush()
        except base_exception:
            pass
    if getpid() != my_pid:
        exit_now(0)  # a process the program forked reached the end: it writes no record
    try:
        line = nonce + b"\n" + status
        for key, value in fields.items():
            hex_value = to_hex(encode(to_text(value), "utf-8", "backslashreplace"))
            line = line + b"\t" + key + b"=" + encode(hex_value, "ascii")
        line = line + b"\n"
        while line:
            line = line[write(record_fd, line) :]
    except base_exception:
        exit_now(72)
    exit_now(0)


def _setup_child(fds: dict, workdir: str, limits: dict, config: dict, channels: tuple = (), inheritable: bool = False) -> None:
    """Session, descriptors, identity, environment, limits and stdio of a fresh child.

    ``fds`` holds ``stdin``, ``stdout``, ``stderr`` and, unless ``channels`` is given, ``record``
    (placed at :data:`RECORD_FD`); ``channels`` are placed at descriptors 3, 4, ... instead, kept
    across ``execve`` when ``inheritable``. Every other descriptor is closed.
    """
    os.setsid()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    # Move the test's descriptors out of the way, then onto 0, 1, 2 and RECORD_FD.
    moved = {name: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for name, fd in fds.items()}
    placed = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in channels] or [moved["record"]]
    os.dup2(moved["stdin"], 0)
    os.dup2(moved["stdout"], 1)
    os.dup2(moved["stderr"], 2)
    for number, fd in enumerate(placed, start=RECORD_FD):
        os.dup2(fd, number, inheritable=inheritable)
    os.closerange(RECORD_FD + len(placed), max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1024))
    child_uid = config.get("child_uid")
    if child_uid is not None:
        os.setgroups([])
        os.setgid(child_uid)
        os.setuid(child_uid)
    os.chdir(workdir)
    os.umask(0o077)
    os.environ.clear()
    os.environ.update({"PATH": CHILD_PATH, "LANG": "C.UTF-8", "HOME": workdir, "TMPDIR": workdir})
    # The out-of-memory killer should pick the test, not the runner. /proc/self files of a
    # non-dumpable process belong to root, so become dumpable just long enough to write it.
    _prctl(4, 1)
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
    except OSError:
        pass
    _prctl(4, 0)
    mib = 1 << 20
    _set_limit(resource.RLIMIT_AS, int(limits["memory_mb"]) * mib)
    cpu = max(1, int(-(-float(limits["cpu_s"]) // 1)))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    if config.get("limit_processes", True):
        _set_limit(resource.RLIMIT_NPROC, int(limits["processes"]))
    _set_limit(resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * mib)
    _set_limit(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    _set_limit(resource.RLIMIT_CORE, 0)
    # Fresh stdio on the test's descriptors (the server's objects may hold buffered protocol data).
    sys.stdin = sys.__stdin__ = io.open(0, "r", encoding="utf-8", closefd=False)
    sys.stdout = sys.__stdout__ = io.open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = sys.__stderr__ = io.open(
        2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1
    )
    sys.argv = [os.path.join(workdir, "main.py")]
    sys.path.insert(0, workdir)
    random_module = sys.modules.get("random")
    if random_module is not None:
        random_module.seed()
    for name in [name for name in sys.modules if name.split(".", 1)[0] in PURGED_MODULES]:
        del sys.modules[name]


def _set_limit(which: int, value: int) -> None:
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def _fresh_main(program_path: str) -> dict:
    """Makes a new ``__main__`` module for the program and returns its namespace."""
    module = type(sys)("__main__")
    module.__dict__["__builtins__"] = __builtins__ if isinstance(__builtins__, dict) else __builtins__.__dict__
    module.__dict__["__file__"] = program_path
    sys.modules["__main__"] = module
    return module.__dict__


# =============================================================================================
# The server side: one test
# =============================================================================================


def _make_stdin(data: bytes, base: str) -> int:
    """Returns a read descriptor positioned at the start of ``data``."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("stdin", os.MFD_CLOEXEC)
    else:  # pragma: no cover - non-Linux
        import tempfile

        fd, path = tempfile.mkstemp(dir=base)
        os.unlink(path)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _new_workdir(state: dict) -> str:
    """A fresh private work directory for one child."""
    state["counter"] += 1
    workdir = os.path.join(state["base"], f"t{state['counter']}")
    os.mkdir(workdir, 0o700)
    uid = state["config"].get("child_uid")
    if uid is not None:
        os.chown(workdir, uid, uid)
    return workdir


def _fork_child(run: Any, closed: tuple, state: dict, close_protocol: bool = True) -> int:
    """Forks a child that closes ``closed`` (and the protocol descriptors), then calls ``run()``."""
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (*closed, *(state["protocol_fds"] if close_protocol else ())):
                os.close(fd)
            run()
        finally:
            os._exit(70)
    return pid


def run_test(job: dict, test_input: str, state: dict) -> dict:
    """Runs the job's program on one input in a fresh child and returns the outcome.

    Args:
        job: The job (``program``, ``kind``, ``limits``, ``func_name``).
        test_input: The test's input (stdin text, or JSON lines for ``functional``).
        state: The server's state (``config``, ``base``, counters, ``recycle``).

    Returns:
        The outcome dict described in the module docstring.
    """
    limits = job["limits"]
    cap = int(limits["output_bytes"])
    workdir = _new_workdir(state)
    stdin_fd = _make_stdin(test_input.encode("utf-8") if job["kind"] == "stdin" else b"", state["base"])
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    rec_r, rec_w = os.pipe()
    nonce = os.urandom(16).hex().encode()
    oom_before = _oom_kills(state)
    started = time.monotonic()
    fds = {"stdin": stdin_fd, "stdout": out_w, "stderr": err_w, "record": rec_w}
    pid = _fork_child(
        lambda: _child_main(job, test_input, nonce, fds, workdir, state["config"]), (out_r, err_r, rec_r), state
    )
    for fd in (out_w, err_w, rec_w, stdin_fd):
        os.close(fd)
    buffers = {out_r: bytearray(), err_r: bytearray(), rec_r: bytearray()}
    limits_by_fd = {out_r: cap, err_r: cap, rec_r: cap * RECORD_LIMIT_FACTOR + 4096}
    killed, statuses = _watch(pid, (), buffers, limits_by_fd, started + float(limits["wall_s"]), state)
    status, rusage, ended = statuses[pid]
    oom_after = _finish_test(state, oom_before, (workdir,))
    return _outcome(job, buffers[out_r], buffers[err_r], buffers[rec_r], nonce, status, rusage, killed,
                    ended - started, cap, oom_before, oom_after)


def run_isolated(job: dict, state: dict) -> dict:
    """Runs the program and its checks as two processes that share plain data only.

    The checks are not in the job the runner read: they follow it on the protocol stream, and
    the checker child reads them itself. Only then does the runner fork the candidate, so neither
    the runner nor the candidate's process ever held them. The checker runs them with the
    candidate's name bound to a proxy (:mod:`conductor_env.sandboxes.proxy`); its completion
    record decides.

    Returns:
        An outcome as :func:`run_test`'s (the checker's exit, record and output), plus the
        candidate's ``callee_signal``, ``callee_exit_code`` and ``callee_cpu_s``; ``stdout`` and
        ``stderr`` are the candidate's.
    """
    limits, config, proxy = job["limits"], state["config"], state["proxy"]
    cap = int(limits["output_bytes"])
    protocol_in, protocol_out = state["protocol_fds"]
    callee_dir, checker_dir = _new_workdir(state), _new_workdir(state)
    empty_fd = _make_stdin(b"", state["base"])
    calls_r, calls_w = os.pipe()
    replies_r, replies_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    checks_r, checks_w = os.pipe()
    rec_r, rec_w = os.pipe()
    sync_r, sync_w = os.pipe()
    nonce = os.urandom(16).hex().encode()
    oom_before = _oom_kills(state)
    started = time.monotonic()

    def checker() -> None:
        test = json.loads(_read_exactly(protocol_in, int(job.get("checks_bytes") or 0)))
        os.close(protocol_in)
        _write_all(sync_w, b"1")
        os.close(sync_w)
        fds = {"stdin": empty_fd, "stdout": checks_w, "stderr": checks_w}
        _setup_child(fds, checker_dir, limits, config, channels=(rec_w, calls_w, replies_r))
        _checker_main(job, test, nonce, cap * RECORD_LIMIT_FACTOR + 4096, proxy)

    def callee() -> None:
        _setup_child({"stdin": empty_fd, "stdout": out_w, "stderr": err_w}, callee_dir, limits, config,
                     channels=(calls_r, replies_w))
        proxy.callee_main(job["program"], os.path.join(callee_dir, "main.py"), job["func_name"], RECORD_FD, RECORD_FD + 1)

    checker_pid = _fork_child(checker, (calls_r, replies_w, out_r, out_w, err_r, err_w, checks_r, rec_r, sync_r, protocol_out),
                              state, close_protocol=False)
    for fd in (calls_w, replies_r, checks_w, rec_w, sync_w):
        os.close(fd)
    if _wait_for_byte(sync_r, float(limits["wall_s"]) + 10.0) != b"1":
        state["desync"] = True  # the checks may still be on the protocol stream: stop serving
        callee_pid = _fork_child(lambda: None, (calls_r, replies_w, out_r, out_w, err_r, err_w, checks_r, rec_r, sync_r), state)
    else:
        callee_pid = _fork_child(callee, (out_r, err_r, checks_r, rec_r, sync_r), state)
    for fd in (empty_fd, calls_r, replies_w, out_w, err_w, sync_r):
        os.close(fd)
    buffers = {out_r: bytearray(), err_r: bytearray(), checks_r: bytearray(), rec_r: bytearray()}
    limits_by_fd = {out_r: cap, err_r: cap, checks_r: cap, rec_r: cap * RECORD_LIMIT_FACTOR + 4096}
    killed, statuses = _watch(checker_pid, (callee_pid,), buffers, limits_by_fd, started + float(limits["wall_s"]), state)
    status, rusage, ended = statuses[checker_pid]
    oom_after = _finish_test(state, oom_before, (callee_dir, checker_dir))
    outcome = _outcome(job, buffers[out_r], buffers[err_r], buffers[rec_r], nonce, status, rusage, killed,
                       ended - started, cap, oom_before, oom_after)
    callee_status, callee_usage, _ended = statuses[callee_pid]
    outcome["callee_exit_code"] = os.WEXITSTATUS(callee_status) if os.WIFEXITED(callee_status) else None
    outcome["callee_signal"] = os.WTERMSIG(callee_status) if os.WIFSIGNALED(callee_status) else None
    outcome["callee_cpu_s"] = round(callee_usage.ru_utime + callee_usage.ru_stime, 6)
    outcome["checks_output"] = bytes(buffers[checks_r][:HEAD_BYTES]).decode("utf-8", "replace")
    return outcome


def _read_exactly(fd: int, size: int) -> bytes:
    """Reads ``size`` bytes (fewer only at end of stream); never more than asked."""
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _wait_for_byte(fd: int, timeout: float) -> bytes:
    """One byte from ``fd`` within ``timeout`` seconds (``b""`` on end of stream or time-out)."""
    ready, _w, _x = select.select([fd], [], [], timeout)
    return os.read(fd, 1) if ready else b""


def _checker_main(job: dict, test: dict, nonce: bytes, max_line: int, proxy: Any) -> None:
    """The checker child: runs the trusted checks against the proxy and writes the record."""
    status, fields = b"ok", {}
    try:
        proxy.run_checks(test["checks"], test["call"], job["func_name"], proxy.Channel(RECORD_FD + 1, RECORD_FD + 2, max_line))
    except BaseException as error:  # noqa: BLE001 - every failure of the checks is the verdict
        status = b"exception"
        try:
            message = str(error)[:1000]
        except BaseException:  # noqa: BLE001
            message = "<unprintable exception>"
        fields = {b"type": type(error).__name__, b"message": message,
                  b"memory": "1" if isinstance(error, MemoryError) else "",
                  b"proxy": "1" if isinstance(error, proxy.ProxyError) else ""}
    line = nonce + b"\n" + status
    for key, value in fields.items():
        line += b"\t" + key + b"=" + str(value).encode("utf-8", "backslashreplace").hex().encode("ascii")
    _write_all(RECORD_FD, line + b"\n")
    os._exit(0)


def _watch(pid: int, others: tuple, buffers: dict, limits_by_fd: dict, deadline: float, state: dict) -> tuple:
    """Collects the children's output until ``pid`` exits, the deadline passes or output overflows.

    Then kills everything the test started and reaps it.

    Returns:
        ``(killed, statuses)``: ``killed`` is ``None``, ``"wall"`` or ``"output"``; ``statuses``
        maps each of ``pid`` and ``others`` to ``(wait status, rusage, time it ended)``.
    """
    poller = select.poll()
    for fd in buffers:
        poller.register(fd, select.POLLIN)
    pidfd = _pidfd(pid)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    open_fds = set(buffers)
    statuses: dict = {}
    killed = None
    while True:
        remaining_ms = (deadline - time.monotonic()) * 1000
        events = poller.poll(max(1, int(remaining_ms if pidfd is not None else min(10.0, remaining_ms))))
        overflow = False
        for fd, _event in events:
            if fd == pidfd:
                continue
            chunk = _read_some(fd)
            if not chunk:
                poller.unregister(fd)
                open_fds.discard(fd)
                continue
            buffers[fd] += chunk
            if len(buffers[fd]) > limits_by_fd[fd]:
                overflow = True
        if overflow:
            killed = "output"
            break
        for child in (pid, *others):
            if child not in statuses:
                waited, wait_status, usage = os.wait4(child, os.WNOHANG)
                if waited == child:
                    statuses[child] = (wait_status, usage, time.monotonic())
        if pid in statuses:
            break
        if time.monotonic() >= deadline:
            killed = "wall"
            break
    for child in (pid, *others):
        _kill_everything(child, state)
    for child in (pid, *others):
        if child not in statuses:
            _waited, wait_status, usage = os.wait4(child, 0)
            statuses[child] = (wait_status, usage, time.monotonic())
    _reap_all(state)
    for fd in list(open_fds):
        _drain(fd, buffers[fd], limits_by_fd[fd])
    for fd in buffers:
        os.close(fd)
    if pidfd is not None:
        os.close(pidfd)
    return killed, statuses


def _finish_test(state: dict, oom_before: int | None, workdirs: tuple) -> int | None:
    """Notes a sandbox-wide out-of-memory kill, removes the test's files; returns the OOM count."""
    oom_after = _oom_kills(state)
    if oom_before is not None and oom_after is not None and oom_after > oom_before:
        state["recycle"] = True  # the sandbox itself hit its memory limit: start a fresh one
    for workdir in workdirs:
        _clean_files(workdir, state)
    return oom_after


def _outcome(job, stdout, stderr, record_bytes, nonce, status, rusage, killed, elapsed, cap, oom_before, oom_after):
    exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    record, record_error = _parse_record(bytes(record_bytes), nonce)
    keep = cap if job["kind"] == "stdin" else HEAD_BYTES
    outcome = {
        "time_s": round(elapsed, 6),
        "cpu_s": round(rusage.ru_utime + rusage.ru_stime, 6) if rusage is not None else 0.0,
        "exit_code": exit_code,
        "signal": sig,
        "killed": killed,
        "record": record,
        "record_error": record_error,
        "stdout": bytes(stdout[:keep]).decode("utf-8", "replace"),
        "stdout_bytes": len(stdout),
        "stderr": bytes(stderr[:HEAD_BYTES]).decode("utf-8", "replace"),
        "stderr_bytes": len(stderr),
    }
    if sig == signal.SIGKILL and killed is None and oom_before is not None and oom_after is not None:
        outcome["oom_killed"] = oom_after > oom_before
    return outcome


RECORD_STATUSES = frozenset({"ok", "exit", "exception", "missing", "unserialisable"})


def _parse_record(data: bytes, nonce: bytes) -> tuple[dict | None, str | None]:
    """Returns ``(record, None)``, ``(None, None)`` when there is none, or ``(None, why)``.

    A record is ``nonce \\n status (\\t key=hex(utf-8 value))* \\n``, exactly once.
    """
    if not data:
        return None, None
    head, _newline, rest = data.partition(b"\n")
    if head != nonce or not rest.endswith(b"\n") or b"\n" in rest[:-1]:
        return None, "the completion channel carried data the runner did not write"
    parts = rest[:-1].split(b"\t")
    status = parts[0].decode("ascii", "replace")
    if status not in RECORD_STATUSES:
        return None, "unreadable completion record"
    record: dict = {"status": status}
    try:
        for part in parts[1:]:
            key, _equals, value = part.partition(b"=")
            record[key.decode("ascii")] = bytes.fromhex(value.decode("ascii")).decode("utf-8", "replace")
    except ValueError:
        return None, "unreadable completion record"
    record["memory"] = bool(record.get("memory"))
    return record, None


def _read_some(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except OSError:
        return b""


def _drain(fd: int, buffer: bytearray, limit: int) -> None:
    """Reads what is left in a pipe whose writers are all dead (bounded)."""
    os.set_blocking(fd, False)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and len(buffer) <= limit:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            select.select([fd], [], [], 0.05)
            continue
        except OSError:
            return
        if not chunk:
            return
        buffer += chunk


def _pidfd(pid: int) -> int | None:
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _kill_everything(pid: int, state: dict) -> None:
    """Kills the test's process group and every other process the test started."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    if state["pid1"]:
        try:
            os.kill(-1, signal.SIGKILL)  # everything in this PID namespace but the runner
        except OSError:
            pass


def _reap_all(state: dict) -> None:
    """Reaps every child; kills survivors (orphans re-parented here) until none is left."""
    deadline = time.monotonic() + 5.0
    rounds = 0
    while True:
        try:
            waited, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if waited:
            continue
        rounds += 1
        if time.monotonic() > deadline:
            state["recycle"] = True
            return
        if state["pid1"]:
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        else:
            for child in _children():
                try:
                    os.kill(child, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.001 if rounds < 50 else 0.01)


def _children() -> list[int]:
    """The runner's direct children (orphans are re-parented here: the runner is a subreaper)."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:
        pass
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                children.append(int(entry))
    return children


def _clean_files(workdir: str, state: dict) -> None:
    """Removes the test's files; in a private /tmp, everything the test left anywhere in it."""
    targets = [workdir]
    if state["pid1"]:
        targets = [os.path.join(state["base"], name) for name in os.listdir(state["base"])]
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
            targets += [os.path.join("/dev/shm", name) for name in _listdir("/dev/shm")]
    for target in targets:
        _remove_tree(target)
        if os.path.lexists(target):
            state["recycle"] = True


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _remove_tree(path: str) -> None:
    import shutil

    def make_writable_and_retry(function, failed_path, _exc_info):
        try:
            os.chmod(os.path.dirname(failed_path) or ".", 0o700)
            if os.path.isdir(failed_path) and not os.path.islink(failed_path):
                os.chmod(failed_path, 0o700)
            function(failed_path)
        except OSError:
            pass

    if os.path.isdir(path) and not os.path.islink(path):
        _make_tree_writable(path)
        shutil.rmtree(path, onerror=make_writable_and_retry)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def _make_tree_writable(path: str) -> None:
    try:
        os.chmod(path, 0o700)
    except OSError:
        return
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                try:
                    os.chmod(full, 0o700)
                except OSError:
                    pass


def _oom_kills(state: dict) -> int | None:
    """The sandbox cgroup's OOM-kill counter (``None`` when not visible)."""
    path = state.get("oom_file")
    if not path:
        return None
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _find_oom_file() -> str | None:
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as handle:
                if any(line.startswith("oom_kill ") for line in handle):
                    return path
        except OSError:
            continue
    return None


# =============================================================================================
# The server: jobs in, replies out
# =============================================================================================


def run_job(job: dict, state: dict) -> dict:
    """Runs every test of a job and returns the reply."""
    kind = job.get("kind")
    if kind not in ("stdin", "functional", "script", "isolated"):
        return {"id": job.get("id"), "outcomes": [], "recycle": False, "error": f"unknown kind {kind!r}"}
    state["recycle"] = False
    if kind == "isolated":
        outcomes = [run_isolated(job, state)]
    else:
        inputs = [""] if kind == "script" else [str(test.get("input", "")) for test in job.get("tests", [])]
        outcomes = [run_test(job, test_input, state) for test_input in inputs]
    return {"id": job.get("id"), "outcomes": outcomes, "recycle": state["recycle"], "error": None}


_PRCTL: list = []  # the C function, looked up once (dlopen costs milliseconds per call)


def _prctl(option: int, value: int) -> bool:
    """Calls prctl(2) through ctypes; ``False`` when it is unavailable."""
    try:
        if not _PRCTL:
            import ctypes

            _PRCTL.append(ctypes.CDLL(None, use_errno=True).prctl)
        return _PRCTL[0](option, value, 0, 0, 0) == 0
    except (OSError, AttributeError, ImportError):
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_frame(fd: int) -> bytes | None:
    """Reads one ``<length>\\n<bytes>`` frame, never past its end; ``None`` at end of stream."""
    header = b""
    while not header.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk or len(header) > 20:
            return None
        header += chunk
    try:
        size = int(header)
    except ValueError:
        return None
    return _read_exactly(fd, size)


def _load_proxy(fd: int) -> Any:
    """Reads the proxy module's source, framed as the runner's (``<length>\\n<source>``), and loads it."""
    source = _read_frame(fd)
    if source is None:
        raise SystemExit(3)
    module = type(sys)("conductor_env_proxy")
    exec(compile(source, "conductor_env_proxy", "exec"), module.__dict__)  # noqa: S102 - our own source
    return module


def serve(config: dict | None = None) -> None:
    """Serves jobs from stdin until it closes.

    Args:
        config: ``base`` (work-directory root, default ``/tmp``), ``child_uid`` (run programs as
            this uid; the runner must be root), ``limit_processes`` (apply RLIMIT_NPROC: only
            when the uid is the sandbox's own).
    """
    config = dict(config or {})
    proxy = _load_proxy(0)
    protocol_in = os.dup(0)
    protocol_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
    pid1 = os.getpid() == 1
    _prctl(4, 0)  # PR_SET_DUMPABLE 0: same-uid processes cannot ptrace the runner or its children
    if not pid1:
        _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans of the tests come back to the runner
    for name in PRELOADED_MODULES:
        try:
            __import__(name)
        except ImportError:
            pass
    import gc

    gc.collect()
    gc.freeze()  # the server's objects stay out of the children's collections (fewer copied pages)
    base = config.get("base") or "/tmp"
    os.makedirs(base, exist_ok=True)
    state = {
        "config": config,
        "base": base,
        "counter": 0,
        "pid1": pid1,
        "recycle": False,
        "protocol_fds": (protocol_in, protocol_out),
        "oom_file": _find_oom_file(),
        "proxy": proxy,
    }
    hello = {
        "ready": True,
        "pid1": pid1,
        "python": sys.version.split()[0],
        "oom_visible": state["oom_file"] is not None,
    }
    _write_all(protocol_out, (json.dumps(hello) + "\n").encode())
    while not state.get("desync"):
        frame = _read_frame(protocol_in)
        if frame is None:
            break
        try:
            reply = run_job(json.loads(frame), state)
        except Exception as error:  # a malformed job must not stop the server
            reply = {"id": None, "outcomes": [], "recycle": True, "error": f"runner error: {error!r}"}
        if state.get("desync"):
            reply["recycle"] = True
        _write_all(protocol_out, (json.dumps(reply) + "\n").encode())
        del frame, reply
    if pid1:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass


if __name__ in ("__main__", "conductor_runner"):
    serve(json.loads(sys.argv[1]) if len(sys.argv) > 1 else None)
