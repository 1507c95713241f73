"""The end of ``conductor-env demo`` part 2: trained Conductors on a pool they never saw.

The held-out pool is one of the unseen-pool protocol's (docs/ORCHESTRATION.md, "Unseen pools"):
by default ``unseen-renamed``, the ``orchestra-judge`` workers under new names in a new order,
so a Conductor that reads who is available plays it as it plays its own pool, and one that
learned a lookup from names to workflows does not. The trained Conductors play it beside every
fixed baseline, the learned routers keyed by worker description (trained on the generated
family's training part only, so they face the same shift) and the oracle, on the same test
questions, each episode scored by its exact expected reward with paired intervals.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from rich.console import Console

#: The held-out pool the demo plays (any of the protocol's held-out set works).
DEMO_UNSEEN_POOL = "unseen-renamed"


def run_unseen_part(*, out: str, n: int, conductors: Sequence[str], pool: str = DEMO_UNSEEN_POOL, with_routers: bool = True, console: Console) -> dict[str, Any]:
    """Plays the trained Conductors on a held-out pool against the baselines, routers and oracle.

    Args:
        out: Output folder (the protocol's layout: ``<pool>/``, ``routers/``, ``results.json``).
        n: Test questions, rounded up to a multiple of the protocol's six datasets.
        conductors: Policy specs of the trained Conductors; the first is the policy under test.
        pool: A pool of :data:`~conductor_env.evaluation.unseen.UNSEEN_POOLS`.
        with_routers: Train (or reuse) and play the description-keyed routers.
        console: Where to print.

    Returns:
        The pool's scores (:func:`~conductor_env.evaluation.unseen_scores.score_pool`).

    Raises:
        EvalConfigError: For a pool outside the held-out set or a spec that does not build.
    """
    from conductor_env.cli.unseen import pool_table
    from conductor_env.cli.unseen_routers import FAMILY_ROUTERS, family_routers
    from conductor_env.evaluation.unseen import ENV_OPTIONS, UnseenRun, run_unseen

    run = UnseenRun(conductors[0], tuple(conductors[1:]), questions=n, pools=(pool,), concurrency=64)
    run.check()
    console.print(
        f"\nthe same Conductors on {pool}, a pool they never saw (docs/ORCHESTRATION.md, 'Unseen pools'), beside every "
        "fixed baseline"
        + (" and the learned routers keyed by worker description, trained on the generated family's training part" if with_routers else "")
        + "; every episode is scored by its exact expected reward",
        highlight=False,
        markup=False,
    )

    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False)

    routers = family_routers(FAMILY_ROUTERS, out, dict(ENV_OPTIONS), say) if with_routers else []
    run = UnseenRun(run.policy, (*run.extra, *routers), questions=n, pools=(pool,), concurrency=64)
    scores = run_unseen(run, out=out)["pools"][pool]
    console.print(pool_table(scores, scores["under_test"]))
    for conductor in conductors:
        console.print(unseen_verdict(scores, conductor), highlight=False, markup=False, soft_wrap=True)  # one line, as tests and logs read it
    console.print(f"results: {os.path.join(out, 'results.md')}", highlight=False, markup=False)
    return scores


def unseen_verdict(scores: dict[str, Any], conductor: str) -> str:
    """One line: a Conductor's expected reward on the pool against the best other policy and the oracle.

    Args:
        scores: The pool's scores (:func:`~conductor_env.evaluation.unseen_scores.score_pool`).
        conductor: A policy name among ``scores["policies"]``.
    """
    from conductor_env.evaluation.unseen import REFERENCE_POLICIES

    policies = scores["policies"]
    mine = policies[conductor]["expected_reward"]
    others = {p: e["expected_reward"] for p, e in policies.items() if not p.startswith("llm:") and p not in REFERENCE_POLICIES}
    best, best_mean = max(others.items(), key=lambda item: item[1])
    oracle = scores["oracle"]["expected_reward"]
    relation = "above" if mine > best_mean else "below"
    references = "".join(f"; {p} (reads the descriptions): {policies[p]['expected_reward']:.3f}" for p in REFERENCE_POLICIES if p in policies)
    return f"{conductor}: {mine:.3f}, {relation} the best fixed baseline or router ({best} {best_mean:.3f}){references}; the oracle's best workflow per domain: {oracle:.3f}"
