"""The released Conductor code's data recipe as index arithmetic (``Conductor-Mix-v0`` ``recipe="paper"``).

The paper's training code (``junho328/orchestrator``, ``conductor/proj_guf/guf``: the task
``MixMMRLTask`` with seed 42) builds its mix in three steps; this module reproduces each with the
same generators, so the same rows in the same order give the same indices:

1. **Each source splits itself, 60/20/20.** MATH-500 (``HuggingFaceH4/MATH-500``, split
   ``test``: all 500 problems), RLPR (``openbmb/RLPR-Train-Dataset``, ground truths of at most 30
   characters) and LiveCodeBench (``code_generation_lite`` ``release_v1``, 400 problems) shuffle
   their row indices with ``random.Random(seed)``: the first ``int(n * 0.2)`` are test, the next
   ``int(n * 0.2)`` validation, the rest train (:func:`released_split`). MMLU (``cais/mmlu``,
   ``all``) takes train from ``auxiliary_train``, validation from ``validation`` and test from
   ``test``, each shuffled as ``datasets.Dataset.shuffle(seed)`` does and cut to counts in the
   ratio 60/20/20, as many as the scarcest split allows (:func:`mmlu_released_split`).
2. **The train split is balanced** to the smallest source's train count: each source's train
   part is shuffled (``Dataset.shuffle(seed + offset)``, offsets MMLU 0, MATH 2, RLPR 3, LCB 4)
   and cut to that count (:func:`balanced_train`). With release_v1's 400 problems LCB has 240
   train problems, so the train split is 4 x 240 = 960. Validation and test are not balanced.
3. **Each split is concatenated** (MMLU, MATH, RLPR, LCB) and shuffled with
   ``Dataset.shuffle(seed + len(name))`` for the released names ``train``, ``valid``, ``test``
   (:func:`mixed_order`).
"""

from __future__ import annotations

import math
import random
from typing import Mapping

import numpy as np

__all__ = [
    "MMLU_SPLITS",
    "PAPER_SEED",
    "PAPER_SOURCE_ORDER",
    "balanced_train",
    "dataset_shuffle",
    "mixed_order",
    "mmlu_released_split",
    "ratio_counts",
    "released_split",
]

#: The released runs' seed.
PAPER_SEED = 42
#: The order in which the released code concatenates its sources.
PAPER_SOURCE_ORDER = ("mmlu", "math500", "rlpr", "lcb")
#: Mix split -> the MMLU split its problems come from in the released code.
MMLU_SPLITS = {"train": "auxiliary_train", "validation": "validation", "test": "test"}
#: Seed offset of each source's balancing shuffle in the released code.
_BALANCE_OFFSET = {"mmlu": 0, "math500": 2, "rlpr": 3, "lcb": 4}
#: ``len`` of the released split names (``train``, ``valid``, ``test``): the final shuffle's offset.
_ORDER_OFFSET = {"train": len("train"), "validation": len("valid"), "test": len("test")}
_SPLITS = ("train", "validation", "test")


def dataset_shuffle(n: int, seed: int) -> list[int]:
    """Returns the order in which ``datasets.Dataset.shuffle(seed=seed)`` puts ``n`` rows.

    ``Dataset.shuffle`` draws ``numpy.random.default_rng(seed).permutation(n)``; this draws the
    same without building a dataset.
    """
    return [int(i) for i in np.random.default_rng(seed).permutation(n)]


def released_split(n: int, *, seed: int, valid_ratio: float, test_ratio: float) -> dict[str, list[int]]:
    """Splits ``n`` row indices as the released code's ``get_or_create_indices`` does.

    Args:
        n: Rows in the source, in its file (hub) order.
        seed: The split seed (42 in the released runs).
        valid_ratio: Fraction for validation (0.2).
        test_ratio: Fraction for test (0.2).

    Returns:
        ``{"train": [...], "validation": [...], "test": [...]}``: disjoint row indices covering
        ``range(n)``; test takes the first ``int(n * test_ratio)`` shuffled indices, validation
        the next ``int(n * valid_ratio)``, train the rest.
    """
    ids = list(range(n))
    random.Random(seed).shuffle(ids)
    n_test, n_valid = int(n * test_ratio), int(n * valid_ratio)
    return {"train": ids[n_test + n_valid :], "validation": ids[n_test : n_test + n_valid], "test": ids[:n_test]}


def ratio_counts(available: Mapping[str, int], *, valid_ratio: float, test_ratio: float) -> dict[str, int]:
    """Returns how many rows of each ready-made split keep the ratios (the released MMLU rule).

    Args:
        available: Rows available per split (``train``, ``validation``, ``test``).
        valid_ratio: Fraction for validation.
        test_ratio: Fraction for test; train gets ``1 - valid_ratio - test_ratio``.

    Returns:
        Rows to take per split: ``int(total * ratio)`` for the largest ``total`` the splits allow.
    """
    ratios = {"train": 1.0 - valid_ratio - test_ratio, "validation": valid_ratio, "test": test_ratio}
    total = min(available[split] / ratio if ratio > 0 else math.inf for split, ratio in ratios.items())
    return {split: int(total * ratio) if ratio > 0 else 0 for split, ratio in ratios.items()}


def mmlu_released_split(sizes: Mapping[str, int], *, seed: int, valid_ratio: float, test_ratio: float) -> dict[str, list[int]]:
    """Picks the MMLU rows of each mix split as the released code does.

    Args:
        sizes: Rows in MMLU's ``auxiliary_train`` (key ``train``), ``validation`` and ``test``.
        seed: The seed of every shuffle.
        valid_ratio: Fraction for validation.
        test_ratio: Fraction for test.

    Returns:
        Per mix split, indices into the MMLU split it comes from (:data:`MMLU_SPLITS`).
    """
    counts = ratio_counts(sizes, valid_ratio=valid_ratio, test_ratio=test_ratio)
    return {split: dataset_shuffle(sizes[split], seed)[: counts[split]] for split in _SPLITS}


def balanced_train(train_sizes: Mapping[str, int], *, seed: int) -> dict[str, list[int]]:
    """Returns the positions of each source's train part that the balanced train split keeps.

    Args:
        train_sizes: Train problems per source (``mmlu``, ``math500``, ``rlpr``, ``lcb``).
        seed: The mix seed.

    Returns:
        Per source, ``min(train_sizes.values())`` positions into its train part.
    """
    keep = min(train_sizes.values(), default=0)
    return {source: dataset_shuffle(size, seed + _BALANCE_OFFSET[source])[:keep] for source, size in train_sizes.items()}


def mixed_order(n: int, split: str, *, seed: int) -> list[int]:
    """Returns the order of a concatenated mix split (the released final shuffle)."""
    return dataset_shuffle(n, seed + _ORDER_OFFSET[split])
