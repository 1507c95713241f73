"""Helpers for the framework integration tests: a simulated pool with a latency, and the workflows they send."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from conductor_env.workers.simulated import SimulatedWorker

#: A one-step workflow as JSON (what a structured tool call's arguments give).
SOLVE = json.dumps({"model_id": [0], "subtasks": ["Solve the task and give the final answer."], "access_list": [[]]})
#: Three empty lists: keep the previous round's answer.
KEEP = "model_id = []\nsubtasks = []\naccess_list = []"
#: A two-step workflow in the three-lists text form.
REVISE = 'model_id = [1, 0]\nsubtasks = ["Check the previous answer.", "Give the final answer."]\naccess_list = ["all", "all"]'
#: Hostile actions: each must score 0 with a reason, never raise.
HOSTILE = {"garbage": "no workflow here, just words", "huge": "x" * 5_000_000, "nul": "\x00" * 1000, "bad_json": '{"model_id": "zz", "subtasks": 3}'}


def write_pool(folder: Path, latency_s: float) -> str:
    """Writes the simulated preset with every call taking ``latency_s``; returns its path."""
    text = (Path(__file__).parents[2] / "conductor_env" / "pools" / "simulated.toml").read_text(encoding="utf-8")
    path = folder / f"simulated-{latency_s:g}s.toml"
    path.write_text(text.replace("latency_s = 0.0", f"latency_s = {latency_s}").replace("max_concurrency = 64", "max_concurrency = 1000"), encoding="utf-8")
    return str(path)


class CallCounter:
    """Counts simulated worker calls in flight at once (patches ``SimulatedWorker.complete``)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def install(self, monkeypatch) -> CallCounter:
        original = SimulatedWorker.complete
        counter = self

        async def counted(worker, *args, **kwargs):
            with counter._lock:
                counter.in_flight += 1
                counter.max_in_flight = max(counter.max_in_flight, counter.in_flight)
            try:
                return await original(worker, *args, **kwargs)
            finally:
                with counter._lock:
                    counter.in_flight -= 1

        monkeypatch.setattr(SimulatedWorker, "complete", counted)
        return self


def wait_until(predicate, timeout_s: float = 30.0) -> bool:
    """Polls ``predicate`` until it holds (a bound on a hang, not a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
