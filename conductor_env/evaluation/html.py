"""The workflow viewer: one static, self-contained HTML page of every episode's workflow graph.

Each episode is drawn as a graph (steps as nodes labelled by worker id, access as edges, the
verdict as the final node); hovering or clicking a step shows its subtask and response. The
page has no external resources (no CDN, no fonts, no network): its script, style, data and the
optional plot image are all inline, so it can be mailed or archived as one file.
"""

from __future__ import annotations

import base64
import html
import importlib.resources
import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from conductor_env.evaluation.summary import PUBLIC_ONLY_NOTE, PolicySummary

#: Record fields the viewer reads (everything else is left out of the page).
VIEWER_FIELDS = (
    "policy",
    "env_id",
    "pool",
    "problem_id",
    "sample",
    "domain",
    "question",
    "correct",
    "score",
    "reason",
    "test_set",
    "answer",
    "parse_error",
    "parse_detail",
    "infra_error",
    "cost_usd",
    "tokens",
    "conductor_tokens",
    "conductor_cost_usd",
    "wall_s",
    "action",
    "workflow",
    "trace",
    "frames",
    "earlier_rounds",
    "worker_map",
)


def _asset(name: str) -> str:
    return (importlib.resources.files("conductor_env.evaluation") / name).read_text(encoding="utf-8")


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>`` or ``<!--`` can appear)."""
    return json.dumps(value, ensure_ascii=False, default=str).replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _plot_image(plot_png: bytes | None) -> str:
    """The inline ``<img>`` of the accuracy-versus-cost plot, or nothing without one."""
    if not plot_png:
        return ""
    return f'<img class="plot" alt="accuracy versus cost" src="data:image/png;base64,{base64.b64encode(plot_png).decode("ascii")}">'


def _public_only_note(summaries: Sequence[PolicySummary]) -> str:
    """The warning shown when some policy was graded on public tests only, else nothing."""
    if not any(s.public_only for s in summaries):
        return ""
    return f'<p class="public-only-note">{html.escape(PUBLIC_ONLY_NOTE)} (the "graded on" column says which policies).</p>'


def render_report_html(
    records: Iterable[dict[str, Any]],
    summaries: Sequence[PolicySummary],
    *,
    title: str = "conductor-env results",
    plot_png: bytes | None = None,
) -> str:
    """Returns the viewer page as a string.

    Args:
        records: Results records (one episode each); shown problem by problem.
        summaries: The per-policy statistics shown at the top.
        title: Page title.
        plot_png: An accuracy-versus-cost PNG to inline at the top (optional).

    Returns:
        A complete HTML document.
    """
    rank = {s.policy: i for i, s in enumerate(summaries)}
    # Problem-major, so the policies' episodes on one problem sit next to each other.
    ordered = sorted(records, key=lambda r: (int(r.get("problem_index") or 0), int(r.get("sample") or 0), rank.get(str(r.get("policy")), len(rank))))
    episodes = [{k: record.get(k) for k in VIEWER_FIELDS} for record in ordered]
    data = {"episodes": episodes, "summaries": [s.to_dict() for s in summaries]}
    image = _plot_image(plot_png)
    envs = sorted({s.env_id for s in summaries})
    pools = sorted({s.pool for s in summaries})
    subtitle = f"{len(episodes)} episodes · env {', '.join(envs) or '-'} · pool {', '.join(pools) or '-'}"
    public_only = _public_only_note(summaries)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{html.escape(title)}</title>
<style>
{_asset("viewer.css")}
</style>
</head>
<body>
<header>
<h1>{html.escape(title)}</h1>
<div class="sub-title">{html.escape(subtitle)}</div>
</header>
<main>
<div id="errors" hidden></div>
<section class="top"><div id="summary">{public_only}</div>{image}</section>
<div class="controls">
<label>policy <select id="policy"><option value="">all</option></select></label>
<label>verdict <select id="verdict"><option value="">all</option><option value="correct">correct</option><option value="wrong">wrong</option><option value="parse">parse error</option><option value="infra">infra error</option></select></label>
<label>search <input id="search" type="search" placeholder="problem id or question"></label>
<span id="status">loading…</span>
</div>
<div id="pager"></div>
<div id="episodes"></div>
</main>
<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8a94a6"/></marker></defs></svg>
<script type="application/json" id="data">{_script_json(data)}</script>
<script>
{_asset("viewer.js")}
</script>
</body>
</html>
"""


def write_report_html(
    records: Iterable[dict[str, Any]],
    summaries: Sequence[PolicySummary],
    path: str | os.PathLike[str],
    *,
    title: str = "conductor-env results",
    plot_path: str | os.PathLike[str] | None = None,
) -> Path:
    """Writes the viewer page.

    Args:
        records: Results records.
        summaries: Per-policy statistics.
        path: The ``.html`` file to write.
        title: Page title.
        plot_path: A PNG to inline at the top (skipped when absent).

    Returns:
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    png = Path(plot_path).read_bytes() if plot_path is not None and Path(plot_path).is_file() else None
    path.write_text(render_report_html(records, summaries, title=title, plot_png=png), encoding="utf-8")
    return path
