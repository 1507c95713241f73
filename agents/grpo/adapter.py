"""A saved Conductor as a small LoRA adapter over its base model, instead of a full model folder.

A Conductor trained with LoRA (and merged at save, :func:`~conductor_env.agents.grpo.saving.save_conductor`)
differs from its base only in a few ``nn.Linear`` weights, each by a low-rank matrix.
:func:`export_adapter` finds those differences, factors each one with a truncated SVD, and
writes a standard PEFT LoRA folder (``adapter_config.json`` + ``adapter_model.safetensors``,
built by PEFT itself) with the run's ``conductor.json``: a few MB that ``llm:<folder>`` loads by
merging the adapter into the base (:mod:`conductor_env.workers.local_adapter`).

Any other difference (embeddings, norms, a weight whose delta has a rank above ``max_rank``) cannot
be held by a LoRA adapter, and the export refuses it, naming the tensors.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conductor_env.agents.grpo.saving import CONDUCTOR_CONFIG
from conductor_env.workers.local_adapter import ADAPTER_CONFIG, is_adapter_folder

#: PEFT's adapter weights file.
ADAPTER_WEIGHTS = "adapter_model.safetensors"

#: The local model name a Conductor is trained from by default.
DEFAULT_BASE = "gemma3-270m"
#: Singular values of a delta at or below this fraction of its largest are dropped, as are those
#: under the rounding noise of storing the trained weight (:func:`rounding_noise`). A merged LoRA
#: delta has an exact rank, and beyond it only that noise: on a real CPU GRPO run (two merged
#: rank-16 LoRAs, 42 weights) every true component was above 2.7e-5 of the largest and all noise
#: below 4.2e-7. A cut of 1e-3 there would drop true components (ranks 20-29 instead of 32, logits
#: off by 0.03), so the cut sits between the two.
RANK_RTOL = 1e-6
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
        return (
            f"LoRA adapter for {self.base}: {len(self.ranks)} modules, rank {shown}, "
            f"{self.bytes_written / 1e6:.1f} MB -> {self.out_dir} (max reconstruction error {self.max_abs_error:.2e})"
            + (
                f"; TRUNCATED {len(self.truncated)} modules, dropping up to {max(self.truncated.values()):.1%} of a delta's norm"
                if self.truncated
                else ""
            )
        )


@dataclass(frozen=True)
class WeightDelta:
    """How a trained weight differs from the base's.

    Attributes:
        delta: ``trained - base``, float64.
        noise: A bound on the spectral norm of the rounding error in ``delta`` (:func:`rounding_noise`).
    """

    delta: Any
    noise: float


def rounding_noise(trained: Any) -> float:
    """Returns ``u * ||trained||_F`` (``u``: the unit roundoff of its dtype): storing ``base + delta``
    rounds each entry by at most ``u`` times its size, and the spectral norm of that error matrix is
    at most its Frobenius norm, so no singular value of pure rounding noise exceeds this."""
    import torch

    return torch.finfo(trained.dtype).eps / 2 * float(trained.double().norm())


def _tensor_files(folder: Path) -> dict[str, Path]:
    """Maps each tensor name of a safetensors model folder (single file or sharded) to its file.

    Raises:
        ValueError: When the folder holds no safetensors weights.
    """
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        return {name: folder / file for name, file in weight_map.items()}
    single = folder / "model.safetensors"
    if not single.is_file():
        raise ValueError(f"{folder} is not a model folder: no model.safetensors or model.safetensors.index.json")
    from safetensors import safe_open

    with safe_open(str(single), framework="pt") as handle:
        return dict.fromkeys(handle.keys(), single)


def _read(files: dict[str, Path], name: str) -> Any:
    """Reads one tensor from its safetensors file."""
    from safetensors import safe_open

    with safe_open(str(files[name]), framework="pt") as handle:
        return handle.get_tensor(name)


def weight_deltas(model_dir: Path, base_dir: Path, linear_weights: set[str]) -> dict[str, WeightDelta]:
    """Returns how each differing tensor changed; all of them must be Linear weights.

    Tensors are read one at a time, so memory holds at most one pair beside the result.

    Args:
        model_dir: The trained model folder.
        base_dir: The base model folder.
        linear_weights: Names of the base's ``nn.Linear`` weights (``<module path>.weight``).

    Returns:
        Tensor name -> :class:`WeightDelta`, for the Linear weights that differ.

    Raises:
        ValueError: When the folders' tensors differ in name, shape or dtype, or a tensor that is
            not a Linear weight differs; the message names the tensors.
    """
    import torch

    trained_files, base_files = _tensor_files(model_dir), _tensor_files(base_dir)
    if set(trained_files) != set(base_files):
        extra = sorted(set(trained_files) ^ set(base_files))[:5]
        raise ValueError(f"{model_dir} does not have the tensors of base {base_dir}; differing names: {extra}")
    deltas: dict[str, WeightDelta] = {}
    unrepresentable: list[str] = []
    for name in sorted(trained_files):
        trained, base = _read(trained_files, name), _read(base_files, name)
        if trained.shape != base.shape or trained.dtype != base.dtype:
            raise ValueError(
                f"tensor {name} is {trained.dtype} {tuple(trained.shape)} in {model_dir} but "
                f"{base.dtype} {tuple(base.shape)} in the base: not a fine-tune of it a LoRA adapter can hold"
            )
        if torch.equal(trained, base):
            continue
        if name in linear_weights:
            deltas[name] = WeightDelta(trained.double() - base.double(), rounding_noise(trained))
        else:
            unrepresentable.append(name)
    if unrepresentable:
        raise ValueError(
            f"a LoRA adapter cannot hold changes to tensors that are not Linear weights: {', '.join(unrepresentable[:5])}"
            + (f" and {len(unrepresentable) - 5} more" if len(unrepresentable) > 5 else "")
        )
    return deltas


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Runs torch on one CPU thread. LAPACK's SVD of these small matrices takes under a second on
    one thread but over ten when its threads share the cores with other work (measured: 0.4 s vs 13 s
    for 2048 x 640 on 2 busy cores)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def low_rank_factors(
    change: WeightDelta, name: str, *, max_rank: int, rtol: float = RANK_RTOL, truncate: bool = False
) -> tuple[Any, Any]:
    """Factors a weight delta as ``B @ A`` with a truncated SVD.

    The rank is the number of singular values above both ``rtol`` times the largest and the
    delta's rounding noise (see :data:`RANK_RTOL`). The singular values are split evenly between
    the factors (``B = U sqrt(S)``, ``A = sqrt(S) V^T``) so both stay in a range float16 stores well.

    Args:
        change: The weight's delta, ``(out_features, in_features)``, and its rounding noise.
        name: The tensor's name, for errors.
        max_rank: The largest rank accepted.
        rtol: The relative cut.
        truncate: Keep the ``max_rank`` largest singular directions of a delta of higher rank
            (the best approximation of that rank) instead of refusing it: a lossy export.

    Returns:
        ``(B, A)``: float64 matrices of shapes ``(out, r)`` and ``(r, in)``.

    Raises:
        ValueError: When the delta's rank is above ``max_rank`` and ``truncate`` is off.
    """
    import torch

    with _one_thread():
        u, s, vh = torch.linalg.svd(change.delta, full_matrices=False)
    tolerance = max(rtol * float(s[0]), change.noise)
    rank = int((s > tolerance).sum())
    if rank > max_rank and truncate:
        rank = max_rank
    elif rank > max_rank:
        raise ValueError(
            f"tensor {name} differs from the base by a matrix of rank {rank} (singular values above "
            f"{tolerance:.1e}), above --max-rank {max_rank}: a LoRA adapter of that rank cannot hold it"
        )
    root = s[:rank].sqrt()
    return u[:, :rank] * root, root[:, None] * vh[:rank]


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


def _write_adapter(base_model: Any, factors: dict[str, tuple[Any, Any]], base: str, out_dir: Path, dtype: str) -> dict[str, Any]:
    """Builds the adapter with PEFT on ``base_model`` (a :func:`base_skeleton`), puts the factors in
    its LoRA weights in ``dtype`` and saves it.

    Returns:
        Module path -> the stored ``B @ A`` (float64), to measure what the storage dtype lost.
    """
    import torch
    from peft import get_peft_model

    ranks = {module: b.shape[1] for module, (b, _) in factors.items()}
    peft_model = get_peft_model(base_model, adapter_lora_config(ranks))
    peft_model.peft_config["default"].base_model_name_or_path = base  # the name, not the cache folder
    target = getattr(torch, dtype)
    stored: dict[str, Any] = {}
    for module_path, (b, a) in factors.items():
        layer = peft_model.base_model.model.get_submodule(module_path)
        lora_a, lora_b = layer.lora_A["default"], layer.lora_B["default"]
        lora_a.weight = torch.nn.Parameter(a.to(target).contiguous(), requires_grad=False)
        lora_b.weight = torch.nn.Parameter(b.to(target).contiguous(), requires_grad=False)
        stored[module_path] = lora_b.weight.double() @ lora_a.weight.double()
    # Saved aside and moved in, so PEFT's placeholder model card never touches out_dir's own README.
    with tempfile.TemporaryDirectory(prefix=".adapter-", dir=out_dir) as staging:
        # No embedding is adapted, and PEFT's "auto" would look the base name up on the Hugging Face Hub.
        peft_model.save_pretrained(staging, save_embedding_layers=False)
        for name in (ADAPTER_CONFIG, ADAPTER_WEIGHTS):
            os.replace(Path(staging) / name, out_dir / name)
    return stored


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
        ValueError: When it is not a model folder, does not fine-tune ``base``, or holds a
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
    factors = {module: pair for module, pair in factors.items() if pair[0].shape[1] > 0}  # rank 0: rounding noise only
    if not factors:
        raise ValueError(f"{model_path} differs from base {base} only by rounding noise: there is no adapter to export")
    out_path.mkdir(parents=True, exist_ok=True)
    stored = _write_adapter(base_model, factors, base, out_path, dtype)
    error = _max_error(deltas, stored)
    _copy_conductor_config(model_path, out_path, base)
    return AdapterReport(
        out_dir=str(out_path),
        base=base,
        ranks={module: int(b.shape[1]) for module, (b, _) in factors.items()},
        bytes_written=sum(f.stat().st_size for f in out_path.iterdir() if f.is_file()),
        max_abs_error=error,
        truncated=_truncation_losses(deltas, factors, max_rank) if truncate else {},
    )


def _truncation_losses(deltas: dict[str, WeightDelta], factors: dict[str, tuple[Any, Any]], max_rank: int) -> dict[str, float]:
    """Per module cut to ``max_rank``, ``||delta - B @ A|| / ||delta||`` (Frobenius, in float64).

    A module kept at ``max_rank`` whose loss is no more than the rank cut's own tolerance
    (:data:`RANK_RTOL`) had that rank to begin with and was not cut.
    """
    losses = {}
    for name, change in deltas.items():
        module = name.removesuffix(".weight")
        b, a = factors.get(module, (None, None))
        if b is not None and b.shape[1] == max_rank:
            loss = float((change.delta - b @ a).norm() / change.delta.norm())
            if loss > RANK_RTOL:
                losses[module] = round(loss, 6)
    return losses
