"""``conductor-env unseen``: a policy on the held-out pools against every fixed baseline and the oracle."""

from __future__ import annotations

import argparse
import os
from typing import Any

from rich.console import Console
from rich.table import Table

from conductor_env.cli.common import UsageError, output_console

DEFAULT_OUT = "runs/unseen"


def register(subparsers: Any) -> None:
    """Adds ``unseen`` to the ``conductor-env`` command."""
    from conductor_env.evaluation.unseen import DEFAULT_QUESTIONS, UNSEEN_POOLS

    parser = subparsers.add_parser(
        "unseen",
        help="score a policy on the held-out pools against every fixed baseline and the oracle (resumable)",
        description=(
            "Plays the policy, every fixed baseline of `make demo` part 2 (single and reflect on each worker id) and any "
            "--extra-policy on the same test questions of every held-out pool, scores each episode by its exact expected "
            "reward and compares the policy with each other one by paired intervals, beside the oracle's best workflow. "
            f"The held-out set: {', '.join(UNSEEN_POOLS)}. Rerun with the same --out to resume. See docs/ORCHESTRATION.md."
        ),
    )
    parser.add_argument("--policy", required=True, metavar="SPEC", help="the policy under test, e.g. llm:orchestra-judge-gemma3-270m")
    parser.add_argument("--extra-policy", action="append", default=[], metavar="SPEC", help="another policy to compare (e.g. router:knn:DIR); repeatable")
    parser.add_argument(
        "--routers",
        default=None,
        metavar="all|KIND,KIND",
        help="also compare learned routers (knn, mlp, routerdc, masrouter) keyed by description and trained on the generated family's training part only, under OUT/routers/ (reused when there)",
    )
    parser.add_argument("--questions", type=int, default=DEFAULT_QUESTIONS, metavar="N", help=f"test questions per pool, rounded up to a multiple of the six datasets (default {DEFAULT_QUESTIONS})")
    parser.add_argument("--samples", type=int, default=1, metavar="S", help="episodes per question and policy (default 1)")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"output folder: one eval folder per pool, results.json and results.md (default {DEFAULT_OUT})")
    parser.add_argument("--pools", default=None, metavar="NAME,NAME", help="only these held-out pools, comma-separated (default: all)")
    parser.add_argument("--concurrency", type=int, default=32, metavar="N", help="episodes in flight at once (default 32)")
    parser.add_argument("--policy-option", action="append", default=[], metavar="KEY=VALUE", help="policy option for make_policy, e.g. max_tokens=256 (repeatable)")
    parser.set_defaults(handler=run_unseen_command)


def _usage(error: Exception) -> UsageError:
    """The usage error for a bad argument, on one line, pointing at the spec grammar after a bad spec."""
    text = " ".join(str(error).split())
    if "policy spec" in text:
        text += "; the spec forms are listed in `conductor-env eval --help`"
    return UsageError(text)


def pool_table(scores: dict[str, Any], under_test: str) -> Table:
    """Returns one held-out pool's table: the oracle, then each policy best first, with its gap and workflows."""
    from conductor_env.evaluation.oracle import DOMAINS

    oracle = scores["oracle"]
    domains = [d for d in DOMAINS if d in oracle["domains"]]
    table = Table(title=f"{scores['pool']} · workers by id: {', '.join(scores['workers'])} · expected reward, most common workflow per domain", title_justify="left")
    for column in ("policy", "reward (95% CI)", f"{under_test} minus it", *domains):
        table.add_column(column, overflow="fold")

    def gap(entry: dict[str, Any] | None) -> str:
        return "" if entry is None else f"{entry['gap']:+.3f} ({entry['ci95'][0]:+.3f}, {entry['ci95'][1]:+.3f})"

    table.add_row("oracle", _reward(oracle), gap(scores["gap_to_oracle"]), *(f"{oracle['domains'][d]:.3f} {oracle['plans'][d]['plan']}" for d in domains), style="bold")
    if "single_call" in oracle:
        single = oracle["single_call"]
        table.add_row("best single call", _reward(single), "", *(f"{single['domains'][d]:.3f}" for d in domains), style="bold")
    for policy, entry in sorted(scores["policies"].items(), key=lambda kv: -kv[1]["expected_reward"]):
        strategy = scores["strategy"].get(policy, {})
        cells = [f"{entry['domains'].get(d, float('nan')):.3f} {strategy[d]['pattern'] if d in strategy else ''}" for d in domains]
        table.add_row(policy, _reward(entry), gap(scores["gaps"].get(policy)), *cells, style="cyan" if policy == under_test else None)
    return table


