"""What a step says about a grade before its episode ends: the public verdict, and the grader's reasons at the end."""

from __future__ import annotations

import dataclasses

import pytest

from conductor_env.calls import RetryPolicy
from conductor_env.envs import EnvSetup
from conductor_env.suite import Score
from conductor_env.tasks.suites.procedural import ReasoningGymSuite
from conductor_env.verdicts import CORRECT, PARTIAL, PUBLIC_REASONS, WRONG, PublicVerdict
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

KEEP = "model_id = []\nsubtasks = []\naccess_list = []"


def solo(worker: int) -> str:
    return f'model_id = [{worker}]\nsubtasks = ["Solve it"]\naccess_list = [[]]'


@pytest.fixture(scope="module")
def suite() -> ReasoningGymSuite:
    return ReasoningGymSuite(["word_sorting"], size=4)


def make_env(suite: ReasoningGymSuite, max_rounds: int):
    pool = WorkerPool(
        [
            WorkerSpec("always", "simulated", options={"skill": 1.0}),
            WorkerSpec("never", "simulated", options={"skill": 0.0}),
            WorkerSpec("down", "simulated", options={"skill": 1.0, "fail_rate": 1.0}),
        ],
        name="sure",
    )
    retry = RetryPolicy(max_attempts=1, base_delay_s=0.001, max_delay_s=0.002)
    return EnvSetup.from_kwargs(suite=suite, pool=pool, retry=retry, max_rounds=max_rounds, subpool_size=3).make()


def test_the_public_verdict_has_no_room_for_the_graders_text() -> None:
    hostile = Score(False, 0.25, "expected 'gold answer', got 'x'; test 3 input 'secret'", "public+private")
    verdict = PublicVerdict.of(hostile)
    assert [f.name for f in dataclasses.fields(verdict)] == ["correct", "score", "test_set"]
    assert verdict.reason == PARTIAL and "gold" not in repr(verdict) and "secret" not in repr(verdict)
    assert PublicVerdict.of(Score(True, 1.0, "match")).reason == CORRECT and PublicVerdict.of(Score(False, 0.0, "expected 7")).reason == WRONG
    assert PUBLIC_REASONS == {CORRECT, PARTIAL, WRONG}


def test_rounds_before_the_end_say_only_the_verdict_and_the_end_says_every_reason(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, max_rounds=3)
    env.reset(seed=0)
    shown = {name: i for i, name in env.worker_map().items()}
    _, _, terminated, _, first = env.step(solo(shown["never"]))
    assert not terminated and first["reason"] == WRONG and not first["correct"] and first["round_reasons"] == []
    _, _, terminated, _, second = env.step(solo(shown["always"]))
    assert not terminated and second["reason"] == CORRECT and second["correct"] and second["round_reasons"] == []
    _, _, terminated, _, last = env.step(KEEP)
    assert terminated and last["reason"] == "kept the previous answer"
    wrong, right, kept = last["round_reasons"]
    assert wrong.startswith("expected ") and right not in PUBLIC_REASONS and kept == right
    env.close()


def test_an_episode_cut_short_or_unparsed_still_ends_with_the_earlier_reasons(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, max_rounds=2)
    env.reset(seed=1)
    shown = {name: i for i, name in env.worker_map().items()}
    env.step(solo(shown["never"]))
    _, _, terminated, truncated, info = env.step(solo(shown["down"]))
    assert truncated and not terminated and info["infra_error"] and [r[:9] for r in info["round_reasons"]] == ["expected "]

    env.reset(seed=1)
    env.step(solo(shown["never"]))
    _, _, terminated, _, info = env.step("no workflow here")
    assert terminated and info["round_reasons"][0].startswith("expected ") and info["round_reasons"][1] == "unparsed workflow: no_lists"
    env.close()
