"""verifiers (v1, the taskset API): a Conductor taskset and the env that plays its rounds (the ``verifiers`` extra).

The environment package ``environments/conductor_env_vf`` exports these classes, so ``vf-eval
conductor-env-vf`` runs them. A task is one row of :func:`conductor_env.rows.problem_rows` (problem
and episode seed); the env's ``run`` opens the Conductor's conversation, plays each reply as the
round's workflow (three lists or their JSON), sends the next round's new information only (the
previous answer and what to do with it) as the next user turn, and records the episode's reward
(its last round's, as the package's evaluation counts it) as the ``conductor_reward`` reward.
The Conductor's seat runs verifiers' tool-less ``null`` harness in the ``subprocess`` runtime.

verifiers 0.4 pins ``openai<3``; ``make test`` gives it its own virtualenv (``.venv-verifiers``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from conductor_env.integrations.text_episode import DEFAULT_ENV_ID, TextEpisode, shared_env
from conductor_env.rows import problem_rows

try:
    import verifiers.v1 as vf
except ImportError as missing:  # pragma: no cover - depends on the installed extras
    raise ImportError("conductor_env.integrations.verifiers needs verifiers 0.4: pip install 'conductor-env[verifiers]' (in its own virtualenv: it pins openai<3)") from missing

#: The reward name on each trace (the rubric: the env's own reward, weight 1).
REWARD = "conductor_reward"


class ConductorData(vf.TaskData):
    """One row: the Conductor's first messages and ``info`` (``problem_id``, ``episode_seed``, ``split``, ``domain``)."""

    info: dict[str, Any]


class ConductorTask(vf.Task[ConductorData]):
    """A Conductor episode; its reward is recorded by :class:`ConductorVfEnv`."""


class ConductorTasksetConfig(vf.TasksetConfig):
    """Which episodes: ``--env.taskset.<field>`` on the command line, ``[env.taskset]`` in a TOML."""

    env_id: str = DEFAULT_ENV_ID
    """The Conductor gym id."""
    pool: str = "simulated"
    """The worker pool: a preset name or a ``.toml`` path."""
    max_rounds: int = 1
    """Rounds per episode (each a turn of the conversation)."""
    split: str | None = None
    """The problem split (``None``: ``train``; a test split also needs ``allow_test_split``)."""
    allow_test_split: bool = False
    """Allow a test split named in ``split`` (tasks on it are trained on; warns once)."""
    limit: int | None = None
    """At most this many problems, spread evenly over the split (``None``: all)."""
    seed: int = 0
    """Row ``i`` plays episode seed ``seed + i``."""
    env_options: dict[str, Any] = {}
    """Any other env option by name (``reward``, ``subpool_size``, ...)."""

    def make_kwargs(self) -> dict[str, Any]:
        """The ``gym.make`` arguments these fields stand for."""
        kwargs = {"pool": self.pool, "max_rounds": self.max_rounds, **self.env_options}
        if self.allow_test_split:
            kwargs["allow_test_split"] = True
        return kwargs if self.split is None else {**kwargs, "split": self.split}


class ConductorTaskset(vf.Taskset[ConductorTask, ConductorTasksetConfig]):
    """The rows of a Conductor env's split as verifiers tasks."""

    def load(self) -> Iterator[ConductorTask]:
        """Yields one task per row, its prompt the first round's chat messages (``info`` names the row's ``split``).

        The taskset is for training (:func:`~conductor_env.integrations.text_episode.shared_env`):
        the ``train`` split unless named, and the suite's opt-ins enforced.
        """
        config = self.config
        env = shared_env(config.env_id, **config.make_kwargs())
        try:
            rows = problem_rows(env, limit=config.limit, seed=config.seed)
        finally:
            env.close()
        for row in rows:
            system = "\n\n".join(m["content"] for m in row["prompt"] if m["role"] == "system") or None
            prompt = "\n\n".join(m["content"] for m in row["prompt"] if m["role"] != "system")
            info = {key: row[key] for key in ("problem_id", "episode_seed", "split", "domain")}
            yield ConductorTask(ConductorData(id=row["problem_id"], name=row["problem_id"], prompt=prompt, system_prompt=system, info=info), config.task)


class ConductorVfEnvConfig(vf.EnvConfig):
    """The Conductor's seat: verifiers' tool-less chat harness, run as a local subprocess."""

    conductor: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig())


class ConductorVfEnv(vf.Env[ConductorVfEnvConfig]):
    """Plays a task's episode: each Conductor reply is a round's workflow, each later round a user turn."""

    async def run(self, task: Any, agents: Any) -> None:
        """Plays the episode; records its reward, the ``rounds`` metric and ``trace.info["conductor"]``
        (``reasons``: each round's verdict, e.g. why a reply that is no workflow scored 0)."""
        config = self.taskset.config
        episode = TextEpisode(shared_env(config.env_id, **config.make_kwargs()))
        info = task.data.info
        try:
            episode.start({"problem_id": info["problem_id"], "episode_seed": info["episode_seed"]})
            async with agents.conductor.interaction(task) as interaction:
                reasons = await self._play(episode, interaction)
                # Recorded inside the exchange: leaving it finishes the rollout and scores it.
                trace = interaction.trace
                trace.record_reward(REWARD, episode.episode_reward if episode.done else 0.0, 1.0)
                trace.record_metric("rounds", float(episode.rounds))
                trace.info["conductor"] = {"problem_id": info["problem_id"], "rounds": episode.rounds, "reasons": reasons, "finished": episode.done}
        finally:
            episode.env.close()

    @staticmethod
    async def _play(episode: TextEpisode, interaction: Any) -> list[str]:
        """Plays replies as rounds until the episode or the exchange ends; returns each round's reason
        (the grader's, which the env gives when the episode ends; a round of an unfinished episode
        has only its public verdict)."""
        reasons: list[str] = []
        segment = await interaction.turn()
        while not segment.terminated:
            turn = await episode.astep(segment.last_reply)
            reasons.append(turn.info["reason"])
            if turn.done:
                return list(turn.info.get("round_reasons") or reasons)
            segment = await interaction.turn(turn.messages[-1]["content"])
        return reasons


def load_environment(**taskset_fields: Any) -> ConductorVfEnv:
    """Builds the env in Python (``vf-eval`` builds it from its id instead).

    Args:
        **taskset_fields: :class:`ConductorTasksetConfig` fields (``max_rounds=2``, ``limit=8``, ...).

    Returns:
        The env over the ``conductor-env-vf`` taskset.
    """
    taskset = ConductorTasksetConfig(id="conductor-env-vf", **taskset_fields)
    return ConductorVfEnv(ConductorVfEnvConfig(taskset=taskset))