def _reward(entry: dict[str, Any]) -> str:
    return f"{entry['expected_reward']:.3f} ({entry['ci95'][0]:.3f}, {entry['ci95'][1]:.3f})"


def summary_table(summary: dict[str, Any]) -> Table:
    """Returns the table over pools: each policy's mean, and where the policy under test beats or loses to it."""
    under_test = summary["policy"]
    table = Table(title=f"{summary['pools']} held-out pools · {under_test} against each policy (paired 95% intervals)", title_justify="left")
    for column in ("policy", "mean over pools", "pools", f"{under_test} beats it", "loses to it", "mean gap"):
        table.add_column(column)
    for policy, entry in sorted(summary["policies"].items(), key=lambda kv: -kv[1]["mean_over_pools"]):
        tally = summary["versus"].get(policy)
        counts = [f"{tally['beats']}/{tally['pools']}", f"{tally['loses']}/{tally['pools']}", f"{tally['mean_gap']:+.3f}"] if tally else ["", "", ""]
        table.add_row(policy, f"{entry['mean_over_pools']:.3f}", str(entry["pools"]), *counts, style="cyan" if policy == under_test else None)
    return table


def _print_pool(console: Console, errors: Console, scores: dict[str, Any]) -> None:
    """Prints a finished pool's table and, on stderr, its notes and failed episodes."""
    console.print(pool_table(scores, scores["under_test"]))
    notes = list(dict.fromkeys(scores.get("notes", [])))
    notes += [f"{policy} failed on {f['episodes']} episode(s) of {scores['pool']} (scored 0): {f['first']}" for policy, f in scores["failures"].items()]
    for note in notes:
        errors.print(f"note: {note}", highlight=False, markup=False)


def run_unseen_command(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env unseen``."""
    from conductor_env.cli.unseen_routers import family_routers, parse_router_kinds
    from conductor_env.evaluation.expected import UnexplainedEpisode
    from conductor_env.evaluation.progress import RichProgress
    from conductor_env.evaluation.setup import EvalConfigError, parse_option_values
    from conductor_env.evaluation.unseen import ENV_OPTIONS, RESULTS_JSON, RESULTS_MD, UnseenRun, run_unseen

    console, errors = output_console(), Console(stderr=True)
    pools = None if args.pools is None else tuple(args.pools.split(","))
    kinds = parse_router_kinds(args.routers)
    try:
        UnseenRun(args.policy, tuple(args.extra_policy), args.questions, args.samples, pools, args.concurrency).check()
        routers = family_routers(kinds, args.out, dict(ENV_OPTIONS), lambda line: errors.print(line, highlight=False, markup=False)) if kinds else []
        run = UnseenRun(args.policy, (*args.extra_policy, *routers), args.questions, args.samples, pools, args.concurrency, parse_option_values(args.policy_option, "--policy-option"))
        run.check()
        results = run_unseen(
            run,
            out=args.out,
            progress=lambda pool: RichProgress(errors, description=pool),
            on_pool=lambda _, scores: _print_pool(console, errors, scores),
        )
    except EvalConfigError as error:
        raise _usage(error) from error
    except UnexplainedEpisode as error:
        raise UsageError(f"an episode cannot be scored by its expected reward: {' '.join(str(error).split())}") from error
    console.print(summary_table(results["summary"]))
    console.print(f"results: {os.path.join(args.out, RESULTS_JSON)} and {os.path.join(args.out, RESULTS_MD)}", highlight=False, markup=False)
    return 0
