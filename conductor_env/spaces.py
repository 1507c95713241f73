"""A permissive string space: any Python ``str`` up to a length (Gymnasium's ``Text`` rejects
most characters, including newlines and punctuation a workflow needs)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Text

# Printable ASCII, whitespace and a few non-ASCII characters, so samples exercise parsers.
_SAMPLE_CHARSET = "".join(chr(c) for c in range(32, 127)) + "\n\t\u00e9\u4e2d\u2014\U0001f600"


class AnyText(Text):
    """A space of strings of any characters, with ``min_length <= len(s) <= max_length``.

    It subclasses :class:`gymnasium.spaces.Text` so Gymnasium's vector utilities (batching,
    concatenation, iteration) treat it as text.

    Args:
        max_length: Longest string in the space.
        min_length: Shortest string in the space.
        seed: Seed of the space's sampler.
    """

    def __init__(self, max_length: int = 1 << 20, *, min_length: int = 0, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(max_length=max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        """True for any ``str`` whose length is within bounds."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Returns a random string of up to 64 characters (shorter than ``max_length``)."""
        length = int(self.np_random.integers(self.min_length, min(self.max_length, 64) + 1))
        chars = self.np_random.choice(list(_SAMPLE_CHARSET), size=length)
        return "".join(chars)

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AnyText) and self.min_length == other.min_length and self.max_length == other.max_length
