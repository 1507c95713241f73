"""``router:mlp:<folder>``: a two-layer perceptron over the question embedding predicts each
worker's target; the cost of a worker is its mean cost on the training questions.

Arrays: ``w1`` ``(D, H)``, ``b1`` ``(H,)``, ``w2`` ``(H, W)``, ``b2`` ``(W,)`` (ReLU between the
layers) and ``mean_cost`` ``(W,)``. The forward pass runs in numpy; training needs torch
(:mod:`conductor_env.agents.training.routers.mlp`).

Keyed by description (``worker_key = "description"``), the input is the question embedding
concatenated with the worker's description embedding and the two outputs are the worker's
target and USD cost (so the cost of an unseen worker is predicted from its description): ``w1``
``(2D, H)``, ``b1`` ``(H,)``, ``w2`` ``(H, 2)``, ``b2`` ``(2,)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.routers.base import ScoreRouter
from conductor_env.agents.routers.checkpoint import RouterCheckpoint, require_arrays


class MLPRouter(ScoreRouter):
    """The MLP router (see the module docstring; options as :class:`~conductor_env.agents.routers.Router`)."""

    kind = "mlp"
    describes = True

    def __init__(self, checkpoint: RouterCheckpoint, **options: Any) -> None:
        super().__init__(checkpoint, **options)
        if self.by_description:
            dim = 2 * checkpoint.encoder_dim
            require_arrays(checkpoint, {"w1": (dim, "H"), "b1": ("H",), "w2": ("H", 2), "b2": (2,)})
            self._layers = tuple(checkpoint.arrays[name] for name in ("w1", "b1", "w2", "b2"))
            return
        require_arrays(checkpoint, {"w1": ("D", "H"), "b1": ("H",), "w2": ("H", "W"), "b2": ("W",), "mean_cost": ("W",)})
        self._layers = tuple(checkpoint.arrays[name] for name in ("w1", "b1", "w2", "b2"))
        self._mean_cost = checkpoint.arrays["mean_cost"]

    def predict(self, embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`ScoreRouter.predict`."""
        w1, b1, w2, b2 = self._layers
        hidden = np.maximum(embeddings @ w1 + b1, 0.0)
        target = hidden @ w2 + b2
        return target, np.broadcast_to(self._mean_cost, target.shape)

    def predict_described(self, question: np.ndarray, workers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`ScoreRouter.predict_described`: both outputs of the pair network."""
        w1, b1, w2, b2 = self._layers
        pairs = np.concatenate([np.broadcast_to(question, workers.shape), workers], axis=1)
        out = np.maximum(pairs @ w1 + b1, 0.0) @ w2 + b2
        return out[:, 0], out[:, 1]
