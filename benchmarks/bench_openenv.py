"""The OpenEnv server's throughput and latency against the package's own episode loop, same run.

Simulated workers take 1 s per call; each episode is one WebSocket session (connect, reset, one
one-step workflow, close) on a real server process on loopback, ``--concurrency`` sessions at a
time. The baseline plays the same episodes in this process with the one episode loop that eval
and GRPO use (:func:`conductor_env.agents.episode.play` under ``asyncio.gather``). Reports
sessions/s, p50/p95 episode latency and the ratio to the baseline::

    python benchmarks/bench_openenv.py --concurrency 8 64 [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from conductor_env.agents.episode import play
from conductor_env.envs import EnvSetup
from conductor_env.event_loop import run_sync
from conductor_env.integrations.openenv import ConductorAction, ConductorEnvClient

ENV_ID = "Conductor-RG-v0"
WORKFLOW = {"model_id": [0], "subtasks": ["Solve the task."], "access_list": [[]]}


def write_pool(folder: Path, latency_s: float) -> Path:
    workers = "\n".join(f'[[workers]]\nid = "sim-{i}"\nskill = 0.6\n' for i in range(3))
    path = folder / "pool.toml"
    path.write_text(f'name = "bench"\n[defaults]\nbackend = "simulated"\nlatency_s = {latency_s}\nmax_concurrency = 10000\n\n{workers}', encoding="utf-8")
    return path


def start_server(pool: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "conductor_env.integrations.openenv", "--env", ENV_ID, "--pool", str(pool), "--port", str(port), "--max-sessions", "256"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError("the OpenEnv server did not start")


async def _waves(episodes: int, concurrency: int, one) -> tuple[float, list[float]]:
    """Runs ``episodes`` calls of ``one(seed)``, ``concurrency`` at a time; returns wall time and latencies."""
    latencies: list[float] = []
    seeds = iter(range(episodes))

    async def worker() -> None:
        for seed in seeds:
            started = time.perf_counter()
            await one(seed)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started, latencies


def served(url: str, episodes: int, concurrency: int) -> tuple[float, list[float]]:
    async def one(seed: int) -> None:
        async with ConductorEnvClient(base_url=url, message_timeout_s=300) as client:
            await client.reset(seed=seed)
            result = await client.step(ConductorAction(**WORKFLOW))
            assert result.done

    return asyncio.run(_waves(episodes, concurrency, one))


def in_process(pool: Path, episodes: int, concurrency: int) -> tuple[float, list[float]]:
    setup = EnvSetup.from_id(ENV_ID, pool=str(pool))
    parts = setup.build()
    action = json.dumps(WORKFLOW)

    async def one(seed: int) -> None:
        episode = await play(setup.make(parts), None, seed=seed, first_action=action)
        assert episode.error is None and episode.final is not None

    try:
        return run_sync(_waves(episodes, concurrency, one))  # the pool's clients live on this loop
    finally:
        parts.close()


def summary(wall: float, latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {"sessions_per_s": len(ordered) / wall, "p50_s": statistics.median(ordered), "p95_s": ordered[max(0, int(0.95 * len(ordered)) - 1)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--waves", type=int, default=3, help="episodes per run = waves x concurrency")
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--port", type=int, default=18777)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        pool = write_pool(Path(folder), args.latency)
        server = start_server(pool, args.port)
        try:
            rows = []
            for concurrency in args.concurrency:
                episodes = args.waves * concurrency
                openenv = summary(*served(f"http://127.0.0.1:{args.port}", episodes, concurrency))
                baseline = summary(*in_process(pool, episodes, concurrency))
                rows.append({"concurrency": concurrency, "episodes": episodes, "openenv": openenv, "episode_loop": baseline, "ratio": openenv["sessions_per_s"] / baseline["sessions_per_s"]})
                print(
                    f"concurrency {concurrency:3d}: OpenEnv {openenv['sessions_per_s']:6.2f} sessions/s (p50 {openenv['p50_s']:.2f} s, p95 {openenv['p95_s']:.2f} s) | "
                    f"episode loop {baseline['sessions_per_s']:6.2f}/s (p95 {baseline['p95_s']:.2f} s) | ratio {rows[-1]['ratio']:.2f}"
                )
        finally:
            server.terminate()
            server.wait(timeout=30)
    if args.json:
        Path(args.json).write_text(json.dumps({"latency_s": args.latency, "cpus": os.cpu_count(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
