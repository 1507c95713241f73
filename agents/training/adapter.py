"""A saved Conductor as a small LoRA adapter over its base model, instead of a full model folder.

A Conductor trained with LoRA (and merged at save, :func:`~conductor_env.agents.training.saving.save_conductor`)
differs from its base only in a few ``nn.Linear`` weights, each by a low-rank matrix.
:func:`export_adapter` finds those differences, factors each one with a truncated SVD, and
writes a standard PEFT LoRA folder (``adapter_config.json`` + ``adapter_model.safetensors``,
built by PEFT itself) with the run's ``conductor.json``: a few MB that ``llm:<folder>`` loads by
merging the adapter into the base (:mod:`conductor_env.workers.local_adapter`).

Any other difference (embeddings, norms, a weight whose delta has a rank above ``max_rank``) cannot
be held by a LoRA adapter, and the export refuses it, naming the tensors; with ``truncate`` a delta
of higher rank is cut to its largest directions instead (lossy). Finding and factoring the deltas:
:mod:`conductor_env.agents.training.weight_delta`.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conductor_env.agents.shipped import CONDUCTOR_CONFIG
from conductor_env.agents.training.weight_delta import LowRank, WeightDelta, low_rank_factors, weight_deltas
from conductor_env.workers.local_adapter import ADAPTER_CONFIG, is_adapter_folder

#: PEFT's adapter weights file.
ADAPTER_WEIGHTS = "adapter_model.safetensors"

#: The local model name a Conductor is trained from by default.
DEFAULT_BASE = "gemma3-270m"
#: Dtypes the adapter factors may be stored in.
ADAPTER_DTYPES = ("float16", "bfloat16", "float32")


@dataclass(frozen=True)
class AdapterReport:
    """What :func:`export_adapter` wrote.

    Attributes:
        out_dir: The adapter folder.
        base: The base model the adapter applies to.
        ranks: Rank of each adapted module (module path -> rank).
        bytes_written: Size of the folder's files.
        max_abs_error: Largest absolute difference between a weight delta and the product of its
            stored factors (truncation and storage dtype together).
        truncated: Modules whose delta had a higher rank than the adapter holds (``truncate``),
            each with the share of its delta's Frobenius norm the dropped directions carried.
    """

    out_dir: str
    base: str
    ranks: dict[str, int]
    bytes_written: int
    max_abs_error: float
    truncated: dict[str, float] = field(default_factory=dict)

    @property
    def modules(self) -> list[str]:
        """The adapted module paths."""
        return sorted(self.ranks)

    def summary(self) -> str:
        """Returns the report in one line."""
        ranks = sorted(set(self.ranks.values()))
        shown = str(ranks[0]) if len(ranks) == 1 else f"{ranks[0]}-{ranks[-1]}"
        return f"LoRA adapter for {self.base}: {len(self.ranks)} modules, rank {shown}, {self.bytes_written / 1e6:.1f} MB -> {self.out_dir} (max reconstruction error {self.max_abs_error:.2e})" + (
            f"; TRUNCATED {len(self.truncated)} modules, dropping up to {max(self.truncated.values()):.1%} of a delta's norm" if self.truncated else ""
        )


def adapter_lora_config(ranks: dict[str, int]) -> Any:
    """Returns the PEFT ``LoraConfig`` of an exported adapter: exact module paths, scaling 1.

    ``r`` is the largest rank; modules of other ranks go in ``rank_pattern``, with their alpha in
    ``alpha_pattern`` (alpha = rank everywhere, so ``B @ A`` is the delta itself).
    """
    from peft import LoraConfig

    top = max(ranks.values())
    others = {module: rank for module, rank in sorted(ranks.items()) if rank != top}
    return LoraConfig(
        r=top,
        lora_alpha=top,
        target_modules=sorted(ranks),
        rank_pattern=dict(others),
        alpha_pattern=dict(others),
        lora_dropout=0.0,
        bias="none",
        task_type="CAUSAL_LM",
    )


def base_skeleton(base_dir: Path) -> Any:
    """Returns the base model's architecture with no weights (on the meta device): PEFT builds the
    adapter's modules on it, and its ``nn.Linear`` modules are the weights an adapter may change."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(base_dir), local_files_only=True)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)


def _write_adapter(base_model: Any, factors: dict[str, LowRank], base: str, out_dir: Path, dtype: str) -> dict[str, Any]:
    """Builds the adapter with PEFT on ``base_model`` (a :func:`base_skeleton`), puts the factors in
    its LoRA weights in ``dtype`` and saves it.

    Returns:
        Module path -> the stored ``B @ A`` (float64), to measure what the storage dtype lost.
    """
    import torch
    from peft import get_peft_model

    ranks = _ranks(factors)
    peft_model = get_peft_model(base_model, adapter_lora_config(ranks))
    peft_model.peft_config["default"].base_model_name_or_path = base  # the name, not the cache folder
    target = getattr(torch, dtype)
    stored: dict[str, Any] = {}
    for module_path, factor in factors.items():
        layer = peft_model.base_model.model.get_submodule(module_path)
        lora_a, lora_b = layer.lora_A["default"], layer.lora_B["default"]
        lora_a.weight = torch.nn.Parameter(factor.a.to(target).contiguous(), requires_grad=False)
        lora_b.weight = torch.nn.Parameter(factor.b.to(target).contiguous(), requires_grad=False)
        stored[module_path] = lora_b.weight.double() @ lora_a.weight.double()
    # Saved aside and moved in, so PEFT's placeholder model card never touches out_dir's own README.
    with tempfile.TemporaryDirectory(prefix=".adapter-", dir=out_dir) as staging:
        # No embedding is adapted, and PEFT's "auto" would look the base name up on the Hugging Face Hub.
        peft_model.save_pretrained(staging, save_embedding_layers=False)
        for name in (ADAPTER_CONFIG, ADAPTER_WEIGHTS):
            os.replace(Path(staging) / name, out_dir / name)
    return stored


