"""Checks that run before an evaluation or a training run starts, one rule each.

``conductor-env eval`` and ``conductor-env train grpo`` both ask these before any episode is
played or any model loads, so a missing API key, a typo in a model name or an env id that does
not exist is reported at once, the same way for both:

- :func:`missing_api_keys`: which workers of a pool would fail for want of an API key;
- :func:`check_model_reference`: a model is a known local name, a folder, or a hub id;
- :func:`check_conductor_env`: an env is a Conductor gym id or a task-suite name.

Each raises (or returns) with one line that names the fix.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

#: The variable each HTTP backend reads its key from when a pool entry names none.
DEFAULT_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
#: A Hugging Face hub id (``org/name``), which may be downloaded on first use.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class PreflightError(ValueError):
    """A run cannot start; the message is one line with the fix."""


def required_key_variable(spec: WorkerSpec) -> str | None:
    """Returns the environment variable a worker's API key must be in, or ``None`` when it needs none.

    The rule follows the backends: an Anthropic worker always needs a key (its SDK refuses to
    call without one, at any ``base_url``); an OpenAI-compatible worker needs one for OpenAI's
    own endpoint, while a ``base_url`` server is called with a placeholder key unless the entry
    names ``api_key_env`` (then the server is taken to want that key). Other backends need none.
    """
    default = DEFAULT_KEY_VARIABLES.get(spec.backend)
    if default is None:
        return None
    if spec.backend == "openai" and spec.base_url and not spec.api_key_env:
        return None
    return spec.api_key_env or default


def missing_api_keys(pool: WorkerPool, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Returns ``(worker name, variable)`` for each worker whose API key variable is unset or empty."""
    environ = os.environ if environ is None else environ
    missing = []
    for spec in pool.specs:
        variable = required_key_variable(spec)
        if variable and not environ.get(variable):
            missing.append((spec.name, variable))
    return missing


def check_model_reference(model: str) -> None:
    """Fails unless ``model`` is a known local model, a model folder, or a hub id.

    Raises:
        PreflightError: For anything else (a typo in a local name, a missing folder).
    """
    from conductor_env.workers import local_models as models

    if model in models.MODELS or Path(model).expanduser().is_dir():
        return
    looks_like_path = model.startswith((".", "/", "~")) or (os.sep in model and not _HUB_ID.match(model))
    if _HUB_ID.match(model) and not looks_like_path:
        return
    known = ", ".join(sorted(models.MODELS))
    raise PreflightError(f"model {model!r} not found: pass a local model name ({known}), a model folder, or a hub id like Qwen/Qwen2.5-0.5B-Instruct")


def model_on_disk(model: str) -> bool:
    """Whether ``model`` is a known local model, a folder, or a hub id whose files are in the local cache."""
    from conductor_env.workers import local_models as models

    if model in models.MODELS or Path(model).expanduser().is_dir():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(model, "config.json"), str)


def check_conductor_env(env: str) -> None:
    """Fails unless ``env`` is a registered Conductor gym id or a task-suite name.

    Raises:
        PreflightError: For an unknown id, or a gym id that is not a Conductor env.
    """
    import gymnasium as gym

    from conductor_env.envs.setup import ENTRY_POINT, conductor_env_ids
    from conductor_env.tasks.registry import suite_names

    conductor_ids = conductor_env_ids()
    if env in gym.registry:
        if gym.registry[env].entry_point != ENTRY_POINT:
            raise PreflightError(f"{env!r} is not a Conductor env: pass --env one of {', '.join(conductor_ids)}")
        return
    if env in suite_names():
        return
    raise PreflightError(f"env {env!r} does not exist: pass --env one of {', '.join(conductor_ids)} (or a suite name)")
