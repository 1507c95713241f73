"""GRPO with TRL: train a Conductor LLM against any Conductor env.

The adapter is a TRL *reward function over completions*:

- the dataset has one row per problem: the chat prompt is the env's observation ``prompt`` after
  ``reset(seed=episode_seed, options={"problem_id": ...})``, and the row keeps ``problem_id`` and
  ``episode_seed``, so every completion of a GRPO group sees the same question, sub-pool and
  worker sampling seeds;
- the completion is the action: :class:`ConductorReward` resets one env per completion to that
  row, steps them concurrently (``astep`` under ``asyncio.gather`` on the package's event loop),
  and returns the env's reward;
- a completion whose episode hit an infra error (a worker failing after retries) gets ``None``:
  TRL (>= 1.x) treats a row where every reward function returned ``None`` as unscorable, leaves
  it out of the group baseline and of the logged reward, and gives it advantage 0, so an outage
  never punishes the policy;
- with ``max_rounds > 1`` (or ``self_call=True``) the later actions of the episode (next rounds,
  self-call frames) come from a follow-up policy, by default the model being trained, sampled
  with ``transformers.generate``; the first completion is rewarded with the paper's discounted
  credit ``info["round_credit"][0]`` (discount ``round_discount``, 0.25 by default). Only the
  first-round completion is trained on; later rounds act as the environment's continuation.

The paper's hyperparameters are the defaults of :class:`GRPORecipe` (and of
``conductor-env train grpo``): 200 steps of 4 questions x 64 samples, lr 1e-6 cosine, 3% warmup,
clip 0.2, beta 0, loss ``bnpo``, group reward scaling, 1024 completion tokens at temperature 1.0,
vLLM colocated when a CUDA GPU and vLLM are present. On a CPU it runs with ``use_cpu=True`` in
float32, e.g. with the local Gemma 3 270M as the Conductor; there TRL's loss is made to project
only the completion tokens through the LM head, as it does on a GPU
(:func:`score_only_completions_on_cpu`). A tiny base model rarely writes the three lists on its
own, so :class:`GRPORecipe` offers an optional supervised format warm start
(:mod:`conductor_env.agents.warmstart`; off by default, not in the paper).

The modules, which import one way with the trainer at the top:

- :mod:`~conductor_env.agents.grpo.prompts`: the prompt builders (``full``, ``compact``);
- :mod:`~conductor_env.agents.grpo.reward`: :class:`EnvFactory`, :class:`ConductorReward`,
  :class:`EpisodeRecord`;
- :mod:`~conductor_env.agents.grpo.data`: :func:`build_dataset`;
- :mod:`~conductor_env.agents.grpo.model`: model and tokenizer loading, LoRA, the CPU patch of
  TRL's LM head, :class:`ModelPolicy`;
- :mod:`~conductor_env.agents.grpo.recipe`: :class:`GRPORecipe` and :func:`grpo_config`;
- :mod:`~conductor_env.agents.grpo.saving`: the saved Conductor and :class:`GRPORun`;
- :mod:`~conductor_env.agents.grpo.trainer`: :func:`build_trainer` and :func:`train_grpo`;
- :mod:`~conductor_env.agents.grpo.adapter`: :func:`export_adapter`, a saved Conductor as a small
  LoRA adapter over its base model.

This package re-exports their public names.

Typical use::

    from conductor_env.agents.grpo import GRPORecipe, train_grpo
    run = train_grpo(GRPORecipe(env="Conductor-RG-v0", pool="simulated", max_steps=50))
    print(run.rewards)  # the env's mean reward per step, as TRL logged it
"""

from conductor_env.agents.grpo.adapter import AdapterReport, export_adapter
from conductor_env.agents.grpo.data import build_dataset
from conductor_env.agents.grpo.model import ModelPolicy, load_tokenizer, lora_config, resolve_model_path, score_only_completions_on_cpu
from conductor_env.agents.grpo.prompts import PROMPTS, PromptBuilder, compact_prompt, full_prompt, prompt_builder_of
from conductor_env.agents.grpo.recipe import GRPORecipe, grpo_config
from conductor_env.agents.grpo.reward import REWARD_NAME, ConductorReward, EnvFactory, EpisodeRecord, completion_text
from conductor_env.agents.grpo.saving import CONDUCTOR_CONFIG, GRPORun, conductor_config, logged_rewards, save_conductor
from conductor_env.agents.grpo.trainer import build_trainer, train_grpo

__all__ = [
    "AdapterReport",
    "CONDUCTOR_CONFIG",
    "PROMPTS",
    "REWARD_NAME",
    "ConductorReward",
    "EnvFactory",
    "EpisodeRecord",
    "GRPORecipe",
    "GRPORun",
    "ModelPolicy",
    "PromptBuilder",
    "build_dataset",
    "build_trainer",
    "compact_prompt",
    "completion_text",
    "conductor_config",
    "export_adapter",
    "full_prompt",
    "grpo_config",
    "load_tokenizer",
    "logged_rewards",
    "lora_config",
    "prompt_builder_of",
    "resolve_model_path",
    "save_conductor",
    "score_only_completions_on_cpu",
    "train_grpo",
]
