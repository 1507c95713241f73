"""``openenv validate`` on the Conductor env: the manifest (static), a running server (runtime), and
OpenEnv's runtime graders (reward, observation schema, state contract) over a real WebSocket episode."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="needs the openenv extra: pip install 'conductor-env[openenv]'")

from openenv.validation import Level, Verdict, run_validation  # noqa: E402
from openenv.validation.types import CheckStatus, ProviderCapability  # noqa: E402

import conductor_env.integrations.openenv as integration  # noqa: E402
from servers.openenv_server import OpenEnvServer, write_latency_pool  # noqa: E402

pytestmark = pytest.mark.slow
PACKAGE = Path(integration.__file__).parent
OPENENV = [sys.executable, "-c", "import sys; from openenv.cli.__main__ import main; sys.exit(main())"]


def openenv_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*OPENENV, *args], capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    served = OpenEnvServer(str(write_latency_pool(tmp_path_factory.mktemp("validate-pool"), 0.0)))
    yield served
    served.stop()


def test_static_validation_passes_and_a_broken_manifest_fails(tmp_path: Path) -> None:
    passed = openenv_cli("validate", str(PACKAGE), "--level", "static")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "PASS  static.manifest" in passed.stdout

    broken = tmp_path / "broken"
    shutil.copytree(PACKAGE, broken, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = broken / "openenv.yaml"
    manifest.write_text(manifest.read_text().replace("range: [0.0, 1.5]", "range: [1.5, 0.0]"))
    failed = openenv_cli("validate", str(broken), "--level", "static")
    assert failed.returncode == 1 and "strictly increasing" in failed.stdout + failed.stderr


def test_runtime_validation_of_the_running_server_passes(server: OpenEnvServer) -> None:
    result = openenv_cli("validate", "--url", server.url, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] is True and report["mode"] == "simulation"
    assert {criterion["id"] for criterion in report["criteria"]} >= {"health_endpoint", "schema_endpoint", "metadata_endpoint", "mode_endpoint_consistency"}


class _Running:
    """The running server as OpenEnv's validation subject."""

    def __init__(self, url: str) -> None:
        self.base_url = url

    def inspect(self) -> dict:
        return {}

    def logs(self, max_bytes: int = 65536) -> str:
        return ""

    def exec(self, argv: list[str], timeout_s: float):
        raise NotImplementedError("the loopback subject runs no commands")

    def stop(self) -> None:
        pass


class LoopbackProvider:
    """OpenEnv's validation provider protocol over an already running server process (no image)."""

    name = "loopback-process"
    capabilities = frozenset({ProviderCapability.IMAGE_BUILD})
    supported_network_modes = frozenset({"public"})

    def __init__(self, url: str) -> None:
        self.url = url

    def build(self, root: Path, execution) -> str:
        return "sha256:" + hashlib.sha256(str(root).encode()).hexdigest()

    def start(self, spec) -> _Running:
        return _Running(self.url)


def test_openenv_runtime_graders_pass_on_a_real_episode(server: OpenEnvServer) -> None:
    report = run_validation(PACKAGE, max_level=Level.RUNTIME, provider=LoopbackProvider(server.url))
    statuses = {result.check_id: result.status for result in report.results}
    for check in ("static.manifest", "runtime.startup", "runtime.observation_schema", "runtime.reward_well_formed", "runtime.state_contract"):
        assert statuses[check] is CheckStatus.PASS, [(r.check_id, r.evidence) for r in report.results if r.check_id == check]
    assert CheckStatus.FAIL not in statuses.values() and report.verdict is not Verdict.FAIL
    assert server.stats()["steps_finished"] >= 1  # the probe's action was played
