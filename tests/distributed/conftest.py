"""A real Ray cluster on this machine for the ``ray`` tests: a head and two nodes offering sandboxes.

Ray binds to the machine's external address unless it has none, so these tests run only inside
network namespaces holding nothing but loopback (``make test`` runs them through
``scripts/in_loopback_ns.sh``); elsewhere they skip and say how to run them. The cluster uses
Ray's token authentication, with a token made for this session.
"""

from __future__ import annotations

import os
import secrets
import socket

import pytest


def _only_loopback() -> bool:
    """Whether this process's network namespace holds only ``lo`` (``/sys`` may show the host's)."""
    return [name for _, name in socket.if_nameindex()] == ["lo"]


if _only_loopback():  # Ray reads its auth mode once, at import: set it before anything imports Ray
    os.environ.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'conductor-env[ray]'")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/distributed/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.ray)


@pytest.fixture(scope="session")
def cluster():
    """The cluster: head (no sandbox resource) and two nodes with ``conductor_sandbox: 1`` each."""
    if not _only_loopback():
        pytest.skip("Ray tests run only in a loopback-only network namespace: bash scripts/in_loopback_ns.sh .venv/bin/python -m pytest -m ray tests/distributed")
    from ray.cluster_utils import Cluster

    from conductor_env.distributed.runtime import NAMESPACE
    from conductor_env.distributed.sandbox import SANDBOX_RESOURCE

    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    nodes = [made.add_node(num_cpus=2, resources={SANDBOX_RESOURCE: 1}) for _ in range(2)]
    ray.init(address=made.address, namespace=NAMESPACE, log_to_driver=False)
    made.sandbox_nodes = nodes
    yield made
    ray.shutdown()
    made.shutdown()


@pytest.fixture
def hosts(cluster):
    """Fresh Ray sandbox hosts for each test (bubblewrap pools: quick to start)."""
    from conductor_env.distributed import RaySandbox, shutdown_sandbox_hosts

    shutdown_sandbox_hosts()
    sandbox = RaySandbox(backend="local", pool_size=2)
    yield sandbox
    shutdown_sandbox_hosts()
