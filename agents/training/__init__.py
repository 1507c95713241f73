"""Everything that changes a Conductor's weights: GRPO with TRL, the format warm start, held-out
scoring, recipes, preflight checks, progress, SB3 and adapter export.

Policies, the episode loop, the Conductor's prompts and saved Conductors live one level up in
:mod:`conductor_env.agents`, which never imports this package (see docs/TRAINING.md).

The modules, which import one way with the trainer at the top:

- :mod:`~conductor_env.agents.training.recipe`: :class:`GRPORecipe`, the settings of a run, in
  sections; :mod:`~conductor_env.agents.training.recipes`: shipped recipes as TOML files;
  :mod:`~conductor_env.agents.training.flags`: the command-line flags generated from the fields;
- :mod:`~conductor_env.agents.training.reward`: :class:`EnvFactory`, :class:`ConductorReward`
  (a TRL reward function over completions), :class:`EpisodeRecord`;
- :mod:`~conductor_env.agents.training.data`: :func:`build_dataset`, one row per problem;
- :mod:`~conductor_env.agents.training.model`: model and tokenizer loading, LoRA;
- :mod:`~conductor_env.agents.training.saving`: the saved Conductor and :class:`GRPORun`;
- :mod:`~conductor_env.agents.training.trainer`: :func:`build_trainer` and :func:`train_grpo`;
- :mod:`~conductor_env.agents.training.adapter`: :func:`export_adapter`.

Typical use::

    from conductor_env.agents.training import GRPORecipe, train_grpo
    recipe = load_recipe("cpu").build({"grpo": {"max_steps": 8}})
    run = train_grpo(recipe)
    print(run.rewards)  # the env's mean reward per step, as TRL logged it
"""

from conductor_env.agents.training.adapter import AdapterReport, export_adapter
from conductor_env.agents.training.data import build_dataset
from conductor_env.agents.training.model import load_tokenizer, lora_config, resolve_model_path, score_only_completions_on_cpu
from conductor_env.agents.training.recipe import EnvSettings, GRPORecipe, GRPOSettings, HeldOutSettings, ModelSettings, RecipeError, WarmStartSettings
from conductor_env.agents.training.recipes import RecipeFile, load_recipe, recipe_names
from conductor_env.agents.training.reward import REWARD_NAME, ConductorReward, EnvFactory, EpisodeRecord, completion_text
from conductor_env.agents.training.saving import GRPORun, conductor_config, logged_rewards, save_conductor
from conductor_env.agents.training.trainer import build_trainer, train_grpo
from conductor_env.agents.training.trl_config import grpo_config

__all__ = [
    "AdapterReport",
    "REWARD_NAME",
    "ConductorReward",
    "EnvFactory",
    "EnvSettings",
    "EpisodeRecord",
    "GRPORecipe",
    "GRPORun",
    "GRPOSettings",
    "HeldOutSettings",
    "ModelSettings",
    "RecipeError",
    "RecipeFile",
    "WarmStartSettings",
    "build_dataset",
    "build_trainer",
    "completion_text",
    "conductor_config",
    "export_adapter",
    "grpo_config",
    "load_tokenizer",
    "load_recipe",
    "logged_rewards",
    "lora_config",
    "recipe_names",
    "resolve_model_path",
    "save_conductor",
    "score_only_completions_on_cpu",
    "train_grpo",
]
