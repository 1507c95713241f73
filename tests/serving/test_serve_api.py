"""``conductor-env serve`` driven by the real ``openai`` client: answers, usage, models, the served name."""

from __future__ import annotations

import httpx
import openai
import pytest

from conductor_env.serving import UNGRADED_RESPONSE
from servers.conductor_serve import start_server, write_pool

PRICE_PER_CALL = 0.001


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pool = write_pool(tmp_path_factory.mktemp("pool"), price_per_call=PRICE_PER_CALL)
    running = start_server("--policy", "template:plan-solve-verify", "--pool", str(pool), "--model-name", "orchestra")
    yield running
    running.stop()


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0, timeout=60) as client:
        yield client


def test_the_answer_is_the_last_workers_response_and_usage_sums_every_call(client):
    response = client.chat.completions.create(
        model="orchestra",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is the capital of France?"}],
        temperature=0.2,
        max_tokens=64,
    )
    assert response.model == "orchestra"
    assert response.object == "chat.completion"
    choice = response.choices[0]
    assert choice.message.role == "assistant" and choice.finish_reason == "stop"
    assert choice.message.content == UNGRADED_RESPONSE  # simulated workers have no gold answer for a free question
    steps = response.model_extra["conductor"]["workflow"]["steps"]
    assert len(steps) == 3  # plan, solve, verify: three worker calls
    usage = response.usage
    # Independent of the server's arithmetic: each call costs the pool's fixed price and writes the response's words.
    assert usage.model_extra["cost_usd"] == pytest.approx(3 * PRICE_PER_CALL)
    assert usage.completion_tokens == 3 * len(UNGRADED_RESPONSE.split())
    assert usage.prompt_tokens > len("What is the capital of France?".split()) * 3
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    workers, conductor = usage.model_extra["workers"], usage.model_extra["conductor"]
    assert conductor == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "cost_usd": 0.0}  # a fixed template calls no model
    assert workers["prompt_tokens"] == usage.prompt_tokens and workers["cost_usd"] == pytest.approx(usage.model_extra["cost_usd"])


def test_text_parts_are_joined_into_the_question_and_a_seed_repeats_the_episode(client):
    messages = [{"role": "user", "content": [{"type": "text", "text": "Add 2"}, {"type": "text", "text": "and 3."}]}]
    first = client.chat.completions.create(model="orchestra", messages=messages, seed=7, extra_body={"domain": "math"})
    again = client.chat.completions.create(model="orchestra", messages=messages, seed=7, extra_body={"domain": "math"})
    assert first.choices[0].message.content == again.choices[0].message.content == UNGRADED_RESPONSE
    assert first.usage == again.usage
    assert first.id != again.id


def test_models_lists_only_the_served_name(client):
    assert [m.id for m in client.models.list().data] == ["orchestra"]
    assert client.models.retrieve("orchestra").id == "orchestra"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")


def test_an_unknown_model_is_404_in_openai_error_format(client):
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.code == "model_not_found"
    assert "orchestra" in caught.value.message


def test_health_reports_the_queue(server):
    health = httpx.get(f"{server.root}/health", timeout=10).json()
    assert health["status"] == "ok" and health["model"] == "orchestra"
    assert health["running"] == 0 and health["waiting"] == 0 and health["max_running"] == 64
