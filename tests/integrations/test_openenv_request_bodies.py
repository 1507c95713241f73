"""The OpenEnv server bounds what it reads whatever the transfer encoding, and never echoes a request.

A real server process on loopback. The limit (2 MiB) used to be read from ``Content-Length``,
so a chunked body (no length) was read whole; and FastAPI's 422 reply, like OpenEnv's WebSocket
error frames, carried the offending input back (for a malformed body, the body). Each hostile
request sits beside an honest one just under the limit, and the server must stay up.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Iterator

import httpx
import pytest

pytest.importorskip("openenv", reason="needs the openenv extra: pip install 'conductor-env[openenv]'")

from conductor_env.integrations.openenv.server import MAX_BODY_BYTES  # noqa: E402
from servers.openenv_server import WORKFLOW, OpenEnvServer, write_latency_pool  # noqa: E402
from servers.raw_http import raw_post  # noqa: E402
from servers.transformers_serve import free_port  # noqa: E402

pytestmark = pytest.mark.slow
#: A string no reply may carry back.
PLANTED = "PLANTED-c0ffee-9d41"


@pytest.fixture(scope="module")
def pool_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(write_latency_pool(tmp_path_factory.mktemp("openenv-bodies"), 0.0))


@pytest.fixture(scope="module")
def server(pool_path: str) -> Iterator[OpenEnvServer]:
    served = OpenEnvServer(pool_path, options=("max_rounds=2",))
    yield served
    served.stop()


class UvicornServer(OpenEnvServer):
    """``uvicorn conductor_env.integrations.openenv.server:app`` (the documented second way), with uvicorn's own WebSocket limit (16 MiB)."""

    def __init__(self, pool: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {key: value for key, value in os.environ.items() if not key.startswith("CONDUCTOR_OPENENV_")} | {"CONDUCTOR_OPENENV_POOL": pool}
        command = [sys.executable, "-m", "uvicorn", "conductor_env.integrations.openenv.server:app", "--host", "127.0.0.1", "--port", str(self.port)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self._wait()


def healthy(server: OpenEnvServer) -> bool:
    return server.process.poll() is None and httpx.get(f"{server.url}/health", timeout=30).json()["status"] == "healthy"


def padded(body: dict, size: int) -> bytes:
    """``body`` as JSON of exactly ``size`` bytes (whitespace before the last brace)."""
    text = json.dumps(body).encode()
    return text[:-1] + b" " * (size - len(text)) + b"}"


def chunked(data: bytes, chunk: int = 256 * 1024) -> Iterator[bytes]:
    """The body as a generator: httpx sends it with ``Transfer-Encoding: chunked`` and no length."""
    for start in range(0, len(data), chunk):
        yield data[start : start + chunk]


def running_row(server: OpenEnvServer, seed: int) -> dict:
    observation = httpx.post(f"{server.url}/reset", json={"seed": seed}, timeout=60).json()["observation"]
    return {"problem_id": observation["problem_id"], "episode_seed": seed}


def test_a_chunked_body_over_the_limit_is_413_and_the_server_stays_up(server: OpenEnvServer) -> None:
    for size in (MAX_BODY_BYTES + 1, 4 * MAX_BODY_BYTES, 64 * MAX_BODY_BYTES):
        data = padded({"action": dict(WORKFLOW)}, size)
        response = httpx.post(f"{server.url}/step", content=chunked(data), headers={"content-type": "application/json"}, timeout=120)
        assert "content-length" not in response.request.headers and response.request.headers["transfer-encoding"] == "chunked"
        assert response.status_code == 413, response.text[:300]
        assert "request body over" in response.text
        assert healthy(server)


def test_a_body_just_under_the_limit_is_played_chunked_or_not(server: OpenEnvServer) -> None:
    """Honest control: a valid step padded to just under 2 MiB is answered, with either encoding."""
    for stream in (False, True):
        row = running_row(server, 11)
        data = padded({"action": {**WORKFLOW, "row": row}}, MAX_BODY_BYTES - 1)
        response = httpx.post(f"{server.url}/step", content=chunked(data) if stream else data, headers={"content-type": "application/json"}, timeout=120)
        assert response.status_code == 200, response.text[:300]
        assert response.json()["observation"]["info"]["parse_error"] == ""


def test_a_content_length_that_lies_is_not_believed(server: OpenEnvServer) -> None:
    body = padded({"action": dict(WORKFLOW)}, 1000)
    # Declares more than the limit: 413 at once, without waiting for (or reading) a body.
    status, answer = raw_post(server.url, "/step", MAX_BODY_BYTES * 10, body)
    assert status == 413, answer[:300]
    # Declares a little, sends megabytes: only the declared bytes are the body (not valid JSON:
    # 422), the rest is not a request; nothing is played and nothing crashes.
    status, answer = raw_post(server.url, "/step", 64, padded({"action": dict(WORKFLOW)}, 3 * MAX_BODY_BYTES))
    assert status in (0, 400, 413, 422), answer[:300]
    # Not a number at all.
    status, answer = raw_post(server.url, "/step", "lots", body)
    assert status in (0, 400), answer[:300]
    assert healthy(server)
    row = running_row(server, 12)  # and honest requests are still answered
    assert httpx.post(f"{server.url}/step", json={"action": {**WORKFLOW, "row": row}}, timeout=60).status_code == 200


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/step", {"action": {**WORKFLOW, "tool": PLANTED}}),
        ("/step", {"action": {"model_id": [PLANTED], "subtasks": ["a"], "access_list": [[]]}}),
        ("/step", {"action": {"workflow": PLANTED * 20_000}}),
        ("/step", {"action": {**WORKFLOW, "row": {"problem_id": PLANTED, "episode_seed": PLANTED}}}),
        ("/step", {"action": PLANTED}),
        ("/step", {"actions": PLANTED}),
        ("/step", f'{{"action": {PLANTED}}}'),
        ("/step", f'{{"action": "{PLANTED}'),
        ("/step", {"action": {**WORKFLOW, "row": {"problem_id": PLANTED, "episode_seed": 1}}}),
        ("/reset", {"problem_id": PLANTED}),
        ("/reset", {PLANTED: 1}),
        ("/reset", {"problem_index": PLANTED}),
        ("/reset", {"seed": PLANTED}),
        ("/reset", f'{{"seed": 1, "x": {PLANTED}'),
    ],
)
def test_an_invalid_request_is_answered_without_echoing_it(server: OpenEnvServer, path: str, body: object) -> None:
    content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    response = httpx.post(f"{server.url}{path}", content=content, headers={"content-type": "application/json"}, timeout=60)
    assert 400 <= response.status_code < 500, response.text[:300]
    assert PLANTED not in response.text, response.text[:500]
    if response.status_code == 422:  # what is wrong, and where
        problems = response.json()["detail"]
        assert problems and all(set(problem) == {"loc", "msg", "type"} and problem["msg"] for problem in problems), problems


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "method": PLANTED, "id": 1},
        {"jsonrpc": PLANTED, "method": "tools/list", "id": 2},
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": PLANTED}, "id": 3},
        {"x": PLANTED},
        "{" + PLANTED,
    ],
)
def test_mcp_errors_do_not_echo_the_request(server: OpenEnvServer, body: object) -> None:
    """OpenEnv's JSON-RPC endpoint (the env serves no MCP tools): errors in JSON-RPC's own words."""
    content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    response = httpx.post(f"{server.url}/mcp", content=content, headers={"content-type": "application/json"}, timeout=60)
    assert response.status_code == 200 and "error" in response.json(), response.text[:300]
    assert PLANTED not in response.text, response.text[:500]
    over = httpx.post(f"{server.url}/mcp", content=chunked(b" " * (MAX_BODY_BYTES + 1)), headers={"content-type": "application/json"}, timeout=60)
    assert "error" in over.json() and healthy(server)  # read only up to the limit, then refused


