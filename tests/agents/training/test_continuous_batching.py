"""TRL's continuous-batching generation under bf16 mixed precision, with the real Gemma 3 270M,
Accelerate and TRL on the CPU: Accelerate's float32 output conversion breaks it (every request
fails on the ``PagedAttentionCache``), and the trainer's fix makes it generate and train."""

from __future__ import annotations

import math

import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.agents.training.continuous_batching import generate_batch_without_output_conversion
from conductor_env.agents.training.recipe import EnvSettings, GRPORecipe, GRPOSettings, ModelSettings
from conductor_env.agents.training.reward import REWARD_NAME
from conductor_env.agents.training.trainer import build_trainer

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_accelerator_state")]


@pytest.fixture
def fresh_accelerator_state():
    """Accelerate keeps one process-wide state, and an earlier test's trainer fixed it to no mixed
    precision; these tests need bf16, and later tests need the state they had."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(True)
    yield
    AcceleratorState._reset_state(True)


def prepared_bf16_model():
    """Gemma 3 270M in bf16, prepared by Accelerate for bf16 mixed precision as the trainer's is on a GPU."""
    import torch
    from accelerate import Accelerator
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from conductor_env.agents.training.model import resolve_model_path

    path = resolve_model_path("gemma3-270m")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = Accelerator(mixed_precision="bf16", cpu=True).prepare(AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16))
    assert "_original_forward" in model.__dict__  # Accelerate wrapped the forward for mixed precision
    prompts = [tokenizer(f"Question {i}: what is {i} + {i}?")["input_ids"] for i in range(3)]
    config = GenerationConfig(max_new_tokens=4, do_sample=True, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, disable_compile=True)
    return model, prompts, config


def test_generate_batch_fails_under_mixed_precision_and_the_fix_generates():
    import torch

    model, prompts, config = prepared_bf16_model()
    with torch.no_grad():
        broken = model.generate_batch(prompts, generation_config=config, progress_bar=False)
    # The control: the upstream failure the fix exists for (if this stops failing, the fix can go).
    assert [o.error for o in broken.values()] == ["'PagedAttentionCache' object has no attribute 'float'"] * 3
    wrapped_forward = model.forward
    generate_batch_without_output_conversion(model)
    with torch.no_grad():
        fixed = model.generate_batch(prompts, generation_config=config, progress_bar=False)
    assert [o.error for o in fixed.values()] == [None] * 3
    assert all(len(o.generated_tokens) == 4 for o in fixed.values())
    assert model.forward == wrapped_forward  # training keeps Accelerate's mixed-precision forward


def test_a_grpo_step_with_continuous_batching_under_bf16(tmp_path):
    recipe = GRPORecipe(
        model=ModelSettings(name="gemma3-270m"),
        env=EnvSettings(id="Conductor-RG-v0", pool="simulated", suite_options={"datasets": ["basic_arithmetic"], "size": 3}, options={"examples": "none"}, problems=2),
        grpo=GRPOSettings(
            max_steps=1,
            questions_per_step=1,
            num_generations=2,
            max_completion_length=8,
            learning_rate=1e-5,
            trainer_options={"use_transformers_continuous_batching": True, "bf16": True},
        ),
        output_dir=str(tmp_path),
    )
    trainer, reward = build_trainer(recipe)
    try:
        trainer.train()
    finally:
        reward.close()
    steps = [entry for entry in trainer.state.log_history if f"rewards/{REWARD_NAME}/mean" in entry]
    assert len(steps) == 1 and not math.isnan(steps[0][f"rewards/{REWARD_NAME}/mean"])
    assert len(reward.records) == 2  # both completions generated and played in the env
