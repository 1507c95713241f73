"""Worker traits: what a worker's description states, as data (the structured view).

A worker of a generated pool (and any pool worker that declares ``traits``) is described by its
solving level per domain, the domains whose answers it judges reliably and its price tier. Its
description says exactly this in words; the hidden numbers behind it (its chance of solving a
step, of judging, its USD per call) are never part of the traits. Policies that do not read text
get the traits as the observation's ``worker_traits`` rows (``EnvOptions.worker_traits``).

A pool file declares them as::

    traits = { solve = { math = "strong", language = "weak" }, judge = ["math"], price = "cheap" }
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

#: The solving levels a description can state, weakest first (a level's index is its code).
LEVELS = ("weak", "fair", "strong")
#: The price tiers a description can state, cheapest first (a tier's index is its code).
TIERS = ("cheap", "costly")
#: Code of an absent entry: a domain the traits do not mention, a slot no worker fills.
ABSENT = -1


class TraitsError(ValueError):
    """A worker's ``traits`` table is malformed; the message says which part."""


def check_traits(traits: Any, where: str) -> dict[str, Any]:
    """Returns ``traits`` as a plain dict after checking its form.

    Args:
        traits: ``{"solve": {domain: level}, "judge": [domain, ...], "price": tier}``.
        where: Names the worker in the error.

    Raises:
        TraitsError: For a missing or unknown key, level, tier or domain list.
    """
    if not isinstance(traits, Mapping) or set(traits) != {"solve", "judge", "price"}:
        raise TraitsError(f"{where}: traits must be a table with exactly solve, judge and price, got {traits!r}")
    solve, judge, price = traits["solve"], traits["judge"], traits["price"]
    if not isinstance(solve, Mapping) or not all(isinstance(d, str) and level in LEVELS for d, level in solve.items()):
        raise TraitsError(f"{where}: traits.solve must map domains to one of {LEVELS}, got {solve!r}")
    if not isinstance(judge, (list, tuple)) or not all(isinstance(d, str) for d in judge):
        raise TraitsError(f"{where}: traits.judge must be a list of domains, got {judge!r}")
    if price not in TIERS:
        raise TraitsError(f"{where}: traits.price must be one of {TIERS}, got {price!r}")
    return {"solve": dict(solve), "judge": sorted(set(judge)), "price": price}


def trait_width(domains: Sequence[str]) -> int:
    """The length of one worker's row: a level per domain, a judge flag per domain, the tier."""
    return 2 * len(domains) + 1


def trait_row(traits: Mapping[str, Any] | None, domains: Sequence[str]) -> list[int]:
    """Encodes one worker's traits over ``domains`` (all :data:`ABSENT` without traits).

    Returns:
        ``[level code per domain] + [1 if it judges the domain else 0] + [tier code]``; a domain
        the traits do not mention gets :data:`ABSENT` as its level.
    """
    if traits is None:
        return [ABSENT] * trait_width(domains)
    solve, judges = traits["solve"], set(traits["judge"])
    levels = [LEVELS.index(solve[d]) if d in solve else ABSENT for d in domains]
    return levels + [int(d in judges) for d in domains] + [TIERS.index(traits["price"])]
