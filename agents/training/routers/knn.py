"""Training the kNN router: it keeps the training questions' embeddings and measurements.

Keyed by name (:func:`fit_knn`) per question and worker of one pool; keyed by description
(:func:`fit_knn_pairs`, ``train router --workers description``) per (question, worker) pair, with
the embeddings of the workers' descriptions: the arrays :mod:`conductor_env.agents.routers.knn`
reads in each mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.routers.knn import DEFAULT_K
from conductor_env.agents.training.routers.pairs import PairTable
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
