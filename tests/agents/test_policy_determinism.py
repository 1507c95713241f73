"""Policies are functions of the episode: the same eval gives the same rows at any concurrency."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import gymnasium as gym
import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.base import episode_seed
from conductor_env.agents.specs import make_policy
from conductor_env.evaluation import EvalConfig, evaluate
from conductor_env.evaluation.setup import build_policies
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool, load_pool
from fixtures.results_rows import rows_without_clock


def jittered_pool() -> WorkerPool:
    """The simulated pool with random latencies, so episodes finish, and ask for actions, in shuffled order."""
    pool = load_pool("simulated")
    specs = [WorkerSpec(s.name, s.backend, model=s.model, description=s.description, options={**s.options, "latency_s": [0.0, 0.02]}) for s in pool.specs]
    return WorkerPool(specs, name="simulated-jittered")


def test_random_policy_rows_are_identical_at_concurrency_1_and_64(tmp_path: Path) -> None:
    results = []
    for concurrency in (1, 64):
        config = EvalConfig.for_id("Conductor-RG-v0", pool=jittered_pool(), n=24, samples=2, concurrency=concurrency, seed=5, env_options={"max_rounds": 2})
        policies = build_policies(["random"], pool=config.setup.pool)
        evaluate(config, policies, str(tmp_path / str(concurrency)))
        results.append(rows_without_clock(tmp_path / str(concurrency)))
    assert len(results[0]) == 48
    assert results[0] == results[1]
    # and the draws are random: the episodes did not all get one workflow
    assert len({json.dumps(r["workflow"]) for r in results[0]}) > 10


def observations(count: int) -> list[dict]:
    with gym.make("Conductor-RG-v0", pool="simulated") as env:
        return [env.reset(seed=seed)[0] for seed in range(count)]


def test_a_policys_action_does_not_depend_on_what_it_answered_before() -> None:
    batch = observations(6)
    policy = make_policy("random")
    forward = policy.act(batch)
    backward = make_policy("random").act(batch[::-1])[::-1]
    one_by_one = [make_policy("random").act([o])[0] for o in batch]
    assert forward == backward == one_by_one
    assert len(set(forward)) > 1
    assert make_policy("random", seed=1).act(batch) != forward  # the policy's seed still matters


def test_episode_seed_separates_episodes_rounds_frames_and_salts() -> None:
    base = {"episode": "a" * 16, "round": 0, "depth": 0, "question": "q"}
    seeds = {
        episode_seed(base),
        episode_seed({**base, "episode": "b" * 16}),
        episode_seed({**base, "round": 1}),
        episode_seed({**base, "depth": 1, "question": "sub"}),
        episode_seed(base, 1),
    }
    assert len(seeds) == 5 and episode_seed(base) == episode_seed(dict(base))


class _SeedRecordingHandler(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that records each request's user message and seed."""

    def do_POST(self) -> None:  # noqa: N802 - the http.server naming
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        self.server.seeds[body["messages"][-1]["content"]] = body.get("seed")  # type: ignore[attr-defined]
        reply = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "model_id = [0]"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        """Keeps the test output quiet."""


@pytest.fixture()
def seed_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SeedRecordingHandler)
    server.seeds = {}  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_llm_policy_samples_with_the_episodes_seed_not_a_call_counter(seed_server, monkeypatch) -> None:
    monkeypatch.setenv("LOOPBACK_KEY", "k")
    host, port = seed_server.server_address[:2]
    spec = WorkerSpec("conductor-model", "openai", model="m", base_url=f"http://{host}:{port}/v1", api_key_env="LOOPBACK_KEY", max_tokens=8)
    batch = observations(4)
    recorded = []
    for order in (batch, batch[::-1]):
        policy = make_policy("llm:conductor-model", pool=WorkerPool([spec], name="loopback"), temperature=1.0)
        policy.act(order)
        recorded.append(dict(seed_server.seeds))
        seed_server.seeds.clear()
    assert recorded[0] == recorded[1] and len(set(recorded[0].values())) == 4
    assert sorted(recorded[0].values()) == sorted(episode_seed(o) for o in batch)
