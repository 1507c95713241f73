"""The workflow viewer rendered in headless Chromium: no script errors, graphs drawn, text inert."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Sequence

import pytest

import conductor_env  # noqa: F401
from conductor_env.agents.base import Observation, Policy
from conductor_env.calls import RetryPolicy
from conductor_env.evaluation import EvalConfig, evaluate
from conductor_env.evaluation.browser import find_browser, render_page
from conductor_env.evaluation.report import build_report
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

pytestmark = pytest.mark.skipif(find_browser() is None, reason="needs Debian's chromium (scripts/setup_system.sh installs it)")

RG = "Conductor-RG-v0"
INJECTION = "</script><img src=x onerror=\"document.body.setAttribute('data-pwned','1')\"><b>bold?</b>"


class FixedPolicy(Policy):
    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text

    async def aact(self, observations: Sequence[Observation]) -> list[str]:
        return [self.text for _ in observations]


class Recursive(Policy):
    """Asks itself (the last id with self_call) for a sub-workflow, then keeps the answer."""

    name = "recursive"

    async def aact(self, observations: Sequence[Observation]) -> list[str]:
        actions = []
        for o in observations:
            if o["depth"] > 0:
                actions.append('model_id = [0, 1]\nsubtasks = ["Draft.", "Answer."]\naccess_list = [[], "all"]')
            elif o["round"] == 0:
                actions.append('model_id = [3, 0]\nsubtasks = ["Solve it yourself.", "Final answer."]\naccess_list = [[], "all"]')
            else:
                actions.append("model_id = []\nsubtasks = []\naccess_list = []")
        return actions


def pool() -> WorkerPool:
    return WorkerPool(
        [
            WorkerSpec("solver", "simulated", price_in_per_m=1.0, price_out_per_m=4.0, options={"skill": 0.8}),
            WorkerSpec("checker", "simulated", price_in_per_m=0.2, price_out_per_m=0.8, options={"skill": 0.5}),
            WorkerSpec("down", "simulated", options={"skill": 1.0, "fail_rate": 1.0}),
        ],
        name="viewer-test",
    )


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def body_tag(dom: str) -> str:
    match = re.search(r"<body[^>]*>", dom)
    assert match, dom[:500]
    return match.group(0)


@pytest.fixture(scope="module")
def report_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    first, second, combined = (tmp_path_factory.mktemp(name) for name in ("flat", "recursive", "combined"))
    policies = [
        FixedPolicy("parallel-judge", 'model_id = [0, 1, 0, 1]\nsubtasks = ["Try.", "Try too.", "Try again.", "Judge the attempts."]\naccess_list = [[], [], [], "all"]'),
        FixedPolicy("plan-solve-verify", 'model_id = [1, 0, 1]\nsubtasks = ["Plan.", "Solve.", "Verify."]\naccess_list = [[], "all", "all"]'),
        FixedPolicy("injected", f"model_id = [0]\nsubtasks = [{json.dumps(INJECTION)}]\naccess_list = [[]]"),
        FixedPolicy("chatty", "I would rather answer myself: 42."),
        FixedPolicy("uses-down-worker", 'model_id = [2]\nsubtasks = ["Solve."]\naccess_list = [[]]'),
    ]
    retry = RetryPolicy(max_attempts=2, base_delay_s=0.001, max_delay_s=0.002)
    evaluate(EvalConfig.for_id(RG, pool=pool(), n=6, concurrency=6, env_options={"retry": retry}), policies, str(first))
    evaluate(EvalConfig.for_id(RG, pool=pool(), n=3, concurrency=3, env_options={"self_call": True, "max_rounds": 2, "retry": retry}), [Recursive()], str(second))
    text = (first / "results.jsonl").read_text() + (second / "results.jsonl").read_text()
    (combined / "results.jsonl").write_text(text)
    return combined


def test_viewer_renders_without_script_errors(report_folder: Path, tmp_path: Path) -> None:
    report = build_report(report_folder)
    assert len(report.records) == 33
    rendered = render_page(report.html_path, screenshot=tmp_path / "shot.png")
    assert rendered.errors == [], rendered.console
    dom = rendered.dom
    body = body_tag(dom)
    assert 'data-rendered="25"' in body  # the script ran to the end on the first page of 33
    assert "data-error" not in body
    assert "rendered 25 of 33 episodes" in dom
    cards = dom.count("<article ")
    unparsed = dom.count('data-verdict="parse"')
    assert cards == 25 and 0 < unparsed < cards
    assert dom.count('class="graph"') >= cards - unparsed  # every parsed workflow is drawn
    for badge in ("correct", "wrong", "parse error", "infra error"):
        assert f">{badge}<" in dom
    assert png_size(tmp_path / "shot.png") == (1400, 1000)


def test_model_and_policy_text_is_shown_as_text_never_run(report_folder: Path) -> None:
    report = build_report(report_folder)
    html = report.html_path.read_text()
    assert "</script><img" not in html  # the embedded data cannot close the script element
    rendered = render_page(report.html_path)
    assert "data-rendered" in body_tag(rendered.dom) and "data-pwned" not in body_tag(rendered.dom)
    assert "&lt;img src=x onerror=" in rendered.dom  # shown, escaped, in the step's detail panel


def test_page_loads_nothing_from_outside(report_folder: Path) -> None:
    html = build_report(report_folder).html_path.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", html)
    assert not re.search(r"<script[^>]+src=", html) and "<link" not in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def test_filters_and_self_call_frames_reach_the_page(report_folder: Path) -> None:
    html = build_report(report_folder).html_path.read_text()
    for policy in ("parallel-judge", "plan-solve-verify", "chatty", "uses-down-worker", "recursive"):
        assert policy in html
    assert '"frames": [{"depth": 1' in html  # the recursive policy's frame travels to the viewer
    assert '"earlier_rounds": [{' in html


def test_episodes_graded_on_public_tests_only_are_marked(tmp_path: Path) -> None:
    rows = Path(__file__).parents[1] / "fixtures" / "lcb" / "lcb_public_only.jsonl"
    config = EvalConfig.for_id("Conductor-LCB-v0", pool=pool(), n=2, concurrency=2, sandbox="local", suite_options={"data_files": str(rows)})
    evaluate(config, [FixedPolicy("single", 'model_id = [0]\nsubtasks = ["Solve."]\naccess_list = [[]]')], str(tmp_path))
    rendered = render_page(build_report(tmp_path).html_path)
    assert rendered.errors == [], rendered.console
    dom = rendered.dom
    assert "not hidden-test accuracy" in dom and "<th>graded on</th>" in dom and "<td>public only</td>" in dom
    assert dom.count(">public tests only<") == 2  # one mark per episode card
