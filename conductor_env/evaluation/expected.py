"""Held-out rewards on a simulated pool without the workers' coin flips.

Each played episode is scored by the exact expected reward of the workflow its Conductor wrote.
A simulated worker answers each step correctly with a known chance
(:mod:`conductor_env.evaluation.oracle`), so once the Conductor has written a workflow, the chance
that its last step is correct is exact: a sum over the steps' joint outcomes, each step reading
the steps the episode's trace says it read. The episode's expected reward is the env's own
``cost_aware`` reward of a correct and of a wrong answer at the episode's cost, weighted by that
chance. What remains random is only what the policy chose, so paired gaps between policies on
the same questions are far narrower than with one draw per episode, and they estimate the same
means.

What the closed form does not credit: a step counts as reading a correct answer only through
the steps it reads. A subtask that carries an answer itself is paid in a played episode when
the answer is right, but not here, so this score never exceeds what the workflow earns from its
workers. Unparsed episodes, and episodes that ran no step, keep their played reward. An episode
whose played reward the ``cost_aware`` scheme cannot explain (another reward scheme or price
weight, several rounds, worker errors) is refused, not guessed at.

    from conductor_env.evaluation.expected import read_rows, summary
    summary(read_rows("runs/eval/results.jsonl"), pool="orchestra-judge")

See docs/ORCHESTRATION.md and docs/lab/orchestration.md.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from conductor_env.evaluation.oracle import POOL, chance_last_correct, worker_table
from conductor_env.rewards import RewardScheme

#: The orchestrate recipes' reward (their env options: ``reward = "cost_aware"``, ``price_weight = 1``).
RECIPE_REWARD = RewardScheme("cost_aware", price_weight=1.0)
#: How far a played reward may differ from the scheme's before the episode is refused (float noise).
TOLERANCE = 1e-6


class UnexplainedEpisode(ValueError):
    """An episode's played reward is not the reward scheme's for its outcome and cost."""


def interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Returns the mean and a normal 95% interval (1.96 standard errors): ``(mean, low, high)``."""
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    half = 1.96 * math.sqrt(var / n)
    return mean, mean - half, mean + half


def episode_expectation(row: dict[str, Any], workers: dict[str, dict[str, Any]], scheme: RewardScheme = RECIPE_REWARD) -> float:
    """Returns the expected reward of one played episode over its workers' draws.

    Args:
        row: One line of an eval's ``results.jsonl``.
        workers: The simulated pool's workers by name (rows of :func:`~conductor_env.evaluation.oracle.worker_table`).
        scheme: The reward the episode was played under.

    Returns:
        The played reward when the workflow did not parse or ran no step; otherwise the chance
        that the last step is correct times the scheme's reward of a correct answer at the
        episode's cost, plus the rest times that of a wrong one.

    Raises:
        UnexplainedEpisode: When the played reward is not the scheme's for the row's outcome, the
            episode had several rounds, a step failed, or a step names a worker not in ``workers``.
    """
    reward = float(row["reward"])
    trace = row.get("trace") or []
    if row.get("parse_error") is not None or not trace:
        return reward
    where = f"episode {row.get('policy')} / {row.get('problem_id')} / sample {row.get('sample')}"
    if int(row.get("rounds") or 1) != 1 or row.get("earlier_rounds"):
        raise UnexplainedEpisode(f"{where}: played {row.get('rounds')} rounds; the closed form covers one")
    cost = float(row.get("cost_usd") or 0.0)
    played = scheme(parsed=True, correct=bool(row["correct"]), score=float(row.get("score") or 0.0), cost_usd=cost)
    if not math.isclose(played, reward, abs_tol=TOLERANCE):
        raise UnexplainedEpisode(f"{where}: played reward {reward} is not {scheme.name}'s {played} for its outcome and cost")
    steps = []
    for step in trace:
        if step.get("error"):
            raise UnexplainedEpisode(f"{where}: step {step.get('index')} failed ({step['error']})")
        name = step.get("worker_name")
        if name not in workers:
            raise UnexplainedEpisode(f"{where}: step {step.get('index')} ran {name!r}, not a worker of the pool")
        steps.append((workers[name], [int(j) for j in step.get("visible") or []]))
    chance = chance_last_correct(steps, row["domain"])
    right = scheme(parsed=True, correct=True, score=1.0, cost_usd=cost)
    wrong = scheme(parsed=True, correct=False, score=0.0, cost_usd=cost)
    return chance * right + (1.0 - chance) * wrong


def read_rows(results: str | Path) -> list[dict[str, Any]]:
    """Returns the episodes of an eval's ``results.jsonl``."""
    return [json.loads(line) for line in Path(results).read_text(encoding="utf-8").splitlines() if line.strip()]


def per_question(rows: Sequence[dict[str, Any]], pool: str = POOL, scheme: RewardScheme = RECIPE_REWARD) -> dict[str, dict[str, float]]:
    """Returns, per policy and question, the mean expected reward over the question's samples."""
    workers = {w["name"]: w for w in worker_table(pool)}
    table: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        table[row["policy"]][row["problem_id"]].append(episode_expectation(row, workers, scheme))
    return {policy: {q: sum(v) / len(v) for q, v in questions.items()} for policy, questions in table.items()}


def summary(rows: Sequence[dict[str, Any]], pool: str = POOL, scheme: RewardScheme = RECIPE_REWARD) -> dict[str, dict[str, Any]]:
    """Returns, per policy, the mean expected reward over questions with its 95% interval, and per domain.

    Each policy's entry holds ``questions``, ``expected_reward``, ``ci95`` and ``domains``.
    """
    domain_of = {row["problem_id"]: row["domain"] for row in rows}
    out: dict[str, dict[str, Any]] = {}
    for policy, questions in per_question(rows, pool, scheme).items():
        mean, low, high = interval(list(questions.values()))
        domains: dict[str, list[float]] = defaultdict(list)
        for q, value in questions.items():
            domains[domain_of[q]].append(value)
        out[policy] = {
            "questions": len(questions),
            "expected_reward": round(mean, 4),
            "ci95": [round(low, 4), round(high, 4)],
            "domains": {d: round(sum(v) / len(v), 4) for d, v in sorted(domains.items())},
        }
    return out


def paired_gaps(rows: Sequence[dict[str, Any]], baseline_rows: Sequence[dict[str, Any]], policy: str, pool: str = POOL, scheme: RewardScheme = RECIPE_REWARD) -> dict[str, Any]:
    """Returns, per other policy, the mean per-question gap in expected reward and its 95% interval.

    Args:
        rows: The episodes holding ``policy``.
        baseline_rows: Episodes of the policies to compare with, on the same split.
        policy: The policy to compare.
        pool: The simulated pool both were played on.
        scheme: The reward both were played under.

    Returns:
        Per other policy: ``questions`` (those both played), ``gap`` and ``ci95``.

    Raises:
        ValueError: When ``rows`` has no episode of ``policy``.
    """
    mine = per_question(rows, pool, scheme).get(policy)
    if not mine:
        raise ValueError(f"no episodes of {policy!r}")
    gaps: dict[str, Any] = {}
    for other, theirs in per_question(baseline_rows, pool, scheme).items():
        shared = sorted(set(mine) & set(theirs))
        if other == policy or not shared:
            continue
        mean, low, high = interval([mine[q] - theirs[q] for q in shared])
        gaps[other] = {"questions": len(shared), "gap": round(mean, 4), "ci95": [round(low, 4), round(high, 4)]}
    return gaps
