"""Training the RouterDC router with its dual contrastive losses (after shuhao02/RouterDC, train_router_mdeberta.py).

- **Sample-LLM loss**: for each question and each of its ``top_k`` best workers (skipped when that
  worker scored 0), the softmax cross-entropy of the positive worker's score against the
  ``last_k`` worst workers' scores, where a negative that scored above 0.5 is left out.
- **Sample-sample loss** (the released ``compute_cluster_loss``): the training questions are
  clustered by k-means on their embeddings; for each question of a batch, one question of its
  cluster (itself allowed, as in the original) is the positive and ``H`` questions of other
  clusters the negatives, over the cosine similarity of the projected question embeddings.
- Loss = sample-LLM + ``cluster_loss_weight`` * sample-sample; AdamW; batches drawn from a
  seeded shuffle, so a run is repeatable.

Defaults are the released training script's (``train_scripts/router_train.sh``): ``top_k`` 3,
``last_k`` 3, temperature 1, cosine similarity, cluster loss weight 1, ``H`` 3, 1000 steps,
worker embeddings initialised N(0, 0.78); the batch size is the script's default 64 and the
clusters its 8. The learning rate is 1e-3, not 5e-5: here only a small head and the worker
embeddings train, from scratch (docs/ROUTERS.md).

Keyed by description (:func:`fit_routerdc_pairs`, ``train router --workers description``) the
worker embeddings are a learned projection of the description embeddings (a residual head of the
question head's form, starting as the identity) instead of a free vector per name; each row (a
question in one pool draw) scores its own workers, padded to the widest row and masked; the
losses, defaults and batching are the same, and a worker's cost is :func:`cost_ridge`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.routers.encoder import torch_threads
from conductor_env.agents.training.routers.mlp import layer_arrays
from conductor_env.agents.training.routers.pairs import PairTable
from conductor_env.agents.training.routers.table import RouterTable

DEFAULTS: dict[str, Any] = {
    "top_k": 3,
    "last_k": 3,
    "temperature": 1.0,
    "cluster_loss_weight": 1.0,
    "clusters": 8,
    "H": 3,
    "steps": 1000,
    "batch_size": 64,
    "lr": 1e-3,
    "hidden": 384,
    "embedding_std": 0.78,
}


def fit_routerdc(table: RouterTable, embeddings: np.ndarray, *, target: str, seed: int = 0, **params: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Returns the RouterDC router's arrays and params.

    Args:
        table: The router-data table.
        embeddings: Its questions' unit embeddings ``(M, D)``.
        target: ``score`` or ``reward``: what ranks the workers of a question.
        seed: Seeds the initial weights, the k-means and the batches.
        **params: Overrides of :data:`DEFAULTS`.

    Raises:
        ValueError: For an unknown or out-of-range parameter.
        TypeError: For a parameter the kind does not take.
    """
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"routerdc takes no parameter {', '.join(unknown)} (it takes {', '.join(DEFAULTS)})")
    settings = {**DEFAULTS, **params}
    for name in ("top_k", "last_k", "clusters", "H", "steps", "batch_size", "hidden"):
        value = settings[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"routerdc: {name} must be a positive integer, got {value!r}")
    for name in ("temperature", "lr", "embedding_std"):
        if isinstance(settings[name], bool) or not isinstance(settings[name], (int, float)) or not settings[name] > 0:
            raise ValueError(f"routerdc: {name} must be a number > 0, got {settings[name]!r}")
    if isinstance(settings["cluster_loss_weight"], bool) or not isinstance(settings["cluster_loss_weight"], (int, float)) or not settings["cluster_loss_weight"] >= 0:
        raise ValueError(f"routerdc: cluster_loss_weight must be a number >= 0, got {settings['cluster_loss_weight']!r}")
    clusters = cluster_ids(embeddings, min(settings["clusters"], len(embeddings)), seed)
    # One thread: as fast for a model this small, and several times faster on a busy machine.
    with torch_threads(1):
        arrays, losses = _train(embeddings, table.target(target), clusters, seed, settings)
    arrays["mean_cost"] = table.costs.mean(axis=0)
    return arrays, {**settings, "seed": seed, "clusters_found": int(len(set(clusters.tolist()))), **losses}


def cluster_ids(embeddings: np.ndarray, clusters: int, seed: int) -> np.ndarray:
    """k-means cluster of each question (scikit-learn, seeded)."""
    from sklearn.cluster import KMeans

    if clusters < 2:
        return np.zeros(len(embeddings), dtype=np.int64)
    model = KMeans(n_clusters=clusters, n_init=10, max_iter=1000, random_state=seed)
    return np.asarray(model.fit_predict(np.asarray(embeddings, dtype=np.float64)), dtype=np.int64)


