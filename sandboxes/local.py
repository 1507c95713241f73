"""The ``local`` backend: runner servers on this machine, jailed by bubblewrap when it is installed.

With bubblewrap (``bwrap``) each worker is a jail with no network, its own user, PID, IPC, UTS
and cgroup namespaces (and no further user namespaces inside), a read-only ``/usr`` as its whole
system, a size-limited tmpfs ``/tmp`` for work directories, a fresh ``/proc`` and ``/dev``, no
capabilities, an empty environment, a new terminal session, and it dies with this process. The
runner is PID 1 inside, so a program cannot kill it, and it kills every process a test left
behind. When this process runs as root, each worker runs under its own unprivileged uid, so the
runner's process limit applies per worker. There is no cap on a worker's total memory (only the
per-process address-space limit): for untrusted code at scale, prefer the docker backend.

Without bubblewrap the runner runs with rlimits and process groups only (it then is a child
subreaper and, as root, runs programs under a separate uid): there is no network, filesystem or
total-memory isolation, and a one-time warning says so. The runner, and so the verdicts, are
the same in both modes.
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Literal

from conductor_env.sandboxes.base import Limits, SandboxUnavailable
from conductor_env.sandboxes.pooled_sandbox import RunnerSandbox
from conductor_env.sandboxes.warm_pool import RunnerWorker
from conductor_env.sandboxes.wire import BOOT

logger = logging.getLogger(__name__)

Isolation = Literal["auto", "bwrap", "rlimits"]

#: First uid of the per-worker uids used when this process is root (no passwd entry needed;
#: disjoint from the docker backend's range).
UID_BASE = 100_000_000
_WARNED = False
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")


def _new_spawner_after_fork() -> None:
    # A forked child (an AsyncVectorEnv worker) inherits the executor but not its thread, so
    # submitting to it would wait forever.
    global _SPAWNER
    _SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawner")


os.register_at_fork(after_in_child=_new_spawner_after_fork)


def sandbox_uid(identity: int) -> int:
    """A uid for one worker of this process, from its worker's ``identity`` (distinct among live workers)."""
    return UID_BASE + (os.getpid() % 100_000) * 256 + identity % 256


@lru_cache(maxsize=1)
def _system_python() -> tuple[str, tuple[str, ...]]:
    """The interpreter to run inside bubblewrap, and the extra host paths it needs bound."""
    if os.access("/usr/bin/python3", os.X_OK):
        return "/usr/bin/python3", ()
    executable = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    return executable, (prefix,) if not prefix.startswith("/usr/") else ()


def bwrap_command(python: str, extra_binds: tuple[str, ...], tmpfs_bytes: int) -> list[str]:
    """The bubblewrap command line that starts a runner (without the runner's config argument)."""
    command = [
        "bwrap",
        "--unshare-all",
        *(["--unshare-user", "--disable-userns"] if _bwrap_supports("--disable-userns") else []),
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--clearenv",
        "--ro-bind",
        "/usr",
        "/usr",
        # Debian links shared libraries such as libblas.so.3 (numpy's) through /etc/alternatives.
        "--ro-bind-try",
        "/etc/alternatives",
        "/etc/alternatives",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--symlink",
        "usr/sbin",
        "/sbin",
    ]
    for path in extra_binds:
        command += ["--ro-bind", path, path]
    command += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(tmpfs_bytes),
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/",
        "--cap-drop",
        "ALL",
        "--chdir",
        "/tmp",
        python,
        "-I",
        "-c",
        BOOT,
    ]
    return command


@lru_cache(maxsize=None)
def _bwrap_supports(option: str) -> bool:
    """Whether the installed bubblewrap knows an option (``--disable-userns`` came in 0.8)."""
    try:
        result = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return option in result.stdout + result.stderr


@lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can create a jail here (checked once)."""
    if shutil.which("bwrap") is None:
        return False
    python, binds = _system_python()
    command = bwrap_command(python, binds, 1 << 20)
    command[-2:] = ["-c", "pass"]
    try:
        kwargs = _identity_kwargs(sandbox_uid(255)) if os.geteuid() == 0 else {}
        result = subprocess.run(command, env={}, capture_output=True, timeout=30, **kwargs)
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def _identity_kwargs(uid: int) -> dict:
    return {"user": uid, "group": uid, "extra_groups": []}


class LocalWorker(RunnerWorker):
    """A runner in a bubblewrap jail, or a plain process with rlimits.

    Args:
        slot: Pool slot.
        use_bwrap: Jail it with bubblewrap.
        tmpfs_mb: Size of the jail's ``/tmp``.
    """

    def __init__(self, slot: int, *, use_bwrap: bool, tmpfs_mb: int) -> None:
        super().__init__(slot)
        self.use_bwrap = use_bwrap
        self.tmpfs_mb = tmpfs_mb
        self.process: subprocess.Popen | None = None
        self._stderr = tempfile.TemporaryFile()
        self._base_dir: str | None = None

    def _launch(self) -> None:
        is_root = os.geteuid() == 0
        uid = sandbox_uid(self.identity)
        kwargs: dict = {}
        if self.use_bwrap:
            python, binds = _system_python()
            config = {"base": "/tmp", "limit_processes": is_root}
            command = bwrap_command(python, binds, self.tmpfs_mb << 20) + [json.dumps(config)]
            if is_root:
                kwargs = _identity_kwargs(uid)
            cwd = "/"
        else:
            self._base_dir = tempfile.mkdtemp(prefix="conductor-sandbox-")
            os.chmod(self._base_dir, 0o711)
            config = {"base": self._base_dir, "limit_processes": is_root}
            if is_root:
                config["child_uid"] = uid
            # The system interpreter, as in the jail: its stdlib is readable by the programs' uid
            # (an interpreter under /root would not be).
            command = [_system_python()[0], "-I", "-c", BOOT, json.dumps(config)]
            cwd = self._base_dir
        try:
            # bubblewrap's --die-with-parent follows the *thread* that started it, so every jail is
            # started from one long-lived thread, not from whichever worker thread asked.
            self.process = _SPAWNER.submit(
                subprocess.Popen,
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env={},
                cwd=cwd,
                start_new_session=True,
                **kwargs,
            ).result()
        except OSError as error:
            raise SandboxUnavailable(f"cannot start the local runner ({command[0]}): {error}") from error

    def _send(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        fd = self.process.stdin.fileno()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    def _receive(self, timeout: float) -> bytes:
        assert self.process is not None and self.process.stdout is not None
        fd = self.process.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise TimeoutError
        return os.read(fd, 1 << 20)

    def diagnostics(self) -> str:
        try:
            self._stderr.seek(0)
            return self._stderr.read()[-4000:].decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def runner_pid(self) -> int | None:
        """The runner's pid on this machine (inside bubblewrap: the jail's PID 1)."""
        if self.process is None or self.process.poll() is not None:
            return None
        if not self.use_bwrap:
            return self.process.pid
        children = _process_children().get(self.process.pid, [])
        return children[0] if children else None

    def leftover_processes(self) -> list[str]:
        runner = self.runner_pid()
        if runner is None:
            return []
        tree = _process_children()
        leftovers, stack = [], list(tree.get(runner, []))
        while stack:
            pid = stack.pop()
            leftovers.append(f"{pid} {_cmdline(pid)}")
            stack.extend(tree.get(pid, []))
        return leftovers

    def close(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            try:
                if process.stdin is not None:
                    process.stdin.close()
                process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except OSError:
                    pass
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        self._stderr.close()
        if self._base_dir is not None:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None


def _process_children() -> dict[int, list[int]]:
    """Parent pid -> child pids, for every process visible here."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(entry))
    return tree


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")[:200]
    except OSError:
        return "?"


class LocalSandbox(RunnerSandbox):
    """Runs programs on this machine: in bubblewrap jails, or with rlimits only.

    Args:
        pool_size: Runners kept warm (``None``: the CPU count).
        limits: Default limits.
        isolation: ``"bwrap"`` (required), ``"rlimits"`` (no jail), or ``"auto"`` (bwrap when it
            works here, else rlimits with a one-time warning).
        tmpfs_mb: Size of each jail's ``/tmp`` (bubblewrap only).

    Raises:
        SandboxUnavailable: When ``isolation="bwrap"`` and bubblewrap cannot run here.
    """

    name = "local"

    def __init__(
        self,
        *,
        pool_size: int | None = None,
        limits: Limits | None = None,
        isolation: Isolation = "auto",
        tmpfs_mb: int = 128,
    ) -> None:
        if isolation not in ("auto", "bwrap", "rlimits"):
            raise ValueError(f"isolation must be 'auto', 'bwrap' or 'rlimits', got {isolation!r}")
        if isolation == "bwrap" and not bwrap_works():
            raise SandboxUnavailable(
                "bubblewrap is not installed or cannot create a jail here: install it with `apt-get install bubblewrap` (or run scripts/setup_sandbox.sh), or use the docker backend"
            )
        self.use_bwrap = isolation == "bwrap" or (isolation == "auto" and bwrap_works())
        self.isolation = "bwrap" if self.use_bwrap else "rlimits"
        if not self.use_bwrap:
            _warn_weak_isolation()
        self.tmpfs_mb = tmpfs_mb
        super().__init__(pool_size=pool_size, limits=limits)

    def _make_worker(self, slot: int) -> RunnerWorker:
        return LocalWorker(slot, use_bwrap=self.use_bwrap, tmpfs_mb=self.tmpfs_mb)


def _warn_weak_isolation() -> None:
    global _WARNED
    if _WARNED:
        return
    _WARNED = True
    message = (
        "the local sandbox runs without bubblewrap: programs get rlimits and a process group "
        "only (no network, filesystem or total-memory isolation). Install bubblewrap "
        "(`apt-get install bubblewrap`) or use the docker backend for untrusted code."
    )
    logger.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=3)
