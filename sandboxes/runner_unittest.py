"""Kind ``unittest``: a program, then a ``unittest`` test module that was never in its process (stdlib only).

Shipped into the sandbox as part of the runner's payload (:mod:`conductor_env.sandboxes.runner`).
BigCodeBench's tests patch library modules and inspect library objects the program returns
(DataFrames, Axes), so they run in the candidate's process; what this kind keeps from the
candidate, and how, is in docs/THREAT_MODEL.md ("BigCodeBench"):

1. The tests follow the job on the protocol stream and the runner reads them only after it
   forked the child, which runs the program's top level first (as module ``__test__``). The
   child then writes a per-job token, which only its runner frames hold, on a ready pipe; only
   on that token does the runner send ``token + tests`` down the tests pipe.
2. The guard (:mod:`~conductor_env.sandboxes.runner_guard`) is active for the program.
3. The child runs the tests itself, not through ``TestResult``/``TestSuite``: each test case is
   built with the ``TestCase`` methods bound before the program ran, on the instance (so
   replacing ``TestCase.assertEqual`` changes nothing), and after the top level and after every
   test the identity of every attribute of ``unittest``'s modules, classes and ``builtins`` is
   compared with a snapshot taken before the program ran: a difference fails the job.
4. The completion record lists each test by name with its verdict; the host compares the names
   with its own AST reading of the tests (:mod:`conductor_env.sandboxes.unittest_grading`).
"""

from __future__ import annotations

import os
import select
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the sandbox, runner.load_payload binds these names (the payload imports only the stdlib)
    from conductor_env.sandboxes import runner, runner_child, runner_guard, runner_jobs, runner_unittest_libs, runner_watch

#: Modules whose attributes (and whose classes' attributes) must not change while tests run.
WATCHED_MODULES = ("builtins", "unittest", "unittest.case", "unittest.result", "unittest.suite",
                   "unittest.loader", "unittest.util", "unittest.mock")  # fmt: skip
#: Characters of a failing test's message kept in the record.
MESSAGE_CHARS = 300


def run_job(job: dict, state: dict) -> dict:
    """Runs one ``unittest`` job and returns the reply (one outcome)."""
    state["recycle"] = False
    return {"id": job.get("id"), "outcomes": [run_unittest(job, state)], "recycle": state["recycle"], "error": None}


def run_unittest(job: dict, state: dict) -> dict:
    """Forks the child, hands it the tests once its program's top level has run, and watches it.

    Returns:
        An outcome as :func:`runner_jobs.run_test`'s.
    """
    limits, config = job["limits"], state["config"]
    cap = int(limits["output_bytes"])
    protocol_in = state["protocol_fds"][0]
    workdir = runner_jobs._new_workdir(state)
    stdin_fd = runner_jobs._make_stdin(b"", state["base"])
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    rec_r, rec_w = os.pipe()
    tests_r, tests_w = os.pipe()
    ready_r, ready_w = os.pipe()
    nonce = os.urandom(16).hex().encode()
    token = os.urandom(16).hex().encode()
    oom_before = runner_watch.oom_kills(state)
    started = time.monotonic()
    fds = {"stdin": stdin_fd, "stdout": out_w, "stderr": err_w}
    channels = (rec_w, tests_r, ready_w)

    def child() -> None:
        child_main(job, nonce, token, fds, channels, workdir, config)

    pid = runner_jobs._fork_child(child, (out_r, err_r, rec_r, tests_w, ready_r), state)
    for fd in (out_w, err_w, rec_w, tests_r, ready_w, stdin_fd):
        os.close(fd)
    # Only now, in the runner (never in the child), are the tests read off the stream.
    tests = runner.read_exactly(protocol_in, int(job.get("checks_bytes") or 0))
    buffers = {out_r: bytearray(), err_r: bytearray(), rec_r: bytearray()}
    limits_by_fd = {out_r: cap, err_r: cap, rec_r: cap * runner_jobs.RECORD_LIMIT_FACTOR + 4096}
    deadline = started + float(limits["wall_s"])
    if _await_token(ready_r, token, buffers, limits_by_fd, deadline):
        _send_tests(tests_w, token + b"\n" + tests, deadline)
    del tests
    for fd in (tests_w, ready_r):
        os.close(fd)
    killed, statuses = runner_watch.watch(pid, (), buffers, limits_by_fd, deadline, state)
    status, rusage, ended = statuses[pid]
    oom_after = runner_watch.finish_test(state, oom_before, (workdir,))
    return runner_jobs._outcome(job, buffers[out_r], buffers[err_r], buffers[rec_r], nonce, status, rusage, killed,
                                ended - started, cap, oom_before, oom_after)


