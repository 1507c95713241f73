"""An external harness, Inspect (inspect-ai from PyPI), evaluates the served system over HTTP.

Inspect's pins clash with the package's (it holds fsspec below the release datasets allows), so it
lives in its own virtualenv, ``.venv-inspect``, which ``make test`` creates (``make venv-inspect``);
without it the test skips.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import openai
import pytest

from conductor_env.serving import UNGRADED_RESPONSE
from servers.conductor_serve import start_server, write_pool

ROOT = Path(__file__).resolve().parents[2]
INSPECT_PYTHON = ROOT / ".venv-inspect" / "bin" / "python"
QUESTIONS = ["What is 17 + 25?", "Name a noble gas.", "Which is larger, 2**10 or 10**3?", "Spell 'orchestra' backwards."]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not INSPECT_PYTHON.exists(), reason="no .venv-inspect (make venv-inspect creates it)"),
]


def test_inspect_evaluates_the_served_system_and_counts_its_tokens(tmp_path):
    server = start_server("--policy", "template:plan-solve-verify", "--pool", str(write_pool(tmp_path)))
    try:
        completed = subprocess.run(
            [str(INSPECT_PYTHON), str(Path(__file__).with_name("inspect_eval.py")), server.base_url, str(tmp_path / "logs"), json.dumps(QUESTIONS), UNGRADED_RESPONSE],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "CONDUCTOR_API_KEY": "unused", "INSPECT_LOG_LEVEL": "warning"},
            cwd=tmp_path,
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
        summary = json.loads(completed.stdout.strip().splitlines()[-1])
        with openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0) as client:
            ours = [client.chat.completions.create(model="conductor", messages=[{"role": "user", "content": q}]).usage for q in QUESTIONS]
        health = server.health()
    finally:
        server.stop()
    assert summary["status"] == "success" and summary["error"] is None
    assert summary["completions"] == [UNGRADED_RESPONSE] * len(QUESTIONS)
    assert summary["scores"] == ["C"] * len(QUESTIONS) and summary["metrics"]["mean"] == 1.0
    # Inspect read the usage the server reported: the same totals the openai client gets for the same questions.
    assert summary["input_tokens"] == sum(u.prompt_tokens for u in ours)
    assert summary["output_tokens"] == sum(u.completion_tokens for u in ours)
    assert health["served"] == 2 * len(QUESTIONS) and health["rejected"] == 0
