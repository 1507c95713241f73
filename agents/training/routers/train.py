"""``conductor-env train router``: embed a router-data table's questions, fit a router kind, save its folder."""

from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from conductor_env.agents.router_checkpoint import TARGETS, WORKER_KEYS, RouterCheckpoint
from conductor_env.agents.router_encoder import DEFAULT_ENCODER, SentenceEncoder, shared_encoder
from conductor_env.agents.training.routers.described import fit_knn_pairs, fit_mlp_pairs
from conductor_env.agents.training.routers.knn import fit_knn
from conductor_env.agents.training.routers.mlp import fit_mlp
from conductor_env.agents.training.routers.pairs import read_pairs
from conductor_env.agents.training.routers.routerdc import fit_routerdc
from conductor_env.agents.training.routers.routerdc_described import fit_routerdc_pairs
from conductor_env.agents.training.routers.smoothie import fit_smoothie
from conductor_env.agents.training.routers.table import RouterTable, read_table, table_path

#: A kind's fit: (table, embeddings, target=, seed=, **params) -> (arrays, params); a fit with an
#: ``encoder`` parameter also gets the sentence encoder (to embed more than the questions).
Fit = Callable[..., tuple[dict[str, np.ndarray], dict[str, Any]]]
#: Router kind -> its fit function.
TRAINERS: dict[str, Fit] = {"knn": fit_knn, "mlp": fit_mlp, "routerdc": fit_routerdc, "smoothie": fit_smoothie}
#: Router kind -> its fit keyed by description: (pairs, question embeddings, description
#: embeddings, target=, seed=, **params) -> (arrays, params).
DESCRIPTION_TRAINERS: dict[str, Fit] = {"knn": fit_knn_pairs, "mlp": fit_mlp_pairs, "routerdc": fit_routerdc_pairs}


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
        workers = f"{len(c.workers)} workers known by description" if c.worker_key == "description" else f"{len(c.workers)} workers ({', '.join(c.workers)})"
        return (
            f"{c.kind} router on {self.rows} questions x {workers}, target {c.target}, "
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
    workers: str = "name",
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
        workers: ``name`` (the arrays have one column per worker of the table's pool) or
            ``description`` (the router scores any worker from its description's embedding; the
            table may span many pools: :func:`train_described`).

    Raises:
        ValueError: For an unknown kind or target, a bad parameter, or a table that cannot be read.
        TypeError: For a parameter the kind does not take.
    """
    if kind not in TRAINERS:
        raise ValueError(f"unknown router kind {kind!r}; trainable kinds: {', '.join(sorted(TRAINERS))}")
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    if workers not in WORKER_KEYS:
        raise ValueError(f"workers must be one of {WORKER_KEYS}, got {workers!r}")
    if workers == "description":
        if isinstance(data, RouterTable):
            raise ValueError("a description-keyed router trains from a table file (it reads the rows' descriptions), not a loaded table")
        return train_described(kind, data, out, target=target, price_weight=price_weight, seed=seed, encoder=encoder, params=params)
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
    checkpoint, folder = _save(
        out,
        model,
        _provenance(source, table.meta),
        kind=kind,
        workers=table.workers,
        arrays=arrays,
        shown_names=table.shown_names,
        descriptions=table.descriptions,
        params=used,
        price_weight=price_weight,
        target=target,
        encoder_dim=int(embeddings.shape[1]),
    )
    return TrainedRouter(checkpoint, folder, len(table.questions), loaded - started, embedded - loaded, fitted - embedded)


def train_described(
    kind: str,
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    target: str = "score",
    price_weight: float = 0.0,
    seed: int = 0,
    encoder: str | SentenceEncoder = DEFAULT_ENCODER,
    params: dict[str, Any] | None = None,
) -> TrainedRouter:
    """Trains a router keyed by description (``worker_key = "description"``) and saves its folder.

    Arguments as :func:`train_router`; ``data`` may span many pools (``routers data --pools N``).

    Raises:
        ValueError: For a kind without a description-keyed mode, a bad parameter, or a table
            that cannot be read as pairs.
    """
    if kind not in DESCRIPTION_TRAINERS:
        raise ValueError(f"the {kind} router has no description-keyed mode; kinds with one: {', '.join(sorted(DESCRIPTION_TRAINERS))}")
    pairs = read_pairs(data)
    model = encoder if isinstance(encoder, SentenceEncoder) else shared_encoder(encoder)
    started = time.perf_counter()
    model.dim  # loads the model
    loaded = time.perf_counter()
    questions = model.encode(list(pairs.questions))
    descriptions = model.encode(list(pairs.descriptions))
    embedded = time.perf_counter()
    arrays, used = DESCRIPTION_TRAINERS[kind](pairs, questions, descriptions, target=target, seed=seed, **(params or {}))
    fitted = time.perf_counter()
    source = {"table": str(table_path(data)), "rows": pairs.rows, "pairs": len(pairs.pair_row), "pools": list(pairs.pools)}
    checkpoint, folder = _save(
        out,
        model,
        _provenance(source, pairs.meta),
        kind=kind,
        workers=pairs.workers,
        arrays=arrays,
        shown_names=tuple(w.rsplit("/", 1)[-1] for w in pairs.workers),
        descriptions=pairs.worker_descriptions,
        params=used,
        price_weight=price_weight,
        target=target,
        encoder_dim=int(questions.shape[1]),
        worker_key="description",
    )
    return TrainedRouter(checkpoint, folder, pairs.rows, loaded - started, embedded - loaded, fitted - embedded)


#: The table's metadata a checkpoint records in ``trained_on``.
PROVENANCE = ("env_id", "pool", "split", "seed", "samples", "env_options", "suite_options")


def _provenance(source: dict[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    return {**source, **{key: meta[key] for key in PROVENANCE if key in meta}}


def _save(out: str | os.PathLike[str], model: SentenceEncoder, trained_on: dict[str, Any], **fields: Any) -> tuple[RouterCheckpoint, Path]:
    """Saves a checkpoint of ``fields`` with the encoder's name and length; returns it and its folder."""
    checkpoint = RouterCheckpoint(encoder=model.model_name, max_length=model.max_length, trained_on=trained_on, **fields)
    return checkpoint, checkpoint.save(out)
