"""No gold answer before the end: a two-round episode whose first answer is wrong, on every channel.

A grader's reason quotes what it graded against ("expected \\frac{3}{4}, got ...", a hidden
test's expected output). Shown before the episode ends, a Conductor copies it into its round-2
workflow and is paid. For every suite kind (:data:`gold_channels.KINDS`) and every channel a
policy or its harness reads (the Gymnasium env's observations, ``info`` and chat turns; the
SkyRL-gym env, which is the text episode GEM, verl and verifiers share; TRL's tool returns; the
OpenEnv server's HTTP and WebSocket replies as raw bytes), everything readable before the end is
searched for the gold answer, the hidden tests' expected outputs and the grader's reason. The
final step must still carry the full reason (``info["reason"]``, ``info["round_reasons"]``), and
so must the evaluation records and verl's score.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.baselines import SingleWorker
from conductor_env.agents.episode import PolicyBatcher, play
from conductor_env.chat import chat_turn
from conductor_env.envs import EnvSetup
from conductor_env.evaluation.records import EpisodeSpec, record_of
from conductor_env.event_loop import run_sync
from conductor_env.integrations.text_episode import zero_reason
from conductor_env.verdicts import PUBLIC_REASONS
from integrations.gold_channels import KINDS, SEED, SOLVE, Kind, Prepared, leaks, prepare, strings, wire_text

ACTION = json.dumps(SOLVE)


@dataclass
class Case:
    """One kind's episode: its arguments, what must stay hidden, and its play in the Gymnasium env."""

    prepared: Prepared
    secrets: list[str]
    reason: str
    before: list[str]
    final: dict[str, Any]
    final_reward: float
    first_info: dict[str, Any]

    @property
    def kind(self) -> Kind:
        return self.prepared.kind

    @property
    def kwargs(self) -> dict[str, Any]:
        return self.prepared.kwargs

    @property
    def problem_id(self) -> str:
        return self.prepared.problem_id

    @property
    def row(self) -> dict[str, Any]:
        return self.prepared.row

    def assert_hidden(self, texts: list[str], channel: str) -> None:
        found = leaks(texts, self.secrets)
        assert not found, f"{self.kind.name}/{channel}: gold before the end: {found}"

    def assert_full_reason(self, texts: list[str], channel: str) -> None:
        # The test can fail: the final step's texts do hold what the earlier ones must not.
        assert leaks(texts, self.secrets), f"{self.kind.name}/{channel}: the final step lost the grader's reason"


@pytest.fixture(scope="module", params=KINDS, ids=[kind.name for kind in KINDS])
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Case:
    """Plays the kind's episode in the Gymnasium env (the core channel)."""
    prepared = prepare(request.param, tmp_path_factory.mktemp(f"gold-{request.param.name}"))
    env = EnvSetup.from_id(prepared.kind.env_id, **prepared.kwargs).make()
    try:
        first, reset_info = env.reset(options={"row": prepared.row})
        observation, _, terminated, truncated, info = env.step(ACTION)
        assert not (terminated or truncated) and not info["correct"]
        before = strings([first, reset_info, chat_turn(first), observation, info, chat_turn(observation)])
        _, final_reward, terminated, truncated, final = env.step(ACTION)
    finally:
        env.close()
    assert terminated and not truncated and not final["correct"]
    reason = final["round_reasons"][0]
    played = Case(prepared, prepared.secrets(reason), reason, before, dict(final), final_reward, dict(info))
    assert reason in played.secrets  # the grader's reason is never public text
    return played


def test_gymnasium_env_observations_info_and_chat_turns(case: Case) -> None:
    case.assert_hidden(case.before, "gymnasium")
    assert case.first_info["reason"] in PUBLIC_REASONS and case.first_info["round_reasons"] == []
    final = case.final
    assert final["reason"] == case.reason == final["round_reasons"][1] and len(final["round_reasons"]) == 2
    assert case.reason not in PUBLIC_REASONS
    case.assert_full_reason(strings(final), "gymnasium")


def test_skyrl_text_episode(case: Case) -> None:
    from conductor_env.integrations.skyrl import ConductorSkyRLEnv

    env = ConductorSkyRLEnv(env_config={"env_id": case.kind.env_id, **case.kwargs}, extras=case.row)
    try:
        messages, meta = env.init()
        out = env.step(ACTION)
        case.assert_hidden(strings([messages, meta, out, env.episode.observation]), "skyrl")
        assert not out["done"] and out["metadata"]["reason"] in PUBLIC_REASONS
        last = env.step(ACTION)
    finally:
        env.close()
    assert last["done"] and last["metadata"]["reason"] == zero_reason(case.reason)
    case.assert_full_reason(strings(last), "skyrl")


