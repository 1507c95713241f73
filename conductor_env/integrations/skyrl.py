"""SkyRL-gym: the Conductor env as a text-in, text-out ``BaseTextEnv`` (the ``skyrl`` extra).

SkyRL-train builds one env per trajectory with ``skyrl_gym.make(env_class, env_config=...,
extras=row)``, calls ``init(prompt)`` and then ``step(model_output)`` until ``done``, each call on
its thread pool (SkyRL-gym's API is synchronous). This module registers the env as
``"conductor"``; the dataset rows come from :func:`skyrl_rows`::

    from conductor_env.integrations.skyrl import skyrl_rows   # registers "conductor"
    rows = skyrl_rows("Conductor-RG-v0", pool="simulated", max_rounds=2, limit=64)
    # SkyRL-train: environment.env_class=conductor, environment.skyrl_gym.conductor.max_rounds=2

The env's ``env_config`` holds ``env_id`` and any ``gym.make`` argument (``pool``, ``max_rounds``,
...); envs of one config share one suite and one worker pool per process. Rows and envs read the
``train`` split unless another is named (a test split also needs ``allow_test_split: true``).
"""

from __future__ import annotations

from typing import Any, Mapping

from conductor_env.integrations.text_episode import DEFAULT_ENV_ID, TextEpisode, shared_env
from conductor_env.rows import problem_rows, row_split

try:
    from omegaconf import DictConfig, OmegaConf
    from skyrl_gym import register
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
    from skyrl_gym.envs.registration import registry
except ImportError as missing:  # pragma: no cover - depends on the installed extras
    raise ImportError("conductor_env.integrations.skyrl needs SkyRL-gym: pip install 'conductor-env[skyrl]'") from missing

#: The ``env_class`` SkyRL-train names the env by.
ENV_CLASS = "conductor"
#: The keys of ``env_config`` that are not ``gym.make`` arguments.
_NOT_ENV_KWARGS = {"env_class", "env_id", "rewards"}


def _plain(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    if isinstance(config, DictConfig):
        return dict(OmegaConf.to_container(config, resolve=True))  # type: ignore[arg-type]
    return dict(config)


def _row(extras: Mapping[str, Any]) -> dict[str, Any] | None:
    """The row an env's ``extras`` name: its own keys, or its ``extra_info`` (SkyRL's data layout)."""
    for place in (extras, extras.get("extra_info") or {}):
        if isinstance(place, Mapping) and "problem_id" in place and "episode_seed" in place:
            return {"problem_id": place["problem_id"], "episode_seed": place["episode_seed"]}
    return None


class ConductorSkyRLEnv(BaseTextEnv):
    """One Conductor episode per trajectory, rounds as turns (SkyRL-gym's ``BaseTextEnv``).

    Args:
        env_config: ``env_id`` (default ``"Conductor-RG-v0"``), ``rewards`` (``"final"``, the
            default: the episode's reward on its last turn and 0.0 before, so SkyRL's sum over
            turns is the episode's reward; ``"round"``: each round's own) and ``gym.make`` arguments.
        extras: The dataset row's extra columns: ``problem_id`` and ``episode_seed`` (top level or
            in ``extra_info``); without them the episode is drawn from ``extras["seed"]``.
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = _plain(env_config)
        kwargs = {key: value for key, value in config.items() if key not in _NOT_ENV_KWARGS}
        self.extras = dict(extras or {})
        self.episode = TextEpisode(shared_env(str(config.get("env_id") or DEFAULT_ENV_ID), **kwargs), rewards=str(config.get("rewards", "final")))
        self.max_turns = self.episode.env.options.max_rounds

    def init(self, prompt: list[dict[str, str]] | None = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Resets to the row's episode and returns its first chat messages.

        Args:
            prompt: The dataset's prompt; the episode's own first messages are returned, so a
                stale prompt column cannot disagree with the episode being played.

        Returns:
            The prompt messages and metadata (``problem_id``, the ``row``, and the ``split`` played).
        """
        row = _row(self.extras)
        messages = self.episode.start(row, seed=None if row else self.extras.get("seed"))
        return messages, {"problem_id": self.episode.problem_id, "row": row, "split": row_split(self.episode.env)}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Plays the model's output as the round's workflow.

        Returns:
            The new chat messages (empty when done), the reward (see ``rewards``), ``done``, and
            metadata with the round's own ``round_reward``, the env's ``reason`` (why a hostile or broken action scored 0), ``score`` and
            ``answer``.
        """
        self.turns += 1
        turn = self.episode.step(action)
        info = turn.info
        metadata = {
            "reason": info["reason"],
            "round_reward": info.get("round_reward", 0.0),
            "score": info.get("score"),
            "answer": info.get("answer"),
            "parse_error": info.get("parse_error", ""),
            "round": self.episode.rounds,
        }
        return BaseTextEnvStepOutput(observations=turn.messages, reward=turn.reward, done=turn.done, metadata=metadata, postprocessed_action=None)

    def get_metrics(self) -> dict[str, Any]:
        """The episode's rounds and return, averaged by SkyRL over episodes."""
        return {"rounds": self.episode.rounds, "episode_reward": self.episode.episode_reward}

    def close(self) -> None:
        """Closes this trajectory's env (the shared suite and pool stay open)."""
        self.episode.env.close()


def register_env(env_class: str = ENV_CLASS) -> None:
    """Registers :class:`ConductorSkyRLEnv` with SkyRL-gym under ``env_class`` (once; importing this module does it)."""
    if env_class not in registry:
        register(id=env_class, entry_point=f"{__name__}:ConductorSkyRLEnv")


def skyrl_rows(env_id: str = DEFAULT_ENV_ID, *, limit: int | None = None, seed: int = 0, **kwargs: Any) -> list[dict[str, Any]]:
    """Returns SkyRL-train dataset rows: ``prompt``, ``env_class``, ``data_source`` and ``extra_info`` (the row).

    Args:
        env_id: The Conductor gym id.
        limit: At most this many problems, spread evenly over the split.
        seed: Row ``i`` plays episode seed ``seed + i``.
        **kwargs: ``gym.make`` arguments (``pool``, ``split``, ``max_rounds``, ...). The split is
            ``"train"`` unless named; a test split needs ``allow_test_split=True`` (give the env's
            ``env_config`` the same), and the suite's opt-ins are enforced
            (:func:`~conductor_env.integrations.text_episode.shared_env`).

    Returns:
        One row per problem; ``extra_info`` holds ``problem_id``, ``episode_seed``, ``split`` (the
        split the row comes from) and ``domain``.

    Raises:
        TestSplitError, PublicOnlyError: For a split or problems training must not use without an opt-in.
    """
    env = shared_env(env_id, **kwargs)
    try:
        rows = problem_rows(env, limit=limit, seed=seed)
    finally:
        env.close()
    return [{"prompt": row["prompt"], "env_class": ENV_CLASS, "data_source": env_id, "extra_info": {key: row[key] for key in ("problem_id", "episode_seed", "split", "domain")}} for row in rows]


register_env()