async def _ws_messages(url: str, messages: list[str]) -> list[object]:
    """Sends each message on one socket; an answer, or the close code when the server closed it."""
    import websockets

    answers: list[object] = []
    async with websockets.connect(url.replace("http://", "ws://") + "/ws", max_size=None) as socket:
        for message in messages:
            await socket.send(message)
            try:
                answers.append(json.loads(await socket.recv()))
            except websockets.ConnectionClosed as closed:
                answers.append(closed.rcvd.code if closed.rcvd else None)
                break
    return answers


def test_websocket_error_frames_do_not_echo_the_message(server: OpenEnvServer) -> None:
    messages = [
        json.dumps({"type": "step", "data": {"model_id": [PLANTED], "subtasks": ["a"], "access_list": [[]]}}),
        json.dumps({"type": "step", "data": {"workflow": "x", "tool": PLANTED}}),
        json.dumps({"type": PLANTED * 1000}),
        json.dumps({"type": "reset", "data": {"seed": PLANTED}}),
        "{" + PLANTED,
        json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "method": PLANTED, "id": 1}}),
        json.dumps({"type": "mcp", "data": {"jsonrpc": PLANTED, "method": "tools/list", "id": 2}}),
        json.dumps({"type": "reset", "data": {"seed": 3}}),
        json.dumps({"type": "step", "data": {**WORKFLOW, "row": {"problem_id": PLANTED, "episode_seed": 3}}}),
        json.dumps({"type": "step", "data": WORKFLOW}),
    ]
    answers = asyncio.run(_ws_messages(server.url, messages))
    assert [answer["type"] for answer in answers] == ["error"] * 5 + ["mcp"] * 2 + ["observation", "error", "observation"]  # type: ignore[index]
    assert all("error" in answer["data"] for answer in answers[5:7])  # type: ignore[index]
    assert PLANTED not in json.dumps(answers)
    errors = answers[0]["data"]["errors"]  # type: ignore[index]
    assert errors == [{"loc": ["model_id", 0], "msg": errors[0]["msg"], "type": "int_parsing"}]


@pytest.mark.parametrize("how", ["python -m", "uvicorn"])
def test_a_websocket_message_over_the_limit_closes_the_socket_and_the_server_stays_up(pool_path: str, server: OpenEnvServer, how: str) -> None:
    served = server if how == "python -m" else UvicornServer(pool_path)
    try:
        over = padded({"type": "step", "data": dict(WORKFLOW)}, MAX_BODY_BYTES + 1)
        under = padded({"type": "step", "data": dict(WORKFLOW)}, MAX_BODY_BYTES - 1)
        reset = json.dumps({"type": "reset", "data": {"seed": 4}})
        assert asyncio.run(_ws_messages(served.url, [reset, over.decode()]))[1] == 1009
        assert asyncio.run(_ws_messages(served.url, [reset, (over * 3).decode()]))[1] == 1009
        played = asyncio.run(_ws_messages(served.url, [reset, under.decode()]))  # honest control
        assert played[1]["type"] == "observation", played  # type: ignore[index]
        assert healthy(served)
    finally:
        if served is not server:
            served.stop()
