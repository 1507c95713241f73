"""Per-policy statistics of a results file and the table that shows them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from rich.table import Table

from conductor_env.tasks.public_tests import PUBLIC_ONLY, UNVERIFIED

#: z for a two-sided 95% interval.
Z_95 = 1.959963984540054


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Returns the Wilson score interval of a binomial proportion.

    Unlike the normal approximation it stays inside [0, 1] and is sensible for small ``trials``
    and proportions near 0 or 1.

    Args:
        successes: Correct episodes.
        trials: Scored episodes.
        z: The normal quantile (1.96 for 95%).

    Returns:
        ``(low, high)``; ``(0.0, 1.0)`` when there are no trials.
    """
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denominator = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / trials + z * z / (4 * trials * trials)) / denominator
    # The interval always contains p; clamping also removes rounding error at p = 0 or 1.
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


@dataclass(frozen=True)
class PolicySummary:
    """The statistics of one policy on one env and pool.

    Attributes:
        policy: The policy's name.
        env_id: The gym id.
        pool: The pool's name.
        episodes: All recorded episodes.
        scored: Episodes without an infrastructure error (the accuracy's denominator).
        correct: Correct scored episodes.
        accuracy: ``correct / scored`` (0 when nothing was scored).
        ci_low: Lower end of the 95% Wilson interval.
        ci_high: Upper end of the 95% Wilson interval.
        mean_tokens: Worker tokens per episode (all episodes).
        mean_usd: Worker spend per episode in USD (all episodes).
        mean_conductor_tokens: The policy's own model tokens per episode (0 unless it calls a model).
        mean_conductor_usd: The policy's own model spend per episode in USD.
        mean_latency_s: Episode wall time in seconds (all episodes).
        parse_errors: Scored episodes whose workflow did not parse.
        parse_error_rate: ``parse_errors / scored``.
        infra_errors: Episodes cut short by a worker failure (not scored).
        public_only: Scored episodes graded only on public tests (records with
            ``test_set == "public"``: the examples printed in the statement, which a lookup table
            of them passes), so their share of ``accuracy`` is not hidden-test accuracy.
        unverified: Scored episodes of unverified problems (``test_set == "unverified"``: tests
            that ran where a program could forge their verdict).
    """

    policy: str
    env_id: str
    pool: str
    episodes: int
    scored: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float
    mean_tokens: float
    mean_usd: float
    mean_conductor_tokens: float
    mean_conductor_usd: float
    mean_latency_s: float
    parse_errors: int
    parse_error_rate: float
    infra_errors: int
    public_only: int = 0
    unverified: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Returns a JSON-friendly copy."""
        return dict(self.__dict__)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def summarize(records: Iterable[dict[str, Any]], *, order: Sequence[str] | None = None) -> list[PolicySummary]:
    """Aggregates results records per (env id, pool, policy).

    Episodes with an ``infra_error`` count in ``episodes``, costs and ``infra_errors`` but not in
    the accuracy: a worker outage says nothing about the policy. A workflow that did not parse
    counts as a wrong answer (it is the policy's fault).

    Args:
        records: Results records.
        order: Policy names in the order to list them (others follow in order of first
            appearance); ``None``: order of first appearance.

    Returns:
        One summary per group.
    """
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((str(record.get("env_id", "")), str(record.get("pool", "")), str(record.get("policy", ""))), []).append(record)
    rank = {name: i for i, name in enumerate(order or [])}
    keys = sorted(groups, key=lambda k: (k[0], k[1], rank.get(k[2], len(rank))))  # stable for ties
    summaries = []
    for env_id, pool, policy in keys:
        group = groups[(env_id, pool, policy)]
        scored = [r for r in group if not r.get("infra_error")]
        correct = sum(1 for r in scored if r.get("correct"))
        parse_errors = sum(1 for r in scored if r.get("parse_error"))
        low, high = wilson_interval(correct, len(scored))
        summaries.append(
            PolicySummary(
                policy=policy,
                env_id=env_id,
                pool=pool,
                episodes=len(group),
                scored=len(scored),
                correct=correct,
                accuracy=correct / len(scored) if scored else 0.0,
                ci_low=low,
                ci_high=high,
                mean_tokens=_mean([float(r.get("tokens") or 0) for r in group]),
                mean_usd=_mean([float(r.get("cost_usd") or 0.0) for r in group]),
                mean_conductor_tokens=_mean([float(r.get("conductor_tokens") or 0) for r in group]),
                mean_conductor_usd=_mean([float(r.get("conductor_cost_usd") or 0.0) for r in group]),
                mean_latency_s=_mean([float(r.get("wall_s") or 0.0) for r in group]),
                parse_errors=parse_errors,
                parse_error_rate=parse_errors / len(scored) if scored else 0.0,
                infra_errors=len(group) - len(scored),
                public_only=sum(1 for r in scored if r.get("test_set") == PUBLIC_ONLY),
                unverified=sum(1 for r in scored if r.get("test_set") == UNVERIFIED),
            )
        )
    return summaries


def graded_on(summary: PolicySummary) -> str:
    """Returns the "graded on" cell of a policy: ``public only``, ``K/N public only`` or ``-``."""
    if not summary.public_only:
        return "-"
    if summary.public_only == summary.scored:
        return "public only"
    return f"{summary.public_only}/{summary.scored} public only"


#: The table's note when some episodes were graded on public tests only.
PUBLIC_ONLY_NOTE = "public only: graded on the examples printed in the statement (no hidden tests), which a lookup table of them passes; not hidden-test accuracy"


def format_usd(value: float) -> str:
    """Formats a dollar amount with enough digits for sub-cent episode costs."""
    if value == 0:
        return "$0"
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:.2g}" if value < 1e-4 else f"${value:.4f}"


def summary_table(summaries: Sequence[PolicySummary], *, title: str | None = None) -> Table:
    """Builds the results table (env and pool columns appear only when they vary).

    Token and USD columns are the workers'; a "conductor" column with the policy's own tokens
    and spend appears when some policy calls a model (``llm:``). A "graded on" column and a note
    appear when some episodes were graded on public tests only.

    Args:
        summaries: From :func:`summarize`.
        title: Table title.

    Returns:
        A :class:`rich.table.Table`.
    """
    show_env = len({s.env_id for s in summaries}) > 1
    show_pool = len({s.pool for s in summaries}) > 1
    show_conductor = any(s.mean_conductor_tokens for s in summaries)
    show_tests = any(s.public_only for s in summaries)
    caption = "tokens, USD and latency are means per episode" + (f"\n{PUBLIC_ONLY_NOTE}" if show_tests else "")
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    if show_env:
        table.add_column("env")
    if show_pool:
        table.add_column("pool")
    table.add_column("policy", style="bold", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("accuracy", justify="right", no_wrap=True)
    table.add_column("95% CI", justify="right", no_wrap=True)
    if show_tests:
        table.add_column("graded on", no_wrap=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("USD", justify="right", no_wrap=True)
    if show_conductor:
        table.add_column("conductor", justify="right", no_wrap=True)
    table.add_column("latency", justify="right", no_wrap=True)
    table.add_column("parse err", justify="right", no_wrap=True)
    table.add_column("infra err", justify="right", no_wrap=True)
    for s in summaries:
        cells = []
        if show_env:
            cells.append(s.env_id)
        if show_pool:
            cells.append(s.pool)
        cells += [
            s.policy,
            str(s.scored),
            f"{100 * s.accuracy:.1f}%" if s.scored else "-",
            f"{100 * s.ci_low:.1f}-{100 * s.ci_high:.1f}" if s.scored else "-",
        ]
        if show_tests:
            cells.append(graded_on(s))
        cells += [
            f"{s.mean_tokens:,.0f}",
            format_usd(s.mean_usd),
        ]
        if show_conductor:
            cells.append(f"{s.mean_conductor_tokens:,.0f} tok, {format_usd(s.mean_conductor_usd)}" if s.mean_conductor_tokens else "-")
        cells += [
            f"{s.mean_latency_s:.2f}s",
            f"{100 * s.parse_error_rate:.0f}%" if s.scored else "-",
            str(s.infra_errors),
        ]
        table.add_row(*cells)
    return table
