"""The OpenEnv server image, built offline on the sandbox base image: it starts, passes
``openenv validate --url`` and plays an episode over WebSocket with OpenEnv's client."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

pytest.importorskip("openenv", reason="needs the openenv extra: pip install 'conductor-env[openenv]'")

from conductor_env.integrations.openenv import ConductorAction, ConductorEnvClient  # noqa: E402
from conductor_env.integrations.openenv.image import DEFAULT_TAG, build_openenv_image  # noqa: E402
from conductor_env.sandboxes.base import SandboxUnavailable  # noqa: E402
from conductor_env.sandboxes.image import docker_client  # noqa: E402
from servers.openenv_server import WORKFLOW  # noqa: E402
from servers.transformers_serve import free_port  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def container():
    try:
        docker_client(timeout=10).ping()
    except Exception as error:  # no daemon: the docker marker's tests skip
        pytest.skip(f"no Docker daemon: {error}")
    try:
        build_openenv_image(DEFAULT_TAG, log=lambda line: None)
    except SandboxUnavailable as error:
        pytest.skip(f"the base image cannot be built here: {error}")
    port = free_port()
    name = f"conductor-openenv-test-{port}"
    subprocess.run(["docker", "run", "-d", "--rm", "--name", name, "-p", f"127.0.0.1:{port}:8000", "-e", 'CONDUCTOR_OPENENV_OPTIONS={"max_rounds": 2}', DEFAULT_TAG], check=True, capture_output=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True).stdout
            pytest.fail(f"the container did not answer /health:\n{logs[-3000:]}")
        yield url
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def test_the_image_runs_as_nobody_and_passes_runtime_validation(container: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from openenv.cli.__main__ import main; sys.exit(main())", "validate", "--url", container],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    name = next(
        line for line in subprocess.run(["docker", "ps", "--format", "{{.Names}} {{.Ports}}"], capture_output=True, text=True).stdout.splitlines() if container.rsplit(":", 1)[1] in line
    ).split()[0]
    user = subprocess.run(["docker", "exec", name, "id", "-u"], capture_output=True, text=True).stdout.strip()
    assert user == "65534"


async def test_the_image_plays_an_episode_over_websocket(container: str) -> None:
    async with ConductorEnvClient(base_url=container, message_timeout_s=120) as client:
        first = await client.reset(seed=4)
        assert first.observation.messages and first.observation.episode_seed == 4
        second = await client.step(ConductorAction(**WORKFLOW))
        assert second.done is False and second.observation.round == 1  # the container's max_rounds=2
        last = await client.step(ConductorAction(workflow="model_id = []\nsubtasks = []\naccess_list = []"))
        assert last.done is True and last.observation.info.answer == second.observation.info.answer
