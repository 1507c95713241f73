"""The runner's grading rules (LiveCodeBench stdin/functional, scripts) and its integrity, run for
real in the local backend (bubblewrap), plus the sandbox API around it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"))

from sandbox_helpers import FIXTURES, TEST_LIMITS, open_backend  # noqa: E402

import conductor_env.sandboxes.local as local_module  # noqa: E402
from conductor_env.sandboxes import (  # noqa: E402
    DockerSandbox,
    Limits,
    LocalSandbox,
    Report,
    SandboxUnavailable,
    TestResult,
    get_sandbox,
)
from conductor_env.sandboxes.grading import compare_functional_result, compare_stdin_output  # noqa: E402


@pytest.fixture(scope="module")
def sandbox():
    box = open_backend("local", pool_size=2, limits=TEST_LIMITS)
    yield box
    box.close()


def verdicts(report: Report) -> list[str]:
    assert report.error is None, report.error
    return [test.verdict for test in report.tests]


# ---------------------------------------------------------------------------------------------
# LiveCodeBench's output comparison (the host's grading functions)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "expected", "same"),
    [
        ("3\n", "3", True),
        ("  1 2 3  \n\n", "1 2 3", True),  # whole output and each line stripped
        ("a\r\nb\n", "a\nb", True),
        ("1.0 2\n", "1 2.00", True),  # decimals compare by value
        ("1e3\n", "1000", True),
        ("50000000000000001\n", "50000000000000000", False),  # exact, not float-close
        ("0.30000000000000004\n", "0.3", False),
        ("1 2\n", "1  2", True),  # different text, same tokens as decimals
        ("yes\n", "YES", False),
        ("1\n2\n", "1", False),  # line count
        ("1\n\n2\n", "1\n2", False),  # an inner blank line counts
        ("", "", True),
        ("nan\n", "nan", True),  # equal text wins before decimals
    ],
)
def test_stdin_comparison_follows_livecodebench(actual, expected, same):
    assert compare_stdin_output(actual, expected)[0] is same


def test_functional_comparison_is_json_equality():
    assert compare_functional_result("[1, [2, 3]]", "[1,[2,3]]") == (True, "")
    assert compare_functional_result("2.0", "2")[0] is True
    assert compare_functional_result('{"a": 1}', '{"a": 1}')[0] is True
    assert compare_functional_result("[1, 2]", "[2, 1]")[0] is False
    assert compare_functional_result("true", "1")[0] is True  # Python equality, as LiveCodeBench
    with pytest.raises(ValueError):
        compare_functional_result("1", "not json")


# ---------------------------------------------------------------------------------------------
# stdin programs
# ---------------------------------------------------------------------------------------------


def test_stdin_verdicts_in_test_order(sandbox):
    program = "n = int(input())\nprint(n * 2)\n"
    tests = [
        {"input": "21\n", "output": "42\n"},
        {"input": "2", "output": "5"},
        {"input": "x", "output": "0"},
        {"input": "-3", "output": "  -6  \n\n"},
    ]
    report = sandbox.run_tests(program, tests, kind="stdin")
    assert verdicts(report) == ["pass", "wrong", "runtime_error", "pass"]
    assert report.pass_fraction == 0.5 and not report.passed
    assert report.tests[0].stdout_head == "42\n"
    assert "expected '5', got '4'" in report.tests[1].detail
    assert "ValueError" in report.tests[2].detail and "ValueError" in report.tests[2].stderr_head
    assert all(test.time_s > 0 for test in report.tests)


def test_stdin_reads_all_input_and_handles_unicode(sandbox):
    numbers = list(range(200_000))
    program = "import sys\ndata = sys.stdin.read().split()\nprint(sum(map(int, data[1:])), 'été')\n"
    test = {"input": f"{len(numbers)}\n" + " ".join(map(str, numbers)) + "\n", "output": f"{sum(numbers)} été"}
    assert verdicts(sandbox.run_tests(program, [test], kind="stdin")) == ["pass"]


@pytest.mark.parametrize(
    ("ending", "verdict"),
    [
        ("exit()", "pass"),  # LiveCodeBench ignores SystemExit: the output decides
        ("import sys; sys.exit(1)", "pass"),
        ("import sys; sys.stdout.flush(); import os; os._exit(0)", "pass"),
        ("import sys; sys.stdout.flush(); import os; os._exit(3)", "runtime_error"),
        ("raise KeyError('boom')", "runtime_error"),
    ],
)
def test_stdin_endings(sandbox, ending, verdict):
    program = f"print(int(input()) + 1)\n{ending}\n"
    assert verdicts(sandbox.run_tests(program, [{"input": "1", "output": "2"}], kind="stdin")) == [verdict]


def test_stdin_main_guard_threads_and_atexit_run_as_in_python(sandbox):
    program = (
        "import atexit, sys, threading\n"
        "def main():\n"
        "    threading.Thread(target=lambda: print(int(sys.stdin.readline()) * 3)).start()\n"
        "atexit.register(lambda: print('bye'))\n"
        "if __name__ == '__main__':\n"
        "    threading.stack_size(1 << 26)\n"
        "    main()\n"
    )
    assert verdicts(sandbox.run_tests(program, [{"input": "5", "output": "15\nbye"}], kind="stdin")) == ["pass"]


def test_stdin_syntax_error_is_a_runtime_error(sandbox):
    report = sandbox.run_tests("print(1", [{"input": "", "output": "1"}], kind="stdin")
    assert verdicts(report) == ["runtime_error"]
    assert "SyntaxError" in report.tests[0].detail


# ---------------------------------------------------------------------------------------------
# functional programs
# ---------------------------------------------------------------------------------------------


def functional(sandbox, program, tests, func_name="solve"):
    return sandbox.run_tests(program, tests, kind="functional", func_name=func_name)


def test_functional_solution_method_and_tuples(sandbox):
    program = (
        "from typing import List\n"
        "class Solution:\n"
        "    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
        "        seen = {}\n"
        "        for i, n in enumerate(nums):\n"
        "            if target - n in seen:\n"
        "                return (seen[target - n], i)\n"
        "            seen[n] = i\n"
    )
    tests = [
        {"input": "[2, 7, 11, 15]\n9", "output": "[0, 1]"},
        {"input": "[3, 2, 4]\n6", "output": "[1, 2]"},
        {"input": "[3, 3]\n6", "output": "[0, 0]"},
    ]
    assert verdicts(functional(sandbox, program, tests, "twoSum")) == ["pass", "pass", "wrong"]


def test_functional_nested_tuples_dicts_and_top_level_function(sandbox):
    program = "def solve(n):\n    return {'pairs': [(i, i * i) for i in range(n)], 'n': float(n)}\n"
    tests = [{"input": "3", "output": '{"pairs": [[0, 0], [1, 1], [2, 4]], "n": 3}'}]
    assert verdicts(functional(sandbox, program, tests)) == ["pass"]


@pytest.mark.parametrize(
    ("body", "verdict", "detail"),
    [
        ("return {1, 2}", "wrong", "not a JSON value"),  # a set never equals a list
        ("return {1: 2}", "wrong", "dict key"),  # int keys do not equal JSON's string keys
        ("class Anything:\n            def __eq__(self, other): return True\n        return Anything()", "wrong", "not a JSON value"),
        ("class Liar(int):\n            def __eq__(self, other): return True\n        return Liar(7)", "wrong", "value of type Liar"),  # exact types only
        ("raise IndexError('no')", "runtime_error", "IndexError"),
        ("import sys; sys.exit(0)", "runtime_error", "sys.exit"),
    ],
)
def test_functional_results_that_must_not_pass(sandbox, body, verdict, detail):
    program = f"class Solution:\n    def solve(self, x):\n        {body}\n"
    report = functional(sandbox, program, [{"input": "1", "output": "[1, 2]"}])
    assert verdicts(report) == [verdict]
    assert detail in report.tests[0].detail


def test_functional_missing_method(sandbox):
    report = functional(sandbox, "class Solution:\n    def other(self):\n        return 1\n", [{"input": "1", "output": "1"}])
    assert verdicts(report) == ["runtime_error"]
    assert "Solution.solve" in report.tests[0].detail


def test_functional_each_test_gets_a_fresh_process(sandbox):
    program = "calls = []\nclass Solution:\n    def solve(self, x):\n        calls.append(x)\n        return len(calls)\n"
    tests = [{"input": "1", "output": "1"}, {"input": "2", "output": "1"}]
    assert verdicts(functional(sandbox, program, tests)) == ["pass", "pass"]


def test_functional_expected_output_never_enters_the_sandbox(sandbox):
    program = (FIXTURES / "search_expected.py").read_text()
    report = functional(sandbox, program, [{"input": '"q"', "output": '"expected-sentinel-12345678"'}], "answer")
    assert verdicts(report) == ["wrong"]
    assert 'got "not found"' in report.tests[0].detail


# ---------------------------------------------------------------------------------------------
# scripts (HumanEval-style): only running to the end passes
# ---------------------------------------------------------------------------------------------

CHECKED = "def add(a, b):\n    return a + b\n\n\ndef check(candidate):\n    assert candidate(2, 3) == 5\n\n\ncheck(add)\n"


def script(sandbox, program, limits=None):
    return sandbox.run_tests(program, [], kind="script", limits=limits)


def test_script_passes_only_when_it_runs_to_its_end(sandbox):
    assert verdicts(script(sandbox, CHECKED)) == ["pass"]
    failing = script(sandbox, CHECKED.replace("a + b", "a - b"))
    assert verdicts(failing) == ["runtime_error"]
    assert failing.tests[0].detail.startswith("AssertionError")
    assert "assert candidate(2, 3) == 5" in failing.tests[0].stderr_head


@pytest.mark.parametrize(
    "early_exit",
    [
        "import sys; sys.exit(0)",
        "raise SystemExit",
        "import os; os._exit(0)",
        "print('All tests passed'); import sys; sys.stdout.flush(); import os; os._exit(0)",
        "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
    ],
)
def test_script_early_exits_never_pass(sandbox, early_exit):
    # The checks would fail: only the early exit could make this pass.
    program = CHECKED.replace("a + b", "None").replace("\n\ncheck(add)", f"\n\n{early_exit}\ncheck(add)")
    report = script(sandbox, program)
    assert verdicts(report) == ["runtime_error"], report.tests[0].detail


def test_script_cannot_reach_the_completion_nonce(sandbox):
    report = script(sandbox, (FIXTURES / "forge_completion.py").read_text())
    assert verdicts(report) == ["runtime_error"]
    output = report.tests[0].stdout_head
    for refused in (
        "via_getframe: ValueError",
        "via_traceback: ValueError",
        "via_generator: ValueError",
        "via_current_frames: ValueError",
        "via_heap: ValueError",
        "via_referrers: ValueError",
        "via_settrace: ValueError",
        "via_ctypes: ImportError",
        "via_proc_mem: PermissionError",
        "via_symlink_to_proc_mem: PermissionError",
        "via_signal_handler: LookupError",
        "via_real_signal_function: ImportError",
    ):
        assert refused in output, output


def test_script_patching_the_runtime_cannot_hide_a_failure(sandbox):
    report = script(sandbox, (FIXTURES / "patch_runtime.py").read_text())
    assert verdicts(report) == ["runtime_error"]
    assert "AssertionError" in report.tests[0].detail


def test_script_forked_process_finishing_does_not_confuse_the_record(sandbox):
    forks = "import os\nif os.fork() == 0:\n    pass  # the child runs the rest of the program too\n" + CHECKED
    assert verdicts(script(sandbox, forks)) == ["pass"]
    assert verdicts(script(sandbox, forks.replace("a + b", "a * b"))) == ["runtime_error"]


def test_common_library_code_still_works_under_the_guard(sandbox):
    program = (
        "import collections, enum, logging, typing, dataclasses\n"
        "Point = collections.namedtuple('Point', 'x y')\n"
        "Color = enum.Enum('Color', 'RED GREEN')\n"
        "T = typing.TypeVar('T')\n"
        "class Pair(typing.NamedTuple):\n    a: int\n    b: int\n"
        "@dataclasses.dataclass\nclass Box:\n    v: int\n"
        "logging.getLogger('x').warning('logged')\n"
        "assert Point(1, 2).y == 2 and Color.RED.value == 1 and Pair(1, 2).b == 2 and Box(3).v == 3\n"
    )
    report = script(sandbox, program)
    assert verdicts(report) == ["pass"], report.tests[0].stderr_head
    assert "logged" in report.tests[0].stderr_head


def test_signal_handlers_work_but_get_no_frame(sandbox):
    program = (
        "import signal, time\n"
        "class Late(Exception):\n    pass\n"
        "def on_alarm(signum, frame):\n    raise Late(repr(frame))\n"
        "assert signal.signal(signal.SIGTERM, signal.SIG_IGN) == signal.SIG_DFL\n"
        "assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN\n"
        "signal.signal(signal.SIGALRM, on_alarm)\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.01)\n"
        "try:\n    time.sleep(5)\nexcept Late as late:\n    print('handled, frame', late)\n"
    )
    report = sandbox.run_tests(program, [{"input": "", "output": "handled, frame None"}])
    assert verdicts(report) == ["pass"], report.tests[0]


# ---------------------------------------------------------------------------------------------
# limits
# ---------------------------------------------------------------------------------------------


def test_limits_give_their_verdicts(sandbox):
    quick = Limits(wall_s=1.0, cpu_s=1, memory_mb=256, processes=16, file_size_mb=1, open_files=32, output_bytes=1000)
    cases = {
        "import time\ntime.sleep(10)\n": "timeout",
        "x = bytearray(1 << 30)\n": "memory",
        "print('y' * 5000)\n": "output_limit",
        "import sys\nsys.stderr.write('e' * 5000)\n": "output_limit",
        "open('big', 'wb').write(b'z' * (2 << 20))\n": "runtime_error",  # RLIMIT_FSIZE: EFBIG
        "fds = [open('f%d' % i, 'w') for i in range(100)]\n": "runtime_error",  # RLIMIT_NOFILE
    }
    for program, verdict in cases.items():
        report = sandbox.run_tests(program, [{"input": "", "output": ""}], kind="stdin", limits=quick)
        assert verdicts(report) == [verdict], (program, report.tests[0])


def test_cpu_limit_is_a_timeout(sandbox):
    limits = Limits(wall_s=20.0, cpu_s=1)
    report = sandbox.run_tests("while True:\n    pass\n", [{"input": "", "output": ""}], limits=limits)
    assert verdicts(report) == ["timeout"]
    assert report.tests[0].time_s < 20.0


# ---------------------------------------------------------------------------------------------
# the API around the runner
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "bash"}, "unknown kind"),
        ({"kind": "functional"}, "func_name"),
        ({"kind": "stdin", "tests": []}, "at least one test"),
        ({"kind": "stdin", "tests": [{"input": "1"}]}, "'input' and 'output'"),
        ({"kind": "functional", "func_name": "f", "tests": [{"input": "{oops", "output": "1"}]}, "not JSON"),
    ],
)
def test_bad_requests_are_reported_not_raised(sandbox, kwargs, message):
    tests = kwargs.pop("tests", [{"input": "1", "output": "1"}])
    report = sandbox.run_tests("print(1)", tests, **kwargs)
    assert report.error is not None and message in report.error
    assert report.pass_fraction == 0.0 and not report.passed


async def test_async_runs_concurrently(sandbox):
    reports = await asyncio.gather(*(sandbox.arun_tests(f"print({n} * 2)", [{"input": "", "output": str(n * 2)}]) for n in range(6)))
    assert all(report.passed for report in reports)


def test_report_properties():
    report = Report(tests=(TestResult("pass"), TestResult("wrong")))
    assert report.pass_fraction == 0.5 and not report.passed
    assert Report(tests=(TestResult("pass"),)).passed
    assert not Report(error="x").passed and Report(error="x").pass_fraction == 0.0
    assert not Report().passed


def test_get_sandbox_names(monkeypatch):
    with pytest.raises(ValueError, match="unknown sandbox"):
        get_sandbox("vm")
    monkeypatch.setenv("CONDUCTOR_SANDBOX", "local")
    box = get_sandbox("auto", pool_size=1)
    try:
        assert isinstance(box, LocalSandbox)
        assert box.run_tests("print(2)", [{"input": "", "output": "2"}]).passed
    finally:
        box.close()


def test_missing_docker_daemon_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    with pytest.raises(SandboxUnavailable, match="dockerd"):
        DockerSandbox(pool_size=1)
    monkeypatch.delenv("CONDUCTOR_SANDBOX", raising=False)
    box = get_sandbox("auto", pool_size=1)  # auto falls back to local
    try:
        assert isinstance(box, LocalSandbox)
    finally:
        box.close()


def test_rlimits_fallback_gives_the_same_verdicts():
    local_module._WARNED = False
    with pytest.warns(RuntimeWarning, match="without bubblewrap"):
        box = LocalSandbox(isolation="rlimits", pool_size=1, limits=TEST_LIMITS)
    try:
        assert box.isolation == "rlimits"
        report = box.run_tests("print(int(input()) + 1)", [{"input": "1", "output": "2"}, {"input": "1", "output": "3"}])
        assert verdicts(report) == ["pass", "wrong"]
        assert verdicts(script(box, CHECKED)) == ["pass"]
        assert verdicts(script(box, "import os\nos._exit(0)\n" + CHECKED)) == ["runtime_error"]
        assert verdicts(box.run_tests("import time\ntime.sleep(30)", [{"input": "", "output": ""}])) == ["timeout"]
        daemon = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\nprint('x')\n"
        assert verdicts(box.run_tests(daemon, [{"input": "", "output": "x"}])) == ["pass"]
        assert box.leftover_processes() == []
        if os.geteuid() == 0:  # programs run under a separate uid, so they cannot kill the runner
            killer = "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError:\n    pass\nprint('x')\n"
            assert verdicts(box.run_tests(killer, [{"input": "", "output": "x"}])) == ["pass"]
    finally:
        box.close()


def test_close_stops_the_runners():
    box = open_backend("local", pool_size=1)
    box.warm()
    worker = box.pool.workers()[0]
    process = worker.process
    box.close()
    assert process.poll() is not None
    assert box.run_tests("print(1)", [{"input": "", "output": "1"}]).error is not None


def test_job_protocol_frames_json():
    from conductor_env.sandboxes.jobs import build_job
    from conductor_env.sandboxes.wire import encode_job

    job, expected = build_job("print(1)", [{"input": "a", "output": "b"}], kind="stdin", limits=Limits(), func_name=None)
    assert expected == ["b"]
    assert "b" not in json.dumps(job["tests"])  # expected outputs stay with the caller
    length, _newline, body = encode_job(job).partition(b"\n")
    assert int(length) == len(body) and json.loads(body)["tests"] == [{"input": "a"}]


def test_isolated_checks_travel_after_the_header():
    """The runner reads the header only; the checks' bytes are left for the checker child."""
    from conductor_env.sandboxes.jobs import build_job
    from conductor_env.sandboxes.wire import encode_job

    checks = {"checks": "def check(f):\n    assert f(1) == 2\n", "call": "check(f)"}
    job, _expected = build_job("def f(x): return x + 1", [checks], kind="isolated", limits=Limits(), func_name="f")
    length, _newline, rest = encode_job(job).partition(b"\n")
    header, trailer = json.loads(rest[: int(length)]), rest[int(length) :]
    assert "check" not in json.dumps(header["tests"]) and header["checks_bytes"] == len(trailer)
    assert json.loads(trailer) == checks