def test_trl_tool_returns(case: Case) -> None:
    from conductor_env.integrations.trl import conductor_environments, conductor_tool_reward
    from conductor_env.integrations.trl_env import EPISODE_OVER

    environments = conductor_environments(case.kind.env_id, **case.kwargs)
    try:
        tool = environments()
        opening = tool.reset(**case.row)
        reply = asyncio.run(tool.run_workflow(**SOLVE))
        assert reply != EPISODE_OVER
        case.assert_hidden([opening, reply], "trl")
        assert asyncio.run(tool.run_workflow(**SOLVE)) == EPISODE_OVER
        assert conductor_tool_reward(completions=[[{"role": "assistant", "content": ""}]], environments=[tool]) == [case.final_reward]
        assert tool._outcome()[1]["round_reasons"] == [case.reason, case.reason]
    finally:
        environments.close()


def test_records_keep_every_rounds_reason(case: Case) -> None:
    env = EnvSetup.from_id(case.kind.env_id, **case.kwargs).make()
    try:
        played = run_sync(play(env, PolicyBatcher(SingleWorker(0)), seed=SEED, reset_options={"problem_id": case.problem_id}))
    finally:
        env.close()
    assert played.finished and len(played.rounds) == 2
    first = played.rounds[0].info
    assert first["reason"] in PUBLIC_REASONS  # what the round's own step said
    record = record_of(played, EpisodeSpec("single:0", 0, case.problem_id, 0, SEED), env_id=case.kind.env_id, pool="wrong", wall_s=0.0)
    assert record["earlier_rounds"][0]["reason"] == case.reason and record["reason"] == case.reason


def test_verl_score_gives_the_kept_rounds_reason(case: Case) -> None:
    from conductor_env.integrations.verl import compute_score

    extra = {**case.row, "env_kwargs": json.dumps(case.kwargs)}
    scored = compute_score(case.kind.env_id, ACTION, case.problem_id, extra)
    assert scored["correct"] is False and scored["reason"] == zero_reason(case.reason)


class LoopbackOpenEnv:
    """The package's OpenEnv app (OpenEnv's FastAPI server) served by uvicorn on a loopback port."""

    def __init__(self, setup: EnvSetup) -> None:
        import uvicorn

        from conductor_env.integrations.openenv.server import MAX_BODY_BYTES, create_conductor_app
        from servers.transformers_serve import free_port

        self.port = free_port()
        app = create_conductor_app(setup, max_sessions=4)
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", ws_max_size=MAX_BODY_BYTES))
        self.thread = threading.Thread(target=self.server.run, name="openenv-gold", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the OpenEnv server did not start"
            time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def openenv(case: Case):
    served = LoopbackOpenEnv(EnvSetup.from_id(case.kind.env_id, **case.kwargs))
    yield served
    served.stop()


def test_openenv_http_replies(case: Case, openenv: LoopbackOpenEnv) -> None:
    with httpx.Client(base_url=openenv.url, timeout=120) as http:
        reset = http.post("/reset", json={"seed": SEED, "problem_id": case.problem_id})
        step = http.post("/step", json={"action": {**SOLVE, "row": case.row}})
        state = http.get("/state")
    assert reset.status_code == step.status_code == 200, step.text
    case.assert_hidden([text for response in (reset, step, state) for text in wire_text(response.content)], "openenv-http")
    body = step.json()
    assert body["done"] is False and body["observation"]["info"]["reason"] in PUBLIC_REASONS


async def test_openenv_websocket_frames(case: Case, openenv: LoopbackOpenEnv) -> None:
    import websockets

    frames: list[str | bytes] = []
    async with websockets.connect(f"ws://127.0.0.1:{openenv.port}/ws", max_size=None) as ws:
        for message in ({"type": "reset", "data": {"row": case.row}}, {"type": "step", "data": SOLVE}, {"type": "state"}):
            await ws.send(json.dumps(message))
            frames.append(await asyncio.wait_for(ws.recv(), 120))
        case.assert_hidden([text for frame in frames for text in wire_text(frame)], "openenv-websocket")
        middle = json.loads(frames[1])["data"]
        assert middle["done"] is False and middle["observation"]["info"]["reason"] in PUBLIC_REASONS
        await ws.send(json.dumps({"type": "step", "data": SOLVE}))
        last = json.loads(await asyncio.wait_for(ws.recv(), 120))["data"]
    info = last["observation"]["info"]
    assert last["done"] is True and info["reason"] == case.reason and info["round_reasons"] == [case.reason, case.reason]
    case.assert_full_reason(strings(last), "openenv-websocket")
