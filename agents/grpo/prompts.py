"""The Conductor's user message in GRPO: builders that turn an observation into a prompt.

The trainer, the format warm start, the held-out evaluation and a saved Conductor acting as an
``llm:`` policy all phrase the prompt the same way, so the builders live here, apart from
everything that needs TRL or an env.
"""

from __future__ import annotations

from typing import Callable

from conductor_env.agents.base import Observation

PromptBuilder = Callable[[Observation], str]


def full_prompt(observation: Observation) -> str:
    """The env's own Conductor prompt (the default: instructions, examples, pool, task)."""
    return observation["prompt"]


def compact_prompt(observation: Observation) -> str:
    """A short Conductor prompt: the shown workers, earlier rounds, the task and one instruction.

    About a fifth of the env's prompt without examples, for small models on a CPU that learned
    the action format from a warm start (:mod:`conductor_env.agents.warmstart`) and need not
    read the full instructions every step.
    """
    parts = [f"Workers:\n{observation['workers']}"]
    if observation.get("history"):
        parts.append(f"Earlier rounds:\n{observation['history']}")
    parts.append(f"<task>\n{observation['question']}\n</task>")
    parts.append("Write the workflow as three lists: model_id, subtasks, access_list.")
    return "\n\n".join(parts)


#: Prompt builders by name (``GRPORecipe.prompt``, ``--prompt``).
PROMPTS: dict[str, PromptBuilder] = {"full": full_prompt, "compact": compact_prompt}


def prompt_builder_of(name: str) -> PromptBuilder:
    """Returns the prompt builder called ``name`` (a key of :data:`PROMPTS`)."""
    if name not in PROMPTS:
        raise ValueError(f"unknown prompt {name!r}; use one of {sorted(PROMPTS)}")
    return PROMPTS[name]
