"""Training RouterDC keyed by description (``train router --kind routerdc --workers description``).

The worker embeddings are a learned projection of the description embeddings (a residual head of
the question head's form, starting as the identity) instead of a free vector per name; each row
(a question in one pool draw) scores its own workers, padded to the widest row and masked. The
losses, defaults and batching are :mod:`~conductor_env.agents.training.routers.routerdc`'s; the
cost of a worker is :func:`~conductor_env.agents.training.routers.described.cost_ridge`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.router_encoder import torch_threads
from conductor_env.agents.training.routers.described import cost_ridge
from conductor_env.agents.training.routers.mlp import layer_arrays
from conductor_env.agents.training.routers.pairs import PairTable
from conductor_env.agents.training.routers.routerdc import DEFAULTS, cluster_ids, sample_llm_loss, sample_sample_loss


def row_matrix(pairs: PairTable) -> tuple[np.ndarray, np.ndarray]:
    """Each row's pair indices padded to the widest row ``(R, Wmax)`` (padding 0) and its mask."""
    counts = np.bincount(pairs.pair_row)
    index = np.zeros((len(counts), int(counts.max())), dtype=np.int64)
    valid = np.zeros(index.shape, dtype=bool)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    for row, (start, count) in enumerate(zip(starts, counts)):
        index[row, :count] = np.arange(start, start + count)
        valid[row, :count] = True
    return index, valid


def fit_routerdc_pairs(pairs: PairTable, questions: np.ndarray, descriptions: np.ndarray, *, target: str, seed: int = 0, **params: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Returns the description-keyed RouterDC router's arrays and params.

    Raises:
        TypeError: For a parameter the kind does not take.
        ValueError: For an out-of-range one.
    """
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"routerdc takes no parameter {', '.join(unknown)} (it takes {', '.join(DEFAULTS)})")
    settings = {**DEFAULTS, **params}
    for name in ("top_k", "last_k", "clusters", "H", "steps", "batch_size", "hidden"):
        if isinstance(settings[name], bool) or not isinstance(settings[name], int) or settings[name] < 1:
            raise ValueError(f"routerdc: {name} must be a positive integer, got {settings[name]!r}")
    for name in ("temperature", "lr"):
        if isinstance(settings[name], bool) or not isinstance(settings[name], (int, float)) or not settings[name] > 0:
            raise ValueError(f"routerdc: {name} must be a number > 0, got {settings[name]!r}")
    index, valid = row_matrix(pairs)
    row_question = pairs.pair_question[index[:, 0]]
    clusters = cluster_ids(questions[row_question], min(settings["clusters"], len(questions)), seed)
    with torch_threads(1):
        arrays, losses = _train(questions[row_question], descriptions[pairs.pair_worker[index]], pairs.target(target)[index], valid, clusters, seed, settings)
    arrays.update(cost_ridge(pairs, descriptions))
    return arrays, {**settings, "seed": seed, **losses}


def _residual(dim: int, hidden: int, generator: Any) -> tuple[Any, Any]:
    import torch

    first, second = torch.nn.Linear(dim, hidden), torch.nn.Linear(hidden, dim)
    with torch.no_grad():
        bound = 1.0 / dim**0.5
        first.weight.uniform_(-bound, bound, generator=generator)
        first.bias.zero_()
        second.weight.zero_()  # starts as the identity: the pretrained embedding
        second.bias.zero_()
    return first, second


def _train(x_rows: np.ndarray, d_rows: np.ndarray, y_rows: np.ndarray, valid_rows: np.ndarray, clusters: np.ndarray, seed: int, s: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    import torch

    normalize = torch.nn.functional.normalize
    generator = torch.Generator().manual_seed(seed)
    x, d = torch.from_numpy(np.ascontiguousarray(x_rows, np.float32)), torch.from_numpy(np.ascontiguousarray(d_rows, np.float32))
    y, valid, c = torch.from_numpy(np.ascontiguousarray(y_rows, np.float32)), torch.from_numpy(valid_rows), torch.from_numpy(clusters)
    dim = x.shape[1]
    head, projection = _residual(dim, s["hidden"], generator), _residual(dim, s["hidden"], generator)
    optimiser = torch.optim.AdamW([p for layer in (*head, *projection) for p in layer.parameters()], lr=s["lr"])
    top_k, last_k = min(s["top_k"], valid.shape[1]), min(s["last_k"], valid.shape[1])
    order, cursor = torch.randperm(len(x), generator=generator), 0
    llm_loss, cluster_loss = torch.zeros(()), torch.zeros(())
    for _ in range(s["steps"]):
        if cursor >= len(order):
            order, cursor = torch.randperm(len(x), generator=generator), 0
        batch = order[cursor : cursor + s["batch_size"]]
        cursor += s["batch_size"]
        hidden = x[batch] + head[1](torch.relu(head[0](x[batch])))
        keys = d[batch] + projection[1](torch.relu(projection[0](d[batch])))
        logits = torch.einsum("bd,bwd->bw", normalize(hidden, dim=-1), normalize(keys, dim=-1)) / s["temperature"]
        llm_loss = sample_llm_loss(logits, y[batch], top_k, last_k, valid[batch])
        cluster_loss = sample_sample_loss(hidden, c[batch], s["H"], generator) if s["cluster_loss_weight"] else torch.zeros(())
        loss = llm_loss + s["cluster_loss_weight"] * cluster_loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    arrays = layer_arrays(*head)
    arrays.update({name.replace("w", "v").replace("b", "c"): value for name, value in layer_arrays(*projection).items()})
    return arrays, {"final_sample_llm_loss": float(llm_loss.detach()), "final_sample_sample_loss": float(cluster_loss.detach())}
