"""Episodes per second through the framework adapters against the package's own loop, in one run.

Simulated workers that take 1 s a call, one-round episodes of one step, ``C`` episodes in flight
(8 and 64): the package's loop (``agents.episode.play`` under ``asyncio.gather``), SkyRL-gym (its
API is synchronous: one thread per trajectory, as SkyRL-train runs it), GEM (``make_vec`` with
``async_mode=True``: a thread per env), and verl's batch reward function (``compute_score_batch``,
concurrent on one event loop). verl's per-response ``compute_score`` (its naive reward manager,
one response after another) is timed at 8 only. verifiers is not here: ``vf-eval`` starts a chat
program per rollout, so its rate measures that, not the env (tests/integrations covers it).

A framework that is not installed is left out (GEM lives in .venv-gem: run the script there too;
each run times the package's loop beside what it has).

Usage: python benchmarks/bench_frameworks.py [--latency 1.0] [--waves 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conductor_env.agents.episode import play
from conductor_env.integrations.text_episode import shared_env
from conductor_env.integrations.verl import compute_score, compute_score_batch, verl_rows
from conductor_env.rows import problem_rows

SOLVE = json.dumps({"model_id": [0], "subtasks": ["Solve the task and give the final answer."], "access_list": [[]]})


def write_pool(folder: Path, latency_s: float) -> str:
    text = (Path(__file__).parents[1] / "conductor_env" / "pools" / "simulated.toml").read_text(encoding="utf-8")
    path = folder / "bench-pool.toml"
    path.write_text(text.replace("latency_s = 0.0", f"latency_s = {latency_s}").replace("max_concurrency = 64", "max_concurrency = 10000"), encoding="utf-8")
    return str(path)


def package_loop(pool: str, rows: list[dict], concurrency: int) -> float:
    async def run() -> None:
        envs = [shared_env(pool=pool) for _ in range(concurrency)]

        async def one(env, row):
            await play(env, None, reset_options={"row": row}, first_action=SOLVE)

        for start in range(0, len(rows), concurrency):
            await asyncio.gather(*(one(env, row) for env, row in zip(envs, rows[start : start + concurrency])))

    started = time.perf_counter()
    asyncio.run(run())
    return len(rows) / (time.perf_counter() - started)


def skyrl(pool: str, rows: list[dict], concurrency: int) -> float:
    import skyrl_gym

    import conductor_env.integrations.skyrl  # noqa: F401 - registers "conductor"

    def trajectory(row: dict) -> float:
        env = skyrl_gym.make("conductor", env_config={"pool": pool}, extras={"extra_info": row})
        env.init(None)
        reward = env.step(SOLVE)["reward"]
        env.close()
        return reward

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as threads:
        list(threads.map(trajectory, rows))
    return len(rows) / (time.perf_counter() - started)


def gem_vec(pool: str, rows: list[dict], concurrency: int) -> float:
    import gem

    import conductor_env.integrations.gem  # noqa: F401 - registers conductor:*

    vec = gem.make_vec(["conductor:RG-v0"] * concurrency, async_mode=True, pool=pool)
    started = time.perf_counter()
    vec.reset(seed=0)
    for _ in range(len(rows) // concurrency):
        vec.step([SOLVE] * concurrency)  # GEM resets each finished env in the same step
    return len(rows) // concurrency * concurrency / (time.perf_counter() - started)


def verl_batch(rows: list[dict], concurrency: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(rows), concurrency):
        part = rows[start : start + concurrency]
        compute_score_batch([r["data_source"] for r in part], [SOLVE] * len(part), [r["reward_model"]["ground_truth"] for r in part], [r["extra_info"] for r in part])
    return len(rows) / (time.perf_counter() - started)


def verl_naive(rows: list[dict]) -> float:
    started = time.perf_counter()
    for row in rows:
        compute_score(row["data_source"], SOLVE, row["reward_model"]["ground_truth"], row["extra_info"])
    return len(rows) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per simulated worker call")
    parser.add_argument("--waves", type=int, default=2, help="episodes per measurement = waves x concurrency")
    parser.add_argument("--json", help="write the figures here (nothing is written by default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        pool = write_pool(Path(folder), args.latency)
        env = shared_env(pool=pool)
        all_rows = [{"problem_id": r["problem_id"], "episode_seed": r["episode_seed"]} for r in problem_rows(env, limit=64 * args.waves)]
        env.close()
        all_verl = verl_rows(pool=pool, limit=64 * args.waves)
        results: dict[str, dict[str, float]] = {}
        for concurrency in (8, 64):
            rows, vrows = all_rows[: concurrency * args.waves], all_verl[: concurrency * args.waves]
            base = package_loop(pool, rows, concurrency)
            figures = {"package_loop": base}
            for name, measure in (("skyrl_threads", skyrl), ("gem_async_vec", gem_vec)):
                try:
                    figures[name] = measure(pool, rows, concurrency)
                except ImportError:
                    print(f"{name}: not installed here, left out")
            figures["verl_batch"] = verl_batch(vrows, concurrency)
            if concurrency == 8:
                figures["verl_naive_sequential"] = verl_naive(vrows[:8])
            results[str(concurrency)] = {name: round(value, 2) for name, value in figures.items()}
            print(f"C={concurrency}: " + ", ".join(f"{name} {value:.2f} eps/s ({value / base:.2f}x)" for name, value in figures.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"latency_s": args.latency, "episodes_per_s": results}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
