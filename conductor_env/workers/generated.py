"""Generated pools: a pool file with a ``[family]`` table draws a new pool for every episode.

    pool = load_pool("generated")                 # the shipped family's training part
    episode_pool = pool.for_episode(seed)         # a plain WorkerPool of simulated workers
    fixed = load_pool("generated-heldout#3")      # the held-out part's draw 3, as a fixed pool

The env asks its pool for the episode's pool at every ``reset`` (:meth:`GeneratedPool.for_episode`),
so every consumer of an env (vector envs, evaluation, GRPO, Ray, the framework adapters) plays
generated pools without knowing it. See docs/GENERATED_POOLS.md.
"""

from __future__ import annotations

from typing import Any, Mapping

from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.family import FamilyError, PoolFamily, family_from_mapping
from conductor_env.workers.family_draw import description_bound, draw_pool_specs
from conductor_env.workers.pool import PoolError, WorkerPool


class GeneratedPool(WorkerPool):
    """A family of pools: each episode plays the pool :meth:`for_episode` draws from its seed.

    Its own :attr:`specs` are placeholder slots (``slot-1`` ...), one per worker the largest draw
    can have; nothing calls them.

    Args:
        family: The family and the part drawn from.
    """

    def __init__(self, family: PoolFamily) -> None:
        most = family.workers[1]
        slots = [WorkerSpec(name=f"slot-{i + 1}", backend="simulated") for i in range(most)]
        super().__init__(slots, name=family.name)
        self.family = family
        widest_name = max(len(name) for part in family.parts.values() for name in part.names)
        self._bound_specs = tuple(WorkerSpec(name=f"{i:0{widest_name}d}", backend="simulated", description="d" * description_bound(family)) for i in range(most))

    @property
    def bound_specs(self) -> tuple[WorkerSpec, ...]:
        """Specs with the longest name and description any draw can have (they bound the observation space)."""
        return self._bound_specs

    @property
    def trait_domains(self) -> tuple[str, ...]:
        """The domains of the workers' traits (the columns of the structured view)."""
        return self.family.domains

    def for_episode(self, seed: int) -> WorkerPool:
        """Returns the episode's pool: the family part's draw for ``seed``."""
        return WorkerPool(draw_pool_specs(self.family, seed), name=self.family.name)

    async def call(self, index: int, messages: Any, **kwargs: Any) -> Any:
        """Refuses: a family's slots are not workers; call the pool of :meth:`for_episode`."""
        raise PoolError(f"pool {self.name!r} is a family of generated pools; call the pool its for_episode(seed) returns")


def family_pool(data: Mapping[str, Any], *, name: str, member: int | None) -> WorkerPool:
    """Builds the pool of a parsed pool file with a ``[family]`` table.

    Args:
        data: The parsed file (``extends`` merged in).
        name: The file's stem or preset name.
        member: ``None`` for the family (a :class:`GeneratedPool`); ``k`` for its part's fixed
            draw ``k``, a plain pool named ``<name>#<k>``.

    Raises:
        PoolError: For an invalid family table or a negative member.
    """
    try:
        family = family_from_mapping(data, name=name)
    except FamilyError as error:
        raise PoolError(f"pool {name!r}: {error}") from None
    if member is None:
        return GeneratedPool(family)
    if member < 0:
        raise PoolError(f"pool {name!r}: a member index must be >= 0, got {member}")
    return WorkerPool(draw_pool_specs(family, member), name=f"{data.get('name', name)}#{member}")
