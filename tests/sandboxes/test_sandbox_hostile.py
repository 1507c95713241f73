"""A battery of hostile programs against both backends: each is contained with the right verdict,
the host is unaffected, nothing is left running, and the next job in the same sandbox is fine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"))

from sandbox_helpers import BACKENDS, TEST_LIMITS, hostile, open_backend  # noqa: E402

from conductor_env.sandboxes import Report, Sandbox  # noqa: E402

#: A fake key in the calling process's environment, set before the sandboxes start.
FAKE_SECRET = "sk-conductor-test-" + uuid.uuid4().hex


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request):
    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = FAKE_SECRET
    box = open_backend(request.param, pool_size=1, limits=TEST_LIMITS)
    box.warm()
    yield box
    box.close()
    if saved is None:
        os.environ.pop("OPENAI_API_KEY", None)
    else:
        os.environ["OPENAI_API_KEY"] = saved


def run(sandbox: Sandbox, name: str, *, kind: str = "stdin", stdin: str = "", expected: str = "") -> Report:
    tests = [] if kind == "script" else [{"input": stdin, "output": expected}]
    report = sandbox.run_tests(hostile(name), tests, kind=kind)
    assert report.error is None, report.error
    assert len(report.tests) == 1
    return report


def assert_contained(sandbox: Sandbox) -> None:
    """Nothing left running, the host can still start processes, and the next job is fine."""
    assert sandbox.leftover_processes() == []
    assert subprocess.run(["true"], timeout=30).returncode == 0
    follow_up = sandbox.run_tests("import sys\nprint(sum(map(int, sys.stdin.read().split())))", [{"input": "1 2 3", "output": "6"}])
    assert follow_up.passed, follow_up


@pytest.mark.parametrize(
    ("name", "verdict"),
    [
        ("fork_bomb", "timeout"),
        ("memory_bomb", "memory"),
        ("infinite_loop", "timeout"),
        ("long_sleep", "timeout"),
        ("ignore_sigterm", "timeout"),
        ("thread_bomb", "runtime_error"),
        ("deep_recursion", "runtime_error"),  # the C stack overflows: SIGSEGV
        ("real_segfault", "runtime_error"),
        ("ctypes_segfault", "runtime_error"),  # ctypes cannot even be imported
        ("fill_disk", "runtime_error"),  # ENOSPC on the sandbox's own small tmpfs
        ("gigabyte_output", "output_limit"),
    ],
)
def test_resource_attacks_are_contained(sandbox, name, verdict):
    report = run(sandbox, name)
    assert report.tests[0].verdict == verdict, report.tests[0]
    assert_contained(sandbox)


def test_fill_disk_space_comes_back(sandbox):
    run(sandbox, "fill_disk")
    writer = "open('data', 'wb').write(b'x' * (4 << 20))\nprint('ok')"
    assert sandbox.run_tests(writer, [{"input": "", "output": "ok"}]).passed


def test_segfault_reports_the_signal(sandbox):
    report = run(sandbox, "real_segfault")
    assert "SIGSEGV" in report.tests[0].detail


@pytest.mark.parametrize("name", ["exit_before_checks", "os_exit_before_checks", "fake_pass_output"])
def test_early_exits_and_forged_output_fail(sandbox, name):
    report = run(sandbox, name, kind="script")
    assert report.tests[0].verdict == "runtime_error", report.tests[0]
    assert_contained(sandbox)


def test_network_is_unreachable(sandbox):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted: list[bytes] = []
    stop = threading.Event()

    def accept_loop() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            accepted.append(connection.recv(100))
            connection.close()

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    try:
        report = run(sandbox, "network", stdin=f"{port}\n", expected="connected")
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert report.tests[0].verdict == "runtime_error", report.tests[0]
    assert "connected" not in report.tests[0].stdout_head
    assert accepted == []
    assert_contained(sandbox)


def test_secrets_of_the_caller_are_invisible(sandbox):
    assert os.environ["OPENAI_API_KEY"] == FAKE_SECRET
    report = run(sandbox, "read_secrets", stdin=FAKE_SECRET + "\n", expected="clean")
    assert report.tests[0].verdict == "pass", report.tests[0]
    assert FAKE_SECRET not in report.tests[0].stdout_head + report.tests[0].stderr_head
    env_dump = sandbox.run_tests("import os\nprint(sorted(os.environ))", [{"input": "", "output": "['HOME', 'LANG', 'MKL_NUM_THREADS', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'PATH', 'TMPDIR']"}])
    assert env_dump.passed, env_dump


def test_writes_outside_the_work_dir_do_not_reach_the_host_or_the_next_job(sandbox):
    token = uuid.uuid4().hex
    report = run(sandbox, "write_outside", stdin=token)
    assert report.tests[0].verdict == "wrong"  # it printed what it wrote; no answer was expected
    for path in (
        f"/tmp/conductor-pwned-{token}",
        f"/var/tmp/conductor-pwned-{token}",
        f"/dev/shm/conductor-pwned-{token}",
        f"/root/conductor-pwned-{token}",
        f"/etc/conductor-pwned-{token}",
        f"/usr/conductor-pwned-{token}",
        f"/conductor-pwned-{token}",
    ):
        assert not os.path.exists(path), path
    probe = "import glob\nprint(glob.glob('/tmp/**/conductor-pwned-*', recursive=True) + glob.glob('/dev/shm/conductor-pwned-*'))"
    assert sandbox.run_tests(probe, [{"input": "", "output": "[]"}]).passed
    assert_contained(sandbox)


def test_killing_the_parent_does_not_stop_the_runner(sandbox):
    workers_before = sandbox.pool.workers()
    report = run(sandbox, "kill_parent", expected="still here")
    assert report.tests[0].verdict == "pass", report.tests[0]
    assert sandbox.pool.workers() == workers_before  # the same runner answered: it survived
    assert_contained(sandbox)


def test_namespace_docker_socket_and_root_are_out_of_reach(sandbox):
    report = run(sandbox, "escape", expected="contained")
    assert report.tests[0].verdict == "pass", report.tests[0]
    assert_contained(sandbox)


def test_daemonised_children_do_not_outlive_the_test(sandbox):
    marker = "conductor-daemon-" + uuid.uuid4().hex
    report = run(sandbox, "daemon_child", stdin=marker, expected="spawned")
    assert report.tests[0].verdict == "pass", report.tests[0]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            assert marker.encode() not in cmdline, f"process {entry} outlived the test"
    assert_contained(sandbox)


def test_leftover_check_sees_a_running_test(sandbox):
    """The check the battery relies on is not vacuous: it lists a test's processes while they run."""
    seen: list[list[str]] = []
    job = threading.Thread(target=lambda: sandbox.run_tests("import time\ntime.sleep(1.5)\nprint(1)", [{"input": "", "output": "1"}]))
    job.start()
    for _ in range(100):
        leftovers = sandbox.leftover_processes()
        if leftovers:
            seen.append(leftovers)
            break
        threading.Event().wait(0.02)
    job.join()
    assert seen, "the running test was never seen"
    assert sandbox.leftover_processes() == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_sandboxes_of_one_process_run_programs_under_distinct_uids(backend):
    """Per-uid limits (processes) are not shared: a fork bomb in one cannot starve the other."""
    first, second = open_backend(backend, pool_size=2), open_backend(backend, pool_size=2)
    try:
        first.warm()
        second.warm()
        identities = [{worker.identity for worker in box.pool.workers()} for box in (first, second)]
        assert len(identities[0] | identities[1]) == 4
        if backend == "local" and os.geteuid() != 0:
            return  # without root, bubblewrap keeps the caller's uid for every jail
        uids = []
        for box in (first, second):
            seen = set()
            for _ in range(4):
                report = box.run_tests("import os\nprint(os.getuid())", [{"input": "", "output": "x"}])
                seen.add(int(report.tests[0].stdout_head))
            uids.append(seen)
        assert uids[0] and uids[1] and not uids[0] & uids[1]
    finally:
        first.close()
        second.close()
