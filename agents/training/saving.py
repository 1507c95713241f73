"""What a GRPO run leaves behind: the saved Conductor folder, its ``conductor.json``, and the run's
summary (:class:`GRPORun`, written as ``rewards.json``).

A saved Conductor is a plain ``transformers`` model folder; :data:`CONDUCTOR_CONFIG` beside it
tells ``llm:<folder>`` (:mod:`conductor_env.agents.llm`) how it was trained to be prompted.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from conductor_env.agents.shipped import CONDUCTOR_CONFIG
from conductor_env.agents.training.recipe import GRPORecipe
from conductor_env.agents.training.reward import REWARD_NAME, EpisodeRecord


@dataclass
class GRPORun:
    """The outcome of :func:`train_grpo`.

    Attributes:
        rewards: Mean env reward of each optimizer step (TRL's logged ``reward``).
        log_history: TRL's full log.
        final_dir: Where the final Conductor was saved (with LoRA, PEFT's adapter over the model it
            was trained on; either way it loads as ``--policy llm:<final_dir>``).
        records: Every rewarded episode.
        heldout_before: Held-out mean reward before GRPO (after any warm start), when measured.
        heldout_after: Held-out mean reward after GRPO, when measured.
        curve_path: The reward curve PNG, when drawn.
        warnings: The progress warnings printed during the run.
        interrupted_at_step: The optimizer steps done when the run was interrupted (Ctrl-C or SIGTERM);
            ``None`` when it ran to the end. An interrupted run still saves its model and episodes.
    """

    rewards: list[float]
    log_history: list[dict[str, Any]]
    final_dir: str
    records: list[EpisodeRecord]
    heldout_before: Any = None
    heldout_after: Any = None
    curve_path: str | None = None
    warnings: list[str] = field(default_factory=list)
    interrupted_at_step: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Returns a JSON-friendly summary."""
        return {
            "rewards": self.rewards,
            "final_dir": self.final_dir,
            "heldout_before": asdict(self.heldout_before) if self.heldout_before is not None else None,
            "heldout_after": asdict(self.heldout_after) if self.heldout_after is not None else None,
            "warnings": self.warnings,
            "interrupted_at_step": self.interrupted_at_step,
            "log_history": self.log_history,
            "episodes": [asdict(r) for r in self.records],
        }


def conductor_config(recipe: GRPORecipe) -> dict[str, Any]:
    """Returns what a saved Conductor needs to act as it was trained: its prompt and output limit,
    and the env it was trained against (for the ``conductor-env eval`` line)."""
    return {
        "prompt": recipe.model.prompt,
        "max_new_tokens": recipe.grpo.max_completion_length,
        "env": recipe.setup.env_id,
        "pool": recipe.setup.pool if isinstance(recipe.setup.pool, str) else getattr(recipe.setup.pool, "name", None),
        "env_options": recipe.setup.options.changed(),
        "suite_options": dict(recipe.setup.suite_options),
    }


def save_conductor(trainer: Any, recipe: GRPORecipe, final_dir: Path, *, adapter_base: str | None = None) -> None:
    """Saves the trained Conductor with its :data:`CONDUCTOR_CONFIG` and tokenizer.

    A LoRA run is saved with PEFT's own adapter saving, before any merge: the exact adapter
    (a few MB), whose ``base_model_name_or_path`` is ``adapter_base`` (the model the adapter was
    trained on: the recipe's model, or the warm-started model the run saved). ``llm:<folder>``
    and ``--model <folder>`` load it merged into that base. A full fine-tune (or a LoRA model
    without a base to name) is saved as a plain ``transformers`` model folder.
    """
    model = trainer.accelerator.unwrap_model(trainer.model)
    peft_config = getattr(model, "peft_config", None)
    if adapter_base is not None and isinstance(peft_config, dict) and peft_config:
        for config in peft_config.values():
            config.base_model_name_or_path = adapter_base
        model.save_pretrained(str(final_dir))
    elif hasattr(model, "merge_and_unload"):
        model.merge_and_unload().save_pretrained(str(final_dir))
    else:
        trainer.save_model(str(final_dir))
    trainer.processing_class.save_pretrained(str(final_dir))
    write_conductor_config(recipe, final_dir)


def write_conductor_config(recipe: GRPORecipe, folder: Path) -> None:
    """Writes :data:`CONDUCTOR_CONFIG` into a saved model ``folder`` (see :func:`conductor_config`)."""
    (folder / CONDUCTOR_CONFIG).write_text(json.dumps(conductor_config(recipe), indent=1, default=str), encoding="utf-8")


def logged_rewards(log_history: Sequence[dict[str, Any]]) -> list[float]:
    """Returns the per-step mean env reward TRL logged, skipping steps with no scorable sample."""
    values = []
    for entry in log_history:
        value = entry.get(f"rewards/{REWARD_NAME}/mean", entry.get("reward"))
        if isinstance(value, (int, float)) and not math.isnan(value):
            values.append(float(value))
    return values
