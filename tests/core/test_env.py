"""ConductorEnv: the Gymnasium contract, rewards, rounds, self-calls, sub-pools, infra errors."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.calls import RetryPolicy
from conductor_env.env import ConductorEnv
from conductor_env.envs import EnvSetup
from conductor_env.tasks.suites.procedural import ReasoningGymSuite
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

INFO_FIELDS = {
    "answer",
    "correct",
    "score",
    "reason",
    "parse_error",
    "parse_detail",
    "workflow",
    "trace",
    "cost_usd",
    "tokens",
    "infra_error",
    "problem_id",
    "domain",
    "round",
    "round_rewards",
    "round_credit",
    "frames",
    "worker_map",
    "wall_s",
}
TRACE_FIELDS = {"index", "worker", "worker_name", "subtask", "visible", "response", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s", "start_s", "end_s", "attempts", "error"}


def workflow(*steps: tuple[int, str, str]) -> str:
    ids = ", ".join(str(w) for w, _, _ in steps)
    subtasks = ", ".join(repr(s) for _, s, _ in steps)
    access = ", ".join(a for _, _, a in steps)
    return f"model_id = [{ids}]\nsubtasks = [{subtasks}]\naccess_list = [{access}]"


def sure_pool(fail_rate: float = 0.0) -> WorkerPool:
    """Worker 0 always right, worker 1 always wrong, worker 2 flaky (fail_rate)."""
    return WorkerPool(
        [
            WorkerSpec("always", "simulated", price_in_per_m=1.0, price_out_per_m=2.0, options={"skill": 1.0}),
            WorkerSpec("never", "simulated", price_in_per_m=1.0, price_out_per_m=2.0, options={"skill": 0.0}),
            WorkerSpec("flaky", "simulated", options={"skill": 1.0, "fail_rate": fail_rate}),
        ],
        name="sure",
    )


@pytest.fixture(scope="module")
def suite() -> ReasoningGymSuite:
    return ReasoningGymSuite(["basic_arithmetic", "word_sorting"], size=5)


def make_env(suite: ReasoningGymSuite, **kwargs) -> ConductorEnv:
    kwargs.setdefault("pool", sure_pool())
    kwargs.setdefault("retry", RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.002))
    return EnvSetup.from_kwargs(suite=suite, **kwargs).make()


def test_check_env_on_registered_id() -> None:
    env = gym.make("Conductor-RG-v0", pool="simulated")
    check_env(env.unwrapped)
    env.close()


def test_reset_is_seeded_and_problem_can_be_chosen(suite: ReasoningGymSuite) -> None:
    env = make_env(suite)
    first, _ = env.reset(seed=7)
    again, _ = env.reset(seed=7)
    assert first == again
    observation, info = env.reset(seed=1, options={"problem_id": "word_sorting/test/3"})
    assert info["problem_id"] == "word_sorting/test/3"
    assert observation["question"] in observation["prompt"]
    assert "Model id 0" in observation["workers"] and "always" not in observation["prompt"]
    with pytest.raises(KeyError, match="no problem with id"):
        env.reset(options={"problem_id": "nope"})


@pytest.mark.parametrize(
    ("reward", "right", "wrong"),
    [("paper", 1.0, 0.5), ("paper_code", 1.5, 0.5), ("correctness", 1.0, 0.0)],
)
def test_reward_schemes(suite: ReasoningGymSuite, reward: str, right: float, wrong: float) -> None:
    env = make_env(suite, reward=reward)
    env.reset(seed=0)
    _, r, terminated, truncated, info = env.step(workflow((0, "Solve it", "[]")))
    assert (r, terminated, truncated, info["correct"]) == (right, True, False, True)
    env.reset(seed=0)
    assert env.step(workflow((1, "Solve it", "[]")))[1] == wrong
    env.reset(seed=0)
    _, r, terminated, _, info = env.step("I refuse to write lists")
    assert (r, terminated, info["parse_error"]) == (0.0, True, "no_lists")
    assert INFO_FIELDS <= set(info)


def test_cost_aware_reward_subtracts_spend(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, reward="cost_aware", price_weight=100.0)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(workflow((0, "Solve it", "[]")))
    assert info["cost_usd"] > 0
    assert reward == pytest.approx(1.0 - 100.0 * info["cost_usd"])


def test_cost_aware_rounds_charge_the_whole_episode_spend(suite: ReasoningGymSuite) -> None:
    """Hostile: buy the answer in round 1, then keep it (or revise it) in round 2 to drop the bill."""
    env = make_env(suite, reward="cost_aware", price_weight=100.0, max_rounds=2)
    env.reset(seed=0)
    _, first, _, _, info = env.step(workflow((0, "Solve it", "[]"), (0, "Check it", '"all"')))
    spent = info["cost_usd"]
    assert spent > 0 and first == pytest.approx(1.0 - 100.0 * spent)
    _, kept, terminated, _, info = env.step("model_id = []\nsubtasks = []\naccess_list = []")
    assert terminated and info["reason"] == "kept the previous answer"
    assert kept == pytest.approx(first)  # keeping an answer does not refund what it cost
    assert info["round_rewards"] == pytest.approx([first, first])

    env.reset(seed=0)
    env.step(workflow((0, "Solve it", "[]"), (0, "Check it", '"all"')))
    _, revised, _, _, info = env.step(workflow((0, "Answer again", "[]")))
    assert info["correct"] and revised == pytest.approx(1.0 - 100.0 * (spent + info["cost_usd"]))
    credit = info["round_credit"][0]
    assert credit == pytest.approx(0.75 * first + 0.25 * revised) and credit < first


def test_info_and_trace_of_a_full_episode(suite: ReasoningGymSuite) -> None:
    env = make_env(suite)
    env.reset(seed=3)
    _, _, _, _, info = env.step(workflow((1, "Draft", "[]"), (0, "Fix the draft", '"all"')))
    assert INFO_FIELDS <= set(info)
    assert len(info["trace"]) == 2 and all(TRACE_FIELDS <= set(t) for t in info["trace"])
    assert info["trace"][1]["visible"] == [0]
    assert info["trace"][0]["worker_name"] == "never" and info["correct"]
    assert info["cost_usd"] == pytest.approx(sum(t["cost_usd"] for t in info["trace"]))
    assert info["tokens"] == sum(t["prompt_tokens"] + t["completion_tokens"] for t in info["trace"])
    # the second worker saw the first one's response in its message
    assert info["trace"][1]["prompt_tokens"] > info["trace"][0]["prompt_tokens"]


def test_rounds_keep_answer_and_credit_earlier_round(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, max_rounds=3)
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step(workflow((1, "Solve", "[]")))
    assert (reward, terminated, info["correct"]) == (0.5, False, False)
    assert observation["round"] == 1 and "Round 1 answer" in observation["history"]
    observation, reward, terminated, _, info = env.step(workflow((0, "Improve the answer", '"all"')))
    assert (reward, terminated, info["correct"]) == (1.0, False, True)
    # round 2's step 0 with "all" saw round 1's steps
    assert info["trace"][0]["prompt_tokens"] > 60
    _, reward, terminated, _, info = env.step("model_id = []\nsubtasks = []\naccess_list = []")
    assert (reward, terminated, info["correct"]) == (1.0, True, True)
    assert info["round_rewards"] == [0.5, 1.0, 1.0]
    d1, d2 = 0.25, 0.25**2
    second = (1 - d2) * 1.0 + d2 * 1.0
    assert info["round_credit"] == pytest.approx([(1 - d1) * 0.5 + d1 * second, second, 1.0])
    with pytest.raises(RuntimeError, match="reset"):
        env.step("anything")


def test_empty_lists_are_a_parse_error_in_the_first_round(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, max_rounds=2)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("model_id = []\nsubtasks = []\naccess_list = []")
    assert (reward, terminated, info["parse_error"]) == (0.0, True, "empty")


def test_self_call_opens_a_frame(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, self_call=True, max_depth=1)
    observation, info = env.reset(seed=0)
    assert "Model id 3: yourself" in observation["workers"] and info["worker_map"][3] == "conductor"
    observation, reward, terminated, _, info = env.step(workflow((3, "Solve the task via a sub-team", "[]")))
    assert (observation["depth"], reward, terminated) == (1, 0.0, False)
    assert "yourself" not in observation["workers"]  # depth limit reached inside the frame
    assert "Solve the task via a sub-team" in observation["question"]
    _, reward, terminated, _, info = env.step(workflow((0, "Solve", "[]")))
    assert (reward, terminated, info["correct"]) == (1.0, True, True)
    assert info["frames"][0]["depth"] == 1 and info["trace"][0]["worker_name"] == "conductor"


def test_bad_sub_workflow_ends_with_parse_error(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, self_call=True)
    env.reset(seed=0)
    env.step(workflow((3, "Delegate", "[]"), (0, "Answer", '"all"')))
    _, reward, terminated, _, info = env.step(workflow((3, "Recurse again", "[]")))
    assert (reward, terminated, info["parse_error"]) == (0.0, True, "bad_worker_id")
    assert "self-call frame" in info["parse_detail"]


def test_random_subpools_renumber_and_hide_names(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, subpool_size=(1, 2))
    seen = set()
    for seed in range(20):
        observation, info = env.reset(seed=seed)
        shown = observation["workers"].splitlines()
        assert shown == [f"Model id {i}" for i in range(len(shown))] and 1 <= len(shown) <= 2
        seen.add(tuple(info["worker_map"].values()))
    assert len(seen) > 3
    named = make_env(suite, show_names=True)
    assert "always" in named.reset(seed=0)[0]["workers"]


def test_dead_worker_gives_infra_error_not_zero(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, pool=sure_pool(fail_rate=1.0))
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(workflow((0, "Solve", "[]"), (2, "Check", '"all"')))
    assert (terminated, truncated) == (False, True)
    assert info["infra_error"] and "step 1" in info["infra_error"] and "3 attempt" in info["infra_error"]
    assert info["trace"][1]["attempts"] == 3 and info["trace"][1]["error"]
    assert reward == 0.0 and info["parse_error"] == ""


def test_transient_failures_are_retried(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, pool=sure_pool(fail_rate=0.5), retry=RetryPolicy(max_attempts=30, base_delay_s=0.001, max_delay_s=0.001))
    attempts = []
    for seed in range(10):
        env.reset(seed=seed)
        _, _, _, truncated, info = env.step(workflow((2, "Solve", "[]")))
        assert not truncated and info["correct"]
        attempts.append(info["trace"][0]["attempts"])
    assert max(attempts) > 1


def test_prompt_examples_are_out_of_domain(suite: ReasoningGymSuite) -> None:
    env = make_env(suite)
    observation, info = env.reset(seed=0, options={"problem_id": "basic_arithmetic/test/0"})
    assert info["domain"] == "math"
    assert "divisible by 13" not in observation["prompt"]  # the math example is left out
    assert "longest strictly increasing" in observation["prompt"]


def test_render_ansi(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, render_mode="ansi")
    observation, _ = env.reset(seed=0)
    assert env.render() == observation["prompt"]


class BrokenGrader(ReasoningGymSuite):
    """A suite whose grader fails the way a dead sandbox does."""

    def verify(self, problem, answer):
        from conductor_env.suite import VerifierError

        raise VerifierError("sandbox error: container vanished")


def test_verifier_failure_is_an_infra_error_not_a_wrong_answer() -> None:
    env = make_env(BrokenGrader(["basic_arithmetic"], size=2))
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(workflow((0, "Solve", "[]")))
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["infra_error"] == "sandbox error: container vanished" and not info["correct"]


class CrashingGrader(ReasoningGymSuite):
    """A suite whose grader raises on what the answer holds (a comparison that blows up)."""

    def verify(self, problem, answer):
        from decimal import Decimal

        return Decimal("sNaN") == Decimal(1)  # raises InvalidOperation, as on a program's output


def test_a_grader_that_raises_on_the_answer_scores_it_wrong() -> None:
    """Crashing the grader is no escape from a wrong-answer reward: only VerifierError is infra."""
    env = make_env(CrashingGrader(["basic_arithmetic"], size=2))
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(workflow((0, "Solve", "[]")))
    assert (reward, terminated, truncated) == (0.5, True, False)  # parsed, wrong (paper reward)
    assert not info["infra_error"] and not info["correct"]
    assert "could not be graded" in info["reason"] and "InvalidOperation" in info["reason"]


def test_self_call_episode_ends_on_the_top_level_observation(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, self_call=True)
    first, _ = env.reset(seed=0)
    frame, _, _, _, info = env.step(workflow((3, "Delegate", "[]")))
    assert frame["depth"] == 1 and info["frame_depth"] == 1 and set(info) == INFO_FIELDS | {"test_set", "frame_depth", "round_reasons"}
    last, _, terminated, _, info = env.step(workflow((0, "Solve", "[]")))
    assert terminated and last == first and info["frame_depth"] == 0
    assert env.observation_space.contains(last)


def test_problem_index_out_of_range_names_the_range(suite: ReasoningGymSuite) -> None:
    env = make_env(suite)
    count = len(env.problems)
    assert env.reset(options={"problem_index": count - 1})[1]["problem_id"] == env.problems[-1].id
    for index in (count, -1):
        with pytest.raises(IndexError, match=f"problems 0 to {count - 1}"):
            env.reset(options={"problem_index": index})
    with pytest.raises(TypeError, match="must be an int"):
        env.reset(options={"problem_index": 1.5})


def test_observations_fit_their_spaces_however_long_the_texts(suite: ReasoningGymSuite) -> None:
    env = make_env(suite, max_rounds=2, self_call=True, max_question_bytes=2000)
    env.reset(seed=0)
    observation, *_ = env.step(workflow((3, "Delegate: " + "é" * 5000, "[]")))
    assert observation["depth"] == 1 and "bytes cut" in observation["question"]  # quotes the long subtask
    assert env.observation_space.contains(observation)
    observation, _, terminated, _, _ = env.step(workflow((0, "Solve " + "→" * 9000, "[]")))
    assert not terminated and observation["round"] == 1
    assert "bytes cut" in observation["history"] and env.observation_space.contains(observation)
    with pytest.raises(ValueError, match="max_question_bytes=20"):
        make_env(suite, max_question_bytes=20).reset(seed=0)
