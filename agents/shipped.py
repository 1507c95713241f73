"""Trained Conductors that ship with the package, usable by name as ``llm:<name>``.

Each is a small LoRA adapter folder (``adapter_config.json``, ``adapter_model.safetensors``,
``conductor.json``) over a local base model, which the local backend loads and merges; its
``README.md`` gives the command that reproduces it.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

#: The file beside a saved Conductor's weights that says how it was trained to be prompted
#: (its prompt builder and output limit); ``llm:<folder>`` reads it.
CONDUCTOR_CONFIG = "conductor.json"

#: Shipped trained Conductors: name -> folder under ``agents/conductors/``.
SHIPPED_CONDUCTORS: dict[str, str] = {
    # Gemma 3 270M trained with `conductor-env train grpo --recipe orchestrate` (docs/ORCHESTRATION.md).
    "orchestra-gemma3-270m": "orchestra-gemma3-270m",
    # Gemma 3 270M trained on the orchestra-judge pool (BENCHMARKS.md, "Learning to orchestrate"): a workflow shape per domain.
    "orchestra-judge-gemma3-270m": "orchestra-judge-gemma3-270m",
}


def shipped_conductor(name: str) -> Path | None:
    """Returns the folder of the shipped Conductor called ``name``, or ``None`` when there is none.

    Args:
        name: A key of :data:`SHIPPED_CONDUCTORS`.

    Returns:
        The adapter folder, when it is installed.
    """
    folder = SHIPPED_CONDUCTORS.get(name)
    if folder is None:
        return None
    path = Path(str(importlib.resources.files("conductor_env.agents") / "conductors" / folder))
    return path if (path / "adapter_config.json").is_file() else None
