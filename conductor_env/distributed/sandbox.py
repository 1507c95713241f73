"""``sandbox="ray"``: code graded by sandbox hosts, one Ray actor per node that offers them.

A node offers sandbox hosting by declaring the custom resource :data:`SANDBOX_RESOURCE`
(``ray start --resources '{"conductor_sandbox": 1}'``). Each :class:`SandboxHost` actor takes one
unit, so there is one per such node, and wraps that node's own warm pool (Docker or bubblewrap,
see :func:`conductor_env.sandboxes.get_sandbox`). :class:`RaySandbox` is the client the suites
use: it sends each job to the host with the fewest jobs in flight, and when a host dies (or its
node goes) it sends the job to another one; grading is idempotent, so a job run twice is graded
the same. Hosts restart on failure.

Hosts are detached named actors: every client in the cluster (each episode actor builds its own
suite) shares them, they outlive the process that created them (so their warm pools stay warm
for the next job), and the first client's settings (``backend``, ``pool_size``, ``limits``)
are theirs. :func:`shutdown_sandbox_hosts` ends them.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from typing import Any, Mapping, Sequence

from conductor_env.distributed.runtime import connect, is_lost, require_ray
from conductor_env.sandboxes.base import Kind, Limits, Report, Sandbox
from conductor_env.sandboxes.factory import get_sandbox

#: The custom resource a node declares to host a sandbox actor.
SANDBOX_RESOURCE = "conductor_sandbox"
#: Host actors are named ``<prefix><index>`` in the package's Ray namespace.
HOST_PREFIX = "conductor-env-sandbox-"
#: Seconds a host has to answer the load probe before it counts as down for this job.
PROBE_TIMEOUT_S = 5.0
#: Seconds a client leaves a host that was down alone before probing it again.
DOWN_FOR_S = 30.0


class SandboxHost:
    """The actor: one node's warm pool, and how many jobs it is running."""

    def __init__(self, backend: str, options: Mapping[str, Any]) -> None:
        self.sandbox = get_sandbox(backend, **dict(options))
        self._lock = threading.Lock()
        self.in_flight = 0
        self.jobs = 0

    def run_tests(self, program: str, tests: Sequence[Mapping[str, Any]], options: Mapping[str, Any]) -> Report:
        """Grades one job on this node (see :meth:`Sandbox.run_tests`)."""
        with self._lock:
            self.in_flight += 1
            self.jobs += 1
        try:
            return self.sandbox.run_tests(program, tests, **dict(options))
        finally:
            with self._lock:
                self.in_flight -= 1

    def load(self) -> int:
        """Jobs in flight (the probe the clients balance on)."""
        return self.in_flight

    def close(self) -> None:
        """Closes the warm pool (before the actor is ended)."""
        self.sandbox.close()

    def stats(self) -> dict[str, Any]:
        """The host's process, node and job counts."""
        import os

        ray = require_ray()
        return {"pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id(), "jobs": self.jobs, "in_flight": self.in_flight}


class RaySandbox(Sandbox):
    """The client: grades on the cluster's sandbox hosts (``get_sandbox("ray")``).

    Args:
        backend: What each host runs (``"auto"``, ``"docker"``, ``"local"``).
        pool_size: Warm sandbox workers per host (``None``: the backend's default).
        limits: Resource limits per test.
        hosts: How many hosts (``None``: one per alive node offering :data:`SANDBOX_RESOURCE`).
        address: The cluster to join when this process is not connected yet.
        retries: Other hosts a job tries after its host died.
        job_timeout_s: Wall-clock bound on one job (``None``: from the limits and the test count).

    Infrastructure failures (no host, every host down) come back as ``Report.error``, so the
    suite leaves the answer unscored; they are never raised.
    """

    name = "ray"

    def __init__(
        self,
        *,
        backend: str = "auto",
        pool_size: int | None = None,
        limits: Limits | None = None,
        hosts: int | None = None,
        address: str | None = None,
        retries: int = 3,
        job_timeout_s: float | None = None,
    ) -> None:
        self.backend, self.pool_size, self.limits = backend, pool_size, limits
        self.hosts, self.address, self.retries, self.job_timeout_s = hosts, address, retries, job_timeout_s
        self._handles: list[Any] | None = None
        self._down_until: dict[int, float] = {}

    # -- hosts -------------------------------------------------------------------------------

    def host_handles(self) -> list[Any]:
        """The host actors, created on first use (named, so every client shares them)."""
        if self._handles is None:
            ray = connect(self.address)
            count = self.hosts if self.hosts is not None else _offering_nodes(ray)
            if count < 1:
                raise RuntimeError(f"no alive Ray node offers the resource {SANDBOX_RESOURCE!r}; start nodes with `ray start --resources '{{\"{SANDBOX_RESOURCE}\": 1}}'`")
            options = {k: v for k, v in (("pool_size", self.pool_size), ("limits", self.limits)) if v is not None}
            slots = (self.pool_size or 4) * 2 + 2
            actor = ray.remote(concurrency_groups={"jobs": slots, "probe": 2})(SandboxHost)
            placement = {"resources": {SANDBOX_RESOURCE: 1}, "num_cpus": 0, "max_restarts": -1, "get_if_exists": True, "lifetime": "detached"}
            self._handles = [actor.options(name=f"{HOST_PREFIX}{i}", **placement).remote(self.backend, options) for i in range(count)]
        return self._handles

    def _timeout(self, tests: Sequence[Any]) -> float:
        if self.job_timeout_s is not None:
            return self.job_timeout_s
        limits = self.limits or Limits()
        return 120.0 + limits.wall_s * max(1, len(tests)) * 2

    # -- grading -----------------------------------------------------------------------------

    def run_tests(self, program: str, tests: Sequence[Mapping[str, Any]], *, kind: Kind = "stdin", limits: Limits | None = None, func_name: str | None = None) -> Report:
        """Grades on the least-loaded host (see :meth:`Sandbox.run_tests`); never raises."""
        ray = require_ray()
        options = {"kind": kind, "limits": limits or self.limits, "func_name": func_name}
        try:
            handles = self.host_handles()
        except Exception as error:  # noqa: BLE001 - reported, not raised
            return Report(error=f"ray sandbox: {error}")
        now = time.monotonic()
        down = {i for i, until in self._down_until.items() if until > now}
        if len(down) >= len(handles):
            down = set()  # all were down a moment ago: probe them all again
        for _ in range(self.retries + 1):
            index = self._least_loaded(ray, handles, down)
            if index is None:
                break
            try:
                return ray.get(handles[index].run_tests.options(concurrency_group="jobs").remote(program, list(tests), options), timeout=self._timeout(tests))
            except ray.exceptions.GetTimeoutError:
                return Report(error=f"ray sandbox: host {index} did not answer within {self._timeout(tests):.0f} s")
            except Exception as error:  # noqa: BLE001 - a dead host is retried elsewhere
                if not is_lost(error):
                    return Report(error=f"ray sandbox: {type(error).__name__}: {' '.join(str(error).split())[:300]}")
                down.add(index)
            finally:
                for lost in down:
                    if self._down_until.get(lost, 0.0) < time.monotonic():
                        self._down_until[lost] = time.monotonic() + DOWN_FOR_S
        return Report(error=f"ray sandbox: no sandbox host answered ({len(down)} of {len(handles)} down)")

    async def arun_tests(self, program: str, tests: Sequence[Mapping[str, Any]], **kwargs: Any) -> Report:
        """Async :meth:`run_tests` (in a worker thread: the probe and the job block)."""
        return await asyncio.to_thread(self.run_tests, program, tests, **kwargs)

    @staticmethod
    def _least_loaded(ray: Any, handles: list[Any], down: set[int]) -> int | None:
        """The answering host with the fewest jobs in flight (ties broken at random)."""
        candidates = [i for i in range(len(handles)) if i not in down]
        refs = [handles[i].load.options(concurrency_group="probe").remote() for i in candidates]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=PROBE_TIMEOUT_S)
        loads = {}
        for index, ref in zip(candidates, refs):
            if ref in ready:
                try:
                    loads[index] = ray.get(ref)
                except Exception:  # noqa: BLE001 - a dead host is skipped
                    down.add(index)
            else:
                down.add(index)
        if not loads:
            return None
        lowest = min(loads.values())
        return random.choice([i for i, load in loads.items() if load == lowest])

    def __getstate__(self) -> dict[str, Any]:
        """A copy finds the hosts again by name (handles are per process)."""
        state = self.__dict__.copy()
        state["_handles"] = None
        state["_down_until"] = {}
        return state


def _offering_nodes(ray: Any) -> int:
    return sum(1 for node in ray.nodes() if node.get("Alive") and node.get("Resources", {}).get(SANDBOX_RESOURCE, 0) >= 1)


def shutdown_sandbox_hosts(address: str | None = None) -> int:
    """Ends the cluster's sandbox host actors (and their warm pools).

    Returns:
        How many hosts were ended.
    """
    ray = connect(address)
    ended = 0
    for actor in ray.util.list_named_actors(all_namespaces=True):
        name = actor["name"] if isinstance(actor, dict) else actor
        if str(name).startswith(HOST_PREFIX):
            try:
                handle = ray.get_actor(name)
                ray.get(handle.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - a host already gone is fine
                pass
            else:
                ray.kill(handle, no_restart=True)
                ended += 1
    return ended
