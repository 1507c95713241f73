"""A real ``conductor-env serve`` process on loopback, and simulated pool files to serve (tests/serving)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import httpx

#: Seconds a server may take to start (imports on a loaded 2-core machine) before the test fails.
START_TIMEOUT_S = 120


def write_pool(folder: Path, *, latency_s: float = 0.0, price_per_call: float = 0.001, workers: int = 3) -> Path:
    """Writes a simulated pool file: ``workers`` workers with a latency, a fixed price per call and no token prices."""
    entries = "\n".join(f'[[workers]]\nid = "sim-{i}"\nskill = 0.5\nprice_per_call = {price_per_call}\n' for i in range(workers))
    text = textwrap.dedent(
        f"""
        name = "served-test"
        [defaults]
        backend = "simulated"
        latency_s = {latency_s}
        max_concurrency = 64
        price_in_per_m = 0.0
        price_out_per_m = 0.0
        """
    )
    path = folder / f"pool-{latency_s}-{price_per_call}-{workers}.toml"
    path.write_text(text + "\n" + entries, encoding="utf-8")
    return path


class Server:
    """A running ``conductor-env serve`` process and its base URL (``.../v1``)."""

    def __init__(self, process: subprocess.Popen[str], base_url: str) -> None:
        self.process = process
        self.base_url = base_url
        self.root = base_url.removesuffix("/v1")
        self.output: list[str] = []

    def health(self) -> dict:
        return httpx.get(f"{self.root}/health", timeout=10).json()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(*args: str) -> Server:
    """Starts ``conductor-env serve --port 0 ARGS`` and waits for the line that names its address."""
    command = [sys.executable, "-m", "conductor_env.cli", "serve", "--port", "0", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    found: list[str] = []
    lines: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if not found and (match := re.search(r"at (http://\S+/v1)$", line.strip())):
                found.append(match.group(1))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    waited = threading.Event()
    for _ in range(START_TIMEOUT_S * 10):
        if found or process.poll() is not None:
            break
        waited.wait(0.1)
    if not found:
        process.kill()
        raise AssertionError(f"serve did not start: {''.join(lines)[-3000:]}")
    server = Server(process, found[0])
    server.output = lines
    return server
