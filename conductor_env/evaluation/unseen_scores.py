"""The unseen-pool protocol's scores: per held-out pool, and across pools.

Each played episode counts by its exact expected reward (:mod:`.expected`); each question also
gets the oracle's value, the best workflow's expected reward for the question's domain on the
pool (:func:`~conductor_env.evaluation.oracle.shown_oracle` over every worker). No workflow of
at most the env's 3 steps has a higher expected reward, so the oracle bounds every policy on
every question. Beside it, the best single call (the best one-step workflow, the same way) is the
ceiling of perfect routing. The policy under test is compared with every other policy on the same questions
(paired gaps, :func:`~conductor_env.evaluation.expected.paired_gaps`); across pools the summary
counts where the paired interval lies wholly above (or below) 0.

See :mod:`conductor_env.evaluation.unseen` and docs/ORCHESTRATION.md ("Unseen pools").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Sequence

from conductor_env.evaluation.expected import interval, paired_gaps, per_question, summary
from conductor_env.evaluation.oracle import DOMAINS, oracle_report, shape_of, shown_oracle, worker_table

ORACLE = "oracle"
#: The name of the best-single-call ceiling in the tables (perfect routing, hidden numbers known).
SINGLE_CALL = "best single call"


def workflow_pattern(row: dict[str, Any]) -> str:
    """Returns an episode's workflow as worker names and access, e.g. ``rowan,rowan,maple | -,-,all``."""
    workflow = row.get("workflow")
    if not workflow or not workflow.get("steps"):
        return "(unparsed)" if not workflow else "(no step)"
    names = ",".join(str(step.get("worker_name")) for step in row.get("trace") or [])
    access = ",".join("all" if step.get("access") else "-" for step in workflow["steps"])
    return f"{names} | {access}"


def workflow_shape(row: dict[str, Any]) -> str:
    """Returns an episode's workflow shape (``single``, ``2-attempts+judge``, ...; :func:`~conductor_env.evaluation.oracle.shape_of`)."""
    workflow = row.get("workflow")
    if not workflow or not workflow.get("steps"):
        return "(unparsed)" if not workflow else "(no step)"
    return shape_of(tuple((0, bool(step.get("access"))) for step in workflow["steps"]))


