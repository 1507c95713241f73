"""Training the kNN router: it keeps the training questions' embeddings and measurements."""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.router_knn import DEFAULT_K
from conductor_env.agents.training.routers.table import RouterTable


def fit_knn(table: RouterTable, embeddings: np.ndarray, *, target: str, seed: int = 0, k: int = DEFAULT_K) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Returns the kNN router's arrays and params.

    Args:
        table: The router-data table.
        embeddings: Its questions' unit embeddings ``(M, D)``.
        target: ``score`` or ``reward``.
        seed: Unused (kNN draws nothing); accepted so every kind trains with one call.
        k: Neighbours per question.

    Raises:
        ValueError: For ``k < 1``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    arrays = {"embeddings": embeddings.astype(np.float32), "target": table.target(target), "cost": table.costs}
    return arrays, {"k": k}
