"""``sandbox="ray"``: one host per node offering ``conductor_sandbox``, the local verdicts, and no
lost or wrongly scored answer when a host dies mid-run."""

from __future__ import annotations

import json
import threading
import time

import gymnasium as gym
import pytest

import conductor_env  # noqa: F401  (registers the gym ids)
from conductor_env.distributed import RayEnvHost, RaySandbox
from conductor_env.distributed.sandbox import HOST_PREFIX
from conductor_env.evaluation.runner import EvalConfig, evaluate
from conductor_env.evaluation.setup import build_policies
from conductor_env.sandboxes import get_sandbox
from conductor_env.tasks.suites.humaneval import HumanEvalSuite
from conductor_env.workers.pool import load_pool

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray


def test_one_host_per_offering_node_and_local_verdicts(hosts):
    suite = HumanEvalSuite(sandbox=hosts)
    reference = HumanEvalSuite(sandbox="local")
    try:
        problems = suite.problems()[:6]
        answers = [suite.reference_response(p) for p in problems] + ["```python\ndef nothing():\n    pass\n```"] * 2
        graded = [(p, a) for p, a in zip(problems + problems[:2], answers)]
        remote = [suite.verify(p, a) for p, a in graded]
        local = [reference.verify(p, a) for p, a in graded]
        assert [s.correct for s in remote] == [s.correct for s in local] == [True] * 6 + [False] * 2
        stats = [ray.get(h.stats.remote()) for h in hosts.host_handles()]
    finally:
        suite.close()
        reference.close()
    assert len(stats) == 2 and len({s["node_id"] for s in stats}) == 2, "one host on each node offering the resource"
    assert all(s["jobs"] > 0 for s in stats), "jobs went to both hosts"


def test_no_host_is_a_report_error_not_an_exception(cluster):
    report = RaySandbox(hosts=0).run_tests("print(1)", [{"input": "", "output": "1"}])
    assert report.error is not None and "conductor_sandbox" in report.error


def test_sandbox_name_ray_reaches_the_plugin(hosts):
    sandbox = get_sandbox("ray")
    assert isinstance(sandbox, RaySandbox)
    env = gym.make("Conductor-HumanEval-v0", pool="simulated", sandbox="ray")
    try:
        env.reset(seed=0, options={"problem_id": "HumanEval/2"})
        _, _, terminated, truncated, info = env.step('model_id = [0]\nsubtasks = ["Write the function."]\naccess_list = [[]]')
        assert terminated and not truncated and info["infra_error"] == ""
    finally:
        env.close()


def test_a_sandbox_host_killed_mid_run_changes_no_reward(hosts, tmp_path):
    config = dict(pool="simulated", n=24, concurrency=4, seed=5)
    policies = lambda: build_policies(["single:2"], pool=load_pool("simulated"))  # noqa: E731 - the coder writes code
    local = evaluate(EvalConfig.for_id("Conductor-HumanEval-v0", sandbox="local", **config), policies(), str(tmp_path / "local"))
    out = tmp_path / "ray"

    def kill_a_host() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len((out / "results.jsonl").read_text().splitlines() if (out / "results.jsonl").exists() else []) < 4:
            time.sleep(0.05)
        ray.kill(ray.get_actor(f"{HOST_PREFIX}0"), no_restart=False)

    killer = threading.Thread(target=kill_a_host, daemon=True)
    killer.start()
    host = RayEnvHost(workers=2)
    try:
        remote = evaluate(EvalConfig.for_id("Conductor-HumanEval-v0", sandbox=hosts, **config), policies(), str(out), host=host)
    finally:
        host.close()
    killer.join(timeout=5)
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 24
    assert [r["infra_error"] for r in lines if r["infra_error"]] == []  # the errors themselves, if a run ever has one
    key = lambda r: (r["problem_id"], r["sample"])  # noqa: E731
    assert {key(r): r["correct"] for r in remote.records} == {key(r): r["correct"] for r in local.records}
    assert any(r["correct"] for r in lines) and not all(r["correct"] for r in lines)


def test_the_four_classes_through_ray_are_not_paid(hosts, tmp_path):
    """Through Ray as in process: issue 57's four classes against BigCodeBench's tests (hooks
    planted for the tests' loading, classes posing as a library's, new members on the tests'
    class, data of the tests' globals) are not paid; the honest controls beside them pass."""
    import sys
    from pathlib import Path

    from conductor_env.sandboxes import Limits
    from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sandboxes"))
    from test_bigcodebench_classes import HONEST, HOSTILE, REACH_TESTS, SAMPLE, _suite, grade  # noqa: PLC0415 - the in-process battery

    class Folders:  # tmp_path_factory's one method that _suite uses
        def mktemp(self, name: str) -> Path:
            folder = tmp_path / name
            folder.mkdir(exist_ok=True)
            return folder

    limits = Limits(wall_s=20.0, memory_mb=1024, processes=32, output_bytes=1 << 16)
    suites = {"sample": BigCodeBenchSuite(data_files=str(SAMPLE), sandbox=hosts, limits=limits), "reach": _suite(hosts, Folders(), "reach", REACH_TESTS)}
    for suite in suites.values():
        suite.limits = limits
    names = ("a_build_class_hook", "a_meta_path_finder", "b_ast_compiled_under_the_file", "b_held_by_a_library_module",
             "c_assert_override_in_call", "c_getattribute_in_call", "d_mutate_expected_in_place", "d_rebind_module_in_tests_globals")  # fmt: skip
    for name in names:
        task, code = HOSTILE[name]
        score = grade(suites[task], code)
        assert not score.correct and score.reason, (name, score)
    for suite in suites.values():
        assert grade(suite, HONEST).correct


def test_hostile_programs_through_ray_are_wrong_not_unscored(hosts):
    """Through Ray as in process: tricks on the BigCodeBench tests are not paid, and a file tree
    the clean-up cannot walk is the program's wrong answer (never "not scored"), on every kind."""
    import sys
    from pathlib import Path

    from conductor_env.sandboxes import Limits
    from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite

    tests_root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(tests_root / "sandboxes"))
    from test_bigcodebench_reach import HOSTILE, block  # noqa: PLC0415 - the in-process battery
    from test_sandbox_attribution import TREES, _program, _run  # noqa: PLC0415

    limits = Limits(wall_s=20.0, memory_mb=512, processes=32, file_size_mb=8, open_files=64, output_bytes=1 << 16)
    suite = BigCodeBenchSuite(data_files=str(tests_root / "fixtures" / "bigcodebench" / "bcb_sample.jsonl"), sandbox=hosts, limits=limits)
    problem = suite.problems()[0]
    for name in ("return_mock_any", "return_always_equal", "replace_assert_code", "replace_tests_in_call", "audit_hook_patches_tests", "gc_callback_patches_tests", "replace_json_encoder"):
        score = suite.verify(problem, block(HOSTILE[name]))
        assert not score.correct and score.reason, (name, score)
    assert suite.verify(problem, suite.reference_response(problem)).correct
    for kind in ("stdin", "functional", "unittest"):
        report = _run(hosts, kind, _program(kind, TREES["deep_tree"]))
        assert report.error is None and not report.passed, (kind, report)