def _await_token(ready_r: int, token: bytes, buffers: dict, limits_by_fd: dict, deadline: float) -> bool:
    """Drains the child's output until it writes exactly ``token`` on the ready pipe.

    ``False`` when anything else arrives there, the pipe closes, output overflows or time is up.
    """
    received = b""
    while time.monotonic() < deadline:
        fds = [ready_r, *(fd for fd, data in buffers.items() if len(data) <= limits_by_fd[fd])]
        ready, _w, _x = select.select(fds, [], [], max(0.0, deadline - time.monotonic()))
        for fd in ready:
            chunk = os.read(fd, 65536)
            if fd == ready_r:
                if not chunk:
                    return False
                received += chunk
                if len(received) >= len(token):
                    return received == token
            elif chunk:
                buffers[fd] += chunk
            else:
                return False  # the child closed its output: it is ending without asking for tests
    return False


def _send_tests(tests_w: int, data: bytes, deadline: float) -> None:
    """Writes ``data`` to the tests pipe, giving up at the deadline (a child that stops reading)."""
    view = memoryview(data)
    while view and time.monotonic() < deadline:
        _r, writable, _x = select.select([], [tests_w], [], max(0.0, deadline - time.monotonic()))
        if writable:
            try:
                view = view[os.write(tests_w, view[:65536]) :]
            except OSError:
                return


def child_main(job: dict, nonce: bytes, token: bytes, fds: dict, channels: tuple, workdir: str, config: dict) -> None:
    """The child: the program's top level, then the tests, then the record; never returns."""
    exit_now, getpid, write_record = os._exit, os.getpid, runner_child._write_record
    my_pid = getpid()
    try:
        runner_child.setup_child(fds, workdir, job["limits"], config, channels=channels)
        runner_unittest_libs.prepare_libraries(job.get("preload") or [], bool(job.get("real_ctypes")))
        kit = _bind_kit()
        program_path = os.path.join(workdir, "main.py")
        with open(program_path, "w", encoding="utf-8") as handle:
            handle.write(job["program"])
        runner_guard.install_guard()
    except BaseException as error:  # the runner's own set-up failed: report it, run nothing
        os.write(2, f"sandbox set-up failed: {error!r}\n".encode())
        os._exit(71)
    status, fields = _run_all(kit, job["program"], program_path, token)
    runner_child._finish_as_python_does((kit["stdout"], kit["stderr"]))
    if getpid() != my_pid:
        exit_now(0)  # a process the program forked reached the end: it writes no record
    write_record(nonce, status, fields)


