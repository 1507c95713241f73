"""Training the MLP router: a two-layer perceptron regressing each worker's target on the question embedding.

Full-batch Adam on the mean squared error, in seconds on a CPU; seeded, so a run is repeatable.
Keyed by name (:func:`fit_mlp`) the outputs are the pool's workers; keyed by description
(:func:`fit_mlp_pairs`, ``train router --workers description``) the input is a (question,
worker description) pair and the two outputs its target and cost: the arrays
:mod:`conductor_env.agents.routers.mlp` reads in each mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.routers.encoder import torch_threads
from conductor_env.agents.training.routers.pairs import PairTable
from conductor_env.agents.training.routers.table import RouterTable

#: Hidden units, epochs, learning rate and weight decay unless told otherwise: the best of six
#: settings on the validation split of the `orchestra-judge` pool (docs/ROUTERS.md); with less
#: decay or more epochs it fits the single-draw rewards' noise.
DEFAULT_HIDDEN = 128
DEFAULT_EPOCHS = 200
DEFAULT_LR = 3e-3
DEFAULT_WEIGHT_DECAY = 1e-2


def fit_mlp(
    table: RouterTable,
    embeddings: np.ndarray,
    *,
    target: str,
    seed: int = 0,
    hidden: int = DEFAULT_HIDDEN,
    epochs: int = DEFAULT_EPOCHS,
    lr: float = DEFAULT_LR,
    weight_decay: float = DEFAULT_WEIGHT_DECAY,
    threads: int | None = 1,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Returns the MLP router's arrays and params.

    Args:
        table: The router-data table.
        embeddings: Its questions' unit embeddings ``(M, D)``.
        target: ``score`` or ``reward``.
        seed: Seeds the initial weights.
        hidden: Hidden units.
        epochs: Full-batch Adam steps.
        lr: Learning rate.
        weight_decay: Adam's weight decay.
        threads: torch's intra-op threads while fitting (``None``: torch's setting; see
            :class:`~conductor_env.agents.routers.encoder.SentenceEncoder`).

    Raises:
        ValueError: For a non-positive size, count or rate.
    """
    if hidden < 1 or epochs < 1 or not lr > 0 or weight_decay < 0:
        raise ValueError(f"hidden and epochs must be >= 1, lr > 0 and weight_decay >= 0; got {hidden}, {epochs}, {lr}, {weight_decay}")
    with torch_threads(threads):
        return _fit(table, embeddings, target=target, seed=seed, hidden=hidden, epochs=epochs, lr=lr, weight_decay=weight_decay)


def layer_arrays(first: Any, second: Any) -> dict[str, np.ndarray]:
    """The checkpoint arrays of two ``torch.nn.Linear`` layers: ``w1``/``b1``/``w2``/``b2``, weights as (in, out)."""
    return {
        "w1": first.weight.detach().T.contiguous().numpy(),
        "b1": first.bias.detach().numpy(),
        "w2": second.weight.detach().T.contiguous().numpy(),
        "b2": second.bias.detach().numpy(),
    }


def _fit(table: RouterTable, embeddings: np.ndarray, *, target: str, seed: int, hidden: int, epochs: int, lr: float, weight_decay: float) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    import torch

    generator = torch.Generator().manual_seed(seed)
    x = torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32))
    y = torch.from_numpy(np.ascontiguousarray(table.target(target), dtype=np.float32))
    first, second = torch.nn.Linear(x.shape[1], hidden), torch.nn.Linear(hidden, y.shape[1])
    with torch.no_grad():
        for layer in (first, second):
            bound = 1.0 / layer.in_features**0.5
            layer.weight.uniform_(-bound, bound, generator=generator)
            layer.bias.zero_()
        second.bias.copy_(y.mean(dim=0))  # start from each worker's mean
    model = torch.nn.Sequential(first, torch.nn.ReLU(), second)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    for _ in range(epochs):
        optimiser.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimiser.step()
    arrays = {**layer_arrays(first, second), "mean_cost": table.costs.mean(axis=0)}
    return arrays, {"hidden": hidden, "epochs": epochs, "lr": lr, "weight_decay": weight_decay, "seed": seed, "final_mse": float(loss.detach())}


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
        arrays, loss = _fit_pairs(x, y, seed=seed, hidden=hidden, epochs=epochs, lr=lr, weight_decay=weight_decay)
    return arrays, {"hidden": hidden, "epochs": epochs, "lr": lr, "weight_decay": weight_decay, "seed": seed, "final_mse": loss}


def _fit_pairs(x: np.ndarray, y: np.ndarray, *, seed: int, hidden: int, epochs: int, lr: float, weight_decay: float) -> tuple[dict[str, np.ndarray], float]:
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
