"""Training profiles of ``conductor-env train grpo``: the paper's GPU recipe, or one that fits a CPU.

A profile is a named set of :class:`~conductor_env.agents.grpo.recipe.GRPORecipe` fields. ``gpu`` is the
recipe's own defaults, the paper's hyperparameters. ``cpu`` is what made the local Gemma 3 270M
Conductor learn to route on a 2-core CPU in BENCHMARKS.md ("Reference agents: GRPO learning
run"), shortened to finish in minutes: LoRA on the top layers, the compact prompt with the
workers' names shown, a format warm start, a 34-token completion limit (a warm-started
single-step workflow is about 25 tokens), lr 2e-4 after a linear warm-up, balanced domains, and a
held-out evaluation before and after GRPO. Its default env is Conductor-RG-v0 over six
reasoning-gym datasets (two per domain) with the ``experts`` pool, one simulated expert per
domain, where a rising reward means the Conductor learned which worker suits which question.

With no ``--profile``, :func:`choose_profile` picks ``gpu`` when CUDA is present and ``cpu``
otherwise, and says why in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

#: The reasoning-gym datasets of the CPU profile and of the GRPO learning benchmark (two per domain).
CPU_DATASETS = ("basic_arithmetic", "chain_sum", "letter_counting", "spell_backward", "syllogism", "family_relationships")


@dataclass(frozen=True)
class Profile:
    """A named set of recipe settings.

    Attributes:
        name: ``gpu`` or ``cpu`` (the ``--profile`` value).
        summary: What the profile is, in a few words (printed at start).
        settings: :class:`~conductor_env.agents.grpo.recipe.GRPORecipe` fields that differ from the
            recipe's defaults (empty: the paper's recipe).
    """

    name: str
    summary: str
    settings: Mapping[str, Any] = field(default_factory=dict)


GPU_PROFILE = Profile("gpu", "the paper's hyperparameters, full fine-tuning")

CPU_PROFILE = Profile(
    "cpu",
    "LoRA on the top 6 layers, compact prompt, format warm start, 34-token workflows, lr 2e-4 after a warm-up",
    {
        "model": "gemma3-270m",
        "env": "Conductor-RG-v0",
        "pool": "experts",
        "split": "train",
        "env_options": {"examples": "none", "show_names": True},
        "suite_options": {"datasets": list(CPU_DATASETS), "size": 20},
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
    why = "a CUDA GPU is present" if cuda else "no CUDA GPU found; --profile gpu runs the paper's recipe anyway"
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
