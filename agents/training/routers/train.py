"""``conductor-env train router``: embed a router-data table's questions, fit a router kind, save its folder."""

from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from conductor_env.agents.router_checkpoint import TARGETS, RouterCheckpoint
from conductor_env.agents.router_encoder import DEFAULT_ENCODER, SentenceEncoder, shared_encoder
from conductor_env.agents.training.routers.knn import fit_knn
from conductor_env.agents.training.routers.mlp import fit_mlp
from conductor_env.agents.training.routers.routerdc import fit_routerdc
from conductor_env.agents.training.routers.smoothie import fit_smoothie
from conductor_env.agents.training.routers.table import RouterTable, read_table, table_path

#: A kind's fit: (table, embeddings, target=, seed=, **params) -> (arrays, params); a fit with an
#: ``encoder`` parameter also gets the sentence encoder (to embed more than the questions).
Fit = Callable[..., tuple[dict[str, np.ndarray], dict[str, Any]]]
#: Router kind -> its fit function.
TRAINERS: dict[str, Fit] = {"knn": fit_knn, "mlp": fit_mlp, "routerdc": fit_routerdc, "smoothie": fit_smoothie}


@dataclass(frozen=True)
class TrainedRouter:
    """What :func:`train_router` did.

    Attributes:
        checkpoint: The router saved.
        folder: Where.
        rows: Training questions.
        load_s: Seconds spent loading the encoder (0 when it was loaded before).
        embed_s: Seconds spent embedding the questions.
        fit_s: Seconds spent fitting.
    """

    checkpoint: RouterCheckpoint
    folder: Path
    rows: int
    load_s: float
    embed_s: float
    fit_s: float

    def summary(self) -> str:
        """One line for the command line."""
        c = self.checkpoint
        return (
            f"{c.kind} router on {self.rows} questions x {len(c.workers)} workers ({', '.join(c.workers)}), target {c.target}, "
            f"price weight {c.price_weight:g}: loading the encoder {self.load_s:.1f} s, embedding {self.embed_s:.1f} s, fitting {self.fit_s:.2f} s -> {self.folder}"
        )


def train_router(
    kind: str,
    data: str | os.PathLike[str] | RouterTable,
    out: str | os.PathLike[str],
    *,
    target: str = "score",
    price_weight: float = 0.0,
    seed: int = 0,
    encoder: str | SentenceEncoder = DEFAULT_ENCODER,
    params: dict[str, Any] | None = None,
) -> TrainedRouter:
    """Trains a router and saves its folder.

    Args:
        kind: A key of :data:`TRAINERS`.
        data: The router-data table (a path, the ``routers data`` folder, or a loaded table).
        out: The checkpoint folder to write.
        target: ``score`` or ``reward`` (what the router predicts per worker).
        price_weight: The checkpoint's default λ (``target - λ * cost`` is maximised).
        seed: Seeds the kinds that draw (the MLP's initial weights).
        encoder: The question encoder (a name, folder or hub id, shared across the process with
            the routers that play it; or an encoder).
        params: The kind's hyper-parameters (``k`` for knn; ``hidden``, ``epochs``, ``lr``,
            ``weight_decay`` for mlp).

    Raises:
        ValueError: For an unknown kind or target, a bad parameter, or a table that cannot be read.
        TypeError: For a parameter the kind does not take.
    """
    if kind not in TRAINERS:
        raise ValueError(f"unknown router kind {kind!r}; trainable kinds: {', '.join(sorted(TRAINERS))}")
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    table = data if isinstance(data, RouterTable) else read_table(data)
    model = encoder if isinstance(encoder, SentenceEncoder) else shared_encoder(encoder)
    started = time.perf_counter()
    model.dim  # loads the model
    loaded = time.perf_counter()
    embeddings = model.encode(list(table.questions))
    embedded = time.perf_counter()
    fit = TRAINERS[kind]
    extra: dict[str, Any] = {"encoder": model} if "encoder" in inspect.signature(fit).parameters else {}
    arrays, used = fit(table, embeddings, target=target, seed=seed, **extra, **(params or {}))
    fitted = time.perf_counter()
    source = {"table": str(table_path(data)) if not isinstance(data, RouterTable) else "memory", "rows": len(table.questions)}
    source.update({k: table.meta[k] for k in ("env_id", "pool", "split", "seed", "samples", "env_options", "suite_options") if k in table.meta})
    checkpoint = RouterCheckpoint(
        kind=kind,
        workers=table.workers,
        arrays=arrays,
        shown_names=table.shown_names,
        descriptions=table.descriptions,
        params=used,
        price_weight=price_weight,
        target=target,
        encoder=model.model_name,
        encoder_dim=int(embeddings.shape[1]),
        max_length=model.max_length,
        trained_on=source,
    )
    folder = checkpoint.save(out)
    return TrainedRouter(checkpoint, folder, len(table.questions), loaded - started, embedded - loaded, fitted - embedded)