def _bind_kit() -> dict:
    """Everything the child uses after the program ran, bound before it runs.

    Returns:
        A dict of callables, the ``TestCase`` methods by name, and the snapshot of
        :data:`WATCHED_MODULES` (``(owner, name) -> id``).
    """
    import _thread
    import builtins
    import json
    import sys
    import types
    import unittest
    import unittest.mock

    case_methods = {name: value for name, value in vars(unittest.TestCase).items() if type(value) is types.FunctionType}
    kit = {
        "json": json.dumps, "read": os.read, "write": os.write, "close": os.close, "method": types.MethodType,
        "module": type(sys), "modules": sys.modules, "threads": _thread._count, "compile": compile, "exec": exec,
        "getattr": getattr, "isinstance": isinstance, "issubclass": issubclass, "type": type, "str": str,
        "sorted": sorted, "dir": dir, "callable": callable, "vars": vars, "len": len, "list": list, "dict": dict,
        "base_exception": BaseException, "assertion": AssertionError, "id": id, "items": dict.items,
        "proxy_items": types.MappingProxyType.items,
        "new": object.__new__, "index": tuple.index,
        "test_case": unittest.TestCase, "case_methods": case_methods, "case_init": unittest.TestCase.__init__,
        "failure": unittest.TestCase.failureException, "builtins": builtins.__dict__,
        "stdout": sys.stdout, "stderr": sys.stderr,
    }  # fmt: skip
    kit["snapshot"] = _snapshot(kit)
    return kit


def _snapshot(kit: dict) -> dict:
    """``(owner, name) -> id(value)`` over :data:`WATCHED_MODULES`' attributes and their classes' dicts."""
    seen: dict = {}
    type_, vars_, isinstance_, id_, items = kit["type"], kit["vars"], kit["isinstance"], kit["id"], kit["items"]
    for module_name in WATCHED_MODULES:
        module = kit["modules"].get(module_name)
        if module is None:
            continue
        for name, value in items(vars_(module)):
            is_class = isinstance_(value, type_)
            if is_class or module_name != "unittest.mock":  # mock's module globals are its state (file_spec)
                seen[(module_name, name)] = id_(value)
            if is_class and module_name != "builtins":
                for attribute, member in kit["proxy_items"](vars_(value)):
                    seen[(module_name, name, attribute)] = id_(member)
    return seen


def _tampered(kit: dict, base: dict, now: dict) -> str:
    """The first watched attribute that changed, or a watched class's new one, as text ("" when none).

    Modules may gain names (lazy imports); classes may not (say, ``TestCase.__getattribute__``).
    """
    get = kit["dict"].get
    for key, value in kit["items"](base):
        if get(now, key) != value:
            return ".".join(key)
    for key in now:
        if kit["len"](key) == 3 and key not in base and (key[0], key[1]) in base:
            return ".".join(key)
    return ""


def _run_all(kit: dict, program: str, program_path: str, token: bytes) -> tuple[bytes, dict]:
    """Top level, tests, verdicts: ``(status, fields)`` of the completion record."""
    base_exception = kit["base_exception"]
    try:
        module = kit["module"]("__test__")
        namespace = module.__dict__
        namespace.update({"__builtins__": kit["builtins"], "__file__": program_path})
        kit["modules"]["__test__"] = module
        kit["exec"](kit["compile"](program, program_path, "exec", dont_inherit=True), namespace)
    except base_exception as error:
        return b"exception", _error_fields(kit, error, "the program's top level raised")
    if kit["threads"]() != 0:
        return b"exception", {b"type": "Tampering", b"message": "the program's top level left threads running"}
    changed = _tampered(kit, kit["snapshot"], _snapshot(kit))
    if changed:
        return b"exception", {b"type": "Tampering", b"message": f"the program changed {changed}"}
    tests = _receive_tests(kit, token)
    if tests is None:
        return b"exception", {b"type": "Tampering", b"message": "the tests did not arrive intact"}
    try:
        test_namespace = kit["dict"](namespace)  # the program's names; its own globals stay without the tests
        kit["exec"](kit["compile"](tests, "__test__.py", "exec", dont_inherit=True), test_namespace)
        # BigCodeBench runs program and tests in one module, and some solutions use the tests'
        # imports: the program gets the names the tests imported, never what they define.
        for name, value in kit["items"](test_namespace):
            if name not in namespace and kit["getattr"](value, "__module__", None) != "__test__":
                namespace[name] = value
        cases = test_namespace.get("TestCases")
        if not (kit["isinstance"](cases, kit["type"]) and kit["issubclass"](cases, kit["test_case"])):
            return b"exception", {b"type": "NoTests", b"message": "the tests define no TestCases class"}
    except base_exception as error:
        return b"exception", _error_fields(kit, error, "the tests could not be loaded")
    return b"ok", {b"results": kit["json"](_run_cases(kit, cases))}