LYING_BUILTINS = r"""
import builtins
real_isinstance, real_len, real_callable = builtins.isinstance, builtins.len, builtins.callable


def lying_isinstance(obj, kind):
    if obj == "_ctypes" or obj == "ctypes":
        return False  # the guard asks whether the imported name is a str
    return real_isinstance(obj, kind)


builtins.isinstance = lying_isinstance
builtins.len = lambda obj: 0  # the guard asks len(args) before refusing frame attributes
for label, attempt in (
    ("via_lying_isinstance", lambda: __import__("_ctypes")),
    ("via_lying_isinstance_ctypes", lambda: __import__("ctypes")),
    ("via_lying_len", lambda: (lambda: (yield))().gi_frame),
):
    try:
        attempt()
        print(label, "ESCAPED", flush=True)
    except BaseException as error:
        print(f"{label}: {type(error).__name__}", flush=True)
builtins.isinstance, builtins.len = real_isinstance, real_len


class Sneaky(str):
    def rstrip(self, *args):
        return "harmless"

    def startswith(self, *args):
        return False


class Path:
    def __fspath__(self):
        return Sneaky("/proc/self/mem")


try:
    open(Path(), "rb")
    print("via_str_subclass ESCAPED", flush=True)
except BaseException as error:
    print(f"via_str_subclass: {type(error).__name__}", flush=True)
"""


def test_a_program_replacing_builtins_cannot_talk_the_guard_round(sandbox):
    report = script(sandbox, LYING_BUILTINS)
    output = report.tests[0].stdout_head
    assert "ESCAPED" not in output, output
    for refused in ("via_lying_isinstance: ImportError", "via_lying_isinstance_ctypes: ImportError", "via_lying_len: ValueError", "via_str_subclass: PermissionError"):
        assert refused in output, output
