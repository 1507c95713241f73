"""``router:knn:<folder>``: each question goes to the worker with the best mean ``target - λ * cost``
over its ``k`` nearest training questions (cosine similarity of question embeddings).

Arrays: ``embeddings`` ``(M, D)`` (the training questions, unit vectors), ``target`` and ``cost``
``(M, W)`` (each worker's measured target and USD cost on them). Params: ``k``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.router_checkpoint import CheckpointError, RouterCheckpoint, require_arrays
from conductor_env.agents.routers import ScoreRouter

#: Neighbours per question when the checkpoint does not say.
DEFAULT_K = 10


class KNNRouter(ScoreRouter):
    """The k-nearest-neighbour router (see the module docstring; options as :class:`~conductor_env.agents.routers.Router`)."""

    kind = "knn"

    def __init__(self, checkpoint: RouterCheckpoint, **options: Any) -> None:
        super().__init__(checkpoint, **options)
        sizes = require_arrays(checkpoint, {"embeddings": ("M", "D"), "target": ("M", "W"), "cost": ("M", "W")})
        k = checkpoint.params.get("k", DEFAULT_K)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise CheckpointError(f"knn router: k must be a positive integer, got {k!r}")
        if sizes["M"] < 1:
            raise CheckpointError("knn router: the checkpoint holds no training question")
        self.k = min(k, sizes["M"])
        self._embeddings = checkpoint.arrays["embeddings"]
        self._target = checkpoint.arrays["target"]
        self._cost = checkpoint.arrays["cost"]

    def neighbours(self, embeddings: np.ndarray) -> np.ndarray:
        """Returns the indices of each question's ``k`` nearest training questions ``(N, k)``,
        most similar first (ties: the earlier training question)."""
        similarity = embeddings @ self._embeddings.T
        return np.argsort(-similarity, axis=1, kind="stable")[:, : self.k]

    def predict(self, embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`ScoreRouter.predict`: the neighbours' mean target and cost."""
        nearest = self.neighbours(embeddings)
        return self._target[nearest].mean(axis=1), self._cost[nearest].mean(axis=1)
