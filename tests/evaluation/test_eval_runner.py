"""The evaluation loop: records, batching, pairing, resume, and failures that must not end a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.base import ActionUsage, Observation, Policy
from conductor_env.calls import RetryPolicy
from conductor_env.evaluation import EvalConfig, EvalConfigError, evaluate, read_results
from conductor_env.evaluation.runner import ProgressReporter, plan_episodes
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

RG = "Conductor-RG-v0"
SOLVE_WITH_0 = 'model_id = [0]\nsubtasks = ["Solve the task."]\naccess_list = [[]]'
SOLVE_WITH_1 = 'model_id = [1]\nsubtasks = ["Solve the task."]\naccess_list = [[]]'
PLAN_SOLVE_CHECK = 'model_id = [1, 0, 0]\nsubtasks = ["Plan.", "Solve using the plan.", "Check and answer."]\naccess_list = [[], "all", "all"]'
FAST_RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.001, max_delay_s=0.002)


class FixedPolicy(Policy):
    """Writes the same workflow text for every observation; remembers its batch sizes."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self.batch_sizes: list[int] = []
        self.observations: list[Observation] = []

    async def aact(self, observations: Sequence[Observation]) -> list[str]:
        self.batch_sizes.append(len(observations))
        self.observations.extend(observations)
        return [self.text for _ in observations]


class MeteredPolicy(FixedPolicy):
    """A fixed workflow that reports a model call's usage for each action (as ``llm:`` policies do)."""

    async def aact_with_usage(self, observations: Sequence[Observation]) -> list[tuple[str, ActionUsage | None]]:
        return [(text, ActionUsage(prompt_tokens=300, completion_tokens=40, cost_usd=0.0005)) for text in await self.aact(observations)]


class BareUsagePolicy(FixedPolicy):
    """Overrides aact_with_usage wrongly: bare strings instead of (action, usage) pairs."""

    async def aact_with_usage(self, observations: Sequence[Observation]) -> list:  # type: ignore[override]
        return await self.aact(observations)


class BrokenPolicy(Policy):
    """A policy whose backend fails (e.g. its API is down)."""

    name = "broken"

    async def aact(self, observations: Sequence[Observation]) -> list[str]:
        raise ConnectionError("conductor endpoint unreachable")


class RecordingProgress(ProgressReporter):
    def __init__(self) -> None:
        self.total: int | None = None
        self.already: int | None = None
        self.advanced = 0
        self.warnings: list[str] = []
        self.stopped = False

    def start(self, total: int, already_done: Sequence[dict]) -> None:
        self.total, self.already = total, len(already_done)

    def advance(self, record: dict) -> None:
        self.advanced += 1

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def stop(self) -> None:
        self.stopped = True


def sure_pool(fail_rate: float = 0.0) -> WorkerPool:
    """Worker 0 always right, worker 1 always wrong, worker 2 always failing when fail_rate=1."""
    return WorkerPool(
        [
            WorkerSpec("always", "simulated", price_in_per_m=1.0, price_out_per_m=2.0, options={"skill": 1.0}),
            WorkerSpec("never", "simulated", price_in_per_m=1.0, price_out_per_m=2.0, options={"skill": 0.0}),
            WorkerSpec("down", "simulated", options={"skill": 1.0, "fail_rate": fail_rate}),
        ],
        name="sure",
    )


def lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def test_records_carry_every_field_and_grade_real_answers(tmp_path: Path) -> None:
    right, wrong = FixedPolicy("right", SOLVE_WITH_0), FixedPolicy("wrong", SOLVE_WITH_1)
    config = EvalConfig.for_id(RG, pool=sure_pool(), n=6, concurrency=3)
    result = evaluate(config, [right, wrong], str(tmp_path))
    assert len(result.new_records) == 12 and result.skipped == 0
    on_disk = lines(tmp_path)
    assert len(on_disk) == 12
    expected = {
        "env_id",
        "pool",
        "policy",
        "problem_id",
        "problem_index",
        "sample",
        "seed",
        "domain",
        "question",
        "correct",
        "score",
        "reward",
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
        "worker_wall_s",
        "rounds",
        "action",
        "workflow",
        "trace",
        "frames",
        "earlier_rounds",
        "worker_map",
        "timestamp",
    }
    for record in on_disk:
        assert expected <= set(record)
        assert record["env_id"] == RG and record["pool"] == "sure"
        assert record["infra_error"] is None and record["parse_error"] is None
        assert record["test_set"] == ""  # answers matched, no tests ran
        assert record["tokens"] > 0 and record["cost_usd"] > 0
        assert record["worker_map"] == {"0": "always", "1": "never", "2": "down"}
        assert record["trace"][0]["worker_name"] == ("always" if record["policy"] == "right" else "never")
    assert all(r["correct"] and r["reward"] == 1.0 for r in on_disk if r["policy"] == "right")
    assert not any(r["correct"] for r in on_disk if r["policy"] == "wrong")
    # Both policies saw the same six problems, in the suite's order.
    for name in ("right", "wrong"):
        assert sorted(r["problem_index"] for r in on_disk if r["policy"] == name) == list(range(6))


