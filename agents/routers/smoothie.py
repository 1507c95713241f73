"""``router:smoothie:<folder>``: Smoothie (Guha et al., NeurIPS 2024), label-free routing, its train-time regime.

Smoothie never sees a score. It embeds every worker's answer to each training question and fits a
latent-variable model in which each worker's answer embedding is the true answer's embedding plus
isotropic Gaussian noise of worker-specific variance: with three or more workers the expected
squared distance of worker ``i`` to the truth follows from pairwise distances alone (the triplet
method: ``0.5 * (E|x_i - x_j|^2 + E|x_i - x_k|^2 - E|x_j - x_k|^2)``, averaged over the pairs
``j, k`` of other workers), and worker ``i``'s weight is ``theta_i = dim / (2 * that)``, normalised
to sum to 1. Workers whose answers agree with the others' get high weight.

``local`` (Smoothie-Local, the default) fits the weights of a test question on its ``k`` nearest
training questions (cosine similarity of question embeddings), so a test question needs no worker
call; ``global`` (Smoothie-Global) fits one set of weights on every training question. The router
sends the question to the worker of highest weight (minus ``λ`` times its mean training cost).

Arrays: ``embeddings`` ``(M, D)`` (the training questions), ``sq_dists`` ``(M, W, W)`` (per
training question, the squared distance between each two workers' answer embeddings: the triplet
method needs only their means over the neighbours, so the answers' embeddings are not kept) and
``mean_cost`` ``(W,)``. Params: ``k``, ``variant``, ``answer_dim``. docs/ROUTERS.md lists where
this differs from the released code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.routers.base import ScoreRouter
from conductor_env.agents.routers.checkpoint import CheckpointError, RouterCheckpoint, require_arrays

#: Neighbours per question unless told otherwise (the released experiments sweep 1 to 20).
DEFAULT_K = 20
#: The two estimators: per input over nearest training questions, or one for all inputs.
VARIANTS = ("local", "global")
#: The smallest expected squared distance to the truth: a worker that never disagrees gets a large
#: finite weight instead of a division by zero (the released code divides by it as it is).
MIN_DIFF = 1e-6


def triplet_weights(sq_dists: np.ndarray, dim: int) -> np.ndarray:
    """Smoothie's weights from mean pairwise squared distances.

    Args:
        sq_dists: ``(W, W)`` mean squared distances between workers' answer embeddings.
        dim: The answer embeddings' size.

    Returns:
        ``(W,)`` weights summing to 1.

    Raises:
        ValueError: With fewer than three workers (the triplet method needs two others).
    """
    workers = sq_dists.shape[0]
    if workers < 3:
        raise ValueError(f"Smoothie's triplet method needs at least 3 workers, got {workers}")
    diff = np.zeros(workers)
    for i in range(workers):
        others = [j for j in range(workers) if j != i]
        terms = [0.5 * (sq_dists[i, j] + sq_dists[i, k] - sq_dists[j, k]) for a, j in enumerate(others) for k in others[a + 1 :]]
        diff[i] = np.mean(terms)
    theta = dim / (2 * np.maximum(diff, MIN_DIFF))
    return (theta / theta.sum()).astype(np.float32)


class SmoothieRouter(ScoreRouter):
    """The Smoothie router (see the module docstring; options as :class:`~conductor_env.agents.routers.Router`)."""

    kind = "smoothie"

    def __init__(self, checkpoint: RouterCheckpoint, **options: Any) -> None:
        super().__init__(checkpoint, **options)
        sizes = require_arrays(checkpoint, {"embeddings": ("M", "D"), "sq_dists": ("M", "W", "W"), "mean_cost": ("W",)})
        params = checkpoint.params
        k, variant, dim = params.get("k", DEFAULT_K), params.get("variant", "local"), params.get("answer_dim", checkpoint.encoder_dim)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise CheckpointError(f"smoothie router: k must be a positive integer, got {k!r}")
        if variant not in VARIANTS:
            raise CheckpointError(f"smoothie router: variant must be one of {VARIANTS}, got {variant!r}")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise CheckpointError(f"smoothie router: answer_dim must be a positive integer, got {dim!r}")
        if sizes["M"] < 1 or sizes["W"] < 3:
            raise CheckpointError(f"smoothie router: needs at least one training question and 3 workers, got {sizes['M']} and {sizes['W']}")
        self.k = min(k, sizes["M"])
        self.variant = variant
        self._dim = dim
        self._embeddings = checkpoint.arrays["embeddings"]
        self._sq_dists = checkpoint.arrays["sq_dists"]
        self._mean_cost = checkpoint.arrays["mean_cost"]
        self._global = triplet_weights(self._sq_dists.mean(axis=0), dim)

    def weights(self, embeddings: np.ndarray) -> np.ndarray:
        """Returns each question's Smoothie weights ``(N, W)`` (rows sum to 1)."""
        if self.variant == "global":
            return np.tile(self._global, (len(embeddings), 1))
        # Most similar first; ties go to the earlier training question.
        nearest = np.argsort(-(embeddings @ self._embeddings.T), axis=1, kind="stable")[:, : self.k]
        return np.stack([triplet_weights(self._sq_dists[row].mean(axis=0), self._dim) for row in nearest]) if len(nearest) else np.zeros((0, len(self._global)), np.float32)

    def predict(self, embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`ScoreRouter.predict`: the target is the Smoothie weight, the cost the worker's mean."""
        weights = self.weights(embeddings)
        return weights, np.broadcast_to(self._mean_cost, weights.shape)
