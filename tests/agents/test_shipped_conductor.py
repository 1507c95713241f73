"""The shipped trained Conductor (``llm:orchestra-gemma3-270m``): a small LoRA adapter that loads
through the real local backend, is prompted as it was trained, and picks workers by name."""

from __future__ import annotations

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.llm import LLMConductor
from conductor_env.agents.profiles import CPU_DATASETS, ORCHESTRA_POOL
from conductor_env.agents.shipped import SHIPPED_CONDUCTORS, shipped_conductor
from conductor_env.envs import EnvSetup
from conductor_env.event_loop import run_sync
from conductor_env.workflow import parse_workflow

NAME = "orchestra-gemma3-270m"


def test_every_shipped_conductor_is_a_small_adapter_with_its_prompt_settings():
    for name in SHIPPED_CONDUCTORS:
        folder = shipped_conductor(name)
        assert folder is not None, name
        weights = folder / "adapter_model.safetensors"
        assert weights.is_file() and weights.stat().st_size < 20e6  # a few MB, not the 1 GB model
        assert (folder / "conductor.json").is_file() and (folder / "README.md").is_file()
    assert shipped_conductor("no-such-conductor") is None


def test_the_name_resolves_to_the_adapter_and_its_training_prompt():
    policy = LLMConductor(NAME)
    assert policy.name == f"llm:{NAME}" and policy.max_tokens == 72
    assert policy.prompt_builder.__name__ == "roster_prompt"


@pytest.mark.slow
def test_it_loads_on_the_local_backend_and_routes_by_name_on_any_order_of_the_pool():
    setup = EnvSetup.from_id(
        "Conductor-RG-v0", pool=ORCHESTRA_POOL, split="validation",
        suite_options={"datasets": list(CPU_DATASETS), "size": 4},
        options={"examples": "none", "show_names": True, "max_steps": 3, "subpool_size": 3},
    )
    env = setup.make()
    policy = LLMConductor(NAME, temperature=0.0)
    try:
        observations, infos = [], []
        for index in range(len(env.problems)):
            observation, info = env.reset(seed=100 + index, options={"problem_index": index})
            observations.append(observation)
            infos.append(info)
        actions = policy.act(observations)
    finally:
        run_sync(policy.aclose())
        env.close()
    chosen = {"language": [], "reasoning": []}
    for action, info in zip(actions, infos):
        workflow = parse_workflow(action, num_workers=3, max_steps=3)  # every action parses
        if info["domain"] in chosen:
            chosen[info["domain"]].append(info["worker_map"][workflow.steps[0].worker])
    assert len({tuple(info["worker_map"].values()) for info in infos}) > 2  # the pool really was reordered
    # Trained: language goes to the cheap language worker, reasoning to the specialist, by name.
    assert chosen["language"].count("flash") >= 0.75 * len(chosen["language"])
    assert chosen["reasoning"].count("solver") >= 0.75 * len(chosen["reasoning"])
