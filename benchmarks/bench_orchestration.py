"""Issue 16: does GRPO teach orchestration? Fixed baselines, the oracle and a trained Conductor on the orchestra pool.

Runs ``conductor-env eval`` on the held-out (``validation``) split of the ``orchestrate`` recipe's
env (Conductor-RG-v0, six reasoning-gym datasets, the ``orchestra`` pool, ``cost_aware`` reward
with price weight 1, at most 3 steps) for every fixed baseline and, with ``--trained``, for saved
Conductors; then summarises each policy: mean reward with a 95% interval, accuracy, USD, and
per domain the reward, steps per episode, worker shares and access patterns (the strategy
table), beside the closed-form oracle (``benchmarks/oracle_orchestration.py``). With
``--subpool-size k`` every episode shows a random k-worker sub-pool (names shown) and the oracle
is computed per episode for the workers it shows.

    python benchmarks/bench_orchestration.py --out /tmp/orch/eval [--trained NAME=DIR ...] [--seed 0]
        [--subpool-size 2] [--samples 2] [--pool orchestra-judge] [--json FILE]

``--paired-with DIR`` (an eval folder of the baselines on the same questions) adds each trained
Conductor's per-question gap to every baseline with a 95% interval, twice: on the played rewards,
and on each episode's exact expected reward (``expected_orchestration.py``), which drops the
workers' coin flips and keeps the policies' choices.

``--pool`` takes the pool of the ``orchestrate-judge`` recipe (or any simulated pool file) instead of
``orchestra``; the oracle and the closed-form check follow it.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_orchestration import DOMAINS, POOL, all_plans, expected_reward, shape_of, worker_table  # noqa: E402

from conductor_env.agents.training.profiles import CPU_DATASETS  # noqa: E402
from conductor_env.cli.demo import ORCHESTRA_BASELINES  # noqa: E402

#: Every fixed baseline that fits in 3 steps on a 3-worker pool (parallel-judge:3 and moa:3 need 4).
BASELINES = ORCHESTRA_BASELINES
ENV_OPTIONS = {"examples": "none", "show_names": "true", "reward": "cost_aware", "price_weight": "1.0", "max_steps": "3"}


def applicable(policy: str, pool_size: int | None) -> bool:
    """Whether a baseline can run on pools of ``pool_size`` workers: ``single:<id>`` and
    ``reflect:<id>:<k>`` name a shown id, which a smaller sub-pool may not have (the policy would
    raise and the episode score 0, which is not the workflow's reward). ``None``: the whole pool."""
    kind, *args = policy.split(":")
    return pool_size is None or kind not in ("single", "reflect") or int(args[0]) < pool_size


def eval_command(
    out: str, policies: Iterable[str], *, seed: int, n: int, subpool_size: int | None, pool: str = POOL, samples: int = 1, max_rounds: int = 1,
    env_options: Iterable[str] = (),
) -> list[str]:
    """The ``conductor-env eval`` command line of the orchestrate recipe's held-out env (``env_options``: more ``KEY=VALUE``)."""
    command = [
        str(Path(sys.executable).with_name("conductor-env")), "eval", "--env", "Conductor-RG-v0", "--pool", pool,
        "--split", "validation", "--n", str(n), "--samples", str(samples), "--concurrency", "64", "--seed", str(seed), "--out", out,
        "--suite-option", f"datasets={json.dumps(list(CPU_DATASETS))}", "--suite-option", "size=20",
        "--suite-option", "allow_gameable=true",  # simulated workers: see CPU_SUITE_OPTIONS
    ]
    options = dict(ENV_OPTIONS)
    if subpool_size is not None:
        options["subpool_size"] = str(subpool_size)
    if max_rounds != 1:
        options["max_rounds"] = str(max_rounds)
    for key, value in options.items():
        command += ["--env-option", f"{key}={value}"]
    for pair in env_options:
        command += ["--env-option", pair]
    for policy in policies:
        command += ["--policy", policy]
    return command


def interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and a normal 95% interval (1.96 standard errors)."""
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    half = 1.96 * math.sqrt(var / n)
    return mean, mean - half, mean + half


@lru_cache(maxsize=None)
def _oracle_value(pool: str, shown: tuple[str, ...], domain: str, max_steps: int = 3) -> float:
    """The best expected reward over plans on the shown workers (closed form)."""
    table = {w["name"]: w for w in worker_table(pool)}
    workers = [table[name] for name in shown]
    return max(expected_reward(plan, workers, domain) for plan in all_plans(len(workers), max_steps))


def _pattern(workflow: dict[str, Any]) -> str:
    """An episode's workflow as ``names | access``, e.g. ``flash,flash,checker | -,-,all``."""
    return ",".join(str(s["worker"]) for s in workflow["steps"]) + " | " + ",".join("all" if s["access"] == "all" or s["access"] else "-" for s in workflow["steps"])


def _strategy(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Steps per episode, worker shares, shapes and top access patterns of some episodes."""
    parsed = [r for r in rows if r.get("workflow")]
    workers: Counter[str] = Counter()
    patterns: Counter[str] = Counter()
    shapes: Counter[str] = Counter()
    for r in parsed:
        steps = r["workflow"]["steps"]
        if not steps:  # a later round that kept the earlier answer (three empty lists)
            shapes["kept"] += 1
            patterns["(kept the earlier answer)"] += 1
            continue
        names = [t["worker_name"] for t in r["trace"]]
        workers.update(names)
        plan = tuple((0, bool(s["access"])) for s in steps)
        shapes[shape_of(plan)] += 1
        patterns[",".join(names) + " | " + ",".join("all" if s["access"] else "-" for s in steps)] += 1
    calls = sum(workers.values()) or 1
    return {
        "parse_rate": round(len(parsed) / len(rows), 3) if rows else 0.0,
        "steps_per_episode": round(sum(len(r["workflow"]["steps"]) for r in parsed) / len(parsed), 2) if parsed else 0.0,
        "worker_shares": {k: round(v / calls, 3) for k, v in workers.most_common()},
        "shapes": {k: round(v / len(parsed), 3) for k, v in shapes.most_common()} if parsed else {},
        "top_patterns": {k: round(v / len(parsed), 3) for k, v in patterns.most_common(3)} if parsed else {},
    }


def summarize(results: str, pool: str = POOL) -> dict[str, Any]:
    """Per policy: reward (95% interval), accuracy, USD, oracle on the same episodes, and per-domain strategy."""
    rows = [json.loads(line) for line in Path(results).read_text(encoding="utf-8").splitlines() if line.strip()]
    by_policy: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_policy[row["policy"]].append(row)
    summary: dict[str, Any] = {}
    for policy, episodes in by_policy.items():
        # Samples of one question are not independent: the interval is over per-question means.
        per_question: dict[str, list[float]] = defaultdict(list)
        for r in episodes:
            per_question[r["problem_id"]].append(float(r["reward"]))
        mean, low, high = interval([sum(v) / len(v) for v in per_question.values()])
        oracle = [_oracle_value(pool, tuple(r["worker_map"][str(i)] for i in range(len(r["worker_map"]))), r["domain"]) for r in episodes]
        entry = {
            "n": len(episodes), "questions": len(per_question), "reward": round(mean, 4), "ci95": [round(low, 4), round(high, 4)],
            "accuracy": round(sum(bool(r["correct"]) for r in episodes) / len(episodes), 4),
            "usd": round(sum(float(r["cost_usd"]) for r in episodes) / len(episodes), 4),
            "oracle_same_episodes": round(sum(oracle) / len(oracle), 4),
            "domains": {},
        }
        for domain in DOMAINS:
            part = [r for r in episodes if r["domain"] == domain]
            if part:
                entry["domains"][domain] = {"n": len(part), "reward": round(sum(float(r["reward"]) for r in part) / len(part), 4), **_strategy(part)}
        entry["subpools"] = _by_subpool(episodes, oracle)
        summary[policy] = entry
    return summary


def paired_gaps(results: str, baseline_results: str, policy: str) -> dict[str, Any]:
    """How far one policy is above each policy of another run on the same questions: per question,
    its mean reward minus the other's (each over its samples), then the mean gap and a normal 95%
    interval over questions. Pairing by question removes the questions' own spread, so the interval
    is narrower than comparing two separate intervals; an interval above 0 means beaten.

    Args:
        results: The ``results.jsonl`` holding ``policy`` (e.g. ``llm:DIR``).
        baseline_results: A ``results.jsonl`` of the baselines on the same split (it may be ``results``).
        policy: The policy to compare.

    Returns:
        Per other policy: ``questions`` (those both played), ``gap`` and ``ci95``.
    """
    def per_question(path: str) -> dict[str, dict[str, list[float]]]:
        table: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                table[row["policy"]][row["problem_id"]].append(float(row["reward"]))
        return table

    mine = per_question(results).get(policy)
    if not mine:
        raise ValueError(f"{results} has no episodes of {policy!r}")
    gaps: dict[str, Any] = {}
    for other, theirs in per_question(baseline_results).items():
        shared = sorted(set(mine) & set(theirs))
        if other == policy or not shared:
            continue
        mean, low, high = interval([sum(mine[q]) / len(mine[q]) - sum(theirs[q]) / len(theirs[q]) for q in shared])
        gaps[other] = {"questions": len(shared), "gap": round(mean, 4), "ci95": [round(low, 4), round(high, 4)]}
    return gaps


_PLAN_LINE = re.compile(r"Plan: ([^\n]*)")
_PLAN_WORKER = re.compile(r"([A-Za-z_][\w-]*)=\d+")


def expected_paired_gaps(results: str, baseline_results: str, policy: str, pool: str = POOL) -> dict[str, Any] | None:
    """:func:`paired_gaps` on each episode's exact expected reward (``expected_orchestration.py``):
    the workers' coin flips removed, the policies' choices kept, so the intervals are far narrower.

    Returns:
        Per other policy, as :func:`paired_gaps`; ``None`` when an episode's reward is not the
        orchestrate recipes' ``cost_aware`` reward of its outcome (another reward, several rounds).
    """
    from expected_orchestration import UnexplainedEpisode, read_rows
    from expected_orchestration import paired_gaps as gaps_in_expectation

    try:
        return gaps_in_expectation(read_rows(results), read_rows(baseline_results), policy, pool)
    except UnexplainedEpisode:
        return None


def planned_workers(action: str) -> list[str] | None:
    """The worker names an action's plan line names (``Plan: checker=2 reads flash=0, flash=0.``
    gives ``["checker", "flash", "flash"]``), or None when it has no plan line."""
    line = _PLAN_LINE.search(action or "")
    return _PLAN_WORKER.findall(line.group(1)) if line else None


def plan_code_disagreement(results: str, policy: str) -> dict[str, dict[str, int]]:
    """How often a Conductor's code runs other workers than its plan line names. The plan line is
    free text the env ignores; the workflow runs ``model_id``'s ids, so a plan that names the right
    worker under the wrong id in the code is paid as the worker the code named.

    Args:
        results: A ``results.jsonl`` holding ``policy``.
        policy: The policy to read (e.g. ``llm:DIR``).

    Returns:
        Per domain: ``episodes`` (parsed, with a plan line) and ``disagree`` (those whose run
        workers, as a multiset, differ from the planned ones).
    """
    table: dict[str, dict[str, int]] = defaultdict(lambda: {"episodes": 0, "disagree": 0})
    for line in Path(results).read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else None
        if not row or row["policy"] != policy or not row.get("workflow") or not row["workflow"]["steps"]:
            continue
        planned = planned_workers(row.get("action", ""))
        if planned is None:
            continue
        ran = [row["worker_map"].get(str(step["worker"]), "?") for step in row["workflow"]["steps"]]
        table[row["domain"]]["episodes"] += 1
        table[row["domain"]]["disagree"] += sorted(planned) != sorted(ran)
    return dict(table)


def shown_set(worker_map: dict[str, str]) -> str:
    """An episode's shown workers as one key, their sorted names (``checker,flash``): the same set in any id order."""
    return ",".join(sorted(worker_map.values()))


def _by_subpool(episodes: list[dict[str, Any]], oracle: list[float] | None = None) -> dict[str, Any]:
    """Per shown worker set: episodes, mean reward, the share unparsed and, given ``oracle`` (each
    episode's closed-form best), the oracle's mean on the same episodes."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, episode in enumerate(episodes):
        groups[shown_set(episode["worker_map"])].append(i)
    table = {}
    for names, index in sorted(groups.items()):
        table[names] = {
            "episodes": len(index),
            "reward": round(sum(float(episodes[i]["reward"]) for i in index) / len(index), 4),
            "unparsed": round(sum(bool(episodes[i].get("parse_error")) for i in index) / len(index), 3),
        }
        if oracle is not None:
            table[names]["oracle_same_episodes"] = round(sum(oracle[i] for i in index) / len(index), 4)
    return table


def markdown(summary: dict[str, Any]) -> str:
    """The reward table and the per-domain strategy table, as Markdown."""
    lines = ["| policy | n | mean reward (95% CI) | accuracy | USD/episode | oracle, same episodes |", "|---|---|---|---|---|---|"]
    for policy, e in sorted(summary.items(), key=lambda kv: -kv[1]["reward"]):
        lines.append(f"| `{policy}` | {e['n']} | {e['reward']:.3f} ({e['ci95'][0]:.3f}-{e['ci95'][1]:.3f}) | {e['accuracy']:.3f} | {e['usd']:.3f} | {e['oracle_same_episodes']:.3f} |")
    lines += ["", "| policy | domain | reward | steps/episode | worker shares | top patterns (workers \\| access) |", "|---|---|---|---|---|---|"]
    for policy, e in summary.items():
        for domain, d in e["domains"].items():
            shares = ", ".join(f"{k} {v:.2f}" for k, v in d["worker_shares"].items())
            patterns = "; ".join(f"{k} ({v:.2f})" for k, v in d["top_patterns"].items()).replace("|", "\\|")
            lines.append(f"| `{policy}` | {domain} | {d['reward']:.3f} | {d['steps_per_episode']:.2f} | {shares} | {patterns} |")
    if any(len(e.get("subpools", {})) > 1 for e in summary.values()):
        lines += ["", "| policy | shown workers | episodes | reward | unparsed | oracle, same episodes |", "|---|---|---|---|---|---|"]
        for policy, e in summary.items():
            for names, g in e["subpools"].items():
                lines.append(f"| `{policy}` | {names} | {g['episodes']} | {g['reward']:.3f} | {g['unparsed']:.3f} | {g['oracle_same_episodes']:.3f} |")
    return "\n".join(lines)


def _recorded_worker_maps(seed: int) -> dict[str, dict[int, str]]:
    """Problem id -> shown id -> worker name of the ``orchestrate`` recipe's training rows with
    ``seed`` (for ``rewards.json`` files written before records kept their ``worker_map``)."""
    from conductor_env.agents.training.data import build_dataset
    from conductor_env.agents.training.recipe import recipe_from_settings
    from conductor_env.agents.training.reward import EnvFactory
    from conductor_env.agents.training.profiles import RECIPES, recipe_settings

    recipe = recipe_from_settings(recipe_settings(RECIPES["orchestrate"], {"seed": seed}))
    factory = EnvFactory(recipe.setup)
    try:
        env = factory.local()
        maps = {}
        for row in build_dataset(factory, seed=seed, balance_domains=recipe.balance_domains):
            _, info = env.reset(seed=row["episode_seed"], options={"problem_id": row["problem_id"]})
            maps[row["problem_id"]] = dict(info["worker_map"])
        return maps
    finally:
        factory.close()


def training_strategy(
    rewards_json: str, steps: Sequence[int], *, seed: int = 0, shown: Sequence[str] | None = None
) -> dict[str, Any]:
    """Per domain, the sampled training actions of some GRPO steps (``rewards.json``'s episodes):
    mean reward, parse rate, steps per parsed workflow and the top worker patterns (by name: each
    episode's ``worker_map``, or the recipe's rows with ``seed`` when the records lack it).

    Args:
        rewards_json: A run's ``rewards.json``.
        steps: The GRPO steps to read (0-based, as recorded).
        seed: The recipe's seed, to rebuild worker maps that older records lack.
        shown: Only the episodes shown exactly these workers (any order), e.g. the whole pool of a
            run that mixes in sub-pools, where a pair's patterns would otherwise mix in (on a pair
            without the checker, the checker cannot judge). ``None`` reads every episode.

    Returns:
        One row per domain.
    """
    from conductor_env.workflow import WorkflowError, parse_workflow

    wanted = set(steps)
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    episodes_all = json.loads(Path(rewards_json).read_text(encoding="utf-8"))["episodes"]
    fallback = _recorded_worker_maps(seed) if any(not e.get("worker_map") for e in episodes_all) else {}
    for episode in episodes_all:
        names = (episode.get("worker_map") or fallback[episode["problem_id"]]).values()
        if episode["step"] in wanted and (shown is None or sorted(names) == sorted(shown)):
            by_domain[_training_domain(episode["problem_id"])].append(episode)
    table: dict[str, Any] = {}
    for domain in DOMAINS:
        episodes = by_domain.get(domain, [])
        patterns: Counter[str] = Counter()
        lengths = []
        for episode in episodes:
            names = {int(k): v for k, v in (episode.get("worker_map") or fallback[episode["problem_id"]]).items()}
            try:
                workflow = parse_workflow(episode["action"], num_workers=len(names), max_steps=3)
            except WorkflowError:
                continue
            lengths.append(len(workflow.steps))
            patterns[",".join(names[s.worker] for s in workflow.steps) + " | " + ",".join("all" if s.access else "-" for s in workflow.steps)] += 1
        table[domain] = {
            "episodes": len(episodes),
            "reward": round(sum(e["reward"] for e in episodes) / len(episodes), 4) if episodes else None,
            "parse_rate": round(len(lengths) / len(episodes), 3) if episodes else None,
            "steps_per_workflow": round(sum(lengths) / len(lengths), 2) if lengths else None,
            "top_patterns": {k: round(v / len(lengths), 3) for k, v in patterns.most_common(3)},
        }
    return table


def training_subpools(episodes_path: str, steps: Sequence[int]) -> dict[str, Any]:
    """Per shown worker set (sorted names), the sampled training actions of some GRPO steps:
    episodes, mean reward and the share unparsed (e.g. naming a worker the sub-pool lacks).

    Args:
        episodes_path: A run's ``rewards.json`` (its ``episodes``) or ``episodes.jsonl``.
        steps: The GRPO steps to read (0-based, as recorded).
    """
    wanted = set(steps)
    return _by_subpool([episode for episode in _training_episodes(episodes_path) if episode["step"] in wanted])


def training_oracle(episodes_path: str, pool: str = POOL) -> list[float]:
    """Per GRPO step, the closed-form oracle's mean over that step's sampled episodes, each on the
    workers it showed: the ceiling of the batch reward when training mixes in smaller sub-pools,
    whose oracle is lower than the whole pool's.

    Args:
        episodes_path: A run's ``rewards.json`` (its ``episodes``) or ``episodes.jsonl``, whose
            records keep their ``worker_map``.
        pool: The run's simulated pool.

    Returns:
        One value per recorded step, in step order.
    """
    return oracle_per_step(_training_episodes(episodes_path), pool)


def oracle_per_step(episodes: Iterable[dict[str, Any]], pool: str = POOL) -> list[float]:
    """:func:`training_oracle` of episodes already read."""
    by_step: dict[int, list[float]] = defaultdict(list)
    for episode in episodes:
        shown = tuple(sorted(episode["worker_map"].values()))
        by_step[episode["step"]].append(_oracle_value(pool, shown, _training_domain(episode["problem_id"])))
    return [round(sum(values) / len(values), 4) for _, values in sorted(by_step.items())]


def _training_domain(problem_id: str) -> str:
    """The domain of a training record's problem (``gcd/train/3`` -> ``math``)."""
    from conductor_env.tasks.suites.procedural import DATASET_DOMAINS

    return DATASET_DOMAINS.get(problem_id.split("/")[0], "reasoning")


def _training_episodes(episodes_path: str) -> list[dict[str, Any]]:
    """The sampled training episodes of a run: ``rewards.json``'s ``episodes`` or ``episodes.jsonl``'s lines."""
    text = Path(episodes_path).read_text(encoding="utf-8")
    return json.loads(text)["episodes"] if episodes_path.endswith(".json") else [json.loads(line) for line in text.splitlines() if line.strip()]


def rounds_summary(results: str) -> dict[str, Any]:
    """What a second round changed, per policy (``max_rounds=2`` runs): round-1 and final accuracy,
    how often round 2 kept the answer (empty lists) or wrote a new workflow, the answers it fixed or
    broke, the rewards of each round and the USD of the whole episode."""
    rows = [json.loads(line) for line in Path(results).read_text(encoding="utf-8").splitlines() if line.strip()]
    by_policy: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["earlier_rounds"]:
            by_policy[row["policy"]].append(row)
    summary: dict[str, Any] = {}
    for policy, episodes in by_policy.items():
        first = [r["earlier_rounds"][0] for r in episodes]
        kept = sum(bool(r["workflow"]) and not r["workflow"]["steps"] for r in episodes)
        n = len(episodes)
        summary[policy] = {
            "episodes": n,
            "round1_accuracy": round(sum(f["correct"] for f in first) / n, 4),
            "final_accuracy": round(sum(bool(r["correct"]) for r in episodes) / n, 4),
            "round2_kept": round(kept / n, 4),
            "round2_unparsed": round(sum(r["parse_error"] is not None for r in episodes) / n, 4),
            "fixed": sum(not f["correct"] and bool(r["correct"]) for f, r in zip(first, episodes)),
            "broke": sum(f["correct"] and not r["correct"] for f, r in zip(first, episodes)),
            "round1_reward": round(sum(f["reward"] for f in first) / n, 4),
            "round2_reward": round(sum(float(r["reward"]) for r in episodes) / n, 4),
            "usd": round(sum(float(r["cost_usd"]) for r in episodes) / n, 4),
            "round2_steps": round(sum(len((r["workflow"] or {}).get("steps", [])) for r in episodes) / n, 2),
        }
    return summary


def check_closed_form(out: str, *, seed: int = 7, samples: int = 10, pool: str = POOL) -> dict[str, Any]:
    """Plays every deterministic baseline ``samples`` times per held-out question and compares its
    per-domain mean reward with the closed form (``oracle_orchestration.oracle_report``)."""
    from oracle_orchestration import oracle_report

    policies = [b for b in BASELINES if b != "random"]
    subprocess.run(eval_command(out, policies, seed=seed, n=120, subpool_size=None, pool=pool, samples=samples), check=True, capture_output=True)
    simulated = summarize(str(Path(out) / "results.jsonl"), pool)
    closed = oracle_report(pool)["domains"]
    rows = {}
    for policy in policies:
        for domain, d in simulated[policy]["domains"].items():
            rewards = d["reward"]
            rows[f"{policy} / {domain}"] = {"n": d["n"], "simulated": rewards, "closed_form": closed[domain]["baselines"][policy], "difference": round(rewards - closed[domain]["baselines"][policy], 4)}
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="eval folder (rerunning resumes)")
    parser.add_argument("--trained", action="append", default=[], help="NAME=DIR of a saved Conductor (policy llm:DIR)")
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--subpool-size", type=int, default=None)
    parser.add_argument("--samples", type=int, default=1, help="episodes per question and policy (narrower intervals)")
    parser.add_argument("--max-rounds", type=int, default=1, help="rounds per episode (2: also print what the second round changed)")
    parser.add_argument("--pool", default=POOL, help="simulated pool preset or .toml path (default: the orchestra pool)")
    parser.add_argument(
        "--env-option", action="append", default=[], metavar="KEY=VALUE",
        help="more env options, e.g. exclude_subpools='[[\"flash\",\"solver\"]]' to evaluate on the sub-pools left (repeatable)",
    )
    parser.add_argument(
        "--paired-with", default=None, metavar="DIR",
        help="an eval folder of the baselines on the same split: also report each trained policy's per-question gap to each of them, played and in exact expected reward",
    )
    parser.add_argument("--json", default=None)
    parser.add_argument("--check-closed-form", action="store_true", help="compare the baselines' simulated rewards with the closed form instead")
    args = parser.parse_args(argv)
    if args.check_closed_form:
        rows = check_closed_form(args.out, seed=args.seed, pool=args.pool)
        for name, row in rows.items():
            print(f"{name:<40} n={row['n']}  simulated {row['simulated']:.3f}  closed form {row['closed_form']:.3f}  difference {row['difference']:+.3f}")
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
        return
    baselines = [] if args.no_baselines else list(BASELINES)
    policies = [p for p in baselines if applicable(p, args.subpool_size)]
    not_applicable = [p for p in baselines if p not in policies]
    if not_applicable:
        print(f"not applicable on {args.subpool_size}-worker sub-pools (they name a missing id): {', '.join(not_applicable)}")
    policies += [f"llm:{spec.split('=', 1)[1]}" for spec in args.trained]
    subprocess.run(eval_command(args.out, policies, seed=args.seed, n=args.n, subpool_size=args.subpool_size, pool=args.pool, samples=args.samples, max_rounds=args.max_rounds, env_options=args.env_option), check=True)
    results = str(Path(args.out) / "results.jsonl")
    summary = summarize(results, args.pool)
    print(markdown(summary))
    report: dict[str, Any] = {"seed": args.seed, "pool": args.pool, "subpool_size": args.subpool_size, "samples": args.samples, "policies": summary}
    if args.env_option:
        report["env_options"] = args.env_option
    if not_applicable:
        report["not_applicable"] = not_applicable
    if args.paired_with:
        baseline_results = str(Path(args.paired_with) / "results.jsonl")
        report["paired_gaps"], report["paired_gaps_expected"] = {}, {}
        for policy in (p for p in policies if p.startswith("llm:")):
            gaps = paired_gaps(results, baseline_results, policy)
            report["paired_gaps"][policy] = gaps
            for other, g in gaps.items():
                print(f"{policy} minus {other}: {g['gap']:+.3f} ({g['ci95'][0]:+.3f} to {g['ci95'][1]:+.3f}) over {g['questions']} questions")
            exact = expected_paired_gaps(results, baseline_results, policy, args.pool)
            report["paired_gaps_expected"][policy] = exact
            for other, g in (exact or {}).items():
                print(f"{policy} minus {other}, exact expected: {g['gap']:+.4f} ({g['ci95'][0]:+.4f} to {g['ci95'][1]:+.4f})")
    trained = [p for p in policies if p.startswith("llm:")]
    if trained:
        report["plan_code_disagreement"] = {p: plan_code_disagreement(results, p) for p in trained}
        for policy, table in report["plan_code_disagreement"].items():
            print(f"{policy}: code runs other workers than the plan names in " + ", ".join(f"{d} {t['disagree']}/{t['episodes']}" for d, t in table.items()))
    if args.max_rounds > 1:
        report["second_round"] = rounds_summary(results)
        print(json.dumps(report["second_round"], indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
