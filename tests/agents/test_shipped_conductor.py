"""The shipped trained Conductors (``llm:orchestra-gemma3-270m``, ``llm:orchestra-judge-gemma3-270m``):
small LoRA adapters that load through the real local backend, are prompted as they were trained,
and pick workers by name (the second a workflow shape per domain)."""

from __future__ import annotations

import importlib.resources

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.llm import LLMConductor
from conductor_env.agents.shipped import SHIPPED_CONDUCTORS, shipped_conductor
from conductor_env.envs import EnvSetup
from conductor_env.event_loop import run_sync
from conductor_env.workflow import parse_workflow

ORCHESTRA_POOL = str(importlib.resources.files("conductor_env.pools") / "orchestra.toml")
ORCHESTRA_JUDGE_POOL = str(importlib.resources.files("conductor_env.pools") / "orchestra-judge.toml")
#: The datasets the shipped Conductors were trained on (the cpu recipe's suite options).
CPU_SUITE_OPTIONS = {"datasets": ["basic_arithmetic", "chain_sum", "letter_counting", "spell_backward", "syllogism", "family_relationships"], "allow_gameable": True}

NAME = "orchestra-gemma3-270m"
JUDGE_NAME = "orchestra-judge-gemma3-270m"


def test_every_shipped_conductor_is_a_small_adapter_with_its_prompt_settings():
    for name in SHIPPED_CONDUCTORS:
        folder = shipped_conductor(name)
        assert folder is not None, name
        weights = folder / "adapter_model.safetensors"
        assert weights.is_file() and weights.stat().st_size < 20e6  # a few MB, not the 1 GB model
        assert (folder / "conductor.json").is_file() and (folder / "README.md").is_file()
    assert shipped_conductor("no-such-conductor") is None


@pytest.mark.parametrize("name", [NAME, JUDGE_NAME])
def test_the_name_resolves_to_the_adapter_and_its_training_prompt(name):
    policy = LLMConductor(name)
    assert policy.name == f"llm:{name}" and policy.max_tokens == 72
    assert policy.prompt_builder.__name__ == "roster_prompt"


def _greedy_actions(name: str, pool: str) -> tuple[list[str], list[dict]]:
    """The Conductor's greedy actions on 4 held-out questions of each dataset, the pool renumbered in every episode."""
    setup = EnvSetup.from_id(
        "Conductor-RG-v0",
        pool=pool,
        split="validation",
        suite_options={**CPU_SUITE_OPTIONS, "size": 4},
        options={"examples": "none", "show_names": True, "max_steps": 3, "subpool_size": 3},
    )
    env = setup.make()
    policy = LLMConductor(name, temperature=0.0)
    try:
        observations, infos = [], []
        for index in range(len(env.problems)):
            observation, info = env.reset(seed=100 + index, options={"problem_index": index})
            observations.append(observation)
            infos.append(info)
        return policy.act(observations), infos
    finally:
        run_sync(policy.aclose())
        env.close()


@pytest.mark.slow
def test_the_judge_conductor_writes_a_workflow_shape_per_domain_on_any_order_of_the_pool():
    actions, infos = _greedy_actions(JUDGE_NAME, ORCHESTRA_JUDGE_POOL)
    shapes: dict[str, list[tuple[tuple[str, ...], tuple[bool, ...]]]] = {"math": [], "reasoning": []}
    for action, info in zip(actions, infos):
        workflow = parse_workflow(action, num_workers=3, max_steps=3)  # every action parses
        if info["domain"] in shapes:
            names = tuple(info["worker_map"][step.worker] for step in workflow.steps)
            shapes[info["domain"]].append((names, tuple(bool(step.access) for step in workflow.steps)))
    assert len({tuple(info["worker_map"].values()) for info in infos}) > 2  # the pool really was reordered
    # Math: two cheap attempts, then the checker reading them; reasoning: the specialist alone.
    judge = (("flash", "flash", "checker"), (False, False, True))
    assert shapes["math"].count(judge) >= 0.75 * len(shapes["math"])
    assert shapes["reasoning"].count((("solver",), (False,))) >= 0.75 * len(shapes["reasoning"])


@pytest.mark.slow
def test_it_loads_on_the_local_backend_and_routes_by_name_on_any_order_of_the_pool():
    actions, infos = _greedy_actions(NAME, ORCHESTRA_POOL)
    chosen = {"language": [], "reasoning": []}
    for action, info in zip(actions, infos):
        workflow = parse_workflow(action, num_workers=3, max_steps=3)  # every action parses
        if info["domain"] in chosen:
            chosen[info["domain"]].append(info["worker_map"][workflow.steps[0].worker])
    assert len({tuple(info["worker_map"].values()) for info in infos}) > 2  # the pool really was reordered
    # Trained: language goes to the cheap language worker, reasoning to the specialist, by name.
    assert chosen["language"].count("flash") >= 0.75 * len(chosen["language"])
    assert chosen["reasoning"].count("solver") >= 0.75 * len(chosen["reasoning"])


@pytest.mark.slow
def test_training_can_start_from_the_adapter_merged_once_into_a_plain_model_folder(tmp_path):
    """``train grpo --model <adapter folder>``: the merged folder loads as a plain model with the
    adapter's weights, and a second call finds it instead of merging again."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from conductor_env.agents.training.model import resolve_model_path
    from conductor_env.workers.local_adapter import load_causal_lm, merged_model_folder
    from conductor_env.workers.local_models import ensure_model

    adapter = shipped_conductor(NAME)
    merged = merged_model_folder(adapter, cache=tmp_path)
    assert merged.parent == tmp_path and not any(p.name.startswith(merged.name + ".partial") for p in tmp_path.iterdir())
    written = (merged / "config.json").stat().st_mtime_ns
    assert merged_model_folder(adapter, cache=tmp_path) == merged and (merged / "config.json").stat().st_mtime_ns == written
    # The Conductor's prompt and plan order come along, so llm:<merged folder> plays as the adapter does.
    assert (merged / "conductor.json").read_bytes() == (adapter / "conductor.json").read_bytes()
    assert not (merged / "adapter_config.json").exists()
    (merged / "conductor.json").unlink()  # merged by an older version: found, and completed
    assert merged_model_folder(adapter, cache=tmp_path) == merged and (merged / "conductor.json").is_file()

    plain = AutoModelForCausalLM.from_pretrained(str(merged), dtype=torch.float32, local_files_only=True)
    reference = load_causal_lm(adapter, dtype=torch.float32)
    base = AutoModelForCausalLM.from_pretrained(str(ensure_model("gemma3-270m")), dtype=torch.float32, local_files_only=True)
    name = "model.layers.17.self_attn.q_proj.weight"  # a weight the adapter changes (top 6 layers)
    trained, original = plain.state_dict()[name], base.state_dict()[name]
    assert torch.equal(trained, reference.state_dict()[name]) and not torch.allclose(trained, original)
    assert AutoTokenizer.from_pretrained(str(merged)).encode("Plan: flash=0.") == AutoTokenizer.from_pretrained(str(ensure_model("gemma3-270m"))).encode("Plan: flash=0.")
    # Without an adapter nothing is written: a model folder or name passes through.
    assert merged_model_folder(merged, cache=tmp_path) == merged
    assert resolve_model_path(str(merged)) == str(merged)
