"""Two local engines started at once in a fresh interpreter both load (an evaluation playing two
local Conductors side by side). Loading concurrently raced inside ``transformers``' lazy module
("cannot import name 'AutoTokenizer'"), and every episode of one policy failed."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import threading
from conductor_env.workers.local_engine import LocalEngine

engines = [LocalEngine("gemma3-270m", device="cpu", dtype="float32") for _ in range(3)]
threads = []
for engine in engines:
    engine._queue.put(None)  # stop after loading
    threads.append(threading.Thread(target=engine._run))
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
errors = [str(engine._load_error) for engine in engines if engine._load_error is not None]
assert not errors, errors
assert all(engine._device == "cpu" for engine in engines)  # set at the end of a load
print("loaded", len(engines))
"""


@pytest.mark.slow
def test_engines_started_together_all_load():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "loaded 3" in done.stdout
