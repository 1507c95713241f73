"""The checks of a GRPO recipe against this machine, run before any model loads.

Loading a Conductor model and building the trainer takes a while; a typo in the model name, an
env id that does not exist, a pool of API workers without their keys, a recipe that needs a GPU
on a machine without one, or a completion limit shorter than any workflow should be reported at
once instead. The rules themselves live in :mod:`conductor_env.envs.preflight` (shared with
``conductor-env eval``) and in the recipe's validation; :func:`check_recipe` runs them all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from conductor_env.agents.training.recipe import GRPORecipe, RecipeError
from conductor_env.envs.preflight import PreflightError, check_conductor_env, check_model_reference, missing_api_keys, model_on_disk

#: The shortest workflow text the env accepts: one worker, a one-word subtask, no access.
_SHORTEST_WORKFLOW = 'model_id = [0]\nsubtasks = ["x"]\naccess_list = [[]]'


def check_pool(pool: Any) -> None:
    """Fails when the pool cannot load or one of its workers has no API key in the environment.

    Raises:
        RecipeError: Naming the worker and the variable to set.
    """
    from conductor_env.workers.pool import PoolError, load_pool

    try:
        loaded = load_pool(pool)
    except PoolError as error:
        raise RecipeError(f"pool {pool!r}: {str(error).splitlines()[0]}") from error
    missing = missing_api_keys(loaded)
    if missing:
        name, variable = missing[0]
        raise RecipeError(f"pool {loaded.name!r}: worker {name!r} needs ${variable}; set it, or train against --pool simulated (or experts)")


def shortest_workflow_tokens(recipe: GRPORecipe, tokenizer: Any | None = None) -> int:
    """Returns the token count of the shortest completion that can score: the shortest valid workflow,
    or the warm start's target (its subtask and domain line) when the recipe has a warm start.

    Args:
        recipe: The recipe.
        tokenizer: Its model's tokenizer (``None``: estimated at 3 characters a token).
    """
    text = _SHORTEST_WORKFLOW
    if recipe.warm_start is not None:
        from conductor_env.agents.baselines import build_workflow
        from conductor_env.agents.training.warmstart import WARM_START_SUBTASK

        text = build_workflow([(0, recipe.warm_start.subtask or WARM_START_SUBTASK, False)]).render()
        if recipe.warm_start.preamble:
            text = f"Domain: reasoning.\n{text}"
    if tokenizer is None:
        return -(-len(text) // 3)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def check_completion_length(recipe: GRPORecipe, tokenizer: Any | None = None) -> None:
    """Fails when every completion would be cut off before it holds a workflow.

    Raises:
        RecipeError: Naming the limit to pass.
    """
    needed = shortest_workflow_tokens(recipe, tokenizer)
    limit = recipe.grpo.max_completion_length
    if limit < needed:
        raise RecipeError(
            f"--max-completion-length {limit} is shorter than any workflow ({needed} tokens): every completion would be cut off and score 0; pass --max-completion-length {needed + 6} or more"
        )


def check_machine(recipe: GRPORecipe, *, cuda: bool, requires: Iterable[str] = (), vllm: bool | None = None) -> None:
    """Fails when this machine cannot run the recipe: no CUDA GPU where one is required or vLLM
    is asked for, vLLM asked for and not installed, or a hub model neither cached nor downloadable.

    Args:
        recipe: The recipe.
        cuda: Whether a CUDA GPU is available.
        requires: The recipe file's requirements (``"cuda"``).
        vllm: Whether vLLM is installed (``None``: look).

    Raises:
        RecipeError: Naming what is missing and the fix.
    """
    from conductor_env.agents.training.trl_config import vllm_installed

    use_vllm = recipe.grpo.use_vllm
    if not cuda and ("cuda" in requires or use_vllm):
        why = "this recipe needs a CUDA GPU" if "cuda" in requires else "--vllm needs a CUDA GPU"
        raise RecipeError(f"{why} and none was found; run with --recipe cpu (or --no-vllm)")
    if use_vllm and not (vllm_installed() if vllm is None else vllm):
        raise RecipeError("this run generates with vLLM (colocated), which is not installed: pip install vllm, or pass --no-vllm")
    model = recipe.model.name
    if not model_on_disk(model) and "/" in model and not Path(model).expanduser().exists():
        unreachable = _hub_unreachable(model)
        if unreachable is not None:
            raise RecipeError(f"model {model!r} is not on this machine and cannot be downloaded: {unreachable}; download it first (huggingface-cli download {model}) or pass --model <folder>")


def _hub_unreachable(model: str) -> str | None:
    """Returns why ``model`` cannot be downloaded from the hub now (``None``: it can)."""
    if any(os.environ.get(name, "").lower() in ("1", "true", "yes", "on") for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return "offline mode is set (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE)"
    try:
        from huggingface_hub import HfApi

        HfApi().model_info(model, timeout=10)
    except Exception as error:  # noqa: BLE001 - any failure means the download would fail later
        first = str(error).splitlines()[0][:120] if str(error) else ""
        return f"the Hugging Face hub cannot be reached ({type(error).__name__}: {first})"
    return None


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


def check_recipe(recipe: GRPORecipe, *, cuda: bool | None = None, requires: Iterable[str] = ()) -> None:
    """Runs every check before a model loads.

    Args:
        recipe: The recipe (already validated on construction).
        cuda: Whether a CUDA GPU is available (``None``: ask torch).
        requires: The recipe file's requirements.

    Raises:
        RecipeError: The first problem found, as one line naming the fix.
    """
    from conductor_env.agents.training.trl_config import cuda_available

    try:
        check_model_reference(recipe.model.name)
        check_conductor_env(recipe.env.id)
    except PreflightError as error:
        raise RecipeError(str(error)) from error
    check_machine(recipe, cuda=cuda_available() if cuda is None else cuda, requires=requires)
    check_pool(recipe.env.pool)
    check_completion_length(recipe, local_tokenizer(recipe.model.name))
