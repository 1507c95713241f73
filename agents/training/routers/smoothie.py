"""Training the Smoothie router: embed every worker's answer to each training question (label-free).

It reads the table's ``answers`` (``conductor-env routers data`` records them) and costs, never its
scores or rewards: the router is the same whatever the labels say. Each training question costs one
call per worker (N calls), made when the table was written.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conductor_env.agents.routers.encoder import SentenceEncoder
from conductor_env.agents.routers.smoothie import DEFAULT_K, VARIANTS
from conductor_env.agents.training.routers.table import RouterTable


def fit_smoothie(
    table: RouterTable, embeddings: np.ndarray, *, target: str, seed: int = 0, encoder: SentenceEncoder, k: int = DEFAULT_K, variant: str = "local"
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Returns the Smoothie router's arrays and params.

    Args:
        table: The router-data table (with answers).
        embeddings: Its questions' unit embeddings ``(M, D)``.
        target: Unused: Smoothie reads no label (accepted so every kind trains with one call).
        seed: Unused (Smoothie draws nothing).
        encoder: Embeds the answers.
        k: Nearest training questions per test question (``local``).
        variant: ``local`` (Smoothie-Local) or ``global`` (Smoothie-Global).

    Raises:
        ValueError: For a table without answers or with fewer than 3 workers, a bad ``k`` or variant.
    """
    if table.answers is None:
        raise ValueError("Smoothie embeds the workers' answers, and this table records none: rewrite it with `conductor-env routers data` (it keeps each worker's answer)")
    if len(table.workers) < 3:
        raise ValueError(f"Smoothie's triplet method needs at least 3 workers, the table has {len(table.workers)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    texts = [answer for row in table.answers for answer in row]
    answers = encoder.encode(texts).reshape(len(table.answers), len(table.workers), -1).astype(np.float64)
    differences = answers[:, :, None, :] - answers[:, None, :, :]
    sq_dists = np.einsum("mijd,mijd->mij", differences, differences)
    arrays = {"embeddings": embeddings.astype(np.float32), "sq_dists": sq_dists.astype(np.float32), "mean_cost": table.costs.mean(axis=0)}
    return arrays, {"k": k, "variant": variant, "answer_dim": int(answers.shape[2]), "worker_calls_per_question": len(table.workers)}
