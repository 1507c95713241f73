"""How a trained model's weights differ from its base's, and those differences as low-rank factors.

:func:`weight_deltas` reads the two safetensors folders one tensor at a time and returns each
changed ``nn.Linear`` weight's delta; :func:`low_rank_factors` factors a delta as ``B @ A`` with an
SVD at its exact rank (or cut to a largest rank, saying what the cut left out). :mod:`conductor_env.agents.training.adapter` writes the factors as a PEFT LoRA adapter.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

#: Singular values of a delta at or below this fraction of its largest are dropped, as are those
#: under the rounding noise of storing the trained weight (:func:`rounding_noise`). A merged LoRA
#: delta has an exact rank, and beyond it only that noise: on a real CPU GRPO run (two merged
#: rank-16 LoRAs, 42 weights) every true component was above 2.7e-5 of the largest and all noise
#: below 4.2e-7. A cut of 1e-3 there would drop true components (ranks 20-29 instead of 32, logits
#: off by 0.03), so the cut sits between the two.
RANK_RTOL = 1e-6


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
            raise ValueError(f"tensor {name} is {trained.dtype} {tuple(trained.shape)} in {model_dir} but {base.dtype} {tuple(base.shape)} in the base: not a fine-tune of it a LoRA adapter can hold")
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


class LowRank(NamedTuple):
    """A weight delta as ``b @ a``, and the share of its Frobenius norm a rank cut left out."""

    b: Any
    a: Any
    dropped: float


def low_rank_factors(change: WeightDelta, name: str, *, max_rank: int, rtol: float = RANK_RTOL, truncate: bool = False) -> LowRank:
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
        A :class:`LowRank`: ``B`` and ``A``, float64 of shapes ``(out, r)`` and ``(r, in)``, and
        the share of the delta's norm a cut to ``max_rank`` left out (0 without a cut).

    Raises:
        ValueError: When the delta's rank is above ``max_rank`` and ``truncate`` is off.
    """
    import torch

    with _one_thread():
        u, s, vh = torch.linalg.svd(change.delta, full_matrices=False)
    tolerance = max(rtol * float(s[0]), change.noise)
    rank = int((s > tolerance).sum())
    if rank > max_rank and not truncate:
        raise ValueError(
            f"tensor {name} differs from the base by a matrix of rank {rank} (singular values above {tolerance:.1e}), above --max-rank {max_rank}: a LoRA adapter of that rank cannot hold it"
        )
    kept = min(rank, max_rank)
    dropped = float(s[kept:rank].square().sum().sqrt() / s.square().sum().sqrt()) if kept < rank else 0.0
    root = s[:kept].sqrt()
    return LowRank(u[:, :kept] * root, root[:, None] * vh[:kept], dropped)
