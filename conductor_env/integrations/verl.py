"""verl: dataset rows for its parquet files and a ``compute_score`` reward function (no extra needed).

verl trains on parquet files of rows (``data_source``, ``prompt``, ``ability``, ``reward_model``,
``extra_info``) and scores each sampled response with a custom reward function. Here a row names
one Conductor episode (problem and episode seed, never the answer), and the reward function
replays the response as that episode's workflow against the worker pool::

    from datasets import Dataset
    from conductor_env.integrations.verl import verl_rows
    Dataset.from_list(verl_rows("Conductor-RG-v0", pool="simulated", limit=512)).to_parquet("train.parquet")  # the train split
    Dataset.from_list(verl_rows("Conductor-RG-v0", pool="simulated", split="validation", limit=64)).to_parquet("validation.parquet")
    # verl: custom_reward_function.path=<this file> custom_reward_function.name=compute_score
    #   (or reward_model.reward_manager=batch with custom_reward_function.name=compute_score_batch)

verl's rollout here is one response per prompt, so an episode is one round: when the env plays
more rounds (``max_rounds > 1``), the later rounds keep the first answer. This module imports
nothing from verl (it needs GPUs); its tests drive the functions directly.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Mapping, Sequence

from conductor_env.event_loop import run_sync
from conductor_env.integrations.text_episode import DEFAULT_ENV_ID, TextEpisode, shared_env, zero_reason
from conductor_env.rows import problem_rows

#: The action that keeps the previous round's answer (plays out rounds verl does not sample).
KEEP = "model_id = []\nsubtasks = []\naccess_list = []"
#: Most extra rounds played to end an episode (the env's own max_rounds ends it sooner).
MAX_EXTRA_ROUNDS = 16


def verl_rows(env_id: str = DEFAULT_ENV_ID, *, limit: int | None = None, seed: int = 0, **kwargs: Any) -> list[dict[str, Any]]:
    """Returns verl dataset rows, one per problem (write them with ``datasets.Dataset.to_parquet``).

    Args:
        env_id: The Conductor gym id (the rows' ``data_source``).
        limit: At most this many problems, spread evenly over the split.
        seed: Row ``i`` plays episode seed ``seed + i``.
        **kwargs: ``gym.make`` arguments (``pool``, ``split``, ``max_rounds``, ...), kept in each row
            (as JSON) so the reward function rebuilds the same env. The split is ``"train"``
            unless named; a test split needs ``allow_test_split=True``, and the suite's opt-ins
            are enforced (:func:`~conductor_env.integrations.text_episode.shared_env`).

    Returns:
        Rows with ``prompt`` (the first round's chat messages), ``reward_model.ground_truth`` (the
        problem id: the answer stays with the env) and ``extra_info`` (the row, its real
        ``split`` and the env's arguments).

    Raises:
        TypeError: For ``split_name`` (rows are labelled with the split they come from).
        TestSplitError, PublicOnlyError: For a split or problems training must not use without an opt-in.
    """
    if "split_name" in kwargs:
        raise TypeError("verl_rows labels each row with the split it comes from; split_name is gone: pass split='validation' (or another split) instead")
    env = shared_env(env_id, **kwargs)
    try:
        rows = problem_rows(env, limit=limit, seed=seed)
    finally:
        env.close()
    env_kwargs = json.dumps(kwargs, sort_keys=True)
    return [
        {
            "data_source": env_id,
            "prompt": row["prompt"],
            "ability": row["domain"],
            "reward_model": {"style": "rule", "ground_truth": row["problem_id"]},
            "extra_info": {"split": row["split"], "index": i, "problem_id": row["problem_id"], "episode_seed": row["episode_seed"], "env_kwargs": env_kwargs},
        }
        for i, row in enumerate(rows)
    ]


def _zero(reason: str) -> dict[str, Any]:
    return {"score": 0.0, "correct": False, "reason": zero_reason(reason)}


async def compute_score_async(data_source: str, solution_str: Any, ground_truth: Any, extra_info: Mapping[str, Any] | None = None, **_: Any) -> dict[str, Any]:
    """Async :func:`compute_score` (verl's reward loop awaits a coroutine function): replays run concurrently."""
    info = extra_info if isinstance(extra_info, Mapping) else {}
    problem_id = info.get("problem_id", ground_truth)
    if problem_id is None or "episode_seed" not in info:
        return _zero("the row's extra_info holds no problem_id and episode_seed (build rows with verl_rows)")
    try:
        kwargs = json.loads(info.get("env_kwargs") or "{}")
        episode = TextEpisode(shared_env(str(data_source or DEFAULT_ENV_ID), **kwargs))
    except Exception as failure:  # noqa: BLE001 - a bad row scores 0 with its reason, never stops training
        return _zero(f"cannot start the row's episode: {type(failure).__name__}: {failure}")
    try:
        try:
            episode.start({"problem_id": problem_id, "episode_seed": info["episode_seed"]})
        except Exception as failure:  # noqa: BLE001 - as above
            return _zero(f"cannot start the row's episode: {type(failure).__name__}: {failure}")
        turn = await episode.astep(solution_str)
        for _round in range(MAX_EXTRA_ROUNDS):
            if turn.done:
                break
            turn = await episode.astep(KEEP)
    finally:
        episode.env.close()
    if not turn.done:
        return _zero(f"the episode did not end within {MAX_EXTRA_ROUNDS} kept rounds")
    # The kept rounds say only that they kept the answer: the kept answer's grader reason (given
    # only now, at the episode's end: the first round's info holds the public verdict) is the one to log.
    reasons = turn.info.get("round_reasons") or []
    reason = reasons[-1] if turn.info.get("reason") == "kept the previous answer" and reasons else turn.info["reason"]
    return {"score": episode.episode_reward, "correct": bool(turn.info.get("correct")), "reason": reason}


def compute_score(data_source: str, solution_str: Any, ground_truth: Any, extra_info: Mapping[str, Any] | None = None, **_: Any) -> dict[str, Any]:
    """verl's custom reward function: replays the response as the row's episode.

    Args:
        data_source: The row's ``data_source`` (the Conductor gym id).
        solution_str: The sampled response: the Conductor's workflow (three lists, or its JSON).
        ground_truth: The row's ``reward_model.ground_truth`` (the problem id).
        extra_info: The row's ``extra_info`` (``problem_id``, ``episode_seed``, ``env_kwargs``).
        **_: verl's ``reward_kwargs`` (unused).

    Returns:
        ``{"score": reward, "correct": bool, "reason": str}``: the env's reward for the episode
        (verl reads ``score``; the rest is logged). A row without an episode, an unknown problem,
        or a response that is not a workflow scores 0.0 with the reason.
    """
    return run_sync(compute_score_async(data_source, solution_str, ground_truth, extra_info))


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[Any], ground_truths: Sequence[Any], extra_infos: Sequence[Mapping[str, Any] | None], **_: Any) -> list[dict[str, Any]]:
    """verl's batch reward function (``reward_model.reward_manager=batch``): all responses replayed concurrently.

    Returns:
        One :func:`compute_score` result per response, in order.
    """

    async def score_all() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(compute_score_async(*row) for row in zip(data_sources, solution_strs, ground_truths, extra_infos, strict=True))))

    return run_sync(score_all())