def _receive_tests(kit: dict, token: bytes) -> str | None:
    """Asks the runner for the tests (``token`` on the ready pipe) and reads ``token + tests``."""
    record_fd = runner_child.RECORD_FD
    tests_fd, ready_fd = record_fd + 1, record_fd + 2
    try:
        kit["write"](ready_fd, token)
        kit["close"](ready_fd)
        data = b""
        while True:
            chunk = kit["read"](tests_fd, 65536)
            if not chunk:
                break
            data += chunk
        kit["close"](tests_fd)
    except kit["base_exception"]:  # noqa: BLE001 - a broken channel is a failed job, whatever broke it
        return None
    head, _newline, body = data.partition(b"\n")
    return body.decode("utf-8") if head == token else None


def _run_cases(kit: dict, cases: Any) -> list:
    """Runs every test method of ``cases``; ``[[name, verdict, message], ...]``."""
    getattr_, callable_, base_exception = kit["getattr"], kit["callable"], kit["base_exception"]
    names = kit["sorted"](name for name in kit["dir"](cases)
                          if name.startswith("test") and callable_(getattr_(cases, name, None)))
    results = []
    try:
        cases.setUpClass()
    except base_exception as error:
        fields = _error_fields(kit, error, "setUpClass failed")
        return [[name, "error", fields[b"message"]] for name in names]
    for name in names:
        before = _snapshot(kit)
        verdict, message = _run_one(kit, cases, name)
        changed = _tampered(kit, before, _snapshot(kit))
        if changed:  # checked for failed tests too: the record says what happened
            verdict, message = "tampered", f"{changed} changed during the test"
        results.append([name, verdict, message])
    try:
        cases.tearDownClass()
    except base_exception as error:
        results.append(["tearDownClass", "error", _error_fields(kit, error, "tearDownClass failed")[b"message"]])
    return results


def _run_one(kit: dict, cases: Any, name: str) -> tuple[str, str]:
    """Runs one test method on a case whose ``TestCase`` methods are the ones bound before the program ran."""
    base_exception, method, vars_, test_case = kit["base_exception"], kit["method"], kit["vars"], kit["test_case"]
    try:
        mro = cases.__mro__
        below = mro[: kit["index"](mro, test_case)]
        own_init = False
        for klass in below:
            own_init = own_init or "__init__" in vars_(klass)
        case = kit["new"](cases)
        (cases.__init__ if own_init else kit["case_init"])(case, name)
        for attribute, function in kit["items"](kit["case_methods"]):
            inherited = True
            for klass in below:
                inherited = inherited and attribute not in vars_(klass)
            if inherited:  # the test module's own overrides (setUp, tearDown) stay
                case.__dict__[attribute] = method(function, case)
        case.__dict__["failureException"] = kit["failure"]
        case.setUp()
        try:
            kit["getattr"](case, name)()
        finally:
            case.tearDown()
            cleaned = kit["case_methods"]["doCleanups"](case)
        if not cleaned:
            return "error", "a cleanup failed"
    except base_exception as error:
        fields = _error_fields(kit, error, "")
        return ("fail" if kit["isinstance"](error, kit["assertion"]) else "error"), fields[b"message"]
    return "pass", ""


def _error_fields(kit: dict, error: BaseException, context: str) -> dict:
    """Record fields for an exception (never raises)."""
    try:
        text = f"{kit['type'](error).__name__}: {kit['str'](error)}"
    except kit["base_exception"]:
        text = "<unprintable exception>"
    text = f"{context}: {text}" if context else text
    return {b"type": "Exception", b"message": text[:MESSAGE_CHARS]}
