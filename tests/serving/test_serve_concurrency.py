"""Concurrent requests run their episodes together; past the queue bound the server answers 429.

No wall-clock assertions: overlap is read from the server's own counter of episodes in flight.
"""

from __future__ import annotations

import asyncio

import openai
import pytest

from conductor_env.serving import UNGRADED_RESPONSE
from servers.conductor_serve import write_pool

QUESTION = [{"role": "user", "content": "Name a prime number above 100."}]


async def wait_for(server, predicate, what: str) -> dict:
    """Polls /health until ``predicate(health)`` holds (the episodes are slow enough to be seen)."""
    for _ in range(600):
        health = await asyncio.to_thread(server.health)
        if predicate(health):
            return health
        await asyncio.sleep(0.05)
    raise AssertionError(f"the server never reported {what}: {health}")


async def test_sixteen_requests_run_their_episodes_concurrently(serve, tmp_path):
    server = serve("--policy", "template:plan-solve-verify", "--pool", str(write_pool(tmp_path, latency_s=0.5)))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=120) as client:
        questions = [[{"role": "user", "content": f"Question number {i}: what is {i} squared?"}] for i in range(16)]
        responses = await asyncio.gather(*(client.chat.completions.create(model="conductor", messages=q) for q in questions))
    assert [r.choices[0].message.content for r in responses] == [UNGRADED_RESPONSE] * 16
    assert len({r.id for r in responses}) == 16
    health = server.health()
    assert health["served"] == 16 and health["rejected"] == 0 and health["running"] == 0
    assert health["peak_running"] > 1  # the episodes overlapped instead of running one after another


async def test_a_full_queue_answers_429_with_retry_after_and_the_admitted_requests_finish(serve, tmp_path):
    server = serve("--policy", "single:0", "--pool", str(write_pool(tmp_path, latency_s=3.0)), "--max-concurrency", "1", "--max-queue", "1")
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=120) as client:
        running = asyncio.ensure_future(client.chat.completions.create(model="conductor", messages=QUESTION))
        await wait_for(server, lambda h: h["running"] == 1, "a running episode")
        queued = asyncio.ensure_future(client.chat.completions.create(model="conductor", messages=QUESTION))
        await wait_for(server, lambda h: h["waiting"] == 1, "a waiting request")
        with pytest.raises(openai.RateLimitError) as caught:
            await client.chat.completions.create(model="conductor", messages=QUESTION)
        error = caught.value
        assert error.status_code == 429 and error.code == "queue_full"
        assert int(error.response.headers["retry-after"]) >= 1
        assert "--max-queue 1" in error.message
        first, second = await asyncio.gather(running, queued)
        assert first.choices[0].message.content == second.choices[0].message.content == UNGRADED_RESPONSE
        after = await client.chat.completions.create(model="conductor", messages=QUESTION)  # room again once they finished
        assert after.choices[0].message.content == UNGRADED_RESPONSE
    health = server.health()
    assert health["rejected"] == 1 and health["served"] == 3 and health["peak_running"] == 1