@pytest.mark.parametrize(("rows", "test_set"), [("lcb_public_only.jsonl", "public"), ("lcb_sample.jsonl", "public+private")])
def test_records_and_report_say_which_tests_graded_code(tmp_path: Path, rows: str, test_set: str) -> None:
    from conductor_env.evaluation.report import build_report

    data = Path(__file__).parents[1] / "fixtures" / "lcb" / rows
    config = EvalConfig.for_id("Conductor-LCB-v0", pool=sure_pool(), n=2, concurrency=2, sandbox="local", suite_options={"data_files": str(data)})
    result = evaluate(config, [FixedPolicy("wrong", SOLVE_WITH_1)], str(tmp_path))
    assert [r["test_set"] for r in lines(tmp_path)] == [test_set, test_set]
    public_only = test_set == "public"
    assert any("graded only on the examples printed" in w for w in result.warnings) is public_only
    report = build_report(tmp_path)
    assert report.summaries[0].public_only == (2 if public_only else 0)
    assert any("graded on public tests only" in note and "wrong on Conductor-LCB-v0 (2/2 episodes)" in note for note in report.notes) is public_only
    page = report.html_path.read_text()
    assert ("not hidden-test accuracy" in page) is public_only and '"test_set": "%s"' % test_set in page


def test_the_conductors_own_usage_is_recorded_apart_from_the_workers(tmp_path: Path) -> None:
    metered, plain = MeteredPolicy("metered", SOLVE_WITH_0), FixedPolicy("plain", SOLVE_WITH_0)
    config = EvalConfig.for_id(RG, pool=sure_pool(), n=3, concurrency=3, env_options={"max_rounds": 2})
    evaluate(config, [metered, plain], str(tmp_path))
    records = {name: [r for r in lines(tmp_path) if r["policy"] == name] for name in ("metered", "plain")}
    for record in records["metered"]:
        assert record["rounds"] == 2  # two actions, each a model call
        assert record["conductor_tokens"] == 2 * 340 and record["conductor_cost_usd"] == pytest.approx(0.001)
    for record in records["plain"]:
        assert record["conductor_tokens"] == 0 and record["conductor_cost_usd"] == 0.0
    # Worker spend is the same for both: the Conductor's is not mixed into it.
    assert [r["cost_usd"] for r in records["metered"]] == [r["cost_usd"] for r in records["plain"]]


def test_a_policy_returning_malformed_usage_fails_its_episodes_not_the_run(tmp_path: Path) -> None:
    bad, good = BareUsagePolicy("bare", SOLVE_WITH_0), FixedPolicy("good", SOLVE_WITH_0)
    evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=2, concurrency=2), [bad, good], str(tmp_path))
    records = lines(tmp_path)
    assert len(records) == 4
    for record in records:
        if record["policy"] == "bare":
            assert "aact_with_usage must return (action, ActionUsage or None) pairs" in record["infra_error"]
        else:
            assert record["correct"] and record["infra_error"] is None


def test_policies_are_compared_on_paired_episodes(tmp_path: Path) -> None:
    a, b = FixedPolicy("a", SOLVE_WITH_0), FixedPolicy("b", SOLVE_WITH_0)
    config = EvalConfig.for_id(RG, pool="simulated", n=5, concurrency=4, seed=7, env_options={"subpool_size": [2, 4]})
    evaluate(config, [a, b], str(tmp_path))
    by_policy = {name: {r["problem_id"]: r for r in lines(tmp_path) if r["policy"] == name} for name in "ab"}
    assert by_policy["a"].keys() == by_policy["b"].keys()
    for problem_id, record in by_policy["a"].items():
        twin = by_policy["b"][problem_id]
        assert record["seed"] == twin["seed"]
        assert record["worker_map"] == twin["worker_map"]  # same random sub-pool
        assert record["answer"] == twin["answer"] and record["correct"] == twin["correct"]


