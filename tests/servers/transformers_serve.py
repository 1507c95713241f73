"""`transformers serve` on a loopback port: a real OpenAI-compatible server for the local model.

The server is started as a subprocess (its own process group, so a test can kill it like a
crash), pinned to one model folder, offline (``HF_HUB_OFFLINE=1``) and on CPU. One server per
test session is shared through :func:`shared_server`; it is stopped at exit.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

#: How long a start may take before the fixture gives up (a cold start takes 15-60 s on 2 CPUs).
START_TIMEOUT_S = 240.0


def free_port() -> int:
    """Returns a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _transformers_cli() -> list[str]:
    script = Path(sys.executable).with_name("transformers")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "transformers.cli.transformers"]


class TransformersServe:
    """One `transformers serve` process for ``model_dir`` on ``127.0.0.1:port``.

    Args:
        model_dir: The model folder; requests must name exactly this string as their ``model``.
        port: The port (``None``: a free one, kept across restarts).

    Attributes:
        start_seconds: How long the last start took until ``/health`` answered.
        log_path: The server's combined stdout/stderr.
    """

    def __init__(self, model_dir: str | os.PathLike[str], port: int | None = None) -> None:
        self.model = str(model_dir)
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start_seconds: float | None = None
        self._workdir = Path(tempfile.mkdtemp(prefix="transformers-serve-"))
        self.log_path = self._workdir / "server.log"
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def is_running(self) -> bool:
        """Returns True while the server process is alive."""
        return self.process is not None and self.process.poll() is None

    def start(self) -> "TransformersServe":
        """Starts the server and waits until ``/health`` answers.

        Raises:
            RuntimeError: When the process exits or does not answer within START_TIMEOUT_S
                (the message holds the tail of its log).
        """
        with self._lock:
            if self.is_running():
                return self
            env = {
                **os.environ,
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "HF_HUB_CACHE": str(self._workdir / "hub"),  # empty: /v1/models lists nothing, offline
                "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
            }
            (self._workdir / "hub").mkdir(exist_ok=True)
            command = _transformers_cli() + [
                "serve", self.model, "--host", "127.0.0.1", "--port", str(self.port),
                "--device", "cpu", "--log-level", "info",
            ]  # fmt: skip
            started = time.perf_counter()
            log = open(self.log_path, "ab")
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            log.close()
            deadline = started + START_TIMEOUT_S
            while time.perf_counter() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"transformers serve exited with {self.process.returncode}:\n{self.log_tail()}")
                try:
                    if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2.0).status_code == 200:
                        self.start_seconds = time.perf_counter() - started
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.25)
            self._signal(signal.SIGKILL)
            raise RuntimeError(f"transformers serve did not answer in {START_TIMEOUT_S:.0f} s:\n{self.log_tail()}")

    def _signal(self, sig: int) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """Kills the server like a crash (SIGKILL to its process group) and reaps it."""
        with self._lock:
            self._signal(signal.SIGKILL)
            if self.process is not None:
                self.process.wait(timeout=30)

    def stop(self) -> None:
        """Stops the server politely (SIGTERM, then SIGKILL after 10 s)."""
        with self._lock:
            if self.process is None:
                return
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait(timeout=30)

    def requests_received(self) -> int:
        """Counts chat-completion requests in the server's log (its access log lines)."""
        if not self.log_path.exists():
            return 0
        return self.log_path.read_text(errors="replace").count('"POST /v1/chat/completions')

    def log_tail(self, chars: int = 3000) -> str:
        """Returns the end of the server's log."""
        if not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-chars:]


_shared: TransformersServe | None = None
_shared_lock = threading.Lock()


def shared_server(model_dir: str | os.PathLike[str]) -> TransformersServe:
    """Returns the session's server for ``model_dir``, started on first use and stopped at exit.

    A test may kill it (to simulate a crash) as long as it starts it again before returning.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = TransformersServe(model_dir)
            atexit.register(_shared.stop)
        server = _shared
    return server.start()
