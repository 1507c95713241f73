"""The :class:`trl.GRPOConfig` of a recipe, with the CPU or CUDA settings picked here.

On a CPU: float32, no vLLM. On a GPU: bfloat16 mixed precision (unless the recipe turns it
off), activation checkpointing and colocated vLLM when vLLM is installed (or as the recipe says).
One optimizer step consumes one generation batch of ``questions_per_step x num_generations``
completions, split into passes of ``per_device_batch_size`` with gradient accumulation.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from conductor_env.agents.training.recipe import GRPORecipe, RecipeError


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU."""
    import torch

    return bool(torch.cuda.is_available())


def vllm_installed() -> bool:
    """Whether vLLM can be imported."""
    return importlib.util.find_spec("vllm") is not None


def batch_size(total: int, requested: int | None) -> int:
    """The completions per pass: ``requested`` (the recipe's validation checked that it divides
    ``total``), or the largest divisor of ``total`` up to 8."""
    if requested is not None:
        return requested
    return max(d for d in range(1, min(8, total) + 1) if total % d == 0)


def grpo_config(recipe: GRPORecipe) -> Any:
    """Returns the :class:`trl.GRPOConfig` of ``recipe`` on this machine.

    Raises:
        RecipeError: When the recipe asks for vLLM without a CUDA GPU.
    """
    from trl import GRPOConfig

    return GRPOConfig(**grpo_options(recipe, cuda=cuda_available(), vllm=vllm_installed()))


def grpo_options(recipe: GRPORecipe, *, cuda: bool, vllm: bool) -> dict[str, Any]:
    """Returns the :class:`trl.GRPOConfig` fields of ``recipe`` on a machine with or without a
    CUDA GPU and vLLM.

    The recipe's ``trainer_options`` come last and win. On a GPU the model trains under bfloat16
    mixed precision and TRL loads it in bfloat16, unless ``trainer_options`` sets ``bf16 = false``
    (the ``gpu`` recipe: docs/TRAINING.md, "On a GPU"); then it stays in float32 throughout.

    Raises:
        RecipeError: When the recipe asks for vLLM without a CUDA GPU.
    """
    grpo = recipe.grpo
    total = grpo.questions_per_step * grpo.num_generations
    per_pass = batch_size(total, grpo.per_device_batch_size)
    use_vllm = (cuda and vllm) if grpo.use_vllm is None else grpo.use_vllm
    if use_vllm and not cuda:
        raise RecipeError("use_vllm needs a CUDA GPU; leave use_vllm unset to pick it automatically")
    options: dict[str, Any] = dict(
        output_dir=recipe.output_dir,
        max_steps=grpo.max_steps,
        per_device_train_batch_size=per_pass,
        gradient_accumulation_steps=total // per_pass,
        num_generations=grpo.num_generations,
        learning_rate=grpo.learning_rate,
        lr_scheduler_type=grpo.lr_scheduler_type,
        warmup_steps=grpo.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        epsilon=grpo.epsilon,
        beta=grpo.beta,
        loss_type=grpo.loss_type,
        scale_rewards=grpo.scale_rewards,
        max_completion_length=grpo.max_completion_length,
        temperature=grpo.temperature,
        use_cpu=not cuda,
        bf16=cuda,
        activation_checkpointing=cuda,  # saves GPU memory; on a CPU it only costs time
        use_vllm=use_vllm,
        logging_steps=grpo.logging_steps,
        save_strategy="steps" if grpo.save_steps else "no",
        seed=recipe.seed,
        report_to=[name.strip() for name in grpo.report_to.split(",")] if "," in grpo.report_to else grpo.report_to,
    )
    if grpo.save_steps:
        options["save_steps"] = grpo.save_steps
    if recipe.env.balance_domains:
        options["shuffle_dataset"] = False  # keep build_dataset's round-robin order
    if use_vllm:
        options["vllm_mode"] = "colocate"
    options.update(grpo.trainer_options)
    if cuda and options["bf16"] and "model_init_kwargs" not in grpo.trainer_options:
        options["model_init_kwargs"] = {"dtype": "bfloat16"}
    return options
