"""``train grpo --warm-start-only``: the format warm start saved once, as a Conductor folder that
GRPO runs start from and ``llm:<dir>`` plays (the policy before GRPO)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.shipped import CONDUCTOR_CONFIG
from conductor_env.agents.training.recipe import EnvSettings, GRPORecipe, GRPOSettings, ModelSettings, WarmStartSettings
from conductor_env.agents.training.trainer import save_warm_start
from conductor_env.cli import main
from conductor_env.event_loop import run_sync

SMALL_RG = {"datasets": ["basic_arithmetic", "spell_backward"], "size": 3}


def test_a_recipe_without_a_warm_start_is_refused_before_any_model_loads(tmp_path, capsys):
    with pytest.raises(ValueError, match="--format-warmup-steps N"):
        save_warm_start(GRPORecipe(output_dir=str(tmp_path)))
    assert main(["train", "grpo", "--recipe", "cpu", "--format-warmup-steps", "0", "--warm-start-only", "--output-dir", str(tmp_path)]) == 2
    assert "no format warm start to save" in capsys.readouterr().err
    assert not (tmp_path / "warm_start").exists()


@pytest.mark.slow
def test_the_saved_warm_start_is_a_conductor_that_plays_and_trains(tmp_path):
    import torch
    from safetensors.torch import load_file

    from conductor_env.agents import make_policy
    from conductor_env.agents.training.model import resolve_model_path
    from conductor_env.agents.training.trainer import build_trainer

    env = EnvSettings(pool="orchestra", suite_options=SMALL_RG, options={"examples": "none", "show_names": True}, problems=4)
    setup = env.setup()
    recipe = GRPORecipe(
        model=ModelSettings(prompt="roster", lora_r=8, lora_top_layers=2),
        env=env,
        output_dir=str(tmp_path),
        grpo=GRPOSettings(max_completion_length=24),
        warm_start=WarmStartSettings(steps=2, shapes="orchestrate", plan=True, preamble=True, all_layers=True),
    )
    out = save_warm_start(recipe)
    assert out == tmp_path / "warm_start"
    # warm_start.all_layers: the warm start changed the bottom layer too, not only the top 2 GRPO adapts.
    base, warm = (load_file(str(folder / "model.safetensors")) for folder in (Path(resolve_model_path("gemma3-270m")), out))
    for layer in (0, 17):
        name = f"model.layers.{layer}.self_attn.q_proj.weight"
        assert not torch.equal(base[name], warm[name].to(base[name].dtype)), name
    config = json.loads((out / CONDUCTOR_CONFIG).read_text())
    assert config["prompt"] == "roster" and config["pool"] == "orchestra"
    # The folder is a Conductor the eval CLI plays, with the recipe's prompt ...
    policy = make_policy(f"llm:{out}")
    env = setup.make()
    try:
        observation, _ = env.reset(seed=0)
        [action] = policy.act([observation])
        assert isinstance(action, str)
        assert env.step(action)[1] >= 0.0  # a reward, parsed or not: the env scored it
    finally:
        env.close()
        run_sync(policy.aclose())
    # ... and the model a GRPO run starts from (no second warm start).
    grpo = GRPORecipe(
        model=ModelSettings(name=str(out), lora_r=8, lora_top_layers=2),
        env=EnvSettings(pool="orchestra", suite_options=SMALL_RG, options={"examples": "none", "show_names": True}, problems=2),
        grpo=GRPOSettings(max_steps=1, questions_per_step=1, num_generations=2, max_completion_length=16),
        output_dir=str(tmp_path / "grpo"),
    )
    trainer, reward = build_trainer(grpo)
    try:
        trainer.train()
    finally:
        reward.close()
    assert len(reward.records) == 2
