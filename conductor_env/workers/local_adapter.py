"""LoRA adapter folders for the ``local`` backend: a small trained delta on top of a named base.

A folder holding PEFT's ``adapter_config.json`` (e.g. one written by
``conductor-env train export-adapter``) is not a full model: it names its base model in
``base_model_name_or_path`` (a local model name such as ``gemma3-270m``, exported on first use by
:func:`~conductor_env.workers.local_models.resolve_model`, or a model folder). Loading it loads that
base, applies the adapter with PEFT and merges it, so generation runs at the base model's speed.
The base's tokenizer is used. Code that needs a plain model folder (GRPO training from a shipped
or exported adapter) gets one from :func:`merged_model_folder`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from conductor_env.calls import WorkerError

#: PEFT's adapter description file; its presence marks an adapter folder.
ADAPTER_CONFIG = "adapter_config.json"


def is_adapter_folder(folder: str | Path) -> bool:
    """Returns True when ``folder`` holds a PEFT adapter (``adapter_config.json``) rather than a model."""
    return (Path(folder) / ADAPTER_CONFIG).is_file()


def adapter_base_path(folder: str | Path) -> Path | None:
    """Returns the base model folder of an adapter folder, exporting a known base on first use.

    Args:
        folder: A model folder or an adapter folder.

    Returns:
        The resolved base folder, or ``None`` when ``folder`` is not an adapter folder.

    Raises:
        WorkerError: When the adapter config is unreadable or names no base.
        ModelExportError: When the base is neither a known local model nor a folder.
    """
    from conductor_env.workers.local_models import resolve_model

    if not is_adapter_folder(folder):
        return None
    config_path = Path(folder) / ADAPTER_CONFIG
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise WorkerError(f"unreadable LoRA adapter config {config_path}: {error}", retryable=False) from error
    base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    if not base:
        raise WorkerError(f"{config_path} names no base model (base_model_name_or_path)", retryable=False)
    return resolve_model(str(base))


def load_causal_lm(folder: str | Path, *, dtype: Any) -> Any:
    """Loads a causal LM from a model folder, or from an adapter folder merged into its base.

    Args:
        folder: A ``transformers`` model folder or a PEFT LoRA adapter folder.
        dtype: The torch dtype of the weights.

    Returns:
        A ``transformers`` model (for an adapter: the base with the adapter merged in).

    Raises:
        WorkerError: When an adapter folder is given and ``peft`` is not installed, or its config is bad.
    """
    from transformers import AutoModelForCausalLM

    base = adapter_base_path(folder)
    if base is None:
        return AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype, local_files_only=True)
    try:
        from peft import PeftModel
    except ImportError as error:
        raise WorkerError(
            f"{folder} is a LoRA adapter; loading it needs peft: pip install 'conductor-env[local]'",
            retryable=False,
        ) from error
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=dtype, local_files_only=True)
    return PeftModel.from_pretrained(model, str(folder), is_trainable=False).merge_and_unload()


def _copy_sidecar_files(adapter: str | Path, merged: Path) -> None:
    """Copies the adapter folder's JSON files other than its config that ``merged`` lacks."""
    for path in Path(adapter).glob("*.json"):
        if path.name != ADAPTER_CONFIG and not (merged / path.name).exists():
            shutil.copyfile(path, merged / path.name)


def merged_model_folder(folder: str | Path, *, cache: str | Path | None = None) -> Path:
    """Returns a full model folder for ``folder``: itself, or for an adapter its base with it merged.

    The merged model and the base's tokenizer are written once, under a name made from the
    adapter's files and its base, and found there on later calls. Other JSON files the adapter
    folder carries (a trained Conductor's ``conductor.json``: its prompt and plan order) are
    copied beside them, so the merged folder is the same Conductor.

    Args:
        folder: A ``transformers`` model folder or a PEFT LoRA adapter folder.
        cache: Where merged models are kept (default: ``merged/`` in the conductor-env cache).

    Returns:
        A folder ``from_pretrained`` loads as a plain causal LM.

    Raises:
        WorkerError: When the adapter needs ``peft`` or its config is bad.
        ModelExportError: When the adapter's base is neither a known local model nor a folder.
    """
    from conductor_env.workers.local_models import cache_dir

    base = adapter_base_path(folder)
    if base is None:
        return Path(folder)
    digest = hashlib.sha256(str(base.resolve()).encode())
    for path in sorted(Path(folder).iterdir()):
        if path.is_file() and path.suffix in (".json", ".safetensors", ".bin"):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    out = Path(cache) if cache is not None else cache_dir() / "merged"
    out = out / digest.hexdigest()[:20]
    if (out / "config.json").is_file():
        _copy_sidecar_files(folder, out)  # a folder merged before they were copied
        return out
    import torch
    from transformers import AutoTokenizer

    partial = out.with_name(f"{out.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    load_causal_lm(folder, dtype=torch.float32).save_pretrained(str(partial))
    AutoTokenizer.from_pretrained(str(base), local_files_only=True).save_pretrained(str(partial))
    _copy_sidecar_files(folder, partial)
    try:
        partial.rename(out)  # whole or not at all: a crash mid-write leaves only the partial folder
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)  # another process merged it first
        if not (out / "config.json").is_file():
            raise
    return out