def _ranks(factors: dict[str, LowRank]) -> dict[str, int]:
    """Module path -> the rank of its factors."""
    return {module: int(factor.b.shape[1]) for module, factor in factors.items()}


def _max_error(deltas: dict[str, WeightDelta], stored: dict[str, Any]) -> float:
    """Returns the largest ``|B @ A - delta|`` over every differing weight (a weight left out of the
    adapter as rounding noise counts with its whole delta)."""
    worst = 0.0
    for name, change in deltas.items():
        product = stored.get(name.removesuffix(".weight"))
        gap = change.delta if product is None else product - change.delta
        worst = max(worst, float(gap.abs().max()))
    return worst


def _copy_conductor_config(model_dir: Path, out_dir: Path, base: str) -> None:
    """Copies the run's ``conductor.json`` (if any) into the adapter folder, naming the base."""
    source = model_dir / CONDUCTOR_CONFIG
    if not source.is_file():
        (out_dir / CONDUCTOR_CONFIG).unlink(missing_ok=True)  # an earlier export's would misdescribe this model
        return
    config = json.loads(source.read_text(encoding="utf-8"))
    config["base_model"] = base
    (out_dir / CONDUCTOR_CONFIG).write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")


def _check_folders(model_dir: Path, out_dir: Path, max_rank: int, dtype: str) -> None:
    """Refuses a missing model folder, an output folder that would mix with other files, bad options.

    Raises:
        FileNotFoundError: When ``model_dir`` is not a folder.
        ValueError: For the other cases.
    """
    if not model_dir.is_dir():
        raise FileNotFoundError(f"model folder {model_dir} does not exist")
    if out_dir.resolve() == model_dir.resolve():
        raise ValueError("the adapter folder must not be the model folder")
    if is_adapter_folder(model_dir):
        raise ValueError(
            f"{model_dir} is already a LoRA adapter (a LoRA run saves PEFT's adapter itself): use it as it is (--policy llm:{model_dir}); "
            "export-adapter recovers an adapter from a fully fine-tuned model"
        )
    if out_dir.exists() and any(out_dir.iterdir()) and not is_adapter_folder(out_dir):
        raise ValueError(f"{out_dir} exists, is not empty and is not an adapter folder; choose a new folder")
    if max_rank < 1:
        raise ValueError(f"max_rank must be at least 1, got {max_rank}")
    if dtype not in ADAPTER_DTYPES:
        raise ValueError(f"dtype must be one of {ADAPTER_DTYPES}, got {dtype!r}")


def export_adapter(
    model_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    base: str = DEFAULT_BASE,
    max_rank: int = 64,
    dtype: str = "float16",
    truncate: bool = False,
) -> AdapterReport:
    """Writes a trained model folder as a PEFT LoRA adapter over ``base``.

    Args:
        model_dir: The trained model folder (safetensors), e.g. a GRPO run's ``final``.
        out_dir: The adapter folder to write (absent, empty, or an earlier adapter to replace).
        base: The base model: a local model name (stored as is in the adapter, and exported on
            first use when loading) or a model folder.
        max_rank: The largest rank of a weight delta the adapter may hold.
        dtype: Storage dtype of the factors (``float16``, ``bfloat16`` or ``float32``).
        truncate: Cut a delta of rank above ``max_rank`` to its ``max_rank`` largest singular
            directions instead of refusing it; the report says what each cut module lost.

    Returns:
        An :class:`AdapterReport`.

    Raises:
        FileNotFoundError: When ``model_dir`` does not exist.
        ValueError: When it is not a model folder (or already an adapter), does not fine-tune ``base``, or holds a
            difference a LoRA adapter of rank ``max_rank`` cannot represent (the message names it)
            and ``truncate`` is off.
        ModelExportError: When ``base`` is neither a known local model nor a folder.
    """
    import torch

    from conductor_env.workers.local_models import resolve_model

    model_path, out_path = Path(model_dir).expanduser(), Path(out_dir).expanduser()
    _check_folders(model_path, out_path, max_rank, dtype)
    base_dir = resolve_model(base)
    base_model = base_skeleton(base_dir)
    linear = {f"{path}.weight" for path, module in base_model.named_modules() if isinstance(module, torch.nn.Linear)}
    deltas = weight_deltas(model_path, base_dir, linear)
    if not deltas:
        raise ValueError(f"{model_path} has the same weights as base {base}: there is no adapter to export")
    factors = {name.removesuffix(".weight"): low_rank_factors(d, name, max_rank=max_rank, truncate=truncate) for name, d in deltas.items()}
    factors = {module: f for module, f in factors.items() if f.b.shape[1] > 0}  # rank 0: rounding noise only
    if not factors:
        raise ValueError(f"{model_path} differs from base {base} only by rounding noise: there is no adapter to export")
    out_path.mkdir(parents=True, exist_ok=True)
    stored = _write_adapter(base_model, factors, base, out_path, dtype)
    error = _max_error(deltas, stored)
    _copy_conductor_config(model_path, out_path, base)
    return AdapterReport(
        out_dir=str(out_path),
        base=base,
        ranks=_ranks(factors),
        bytes_written=sum(f.stat().st_size for f in out_path.iterdir() if f.is_file()),
        max_abs_error=error,
        truncated={module: round(f.dropped, 6) for module, f in factors.items() if f.dropped > 0},
    )
