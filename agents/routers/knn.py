"""``router:knn:<folder>``: each question goes to the worker with the best mean ``target - λ * cost``
over its ``k`` nearest training questions (cosine similarity of question embeddings).

Arrays: ``embeddings`` ``(M, D)`` (the training questions, unit vectors), ``target`` and ``cost``
``(M, W)`` (each worker's measured target and USD cost on them). Params: ``k``.

Keyed by description (``worker_key = "description"``), it is kNN over (question, worker) pairs:
a pair's similarity to a training pair is the mean of the two questions' cosine similarity and the
two workers' descriptions' cosine similarity, and a shown worker's predicted target and cost are
the means over its ``k`` nearest training pairs (so the cost of an unseen worker comes from
training workers described alike). Arrays: ``embeddings`` ``(M, D)`` (the training questions),
``descriptions`` ``(U, D)`` (the training workers' descriptions), ``pair_question`` and
``pair_worker`` ``(P,)`` (each pair's row in those two, as floats), ``target`` and ``cost``
``(P,)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.routers.base import ScoreRouter
from conductor_env.agents.routers.checkpoint import CheckpointError, RouterCheckpoint, require_arrays

#: Neighbours per question when the checkpoint does not say.
DEFAULT_K = 10


class KNNRouter(ScoreRouter):
    """The k-nearest-neighbour router (see the module docstring; options as :class:`~conductor_env.agents.routers.Router`)."""

    kind = "knn"
    describes = True

    def __init__(self, checkpoint: RouterCheckpoint, **options: Any) -> None:
        super().__init__(checkpoint, **options)
        if self.by_description:
            self._init_pairs(checkpoint)
            return
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

    def _init_pairs(self, checkpoint: RouterCheckpoint) -> None:
        shapes = {"embeddings": ("M", "D"), "descriptions": ("U", "D"), "pair_question": ("P",), "pair_worker": ("P",), "target": ("P",), "cost": ("P",)}
        sizes = require_arrays(checkpoint, shapes)
        k = checkpoint.params.get("k", DEFAULT_K)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise CheckpointError(f"knn router: k must be a positive integer, got {k!r}")
        if sizes["P"] < 1:
            raise CheckpointError("knn router: the checkpoint holds no training pair")
        questions, workers = checkpoint.arrays["pair_question"], checkpoint.arrays["pair_worker"]
        if questions.min() < 0 or questions.max() >= sizes["M"] or workers.min() < 0 or workers.max() >= sizes["U"] or np.any(questions % 1) or np.any(workers % 1):
            raise CheckpointError("knn router: pair_question and pair_worker must be row numbers of embeddings and descriptions")
        self.k = min(k, sizes["P"])
        self._embeddings, self._descriptions = checkpoint.arrays["embeddings"], checkpoint.arrays["descriptions"]
        self._pair_question, self._pair_worker = questions.astype(np.int64), workers.astype(np.int64)
        self._target, self._cost = checkpoint.arrays["target"], checkpoint.arrays["cost"]

    def predict_described(self, question: np.ndarray, workers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`ScoreRouter.predict_described`: the means over each worker's ``k`` nearest training pairs."""
        by_question = (self._embeddings @ question)[self._pair_question]
        by_worker = (workers @ self._descriptions.T)[:, self._pair_worker]
        similarity = 0.5 * (by_question[None, :] + by_worker)
        nearest = np.argsort(-similarity, axis=1, kind="stable")[:, : self.k]
        return self._target[nearest].mean(axis=1), self._cost[nearest].mean(axis=1)