def test_observations_of_waiting_episodes_are_batched(tmp_path: Path) -> None:
    policy = FixedPolicy("batched", SOLVE_WITH_0)
    evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=16, concurrency=8), [policy], str(tmp_path))
    assert sum(policy.batch_sizes) == 16
    assert max(policy.batch_sizes) > 1
    assert all("prompt" in o and "Model id 0" in o["workers"] for o in policy.observations)


def test_rerun_skips_finished_episodes_and_extends_to_new_policies_and_problems(tmp_path: Path) -> None:
    first = FixedPolicy("first", SOLVE_WITH_0)
    evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=4, concurrency=2), [first], str(tmp_path))
    assert len(first.batch_sizes) > 0

    again = FixedPolicy("first", SOLVE_WITH_0)
    progress = RecordingProgress()
    result = evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=4, concurrency=2), [again], str(tmp_path), progress=progress)
    assert again.batch_sizes == [] and result.new_records == [] and result.skipped == 4
    assert (progress.total, progress.already, progress.stopped) == (0, 4, True)
    assert len(result.records) == 4

    second = FixedPolicy("second", PLAN_SOLVE_CHECK)
    more = FixedPolicy("first", SOLVE_WITH_0)
    result = evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=6, concurrency=3), [more, second], str(tmp_path))
    assert len(result.new_records) == 2 + 6 and result.skipped == 4
    keys = [(r["policy"], r["problem_id"]) for r in lines(tmp_path)]
    assert len(keys) == len(set(keys)) == 12


def test_a_different_run_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=2, concurrency=2, seed=1), [FixedPolicy("p", SOLVE_WITH_0)], str(tmp_path))
    with pytest.raises(EvalConfigError, match="seed=1"):
        evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=2, concurrency=2, seed=2), [FixedPolicy("p", SOLVE_WITH_0)], str(tmp_path))
    assert len(lines(tmp_path)) == 2


def test_worker_failures_are_recorded_as_infra_errors_and_retried_on_request(tmp_path: Path) -> None:
    uses_down_worker = FixedPolicy("down", 'model_id = [2]\nsubtasks = ["Solve."]\naccess_list = [[]]')
    progress = RecordingProgress()
    config = EvalConfig.for_id(RG, pool=sure_pool(fail_rate=1.0), n=3, concurrency=3, env_options={"retry": FAST_RETRY})
    evaluate(config, [uses_down_worker], str(tmp_path), progress=progress)
    records = lines(tmp_path)
    assert len(records) == 3
    assert all(r["infra_error"] and not r["correct"] for r in records)
    assert len(progress.warnings) == 3

    # Resuming keeps them; --retry-errors plays them again (the later record wins on read).
    again = FixedPolicy("down", 'model_id = [2]\nsubtasks = ["Solve."]\naccess_list = [[]]')
    evaluate(config, [again], str(tmp_path))
    assert again.batch_sizes == []
    healed = EvalConfig.for_id(RG, pool=sure_pool(fail_rate=1.0), n=3, concurrency=3, env_options={"retry": FAST_RETRY}, retry_infra_errors=True)
    fixed = FixedPolicy("down", SOLVE_WITH_0)
    evaluate(healed, [fixed], str(tmp_path))
    assert sum(fixed.batch_sizes) == 3
    final = read_results(tmp_path)
    assert len(final.records) == 3 and final.duplicates == 3
    assert all(r["correct"] and r["infra_error"] is None for r in final.records)


def test_a_failing_policy_is_recorded_per_episode_and_the_run_goes_on(tmp_path: Path) -> None:
    healthy = FixedPolicy("healthy", SOLVE_WITH_0)
    evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=3, concurrency=2), [BrokenPolicy(), healthy], str(tmp_path))
    records = lines(tmp_path)
    broken = [r for r in records if r["policy"] == "broken"]
    assert len(broken) == 3 and all("policy failed: ConnectionError" in r["infra_error"] for r in broken)
    assert all(r["correct"] for r in records if r["policy"] == "healthy")


