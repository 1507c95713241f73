"""Training the kNN and MLP routers keyed by description (``train router --workers description``).

Each fit gets a :class:`~conductor_env.agents.training.routers.pairs.PairTable`, the unit
embeddings of its distinct questions ``(M, D)`` and of its distinct worker descriptions
``(U, D)``, and returns the arrays :mod:`conductor_env.agents.router_knn` and
:mod:`conductor_env.agents.router_mlp` read in that mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.router_encoder import torch_threads
from conductor_env.agents.router_knn import DEFAULT_K
from conductor_env.agents.training.routers.mlp import DEFAULT_EPOCHS, DEFAULT_HIDDEN, DEFAULT_LR, DEFAULT_WEIGHT_DECAY, layer_arrays
from conductor_env.agents.training.routers.pairs import PairTable


def fit_knn_pairs(pairs: PairTable, questions: np.ndarray, descriptions: np.ndarray, *, target: str, seed: int = 0, k: int = DEFAULT_K) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Returns the description-keyed kNN router's arrays and params (``seed`` unused).

    Raises:
        ValueError: For ``k < 1``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    arrays = {
        "embeddings": questions.astype(np.float32),
        "descriptions": descriptions.astype(np.float32),
        "pair_question": pairs.pair_question.astype(np.float32),
        "pair_worker": pairs.pair_worker.astype(np.float32),
        "target": pairs.target(target),
        "cost": pairs.costs,
    }
    return arrays, {"k": k}


def fit_mlp_pairs(
    pairs: PairTable,
    questions: np.ndarray,
    descriptions: np.ndarray,
    *,
    target: str,
    seed: int = 0,
    hidden: int = DEFAULT_HIDDEN,
    epochs: int = DEFAULT_EPOCHS,
    lr: float = DEFAULT_LR,
    weight_decay: float = DEFAULT_WEIGHT_DECAY,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Returns the description-keyed MLP router's arrays and params.

    The network maps ``[question; description]`` to the pair's target and cost, each scaled to
    unit variance while fitting (the cost is about a hundredth of the target) and scaled back
    into the last layer, so the checkpoint predicts both in their own units.

    Raises:
        ValueError: For a non-positive size, count or rate.
    """
    if hidden < 1 or epochs < 1 or not lr > 0 or weight_decay < 0:
        raise ValueError(f"hidden and epochs must be >= 1, lr > 0 and weight_decay >= 0; got {hidden}, {epochs}, {lr}, {weight_decay}")
    x = np.concatenate([questions[pairs.pair_question], descriptions[pairs.pair_worker]], axis=1).astype(np.float32)
    y = np.stack([pairs.target(target), pairs.costs], axis=1).astype(np.float32)
    with torch_threads(1):
        arrays, loss = _fit(x, y, seed=seed, hidden=hidden, epochs=epochs, lr=lr, weight_decay=weight_decay)
    return arrays, {"hidden": hidden, "epochs": epochs, "lr": lr, "weight_decay": weight_decay, "seed": seed, "final_mse": loss}


def _fit(x: np.ndarray, y: np.ndarray, *, seed: int, hidden: int, epochs: int, lr: float, weight_decay: float) -> tuple[dict[str, np.ndarray], float]:
    import torch

    mean, scale = y.mean(axis=0), np.maximum(y.std(axis=0), 1e-6)
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.from_numpy(x)
    outputs = torch.from_numpy(((y - mean) / scale).astype(np.float32))
    first, second = torch.nn.Linear(x.shape[1], hidden), torch.nn.Linear(hidden, 2)
    with torch.no_grad():
        for layer in (first, second):
            bound = 1.0 / layer.in_features**0.5
            layer.weight.uniform_(-bound, bound, generator=generator)
            layer.bias.zero_()
    model = torch.nn.Sequential(first, torch.nn.ReLU(), second)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    for _ in range(epochs):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), outputs)
        loss.backward()
        optimiser.step()
    arrays = layer_arrays(first, second)
    arrays["w2"] = arrays["w2"] * scale[None, :]
    arrays["b2"] = arrays["b2"] * scale + mean
    return arrays, float(loss.detach())


def cost_ridge(pairs: PairTable, descriptions: np.ndarray, alpha: float = 0.1) -> dict[str, np.ndarray]:
    """A ridge regression from a description's embedding to its worker's mean training cost.

    Returns:
        ``cost_w`` ``(D,)`` and ``cost_b`` ``(1,)``.
    """
    counts = np.bincount(pairs.pair_worker, minlength=len(descriptions)).astype(np.float64)
    sums = np.bincount(pairs.pair_worker, weights=pairs.costs.astype(np.float64), minlength=len(descriptions))
    seen = counts > 0
    x, y = descriptions[seen].astype(np.float64), sums[seen] / counts[seen]
    bias = float(y.mean())
    centred = x - x.mean(axis=0)
    weights = np.linalg.solve(centred.T @ centred + alpha * np.eye(x.shape[1]), centred.T @ (y - bias))
    intercept = bias - float(x.mean(axis=0) @ weights)
    return {"cost_w": weights.astype(np.float32), "cost_b": np.asarray([intercept], dtype=np.float32)}
