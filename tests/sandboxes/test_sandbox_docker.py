"""The docker backend's containers: hardening flags, clean-up after a crash, the stale sweep, and
the image's build inputs."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"))

from sandbox_helpers import open_backend  # noqa: E402

from conductor_env.sandboxes import DockerSandbox, Limits, SandboxUnavailable  # noqa: E402
from conductor_env.sandboxes.docker import LABEL, OWNER_LABEL, remove_stale_containers  # noqa: E402
from conductor_env.sandboxes.image import DEFAULT_IMAGE, debian_source  # noqa: E402


@pytest.fixture(scope="module")
def sandbox():
    box = open_backend("docker", pool_size=1)
    box.warm()
    yield box
    box.close()


@pytest.mark.docker
def test_containers_are_hardened(sandbox):
    worker = sandbox.pool.workers()[0]
    assert worker.hello["pid1"] is True
    worker.container.reload()
    config, host = worker.container.attrs["Config"], worker.container.attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] and host["PidsLimit"] > 0
    assert host["Memory"] > 0 and host["MemorySwap"] == host["Memory"]
    assert host["NanoCpus"] > 0
    assert "size=" in host["Tmpfs"]["/tmp"] and "noexec" in host["Tmpfs"]["/tmp"]
    assert host["LogConfig"]["Type"] == "none"
    assert host["CgroupParent"] == (sandbox.cgroup_parent or "")
    uid = config["User"].split(":")[0]
    assert uid.isdigit() and int(uid) >= 1000
    assert not any(name.startswith(("OPENAI", "ANTHROPIC", "HF_", "AWS")) for name in (config["Env"] or []))
    assert config["Labels"][LABEL] == "1" and config["Labels"][OWNER_LABEL]


@pytest.mark.docker
def test_containers_of_a_crashed_process_go_away(sandbox):
    crash = (
        "import os, signal\n"
        "from conductor_env.sandboxes import DockerSandbox\n"
        "box = DockerSandbox(pool_size=1)\n"
        "box.warm()\n"
        "print(box.pool.workers()[0].container.id, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    result = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True, timeout=120)
    container_id = result.stdout.strip()
    assert result.returncode == -9 and container_id, result.stderr
    client = sandbox.client
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not client.containers.list(all=True, filters={"id": container_id}):
            break
        time.sleep(0.2)
    # The runner saw its stdin close and exited; the container removed itself. If it had not, the
    # sweep (next test) would remove it on the next start.
    assert not client.containers.list(all=True, filters={"id": container_id})


@pytest.mark.docker
def test_stale_containers_are_swept_and_live_ones_kept(sandbox):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_owner = f"{socket.gethostname()}:{finished.stdout.strip()}:1"
    stale = sandbox.client.containers.run(
        DEFAULT_IMAGE,
        ["python3", "-c", "import time; time.sleep(600)"],
        detach=True,
        network_mode="none",
        labels={LABEL: "1", OWNER_LABEL: dead_owner},
    )
    try:
        live_id = sandbox.pool.workers()[0].container.id
        assert remove_stale_containers(sandbox.client) >= 1
        remaining = {container.id for container in sandbox.client.containers.list(all=True, filters={"label": LABEL})}
        assert stale.id not in remaining
        assert live_id in remaining
        assert sandbox.run_tests("print(7)", [{"input": "", "output": "7"}]).passed
    finally:
        try:
            stale.remove(force=True)
        except Exception:  # already removed by the sweep
            pass


@pytest.mark.docker
def test_missing_image_is_a_clear_error(sandbox):
    with pytest.raises(SandboxUnavailable, match="sandbox build"):
        DockerSandbox(image="conductor-env-sandbox:no-such-tag")


def test_debootstrap_source_comes_from_this_machines_apt(monkeypatch):
    suite, mirror = debian_source()
    assert suite and mirror.startswith(("http://", "https://"))
    monkeypatch.setenv("CONDUCTOR_DEBIAN_MIRROR", "http://mirror.example/debian")
    monkeypatch.setenv("CONDUCTOR_DEBIAN_SUITE", "trixie")
    assert debian_source() == ("trixie", "http://mirror.example/debian")


@pytest.mark.docker
def test_a_container_that_hits_its_memory_limit_is_replaced():
    box = open_backend("docker", pool_size=1, limits=Limits(memory_mb=100))  # container: 612 MiB
    try:
        box.warm()
        first = box.pool.workers()[0]
        program = (
            "import os, time\n"
            "children = []\n"
            "for _ in range(3):\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        block = bytearray(350 << 20)\n"
            "        for i in range(0, len(block), 4096):\n"
            "            block[i] = 1\n"
            "        time.sleep(1)\n"
            "        os._exit(0)\n"
            "    children.append(pid)\n"
            "print(sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children))\n"
        )
        report = box.run_tests(program, [{"input": "", "output": "[0, 0, 0]"}], limits=Limits(wall_s=10, memory_mb=400))
        assert report.error is None
        assert not report.passed  # the kernel killed some of the children: the total did not fit
        assert first not in box.pool.workers()  # that container was replaced
        assert box.run_tests("print(1)", [{"input": "", "output": "1"}]).passed
    finally:
        box.close()
