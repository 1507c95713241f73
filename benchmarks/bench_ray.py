"""Scale-out on Ray: episodes/s against episode actors, sandbox hosts against the local pool, and
a run that loses an actor mid-way.

Starts its own Ray cluster on this machine (a head and two nodes offering ``conductor_sandbox``),
with token authentication and no dashboard. Ray must bind only loopback here, so run it inside
network namespaces that hold nothing else::

    bash scripts/in_loopback_ns.sh .venv/bin/python benchmarks/bench_ray.py --json benchmarks/results/ray.json

1. **Episodes/s** of ``single:0`` on ``Conductor-RG-v0`` with simulated workers that take
   ``--latency`` seconds a call (I/O-bound, like API workers), with 1, 2, 4 and 8 episode actors
   and ``--per-actor`` episodes in flight per actor; ratios are to 1 actor in the same run, and
   the in-process evaluation with the same in-flight count as 1 actor is the baseline for the
   cost of going through Ray.
2. **Code grading** of HumanEval's canonical solutions: the local warm pool, ``sandbox="ray"``
   with one host, and with two hosts on two nodes (same pool size per host). On a 2-core
   machine two hosts cannot beat one by much: they share the cores. The per-job overhead is the
   difference of one-at-a-time latencies between one Ray host and the local pool.
3. **A killed actor**: the completion timeline of a run whose first episode actor is killed a
   third of the way in; the final count must equal the plan.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=os.environ.get("RAY_AUTH_TOKEN") or secrets.token_hex(32))

import ray  # noqa: E402  (after the auth settings, which Ray reads at import)
from ray.cluster_utils import Cluster  # noqa: E402

import conductor_env  # noqa: E402,F401
from conductor_env.distributed import RayEnvHost, RaySandbox, shutdown_sandbox_hosts  # noqa: E402
from conductor_env.distributed.runtime import NAMESPACE  # noqa: E402
from conductor_env.distributed.sandbox import SANDBOX_RESOURCE  # noqa: E402
from conductor_env.evaluation.runner import EvalConfig, evaluate  # noqa: E402
from conductor_env.evaluation.setup import build_policies  # noqa: E402
from conductor_env.sandboxes import get_sandbox  # noqa: E402
from conductor_env.tasks.suites.humaneval import HumanEvalSuite  # noqa: E402
from conductor_env.workers.pool import load_pool  # noqa: E402


def latency_pool(folder: Path, latency_s: float) -> str:
    """The simulated preset with every call taking ``latency_s`` seconds."""
    text = (Path(conductor_env.__file__).parent / "pools" / "simulated.toml").read_text()
    path = folder / "latency.toml"
    path.write_text(text.replace("latency_s = 0.0", f"latency_s = {latency_s}").replace("max_concurrency = 64", "max_concurrency = 1000"))
    return str(path)


def episodes_per_second(pool: str, actors: int | None, in_flight: int, episodes: int, folder: Path) -> float:
    """Runs ``episodes`` episodes (``actors=None``: in process) and returns episodes per second."""
    config = EvalConfig.for_id("Conductor-RG-v0", pool=pool, n=episodes // 4, samples=4, concurrency=in_flight, seed=0)
    policies = build_policies(["single:0"], pool=load_pool(pool))
    host = RayEnvHost(workers=actors) if actors else None
    out = folder / f"eps-{actors}-{time.monotonic_ns()}"
    try:
        if host is not None:  # actors start (and build their suite) before the clock
            host.start(config.setup)
        start = time.perf_counter()
        result = evaluate(config, policies, str(out), host=host)
        elapsed = time.perf_counter() - start
    finally:
        if host is not None:
            host.close()
    assert len(result.records) == episodes, (len(result.records), episodes)
    return episodes / elapsed


def scaling(args: argparse.Namespace, folder: Path) -> dict:
    pool = latency_pool(folder, args.latency)
    episodes = args.episodes
    local = episodes_per_second(pool, None, args.per_actor, episodes, folder)
    by_actors = {n: episodes_per_second(pool, n, n * args.per_actor, episodes, folder) for n in (1, 2, 4, 8)}
    return {
        "latency_s": args.latency,
        "per_actor": args.per_actor,
        "episodes": episodes,
        "in_process_eps": round(local, 2),
        "ray_eps": {str(n): round(v, 2) for n, v in by_actors.items()},
        "ratio_to_1_actor": {str(n): round(v / by_actors[1], 2) for n, v in by_actors.items()},
        "ideal_eps_1_actor": round(args.per_actor / args.latency, 2),
    }


def grade_all(sandbox, suite_problems, suite: HumanEvalSuite, threads: int) -> tuple[float, int]:
    answers = [(p, suite.reference_response(p)) for p in suite_problems]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as executor:
        passed = sum(executor.map(lambda pa: suite.verify(*pa).correct, answers))
    return len(answers) / (time.perf_counter() - start), passed


def one_at_a_time_ms(suite: HumanEvalSuite, problems: list, count: int) -> float:
    latencies = []
    for problem in problems[:count]:
        start = time.perf_counter()
        suite.verify(problem, suite.reference_response(problem))
        latencies.append(time.perf_counter() - start)
    return statistics.median(latencies) * 1000


def grading(args: argparse.Namespace) -> dict:
    results: dict = {"backend": args.backend, "pool_size": args.pool_size, "threads": args.threads}
    contenders = {
        "local_pool": lambda: get_sandbox(args.backend, pool_size=args.pool_size),
        "ray_1_host": lambda: RaySandbox(backend=args.backend, pool_size=args.pool_size, hosts=1),
        "ray_2_hosts": lambda: RaySandbox(backend=args.backend, pool_size=args.pool_size, hosts=2),
    }
    for name, make in contenders.items():
        shutdown_sandbox_hosts()
        sandbox = make()
        suite = HumanEvalSuite(sandbox=sandbox)
        problems = suite.problems()
        grade_all(sandbox, problems[:16], suite, args.threads)  # warm the pools
        throughput = [grade_all(sandbox, problems, suite, args.threads) for _ in range(args.rounds)]
        results[name] = {
            "problems_per_s": round(statistics.median(t for t, _ in throughput), 1),
            "passed": throughput[-1][1],
            "one_at_a_time_ms": round(one_at_a_time_ms(suite, problems, 40), 1),
        }
        suite.close()
    shutdown_sandbox_hosts()
    local, one_host = results["local_pool"], results["ray_1_host"]
    results["overhead_ms_per_job"] = round(one_host["one_at_a_time_ms"] - local["one_at_a_time_ms"], 1)
    results["ratio_2_hosts_to_1"] = round(results["ray_2_hosts"]["problems_per_s"] / one_host["problems_per_s"], 2)
    results["ratio_1_host_to_local"] = round(one_host["problems_per_s"] / local["problems_per_s"], 2)
    return results


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def killed_actor(args: argparse.Namespace, folder: Path) -> dict:
    pool = latency_pool(folder, args.latency)
    episodes = args.episodes
    config = EvalConfig.for_id("Conductor-RG-v0", pool=pool, n=episodes // 4, samples=4, concurrency=4 * args.per_actor, seed=1)
    out = folder / "killed"
    results = out / "results.jsonl"
    host = RayEnvHost(workers=4)
    host.start(config.setup)
    timeline: list[tuple[float, int]] = []
    killed_at: list[float] = []
    done = threading.Event()
    start = time.perf_counter()

    def watch() -> None:  # samples the finished count; kills actor 0 a third of the way in
        while not done.is_set():
            count = _lines(results)
            timeline.append((round(time.perf_counter() - start, 2), count))
            if not killed_at and count >= episodes // 3:
                ray.kill(host.actors.handles[0], no_restart=False)
                killed_at.append(round(time.perf_counter() - start, 2))
            time.sleep(0.25)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        evaluate(config, build_policies(["single:0"], pool=load_pool(pool)), str(out), host=host)
        lost = host.lost
    finally:
        done.set()
        watcher.join()
        host.close()
    records = [json.loads(line) for line in results.read_text().splitlines()]
    timeline.append((round(time.perf_counter() - start, 2), len(records)))
    return {
        "planned": episodes,
        "written": len(records),
        "unique": len({(r["problem_id"], r["sample"]) for r in records}),
        "reruns": sum(r["reruns"] for r in records),
        "episodes_lost_with_the_actor": lost,
        "killed_at_s": killed_at[0] if killed_at else None,
        "timeline": timeline,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per simulated worker call (default 0.2)")
    parser.add_argument("--per-actor", type=int, default=4, help="episodes in flight per actor (default 4)")
    parser.add_argument("--episodes", type=int, default=160, help="episodes per configuration (default 160)")
    parser.add_argument("--backend", default="local", help="sandbox backend of the hosts and the local pool (default local)")
    parser.add_argument("--pool-size", type=int, default=2, help="warm workers per sandbox host (default 2)")
    parser.add_argument("--threads", type=int, default=8, help="grading client threads (default 8)")
    parser.add_argument("--rounds", type=int, default=2, help="grading rounds per contender (default 2)")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    for _ in range(2):
        cluster.add_node(num_cpus=2, resources={SANDBOX_RESOURCE: 1})
    ray.init(address=cluster.address, namespace=NAMESPACE, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            report = {"cores": os.cpu_count(), "ray": ray.__version__, "scaling": scaling(args, Path(tmp))}
            print(json.dumps(report["scaling"], indent=1), flush=True)
            report["grading"] = grading(args)
            print(json.dumps(report["grading"], indent=1), flush=True)
            report["killed_actor"] = killed_actor(args, Path(tmp))
            print(json.dumps(report["killed_actor"], indent=1), flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