def test_unparsable_workflows_count_as_parse_errors(tmp_path: Path) -> None:
    evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=2, concurrency=2), [FixedPolicy("chatty", "I would ask someone.")], str(tmp_path))
    records = lines(tmp_path)
    assert all(r["parse_error"] == "no_lists" and r["reward"] == 0.0 and r["infra_error"] is None for r in records)
    assert records[0]["action"] == "I would ask someone."


def test_rounds_and_self_call_frames_are_played_to_the_end(tmp_path: Path) -> None:
    # Round 1 asks the Conductor itself (id 3 with self_call) for a sub-workflow; the policy's
    # next action answers the frame; round 2 keeps the answer with three empty lists.
    class Recursive(Policy):
        name = "recursive"

        async def aact(self, observations: Sequence[Observation]) -> list[str]:
            actions = []
            for o in observations:
                if o["depth"] > 0:
                    actions.append(SOLVE_WITH_0)
                elif o["round"] == 0:
                    actions.append('model_id = [3, 0]\nsubtasks = ["Solve it.", "Give the final answer."]\naccess_list = [[], "all"]')
                else:
                    actions.append("model_id = []\nsubtasks = []\naccess_list = []")
            return actions

    config = EvalConfig.for_id(RG, pool=sure_pool(), n=2, concurrency=2, env_options={"self_call": True, "max_rounds": 2})
    evaluate(config, [Recursive()], str(tmp_path))
    for record in lines(tmp_path):
        assert record["rounds"] == 2 and record["correct"]
        first = record["earlier_rounds"][0]
        assert first["workflow"]["steps"][0]["worker"] == 3
        assert first["frames"] and first["frames"][0]["depth"] == 1
        assert record["reason"] == "kept the previous answer"


def test_long_texts_are_truncated_in_records(tmp_path: Path) -> None:
    long_subtask = "x" * 10_000
    text = f'model_id = [0]\nsubtasks = ["{long_subtask}"]\naccess_list = [[]]'
    evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=1, concurrency=1), [FixedPolicy("long", text)], str(tmp_path))
    record = lines(tmp_path)[0]
    assert len(record["action"]) < 4200 and "more characters]" in record["action"]
    assert len(record["trace"][0]["subtask"]) < 2200


def test_bad_settings_fail_before_anything_runs(tmp_path: Path) -> None:
    policy = FixedPolicy("p", SOLVE_WITH_0)
    with pytest.raises(EvalConfigError, match="Conductor-RG-v0"):
        evaluate(EvalConfig.for_id("Conductor-Rg-v0", pool="simulated"), [policy], str(tmp_path / "a"))
    with pytest.raises(EvalConfigError, match="unknown pool"):
        evaluate(EvalConfig.for_id(RG, pool="no-such-pool"), [policy], str(tmp_path / "b"))
    with pytest.raises(EvalConfigError, match="at least 1"):
        evaluate(EvalConfig.for_id(RG, pool="simulated", n=0), [policy], str(tmp_path / "c"))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_plan_is_problem_major_and_seeds_are_shared_across_policies() -> None:
    plan = plan_episodes(["p0", "p1", "p2"], ["a", "b"], n=2, samples=2, seed=10)
    assert [(s.problem_id, s.sample, s.policy) for s in plan[:4]] == [("p0", 0, "a"), ("p0", 0, "b"), ("p0", 1, "a"), ("p0", 1, "b")]
    assert [s.seed for s in plan] == [10, 10, 11, 11, 12, 12, 13, 13]
    assert len(plan_episodes(["p0"], ["a"], n=5, samples=1, seed=0)) == 1


def test_a_run_that_spelled_out_default_options_still_resumes(tmp_path):
    policy = FixedPolicy("p", SOLVE_WITH_0)
    evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=2, concurrency=2), [policy], str(tmp_path))
    manifest = json.loads((tmp_path / "run.json").read_text())
    assert manifest["env_options"] == {}
    manifest["env_options"] = {"max_rounds": 1, "access": "binary"}  # as an older version wrote them
    (tmp_path / "run.json").write_text(json.dumps(manifest))
    result = evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=2, concurrency=2), [policy], str(tmp_path))
    assert result.skipped == 2 and result.new_records == []
    with pytest.raises(EvalConfigError, match="env_options"):
        evaluate(EvalConfig.for_id(RG, pool=sure_pool(), n=2, concurrency=2, env_options={"max_rounds": 2}), [policy], str(tmp_path))
