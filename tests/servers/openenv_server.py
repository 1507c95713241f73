"""A real Conductor OpenEnv server process on loopback (tests/integrations/test_openenv_*.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx

from .transformers_serve import free_port

#: Seconds a server may take to start (imports on a loaded 2-core machine) before the test fails.
START_TIMEOUT_S = 120
#: The workflow every test plays: two workers, the second reads the first.
WORKFLOW = {"model_id": [0, 1], "subtasks": ["Solve the task step by step.", "Check the solution and give the final answer."], "access_list": [[], "all"]}


def write_latency_pool(folder: Path, latency_s: float) -> Path:
    """Writes a simulated pool of three workers that each take ``latency_s`` seconds per call.

    The latency changes no outcome: pools written with different latencies play alike.
    """
    workers = "\n".join(f'[[workers]]\nid = "sim-{i}"\nskill = 0.6\n' for i in range(3))
    text = textwrap.dedent(
        f"""
        name = "openenv-test"
        [defaults]
        backend = "simulated"
        latency_s = {latency_s}
        max_concurrency = 256
        """
    )
    path = folder / f"pool-{latency_s:g}.toml"
    path.write_text(text + "\n" + workers, encoding="utf-8")
    return path


class OpenEnvServer:
    """``python -m conductor_env.integrations.openenv`` on a free loopback port.

    Args:
        pool: The pool preset or TOML path.
        options: Env options as ``KEY=VALUE`` strings.
        max_sessions: The server's session limit.
    """

    def __init__(self, pool: str, options: tuple[str, ...] = (), max_sessions: int = 64) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "conductor_env.integrations.openenv", "--env", "Conductor-RG-v0", "--pool", pool, "--port", str(self.port)]
        command += ["--max-sessions", str(max_sessions)] + [part for option in options for part in ("--option", option)]
        env = {key: value for key, value in os.environ.items() if not key.startswith("CONDUCTOR_OPENENV_")}
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = self.process.stdout.read() if self.process.stdout else ""
                raise RuntimeError(f"the OpenEnv server exited with {self.process.returncode}:\n{output[-3000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the OpenEnv server did not answer /health within {START_TIMEOUT_S} s")

    def stats(self) -> dict[str, int]:
        """The server's counters (``GET /conductor/stats``)."""
        return httpx.get(f"{self.url}/conductor/stats", timeout=10).json()

    def stop(self) -> None:
        """Stops the process (SIGINT, then SIGKILL after 20 s)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
