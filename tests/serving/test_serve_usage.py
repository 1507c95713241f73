"""A served system whose Conductor calls a model: usage adds its tokens to the workers'; failures are 5xx with reasons.

The app runs in a real uvicorn server on a loopback port, in a thread, so the test can hand it a
policy object; requests go through the real ``openai`` client.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Iterator, Sequence

import openai
import pytest
import uvicorn

from conductor_env.agents.base import ActionUsage, Observation, Policy
from conductor_env.agents.baselines import SingleWorker
from conductor_env.options import EnvOptions
from conductor_env.serving import UNGRADED_RESPONSE, ServedSystem, build_app
from conductor_env.workers.pool import load_pool
from servers.conductor_serve import write_pool

PRICE_PER_CALL = 0.001
CONDUCTOR_USD = 0.01


class MeteredConductor(Policy):
    """Writes single-worker workflows and bills each as a model call would: prompt words read, action words written."""

    name = "metered"

    def __init__(self) -> None:
        self.inner = SingleWorker(0)
        self.billed: list[ActionUsage] = []

    async def aact(self, observations: Sequence[Observation]) -> list[str]:
        return await self.inner.aact(observations)

    async def aact_with_usage(self, observations: Sequence[Observation]) -> list[tuple[str, ActionUsage | None]]:
        actions = await self.aact(observations)
        usages = [ActionUsage(len(o["prompt"].split()), len(a.split()), CONDUCTOR_USD) for o, a in zip(observations, actions)]
        self.billed.extend(usages)
        return list(zip(actions, usages))


class Broken(Policy):
    """A Conductor whose model call fails."""

    name = "broken"

    async def aact(self, observations: Sequence[Observation]) -> list[str]:
        raise ConnectionError("the Conductor's model server went away")


class Rambling(Policy):
    """A Conductor that writes no workflow at all."""

    name = "rambling"

    async def aact(self, observations: Sequence[Observation]) -> list[str]:
        return ["I would rather chat about the weather." for _ in observations]


@contextlib.contextmanager
def serve_in_thread(system: ServedSystem, **limits) -> Iterator[str]:
    """Serves ``system`` with uvicorn on a free loopback port; yields the base URL."""
    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as conductor-env serve's socket (small responses need no delayed ACK)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(build_app(system, **limits), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    started = threading.Event()
    while not server.started and thread.is_alive():
        started.wait(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


@pytest.fixture
def served(tmp_path):
    def start(policy: Policy, pool_file=None, limits=None, **options):
        pool = load_pool(str(pool_file or write_pool(tmp_path, price_per_call=PRICE_PER_CALL)))
        return serve_in_thread(ServedSystem(policy, pool, options=EnvOptions.from_mapping(options)), **(limits or {}))

    return start


def ask(base_url: str, question: str = "What is 12 + 30?"):
    with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=60) as client:
        return client.chat.completions.create(model="conductor", messages=[{"role": "user", "content": question}])


def test_usage_sums_the_conductors_tokens_over_both_rounds_and_the_workers(served):
    policy = MeteredConductor()
    with served(policy, max_rounds=2) as base_url:
        response = ask(base_url)
    assert len(policy.billed) == 2  # one action per round
    usage = response.usage.model_dump()
    conductor = usage["conductor"]
    assert conductor["prompt_tokens"] == sum(u.prompt_tokens for u in policy.billed)
    assert conductor["completion_tokens"] == sum(u.completion_tokens for u in policy.billed)
    assert conductor["cost_usd"] == pytest.approx(2 * CONDUCTOR_USD)
    assert usage["workers"]["cost_usd"] == pytest.approx(2 * PRICE_PER_CALL)  # one worker call per round
    assert usage["workers"]["completion_tokens"] == 2 * len(UNGRADED_RESPONSE.split())
    for field in ("prompt_tokens", "completion_tokens", "total_tokens"):
        assert usage[field] == usage["workers"][field] + conductor[field]
    assert usage["cost_usd"] == pytest.approx(2 * CONDUCTOR_USD + 2 * PRICE_PER_CALL)
    assert response.model_extra["conductor"]["rounds"] == 2


def test_a_failing_conductor_is_500_with_the_reason(served):
    with served(Broken()) as base_url, pytest.raises(openai.InternalServerError) as caught:
        ask(base_url)
    assert caught.value.status_code == 500 and caught.value.code == "policy_failure"
    assert "model server went away" in caught.value.message


def test_a_worker_that_keeps_failing_is_503_with_the_reason(served, tmp_path):
    pool = write_pool(tmp_path, workers=1)
    pool.write_text(pool.read_text(encoding="utf-8").replace("skill = 0.5", "skill = 0.5\nfail_rate = 1.0"), encoding="utf-8")
    with served(SingleWorker(0), pool, retry={"max_attempts": 2, "base_delay_s": 0.0, "jitter": 0.0}) as base_url, pytest.raises(openai.InternalServerError) as caught:
        ask(base_url)
    assert caught.value.status_code == 503 and caught.value.code == "worker_failure"
    assert "simulated transient failure" in caught.value.message
    assert caught.value.response.headers["retry-after"] == "1"


def test_a_workflow_that_does_not_parse_is_an_empty_answer_with_the_parse_error(served):
    with served(Rambling()) as base_url:
        response = ask(base_url)
    assert response.choices[0].message.content == ""
    assert response.model_extra["conductor"]["parse_error"]
    assert response.model_extra["conductor"]["workflow"] is None
    assert response.usage.total_tokens == 0  # no worker ran and the policy called no model


def test_an_episode_past_the_timeout_is_504_and_frees_its_slot(served, tmp_path):
    slow = write_pool(tmp_path, latency_s=30.0, workers=1)
    with served(SingleWorker(0), slow, limits={"timeout_s": 0.5, "max_concurrency": 1, "max_queue": 0}) as base_url:
        with pytest.raises(openai.APIStatusError) as caught:
            ask(base_url)
        assert caught.value.status_code == 504 and caught.value.code == "timeout"
        with pytest.raises(openai.APIStatusError) as again:  # the slot was given back: 504 again, not 429
            ask(base_url)
        assert again.value.status_code == 504
