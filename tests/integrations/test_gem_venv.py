"""Runs test_gem_adapter.py and test_gem_no_gold.py in .venv-gem, where the real gem-llm is installed (``make venv-gem``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PYTHON = ROOT / ".venv-gem" / "bin" / "python"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not PYTHON.exists(), reason=".venv-gem is absent: `make venv-gem` builds it (gem-llm pins reasoning-gym 0.1.23)")]


def test_gem_adapter_passes_with_the_real_gem():
    files = ["tests/integrations/test_gem_adapter.py", "tests/integrations/test_gem_no_gold.py"]
    run = subprocess.run([str(PYTHON), "-m", "pytest", *files, "-q", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout
