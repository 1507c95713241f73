"""The Ray backends cost nothing to runs that do not use them: Ray is never imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conductor_env.envs.vector import ConductorVectorEnv

PROGRAM = """
import sys
import gymnasium as gym
import conductor_env
from conductor_env.evaluation.runner import EvalConfig, evaluate
from conductor_env.evaluation.setup import build_policies
from conductor_env.workers.pool import load_pool
env = gym.make("Conductor-RG-v0", pool="simulated")
env.reset(seed=0)
envs = gym.make_vec("Conductor-RG-v0", num_envs=2, vectorization_mode="vector_entry_point", pool="simulated")
envs.reset(seed=0)
evaluate(EvalConfig.for_id("Conductor-RG-v0", pool="simulated", n=2), build_policies(["single:0"], pool=load_pool("simulated")), sys.argv[1])
assert "ray" not in sys.modules, sorted(m for m in sys.modules if m.startswith("ray"))[:5]
print("no ray")
"""


def test_envs_vector_envs_and_evaluation_never_import_ray(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "no ray" in done.stdout, done.stderr[-2000:]


def test_an_unknown_vector_backend_names_the_known_ones():
    with pytest.raises(ValueError, match="'local' or one of \\['ray'\\]"):
        ConductorVectorEnv(2, backend="dask", pool="simulated")


def test_the_local_backend_takes_no_backend_options():
    with pytest.raises(ValueError, match="no backend_options"):
        ConductorVectorEnv(2, backend_options={"workers": 2}, pool="simulated")
