"""The typed OpenEnv client of a Conductor env server.

Each client holds one WebSocket session (its own env on the server)::

    from conductor_env.integrations.openenv import ConductorAction, ConductorEnvClient

    with ConductorEnvClient(base_url="http://127.0.0.1:8000").sync() as client:
        result = client.reset(seed=3)
        messages = result.observation.messages          # the chat turn for the Conductor model
        result = client.step(ConductorAction(workflow=completion_text))
        result.reward, result.done, result.observation.info.correct
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from conductor_env.integrations.openenv.models import ConductorAction, ConductorObservation, ConductorState

__all__ = ["ConductorEnvClient"]


class ConductorEnvClient(EnvClient[ConductorAction, ConductorObservation, ConductorState]):
    """OpenEnv's ``EnvClient`` for :class:`~conductor_env.integrations.openenv.models.ConductorAction`.

    ``reset`` takes ``seed``, ``row`` (``{"problem_id", "episode_seed"}``), ``problem_id``,
    ``problem_index`` and ``worker_draw``; ``step`` takes a :class:`ConductorAction`.
    """

    def _step_payload(self, action: ConductorAction) -> dict[str, Any]:
        return action.model_dump(mode="json", exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ConductorObservation]:
        fields = dict(payload.get("observation") or {})
        fields.update(reward=payload.get("reward"), done=bool(payload.get("done", False)))
        observation = ConductorObservation.model_validate(fields)
        return StepResult(observation=observation, reward=observation.reward, done=observation.done, metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> ConductorState:
        return ConductorState.model_validate(payload)
