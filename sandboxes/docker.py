"""The ``docker`` backend: a pool of warm, hardened containers, each serving many jobs.

Each container runs the runner as its PID 1 (so a program cannot kill it) with no network, a
read-only root, a size-limited ``noexec`` tmpfs ``/tmp``, memory, swap, pids and CPU limits,
every capability dropped, ``no-new-privileges``, its own unprivileged uid (so the per-uid process
limit is per container), an empty environment and no logging of its output. Jobs travel over the
container's attached stdin/stdout: one container start serves every job sent to it. A container
whose runner dies, misbehaves or asks to be recycled (or whose test ran out of memory) is removed
and replaced. Containers carry labels: they are removed on :meth:`DockerSandbox.close` and at
interpreter exit, and those left by a crashed process on this host are removed when the next
:class:`DockerSandbox` starts.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
import threading
import uuid
from pathlib import Path
from typing import Any

from conductor_env.sandboxes.base import Limits, SandboxUnavailable
from conductor_env.sandboxes.image import DEFAULT_IMAGE, docker_client, image_exists
from conductor_env.sandboxes.pooled_sandbox import RunnerSandbox
from conductor_env.sandboxes.warm_pool import RunnerWorker
from conductor_env.sandboxes.wire import BOOT

logger = logging.getLogger(__name__)

#: Label on every container this package starts.
LABEL = "conductor-env.sandbox"
#: Label naming the process that owns a container: ``host:pid:start-time``.
OWNER_LABEL = "conductor-env.owner"
#: First uid of the per-container uids (disjoint from the local backend's range).
UID_BASE = 200_000_000
_SWEPT = False
_SWEEP_LOCK = threading.Lock()


def container_uid(identity: int) -> int:
    """A uid for one container of this process, from its worker's ``identity`` (distinct among live workers)."""
    return UID_BASE + (os.getpid() % 100_000) * 256 + identity % 256


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_tag() -> str:
    """This process as the owner label records it."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_time(os.getpid()) or '?'}"


def _owner_alive(owner: str) -> bool:
    """Whether the process an owner label names still runs (unknown hosts count as alive)."""
    host, _, rest = owner.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    current = _start_time(int(pid_text))
    return current is not None and (start in ("?", "") or current == start)


def remove_stale_containers(client: Any) -> int:
    """Removes this host's sandbox containers whose owning process is gone.

    Returns:
        How many were removed.
    """
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner = container.labels.get(OWNER_LABEL, "")
        if _owner_alive(owner):
            continue
        try:
            container.remove(force=True)
            removed += 1
        except Exception as error:  # already going away
            logger.debug("stale container %s: %s", container.short_id, error)
    if removed:
        logger.info("removed %d stale sandbox container(s)", removed)
    return removed


class _LazyDockerClient:
    """Stands in for the Docker client of an unpickled or copied :class:`DockerSandbox`.

    The daemon is first reached when a container starts, so unpickling an env whose suite never
    grades code here (or whose machine has no daemon yet) does not fail.
    """

    def __init__(self) -> None:
        self._client: Any = None
        self._lock = threading.Lock()

    def _connect(self) -> Any:
        global _SWEPT
        with self._lock:
            if self._client is None:
                client = docker_client()
                with _SWEEP_LOCK:
                    if not _SWEPT:
                        remove_stale_containers(client)
                        _SWEPT = True
                self._client = client
            return self._client

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # protocol probes (copy, pickle) must not reach the daemon
            raise AttributeError(name)
        return getattr(self._connect(), name)

    def close(self) -> None:
        """Closes the client if it was ever opened."""
        if self._client is not None:
            self._client.close()


class DockerWorker(RunnerWorker):
    """A runner in one container, reached through the container's attached stdio."""

    def __init__(self, slot: int, *, sandbox: "DockerSandbox") -> None:
        super().__init__(slot)
        self._sandbox = sandbox
        self.container: Any = None
        self._socket: Any = None
        self._raw: socket.socket | None = None
        self._frames = bytearray()
        self._stderr_tail = bytearray()

    def _launch(self) -> None:
        from docker.types import LogConfig, Ulimit

        sandbox = self._sandbox
        uid = container_uid(self.identity)
        config = {"base": "/tmp", "limit_processes": True}
        self.container = sandbox.client.containers.create(
            sandbox.image,
            command=["python3", "-I", "-c", BOOT, json.dumps(config)],
            name=f"conductor-sandbox-{os.getpid()}-{self.slot}-{uuid.uuid4().hex[:8]}",
            labels={LABEL: "1", OWNER_LABEL: sandbox.owner},
            user=f"{uid}:{uid}",
            working_dir="/tmp",
            environment={},
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,noexec,size={sandbox.tmpfs_mb}m,mode=1777"},
            mem_limit=f"{sandbox.memory_mb}m",
            memswap_limit=f"{sandbox.memory_mb}m",
            pids_limit=sandbox.pids_limit,
            nano_cpus=int(sandbox.cpus * 1e9),
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            ulimits=[Ulimit(name="core", soft=0, hard=0), Ulimit(name="nofile", soft=1024, hard=1024)],
            shm_size="16m",
            cgroup_parent=sandbox.cgroup_parent,
            hostname="sandbox",
            stdin_open=True,  # with detach unset the SDK also sets StdinOnce: EOF when we go
            tty=False,
            auto_remove=True,
            log_config=LogConfig(type="none"),
        )
        self._socket = self.container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        self._raw = getattr(self._socket, "_sock", self._socket)
        self.container.start()

    def _send(self, data: bytes) -> None:
        assert self._raw is not None
        self._raw.settimeout(30)
        self._raw.sendall(data)

    def _receive(self, timeout: float) -> bytes:
        """Returns the next stdout payload, keeping stderr frames aside (multiplexed stream)."""
        assert self._raw is not None
        while True:
            while len(self._frames) >= 8:
                stream, size = self._frames[0], struct.unpack(">I", self._frames[4:8])[0]
                if len(self._frames) < 8 + size:
                    break
                payload = bytes(self._frames[8 : 8 + size])
                del self._frames[: 8 + size]
                if stream == 1:
                    return payload
                self._stderr_tail = (self._stderr_tail + payload)[-8000:]
            self._raw.settimeout(max(timeout, 0.001))
            chunk = self._raw.recv(1 << 20)
            if not chunk:
                return b""
            self._frames += chunk

    def diagnostics(self) -> str:
        return self._stderr_tail.decode("utf-8", "replace")

    def leftover_processes(self) -> list[str]:
        if self.container is None:
            return []
        try:
            self.container.reload()
            runner_pid = str(self.container.attrs["State"]["Pid"])
            top = self.container.top(ps_args="-eo pid,args")
        except Exception as error:  # gone: nothing is left in it
            logger.debug("top of %s failed: %s", self.container.short_id, error)
            return []
        return [" ".join(row) for row in top.get("Processes") or [] if row and row[0] != runner_pid]

    def close(self) -> None:
        container, self.container = self.container, None
        if self._socket is not None:
            # The attach socket is a file object over the HTTP response's socket: closing only the
            # file object leaves that socket open (a ResourceWarning), so close the response (which
            # docker-py keeps on the file object) and the socket itself too.
            response = getattr(self._socket, "_response", None)
            for closable in (self._socket, response, self._raw):
                try:
                    if closable is not None:
                        closable.close()
                except (OSError, ValueError):
                    pass
            self._socket = self._raw = None
        if container is not None:
            try:
                container.remove(force=True)
            except Exception as error:  # auto-remove may have won the race
                logger.debug("removing %s: %s", container.short_id, error)