def sample_llm_loss(logits: Any, scores: Any, top_k: int, last_k: int, valid: Any = None) -> Any:
    """RouterDC's sample-LLM contrastive loss (``compute_sample_llm_loss``), batched.

    ``valid`` (a boolean mask like ``scores``) leaves padded workers out of both the positives
    and the negatives (rows of pools with fewer workers than the widest).
    """
    import torch

    positives = scores if valid is None else scores.masked_fill(~valid, -1.0)
    negatives_by = scores if valid is None else scores.masked_fill(~valid, 2.0)
    top_scores, top_index = positives.sort(dim=-1, descending=True)
    last_scores, last_index = negatives_by.topk(k=last_k, largest=False, dim=-1)
    negatives = torch.gather(logits, 1, last_index).masked_fill(last_scores > 0.5, float("-inf"))
    loss = logits.new_zeros(())
    for i in range(top_k):
        positive = torch.gather(logits, 1, top_index[:, i : i + 1])
        log_p = torch.log_softmax(torch.cat([positive, negatives], dim=-1), dim=-1)[:, 0]
        loss = loss + torch.mean(-log_p * (top_scores[:, i] > 0).to(log_p.dtype))
    return loss


def sample_sample_loss(hidden: Any, clusters: Any, negatives: int, generator: Any) -> Any:
    """RouterDC's sample-sample contrastive loss (``compute_cluster_loss``), batched.

    Questions with fewer than ``negatives`` questions of other clusters in the batch are left out,
    as in the original; with none left the loss is 0.
    """
    import torch

    normed = torch.nn.functional.normalize(hidden, dim=-1)
    similarity = normed @ normed.T
    same = clusters[:, None] == clusters[None, :]
    keep = (~same).sum(dim=1) >= negatives
    if not bool(keep.any()):
        return hidden.new_zeros(())
    keys = torch.rand(similarity.shape, generator=generator)
    positive = torch.where(same, keys, torch.full_like(keys, -1.0)).argmax(dim=1, keepdim=True)
    negative = torch.where(same, torch.full_like(keys, -1.0), keys).topk(negatives, dim=1).indices
    chosen = torch.gather(similarity, 1, torch.cat([positive, negative], dim=1))
    return torch.mean(-torch.log_softmax(chosen, dim=-1)[:, 0][keep])


def _train(embeddings: np.ndarray, target: np.ndarray, clusters: np.ndarray, seed: int, s: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    import torch

    generator = torch.Generator().manual_seed(seed)
    x = torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32))
    y = torch.from_numpy(np.ascontiguousarray(target, dtype=np.float32))
    c = torch.from_numpy(clusters)
    dim, workers = x.shape[1], y.shape[1]
    first, second = torch.nn.Linear(dim, s["hidden"]), torch.nn.Linear(s["hidden"], dim)
    keys = torch.nn.Parameter(torch.randn(workers, dim, generator=generator) * s["embedding_std"])
    with torch.no_grad():
        bound = 1.0 / dim**0.5
        first.weight.uniform_(-bound, bound, generator=generator)
        first.bias.zero_()
        second.weight.zero_()  # the head starts as the identity: the pretrained embedding
        second.bias.zero_()
    parameters = [*first.parameters(), *second.parameters(), keys]
    optimiser = torch.optim.AdamW(parameters, lr=s["lr"])
    top_k, last_k = min(s["top_k"], workers), min(s["last_k"], workers)
    order = torch.randperm(len(x), generator=generator)
    cursor, llm_loss, cluster_loss = 0, torch.zeros(()), torch.zeros(())
    for _ in range(s["steps"]):
        if cursor >= len(order):
            order, cursor = torch.randperm(len(x), generator=generator), 0
        batch = order[cursor : cursor + s["batch_size"]]
        cursor += s["batch_size"]
        hidden = x[batch] + second(torch.relu(first(x[batch])))
        logits = torch.nn.functional.normalize(hidden, dim=-1) @ torch.nn.functional.normalize(keys, dim=-1).T / s["temperature"]
        llm_loss = sample_llm_loss(logits, y[batch], top_k, last_k)
        cluster_loss = sample_sample_loss(hidden, c[batch], s["H"], generator) if s["cluster_loss_weight"] else torch.zeros(())
        loss = llm_loss + s["cluster_loss_weight"] * cluster_loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    arrays = {**layer_arrays(first, second), "workers": keys.detach().numpy()}
    return arrays, {"final_sample_llm_loss": float(llm_loss.detach()), "final_sample_sample_loss": float(cluster_loss.detach())}


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
        arrays, losses = _train_pairs(questions[row_question], descriptions[pairs.pair_worker[index]], pairs.target(target)[index], valid, clusters, seed, settings)
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


def _train_pairs(
    x_rows: np.ndarray, d_rows: np.ndarray, y_rows: np.ndarray, valid_rows: np.ndarray, clusters: np.ndarray, seed: int, s: dict[str, Any]
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
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
