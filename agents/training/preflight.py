"""Checks of a GRPO recipe that run before any model loads, each failing with one line naming the fix.

Loading a Conductor model and building the trainer takes a while; a typo in the model name, an
env id that does not exist, a pool of API workers without their keys, or settings under which
GRPO cannot learn should be reported at once instead. :func:`check_recipe` runs them all.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from conductor_env.agents.training.recipe import GRPORecipe
from conductor_env.agents.prompts import PROMPTS

#: A Hugging Face hub id (``org/name``), which may be downloaded on first use.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

#: The environment variable each HTTP backend reads its key from when ``api_key_env`` is unset.
_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

#: The shortest workflow text the env accepts: one worker, a one-word subtask, no access.
_SHORTEST_WORKFLOW = 'model_id = [0]\nsubtasks = ["x"]\naccess_list = [[]]'


class RecipeError(ValueError):
    """A recipe that cannot train; the message is one line with the fix."""


def check_model(model: str) -> None:
    """Fails unless ``model`` is a known local model, a model folder, or a hub id.

    Raises:
        RecipeError: For anything else (a typo in a local name, a missing folder).
    """
    from conductor_env.workers import local_models as models

    if model in models.MODELS or Path(model).expanduser().is_dir():
        return
    looks_like_path = model.startswith((".", "/", "~")) or os.sep in model and not _HUB_ID.match(model)
    if _HUB_ID.match(model) and not looks_like_path:
        return
    known = ", ".join(sorted(models.MODELS))
    raise RecipeError(f"model {model!r} not found: pass a local model name ({known}), a model folder, or a hub id like Qwen/Qwen2.5-0.5B-Instruct")


def check_env(env: str) -> None:
    """Fails unless ``env`` is a registered Conductor gym id or a task-suite name.

    Raises:
        RecipeError: For an unknown id, or a gym id that is not a Conductor env.
    """
    import gymnasium as gym

    from conductor_env.envs.setup import ENTRY_POINT, conductor_env_ids
    from conductor_env.tasks.registry import suite_names

    conductor_ids = conductor_env_ids()
    if env in gym.registry:
        if gym.registry[env].entry_point != ENTRY_POINT:
            raise RecipeError(f"{env!r} is not a Conductor env: pass --env one of {', '.join(conductor_ids)}")
        return
    if env in suite_names():
        return
    raise RecipeError(f"env {env!r} does not exist: pass --env one of {', '.join(conductor_ids)} (or a suite name)")


def check_pool(pool: Any) -> None:
    """Fails when the pool cannot load or one of its API workers has no key in the environment.

    Raises:
        RecipeError: Naming the worker and the variable to set.
    """
    from conductor_env.workers.pool import PoolError, load_pool

    try:
        loaded = load_pool(pool)
    except PoolError as error:
        raise RecipeError(f"pool {pool!r}: {str(error).splitlines()[0]}") from error
    for spec in loaded.specs:
        default = _KEY_ENV.get(spec.backend)
        if default is None or (spec.backend == "openai" and spec.base_url):
            continue  # no key needed (simulated, local, replay, or a keyless server)
        variable = spec.api_key_env or default
        if not os.environ.get(variable):
            raise RecipeError(f"pool {loaded.name!r}: worker {spec.name!r} needs ${variable}; set it, or train against --pool simulated (or experts)")


def shortest_workflow_tokens(recipe: GRPORecipe, tokenizer: Any | None = None) -> int:
    """Returns the token count of the shortest completion that can score: the shortest valid workflow,
    or the warm start's target (its subtask and domain line) when the recipe has a warm start.

    Args:
        recipe: The recipe.
        tokenizer: Its model's tokenizer (``None``: estimated at 3 characters a token).
    """
    text = _SHORTEST_WORKFLOW
    if recipe.format_warmup_steps > 0:
        from conductor_env.agents.baselines import build_workflow

        text = build_workflow([(0, recipe.format_warmup_subtask, False)]).render()
        if recipe.format_warmup_preamble:
            text = f"Domain: reasoning.\n{text}"
    if tokenizer is None:
        return -(-len(text) // 3)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def check_learnable(recipe: GRPORecipe, tokenizer: Any | None = None) -> None:
    """Fails for settings under which GRPO has nothing to learn from.

    Raises:
        RecipeError: For groups of fewer than two samples, no steps, a batch size that does not
            divide the step's completions, or a completion limit shorter than any workflow.
    """
    if recipe.num_generations < 2:
        raise RecipeError("GRPO needs at least 2 samples per question for a group baseline: pass --num-generations 2 or more")
    if recipe.questions_per_step < 1 or recipe.max_steps < 1:
        raise RecipeError("--questions-per-step and --max-steps must be at least 1")
    total = recipe.questions_per_step * recipe.num_generations
    if recipe.per_device_batch_size is not None and (recipe.per_device_batch_size < 1 or total % recipe.per_device_batch_size):
        raise RecipeError(f"--per-device-batch-size {recipe.per_device_batch_size} must divide questions x generations = {total}")
    if recipe.prompt not in PROMPTS:
        raise RecipeError(f"unknown prompt {recipe.prompt!r}: pass --prompt {' or '.join(sorted(PROMPTS))}")
    needed = shortest_workflow_tokens(recipe, tokenizer)
    if recipe.max_completion_length < needed:
        raise RecipeError(
            f"--max-completion-length {recipe.max_completion_length} is shorter than any workflow ({needed} tokens): "
            f"every completion would be cut off and score 0; pass --max-completion-length {needed + 6} or more"
        )


def local_tokenizer(model: str) -> Any | None:
    """Returns the tokenizer of a model already on this machine (no download, no weights), else ``None``."""
    from conductor_env.workers import local_models as models

    path: Path | None = None
    if model in models.MODELS:
        cached = models.cached_model_path(model)
        path = cached if models.is_exported(cached) else None
    elif Path(model).expanduser().is_dir():
        path = Path(model).expanduser()
    if path is None:
        return None
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError):
        return None


def check_recipe(recipe: GRPORecipe) -> None:
    """Runs every check before a model loads.

    Raises:
        RecipeError: The first problem found, as one line naming the fix.
    """
    check_model(str(recipe.model))
    check_env(recipe.setup.env_id)
    check_pool(recipe.setup.pool)
    check_learnable(recipe, local_tokenizer(str(recipe.model)))
