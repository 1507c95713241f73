"""The preflight rules ``conductor-env eval`` and ``conductor-env train grpo`` share: one rule for
API keys (checked against what the real backends do without a key), the model reference and
the env id."""

from __future__ import annotations

import itertools

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.calls import WorkerError
from conductor_env.envs.preflight import (
    PreflightError,
    check_conductor_env,
    check_model_reference,
    missing_api_keys,
    required_key_variable,
)
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CONDUCTOR_PREFLIGHT_KEY")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


def backend_refuses(spec: WorkerSpec) -> bool:
    """Whether the real backend cannot build its client without a key in the environment."""
    worker = WorkerPool([spec]).worker(0)
    try:
        worker._new_client()  # noqa: SLF001 - the step that reads the key
    except WorkerError:
        return True
    return False


SPECS = [
    WorkerSpec(name=f"{backend}-{'url' if url else 'vendor'}-{'named' if named else 'default'}", backend=backend, model="m",
               base_url="http://127.0.0.1:9/v1" if url else None, api_key_env="CONDUCTOR_PREFLIGHT_KEY" if named else None)
    for backend, url, named in itertools.product(("openai", "anthropic"), (False, True), (False, True))
]  # fmt: skip


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_a_worker_the_backend_refuses_without_a_key_is_caught_before_the_run(no_keys: None, spec: WorkerSpec) -> None:
    missing = missing_api_keys(WorkerPool([spec]))
    if backend_refuses(spec):
        assert missing == [(spec.name, spec.api_key_env or ("ANTHROPIC_API_KEY" if spec.backend == "anthropic" else "OPENAI_API_KEY"))]
    # An Anthropic worker at a base_url still needs a key (its SDK refuses without one).
    if spec.backend == "anthropic":
        assert missing and backend_refuses(spec)


def test_a_keyless_server_needs_no_key_and_a_named_variable_is_asked_for(no_keys: None) -> None:
    local = WorkerSpec(name="local-server", backend="openai", model="m", base_url="http://127.0.0.1:9/v1")
    assert required_key_variable(local) is None and not backend_refuses(local)
    named = WorkerSpec(name="named", backend="openai", model="m", base_url="http://127.0.0.1:9/v1", api_key_env="CONDUCTOR_PREFLIGHT_KEY")
    assert required_key_variable(named) == "CONDUCTOR_PREFLIGHT_KEY"  # the server is taken to want it
    for backend in ("simulated", "local"):
        assert required_key_variable(WorkerSpec(name=backend, backend=backend)) is None
    assert missing_api_keys(WorkerPool([named]), environ={"CONDUCTOR_PREFLIGHT_KEY": "sk-test"}) == []
    assert missing_api_keys(WorkerPool([named]), environ={"CONDUCTOR_PREFLIGHT_KEY": ""}) == [("named", "CONDUCTOR_PREFLIGHT_KEY")]


def test_model_references_and_env_ids(tmp_path) -> None:
    check_model_reference("gemma3-270m")
    check_model_reference(str(tmp_path))
    check_model_reference("Qwen/Qwen2.5-0.5B-Instruct")
    for bad in ("gemma3-27m", "./no/such/folder", "/no/such/folder"):
        with pytest.raises(PreflightError, match="not found: pass a local model name"):
            check_model_reference(bad)
    check_conductor_env("Conductor-RG-v0")
    check_conductor_env("rg")
    with pytest.raises(PreflightError, match="is not a Conductor env"):
        check_conductor_env("CartPole-v1")
    with pytest.raises(PreflightError, match="does not exist"):
        check_conductor_env("Conductor-Nope-v0")
