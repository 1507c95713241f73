"""Fixtures for the serving tests: real ``conductor-env serve`` processes on loopback."""

from __future__ import annotations

from typing import Callable, Iterator

import pytest

from servers.conductor_serve import Server, start_server


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    """Starts servers with :func:`start_server`; stops them after the test."""
    servers: list[Server] = []

    def start(*args: str) -> Server:
        server = start_server(*args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
