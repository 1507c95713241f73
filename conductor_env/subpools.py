"""Random sub-pools: which workers an episode shows, in which order, and which sets it never shows."""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Collection, Sequence

#: The ``subpool_size`` option: the whole pool, a size, or a ``(min, max)`` range.
SubpoolSize = int | tuple[int, int] | None
#: The ``exclude_subpools`` option: sub-pools never shown, each as the sorted names of its workers.
ExcludedSubpools = tuple[tuple[str, ...], ...]


def subpool_size_range(size: int | tuple[int, int], pool_size: int) -> tuple[int, int]:
    """Returns the ``(low, high)`` sub-pool sizes a ``subpool_size`` draws from, within ``1..pool_size``."""
    low, high = (size, size) if isinstance(size, int) else size
    high = min(high, pool_size)
    return max(1, min(low, high)), high


def check_excluded_subpools(names: Sequence[str], size: SubpoolSize, exclude: Collection[tuple[str, ...]]) -> None:
    """Checks that excluded sub-pools name pool workers and leave something to draw.

    Args:
        names: The pool's worker names, in canonical order.
        size: The ``subpool_size`` option.
        exclude: Sorted worker-name tuples never to show.

    Raises:
        ValueError: For a name the pool lacks, or when every sub-pool ``size`` can draw is excluded.
    """
    for subpool in exclude:
        unknown = [name for name in subpool if name not in names]
        if unknown:
            raise ValueError(f"exclude_subpools names {', '.join(map(repr, unknown))}, not in the pool (its workers: {', '.join(names)})")
    if not exclude:
        return
    low, high = (len(names), len(names)) if size is None else subpool_size_range(size, len(names))
    excluded_of_size = Counter(len(subpool) for subpool in exclude)
    if all(excluded_of_size[k] >= math.comb(len(names), k) for k in range(low, high + 1)):
        shown = "the whole pool" if size is None else f"sub-pools of {low} workers" if low == high else f"sub-pools of {low}-{high} workers"
        raise ValueError(f"exclude_subpools excludes every draw of {shown}; exclude fewer or widen subpool_size")


def draw_subpool(rng: random.Random, names: Sequence[str], size: SubpoolSize, exclude: Collection[tuple[str, ...]] = ()) -> tuple[int, ...]:
    """Draws the worker indices an episode shows, in the order their ids are shown.

    Args:
        rng: The episode's random generator.
        names: The pool's worker names, in canonical order.
        size: ``None`` (the whole pool in canonical order), a fixed size, or a ``(min, max)``
            range; the subset is shuffled so shown ids carry no identity.
        exclude: Sorted worker-name tuples never to show; a draw of one is drawn again, so call
            :func:`check_excluded_subpools` first (it says whether any draw is left).

    Returns:
        Canonical worker indices; shown id ``i`` maps to the ``i``-th entry.
    """
    if size is None:
        return tuple(range(len(names)))
    low, high = subpool_size_range(size, len(names))
    while True:
        drawn = tuple(rng.sample(range(len(names)), rng.randint(low, high)))
        if not exclude or tuple(sorted(names[i] for i in drawn)) not in exclude:
            return drawn
