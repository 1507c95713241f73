"""`conductor-env serve` throughput against the package's own evaluation loop, on the same episodes.

The same N questions of Conductor-RG-v0, the same policy (`template:plan-solve-verify`, three
dependent worker calls) and the same simulated pool, run two ways in one run:
  (a) baseline: the evaluation loop (`conductor_env.evaluation.evaluate`), C episodes in flight;
  (b) served: a `conductor-env serve` process, with C concurrent `openai` clients each sending a
      question and waiting for its answer (HTTP, JSON, the request checks and the queue).
Both at a fixed worker latency (the latency-bound case a real pool is in) and with zero-latency
workers (what serving itself costs an episode). Reported as episodes (requests) per second and
their ratio, served over the loop (medians of alternating repeats).

Usage: python benchmarks/bench_serve.py [--episodes 200] [--latency 0.05] [--concurrency 32] [--repeats 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import openai

import conductor_env  # noqa: F401
from conductor_env.evaluation import EvalConfig, evaluate
from conductor_env.evaluation.setup import build_policies, build_pool
from conductor_env.tasks.registry import get_suite

ENV_ID = "Conductor-RG-v0"
POLICY = "template:plan-solve-verify"


def write_pool(folder: Path, latency_s: float) -> Path:
    """Four simulated workers with a fixed latency."""
    workers = "\n".join(f'[[workers]]\nid = "sim-{i}"\nskill = 0.6\n' for i in range(4))
    path = folder / f"pool-{latency_s}.toml"
    path.write_text(f'name = "bench"\n[defaults]\nbackend = "simulated"\nlatency_s = {latency_s}\nmax_concurrency = 1024\n\n{workers}', encoding="utf-8")
    return path


def run_eval_loop(pool_file: Path, episodes: int, concurrency: int, out: str) -> float:
    """Episodes per second of the evaluation loop (setup excluded)."""
    pool = build_pool(str(pool_file))
    config = EvalConfig.for_id(ENV_ID, pool=pool, n=episodes, concurrency=concurrency)
    policies = build_policies([POLICY], pool=pool)
    started = time.perf_counter()
    result = evaluate(config, policies, out)
    wall = time.perf_counter() - started
    assert len(result.records) == episodes, f"{len(result.records)} of {episodes} episodes"
    return episodes / wall


def start_server(pool_file: Path, concurrency: int) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "conductor_env.cli", "serve", "--policy", POLICY, "--pool", str(pool_file), "--port", "0", "--max-concurrency", str(concurrency)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if match := re.search(r"at (http://\S+/v1)$", line.strip()):
            return process, match.group(1)
    raise RuntimeError(f"serve did not start (exit {process.wait()})")


async def run_clients(base_url: str, questions: list[str], concurrency: int) -> float:
    """Requests per second with ``concurrency`` clients in flight."""
    gate = asyncio.Semaphore(concurrency)
    async with openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=600) as client:

        async def ask(question: str) -> str:
            async with gate:
                response = await client.chat.completions.create(model="conductor", messages=[{"role": "user", "content": question}])
                return response.choices[0].message.content or ""

        await ask(questions[0])  # warm the connection pool and the server's first-request paths
        started = time.perf_counter()
        answers = await asyncio.gather(*(ask(q) for q in questions))
        wall = time.perf_counter() - started
    assert all(answers), "an empty answer"
    return len(questions) / wall


def run_served(pool_file: Path, questions: list[str], concurrency: int) -> float:
    process, base_url = start_server(pool_file, concurrency)
    try:
        return asyncio.run(run_clients(base_url, questions, concurrency))
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)


def measure(latency_s: float, questions: list[str], concurrency: int, folder: Path, repeats: int) -> dict[str, float]:
    """Alternates the two contenders ``repeats`` times (the machine is shared) and keeps each one's median."""
    pool_file = write_pool(folder, latency_s)
    loops, served = [], []
    for repeat in range(repeats):
        loops.append(run_eval_loop(pool_file, len(questions), concurrency, str(folder / f"eval-{latency_s}-{repeat}")))
        served.append(run_served(pool_file, questions, concurrency))
    loop, serve = statistics.median(loops), statistics.median(served)
    return {"latency_s": latency_s, "eval_loop_eps": round(loop, 2), "served_rps": round(serve, 2), "ratio": round(serve / loop, 3), "ratios": [round(s / e, 3) for s, e in zip(served, loops)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs of each contender (medians kept)")
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args()
    problems = get_suite("rg").problems()
    questions = [problems[i % len(problems)].question for i in range(args.episodes)]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for latency in (args.latency, 0.0):
            rows.append(measure(latency, questions, args.concurrency, Path(folder), args.repeats))
            print(json.dumps(rows[-1]), flush=True)
    result = {"episodes": args.episodes, "concurrency": args.concurrency, "policy": POLICY, "cpu_count": os.cpu_count(), "rows": rows}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
