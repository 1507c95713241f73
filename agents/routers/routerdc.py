"""``router:routerdc:<folder>``: RouterDC (Chen et al., NeurIPS 2024), a query encoder and learnable worker embeddings.

A question's embedding (the frozen offline MiniLM encoder) goes through a small trainable residual
head, ``h = e + relu(e W1 + b1) W2 + b2`` (``W2`` starts at zero, so training starts from the
pretrained embedding: the original fine-tunes all of mDeBERTa instead); each worker has a learned
embedding ``k_w``; the router scores ``cos(h, k_w) / t`` and sends the question to the best
worker. It is trained with RouterDC's two contrastive losses
(:mod:`conductor_env.agents.training.routers.routerdc`).

The target a :class:`~conductor_env.agents.routers.ScoreRouter` weighs against ``λ * cost`` is the
softmax of the scores over the checkpoint's workers (the router's probability that a worker is the
best), the cost each worker's mean training cost.

Arrays: ``w1`` ``(D, H)``, ``b1`` ``(H,)``, ``w2`` ``(H, D)``, ``b2`` ``(D,)``, ``workers`` ``(W, D)``
(the worker embeddings) and ``mean_cost`` ``(W,)``. Params: ``temperature`` and the training
settings. docs/ROUTERS.md lists where this differs from the released code.

Keyed by description (``worker_key = "description"``), a worker's embedding is not a free vector
per name but a learned projection of its description's embedding, ``k = d + relu(d V1 + c1) V2 +
c2`` (the same residual form as the question head), so an unseen worker gets one; the softmax runs
over the episode's shown workers, and a worker's cost is a ridge regression on its description's
embedding fitted to the training workers' mean costs. Arrays: the head's four, ``v1`` ``(D, H)``,
``c1`` ``(H,)``, ``v2`` ``(H, D)``, ``c2`` ``(D,)``, ``cost_w`` ``(D,)`` and ``cost_b`` ``(1,)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from conductor_env.agents.routers.base import ScoreRouter
from conductor_env.agents.routers.checkpoint import CheckpointError, RouterCheckpoint, require_arrays

#: The released code's temperature (``--tempreture 1``).
DEFAULT_TEMPERATURE = 1.0


def head(embeddings: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray) -> np.ndarray:
    """The residual projection head over question embeddings ``(N, D) -> (N, D)``."""
    return embeddings + np.maximum(embeddings @ w1 + b1, 0.0) @ w2 + b2


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of ``a`` with each row of ``b``, ``(N, M)``."""
    norms = np.linalg.norm(a, axis=1, keepdims=True) * np.linalg.norm(b, axis=1)[None, :]
    return (a @ b.T) / np.maximum(norms, 1e-12)


class RouterDCRouter(ScoreRouter):
    """The RouterDC router (see the module docstring; options as :class:`~conductor_env.agents.routers.Router`)."""

    kind = "routerdc"
    describes = True

    def __init__(self, checkpoint: RouterCheckpoint, **options: Any) -> None:
        super().__init__(checkpoint, **options)
        if self.by_description:
            shapes = {"w1": ("D", "H"), "b1": ("H",), "w2": ("H", "D"), "b2": ("D",), "v1": ("D", "G"), "c1": ("G",), "v2": ("G", "D"), "c2": ("D",), "cost_w": ("D",), "cost_b": (1,)}
            require_arrays(checkpoint, shapes)
            self._projection = tuple(checkpoint.arrays[name] for name in ("v1", "c1", "v2", "c2"))
        else:
            require_arrays(checkpoint, {"w1": ("D", "H"), "b1": ("H",), "w2": ("H", "D"), "b2": ("D",), "workers": ("W", "D"), "mean_cost": ("W",)})
            self._workers = checkpoint.arrays["workers"]
            self._mean_cost = checkpoint.arrays["mean_cost"]
        temperature = checkpoint.params.get("temperature", DEFAULT_TEMPERATURE)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not math.isfinite(temperature) or temperature <= 0:
            raise CheckpointError(f"routerdc router: temperature must be a finite number > 0, got {temperature!r}")
        self.temperature = float(temperature)
        self._head = tuple(checkpoint.arrays[name] for name in ("w1", "b1", "w2", "b2"))

    def scores(self, embeddings: np.ndarray) -> np.ndarray:
        """Returns ``cos(h(e), k_w) / t`` per question and worker, ``(N, W)``."""
        return cosine(head(embeddings, *self._head), self._workers) / self.temperature

    def predict(self, embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`ScoreRouter.predict`: the softmax of the scores, and each worker's mean cost."""
        scores = self.scores(embeddings)
        exp = np.exp(scores - scores.max(axis=1, keepdims=True))
        target = exp / exp.sum(axis=1, keepdims=True)
        return target, np.broadcast_to(self._mean_cost, target.shape)

    def predict_described(self, question: np.ndarray, workers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`ScoreRouter.predict_described`: the softmax over the shown workers' projected
        descriptions, and each one's cost from the ridge regression."""
        scores = cosine(head(question[None, :], *self._head), head(workers, *self._projection))[0] / self.temperature
        exp = np.exp(scores - scores.max())
        cost = workers @ self.checkpoint.arrays["cost_w"] + self.checkpoint.arrays["cost_b"][0]
        return exp / exp.sum(), cost