class DockerSandbox(RunnerSandbox):
    """Runs programs in a pool of warm, hardened Docker containers.

    Args:
        pool_size: Containers kept warm (``None``: the CPU count).
        limits: Default per-test limits.
        image: The sandbox image (build it with ``conductor-env sandbox build``).
        memory_mb: Each container's memory limit (``None``: the default test limit + 512 MiB,
            room for the runner, the tmpfs and a test's children).
        cpus: CPUs per container.
        tmpfs_mb: Size of each container's ``/tmp``.
        cgroup_parent: The containers' parent cgroup; ``"auto"``: the root cgroup when the daemon
            uses the ``cgroupfs`` driver, else the daemon's default. Under Docker's default
            parent every container shares the CPU weight of a single process with the rest of
            the machine (CFS group scheduling), so on a busy machine (a trainer next to the
            sandbox) grading slows to a crawl; at the root each container weighs like one process,
            as the local backend's jails do (measured: twice the throughput under load).

    Raises:
        SandboxUnavailable: When no Docker daemon answers or the image is missing (the message
            says how to fix it).
    """

    name = "docker"
    recycle_after_memory = True

    def __init__(
        self,
        *,
        pool_size: int | None = None,
        limits: Limits | None = None,
        image: str = DEFAULT_IMAGE,
        memory_mb: int | None = None,
        cpus: float = 1.0,
        tmpfs_mb: int = 128,
        cgroup_parent: str | None = "auto",
    ) -> None:
        self.client = docker_client()
        if not image_exists(self.client, image):
            self.client.close()
            raise SandboxUnavailable(f"the sandbox image {image!r} is missing: build it with `conductor-env sandbox build` (or scripts/setup_sandbox.sh)")
        self.image = image
        base_limits = limits or Limits()
        self.memory_mb = memory_mb or base_limits.memory_mb + 512
        self.pids_limit = base_limits.processes + 32
        self.cpus = cpus
        self.tmpfs_mb = tmpfs_mb
        self.cgroup_parent = self._pick_cgroup_parent(cgroup_parent)
        self.owner = owner_tag()
        global _SWEPT
        with _SWEEP_LOCK:
            if not _SWEPT:
                remove_stale_containers(self.client)
                _SWEPT = True
        super().__init__(pool_size=pool_size, limits=limits)

    def _make_worker(self, slot: int) -> RunnerWorker:
        return DockerWorker(slot, sandbox=self)

    def _pick_cgroup_parent(self, requested: str | None) -> str | None:
        if requested != "auto":
            return requested
        try:
            driver = self.client.info().get("CgroupDriver")
        except Exception:  # an old or unusual daemon: keep its default
            return None
        return "/" if driver == "cgroupfs" else None

    def close(self) -> None:
        super().close()
        try:
            self.client.close()
        except Exception:  # closing a client at exit is best effort
            pass

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the configuration without the daemon connection or any container.

        The copy connects on its first container start and labels its containers with its own
        process as owner, so a crash of either process leaves the other's containers alone.
        """
        state = super().__getstate__()
        state["client"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self.client = _LazyDockerClient()
        self.owner = owner_tag()

    def _forget_inherited(self) -> None:
        """In a forked child, also a daemon connection and an owner label of its own."""
        super()._forget_inherited()
        self.client = _LazyDockerClient()
        self.owner = owner_tag()