def strategy_table(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Returns, per policy and domain, its most common workflow shape and pattern with their shares."""
    groups: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        groups[row["policy"]][row["domain"]].append(row)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for policy, domains in groups.items():
        table[policy] = {}
        for domain, episodes in sorted(domains.items()):
            shape, shape_count = Counter(map(workflow_shape, episodes)).most_common(1)[0]
            pattern, pattern_count = Counter(map(workflow_pattern, episodes)).most_common(1)[0]
            table[policy][domain] = {"shape": shape, "shape_share": round(shape_count / len(episodes), 3), "pattern": pattern, "pattern_share": round(pattern_count / len(episodes), 3)}
    return table


def failures(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Returns, per policy with failed episodes, how many failed and the first failure's message.

    A failed episode (the policy raised, or the env's host died) scores the env's reward of 0,
    which is what the policy earned, but it says nothing about the workflows it would write.
    """
    table: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("infra_error"):
            entry = table.setdefault(row["policy"], {"episodes": 0, "first": str(row["infra_error"])})
            entry["episodes"] += 1
    return table


def oracle_scores(rows: Sequence[dict[str, Any]], pool: str) -> dict[str, Any]:
    """Returns the oracle's value per question of ``rows`` and its mean (95% interval) and per domain.

    Args:
        rows: The pool's episodes (their questions and domains).
        pool: The simulated pool.

    Returns:
        ``questions``, ``expected_reward``, ``ci95``, ``domains``, ``plans`` (the oracle's per
        domain), ``per_question``, and ``single_call``: the same figures (without plans) of the
        best single call, the ceiling of perfect routing.
    """
    names = tuple(w["name"] for w in worker_table(pool))
    domain_of = {row["problem_id"]: row["domain"] for row in rows}

    def scored(max_steps: int) -> dict[str, Any]:
        values = {q: shown_oracle(pool, names, domain, max_steps) for q, domain in sorted(domain_of.items())}
        mean, low, high = interval(list(values.values()))
        domains: dict[str, list[float]] = defaultdict(list)
        for q, value in values.items():
            domains[domain_of[q]].append(value)
        domain_means = {d: round(sum(v) / len(v), 4) for d, v in sorted(domains.items())}
        return {"questions": len(values), "expected_reward": round(mean, 4), "ci95": [round(low, 4), round(high, 4)], "domains": domain_means, "per_question": values}

    plans = oracle_report(pool)["domains"]
    single = scored(1)
    single.pop("per_question")
    return {**scored(3), "plans": {d: plans[d]["oracle"] for d in DOMAINS}, "single_call": single}


def score_pool(rows: Sequence[dict[str, Any]], pool: str, under_test: str) -> dict[str, Any]:
    """Returns one held-out pool's scores.

    Args:
        rows: The pool's episodes (``results.jsonl`` rows), every policy on the same questions.
        pool: The simulated pool they were played on.
        under_test: The name of the policy under test.

    Returns:
        ``pool``, ``under_test``, ``failures`` (:func:`failures`), ``workers`` (names in id order); ``policies`` (per policy, in first-played order:
        ``questions``, ``expected_reward``, ``ci95``, ``domains``, ``per_question``); ``oracle``
        (:func:`oracle_scores`); ``gaps`` (the policy under test minus each other policy, paired
        over questions: ``questions``, ``gap``, ``ci95``; itself left out); ``gap_to_oracle``
        (the policy under test minus the oracle, paired); ``strategy`` (:func:`strategy_table`).

    Raises:
        ValueError: When ``rows`` holds no episode of ``under_test``.
        conductor_env.evaluation.expected.UnexplainedEpisode: For an episode the closed form cannot score.
    """
    order = list(dict.fromkeys(row["policy"] for row in rows))
    means = summary(rows, pool=pool)
    questions = per_question(rows, pool=pool)
    oracle = oracle_scores(rows, pool)
    mine = questions.get(under_test)
    if not mine:
        raise ValueError(f"no episodes of {under_test!r} on {pool}")
    shared = sorted(set(mine) & set(oracle["per_question"]))
    mean, low, high = interval([mine[q] - oracle["per_question"][q] for q in shared])
    return {
        "pool": pool,
        "under_test": under_test,
        "failures": failures(rows),
        "workers": [w["name"] for w in worker_table(pool)],
        "policies": {p: {**means[p], "per_question": {q: round(v, 6) for q, v in sorted(questions[p].items())}} for p in order},
        "oracle": oracle,
        "gaps": paired_gaps(rows, rows, under_test, pool=pool),
        "gap_to_oracle": {"questions": len(shared), "gap": round(mean, 4), "ci95": [round(low, 4), round(high, 4)]},
        "strategy": strategy_table(rows),
    }


def across_pools(pools: dict[str, dict[str, Any]], under_test: str) -> dict[str, Any]:
    """Returns the summary over held-out pools.

    Args:
        pools: Per pool, :func:`score_pool`'s result.
        under_test: The name of the policy under test.

    Returns:
        ``pools`` (how many); ``policies``: per policy (the oracle and the best single call included) its mean expected
        reward over the pools it played (``mean_over_pools``, ``pools``); ``versus``: per other
        policy, on how many pools the policy under test beats it (paired interval above 0),
        loses to it (below 0), on how many both played, and the mean gap over those pools.
    """
    rewards: dict[str, list[float]] = defaultdict(list)
    versus: dict[str, dict[str, Any]] = defaultdict(lambda: {"beats": 0, "loses": 0, "pools": 0, "gaps": []})
    for scores in pools.values():
        for policy, entry in scores["policies"].items():
            rewards[policy].append(entry["expected_reward"])
        rewards[ORACLE].append(scores["oracle"]["expected_reward"])
        if "single_call" in scores["oracle"]:
            rewards[SINGLE_CALL].append(scores["oracle"]["single_call"]["expected_reward"])
        for other, gap in scores["gaps"].items():
            tally = versus[other]
            tally["pools"] += 1
            tally["beats"] += gap["ci95"][0] > 0
            tally["loses"] += gap["ci95"][1] < 0
            tally["gaps"].append(gap["gap"])
    return {
        "pools": len(pools),
        "policy": under_test,
        "policies": {p: {"mean_over_pools": round(sum(v) / len(v), 4), "pools": len(v)} for p, v in rewards.items()},
        "versus": {o: {"beats": t["beats"], "loses": t["loses"], "pools": t["pools"], "mean_gap": round(sum(t["gaps"]) / len(t["gaps"]), 4)} for o, t in versus.items()},
    }


def _ci(entry: dict[str, Any]) -> str:
    return f"{entry['expected_reward']:.3f} ({entry['ci95'][0]:.3f} to {entry['ci95'][1]:.3f})"


def _gap(entry: dict[str, Any] | None) -> str:
    return "" if entry is None else f"{entry['gap']:+.3f} ({entry['ci95'][0]:+.3f} to {entry['ci95'][1]:+.3f})"


def pool_markdown(scores: dict[str, Any], under_test: str) -> list[str]:
    """Returns one pool's table as Markdown lines: the oracle, then each policy, best first."""
    oracle = scores["oracle"]
    plans = "; ".join(f"{d}: {p['plan']} ({p['reward']:.3f})" for d, p in oracle["plans"].items())
    domains = [d for d in DOMAINS if d in oracle["domains"]]
    lines = [
        f"### {scores['pool']} (workers by id: {', '.join(scores['workers'])})",
        "",
        f"Oracle's best workflows: {plans}.",
        "",
        "| policy | expected reward (95% CI) | " + " | ".join(domains) + f" | `{under_test}` minus it (95% CI) | " + " | ".join(f"{d} workflow" for d in domains) + " |",
        "|---" * (3 + 2 * len(domains)) + "|",
        f"| oracle | {_ci(oracle)} | "
        + " | ".join(f"{oracle['domains'][d]:.3f}" for d in domains)
        + f" | {_gap(scores['gap_to_oracle'])} | "
        + " | ".join(oracle["plans"][d]["plan"] for d in domains)
        + " |",
    ]
    if "single_call" in oracle:
        single = oracle["single_call"]
        lines.append(f"| {SINGLE_CALL} | {_ci(single)} | " + " | ".join(f"{single['domains'][d]:.3f}" for d in domains) + " | |" + " |" * len(domains))
    for policy, entry in sorted(scores["policies"].items(), key=lambda kv: -kv[1]["expected_reward"]):
        strategy = scores["strategy"].get(policy, {})
        flows = [f"{strategy[d]['pattern']} ({strategy[d]['pattern_share']:.0%})".replace("|", "\\|") if d in strategy else "" for d in domains]
        cells = [f"`{policy}`", _ci(entry), *(f"{entry['domains'].get(d, float('nan')):.3f}" for d in domains), _gap(scores["gaps"].get(policy)), *flows]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def unseen_markdown(results: dict[str, Any]) -> str:
    """Returns the whole report as Markdown: the summary over pools, then one table per pool."""
    settings, overall = results["settings"], results["summary"]
    under_test = overall["policy"]
    lines = [
        f"# Unseen pools: `{under_test}`",
        "",
        f"{settings['env_id']}, split {settings['split']}, {settings['questions']} questions x {settings['samples']} sample(s) per pool; "
        "expected reward per episode (cost_aware, price_weight 1, at most 3 steps); paired gaps over questions.",
        "",
        f"| policy | mean over pools | pools | `{under_test}` beats it on (CI above 0) | loses to it on (CI below 0) | mean gap |",
        "|---|---|---|---|---|---|",
    ]
    for policy, entry in sorted(overall["policies"].items(), key=lambda kv: -kv[1]["mean_over_pools"]):
        tally = overall["versus"].get(policy)
        counts = [f"{tally['beats']}/{tally['pools']}", f"{tally['loses']}/{tally['pools']}", f"{tally['mean_gap']:+.3f}"] if tally else ["", "", ""]
        lines.append("| " + " | ".join([policy if policy in (ORACLE, SINGLE_CALL) else f"`{policy}`", f"{entry['mean_over_pools']:.3f}", str(entry["pools"]), *counts]) + " |")
    for scores in results["pools"].values():
        lines += ["", *pool_markdown(scores, under_test)]
    return "\n".join(lines) + "\n"
