"""One SDK client per event loop, for the API backends (``openai``, ``anthropic``)."""

from __future__ import annotations

import abc
import asyncio
import weakref
from typing import Any

from conductor_env.workers.base import Worker, WorkerSpec

__all__ = ["PerLoopClientWorker"]


class PerLoopClientWorker(Worker):
    """A worker that calls an async SDK client, one per event loop.

    httpx connection pools belong to the event loop that opened them, so each loop gets its own
    client (the env may run successive steps on fresh loops). Pickles and copies keep the spec
    only: a copy opens its own clients on first call, reading the API key from the environment
    again (a key is never pickled).

    Args:
        spec: The pool entry.
    """

    def __init__(self, spec: WorkerSpec) -> None:
        super().__init__(spec)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    @abc.abstractmethod
    def _new_client(self) -> Any:
        """Builds an SDK client (raises :class:`~conductor_env.workers.base.WorkerError` without a key)."""

    def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._new_client()
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Closes the client of the running event loop and forgets the others."""
        clients = list(self._clients.items())
        self._clients.clear()
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - called outside a loop
            current = None
        for loop, client in clients:
            if loop is current:
                await client.close()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_clients"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._clients = weakref.WeakKeyDictionary()
