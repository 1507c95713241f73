"""``Utf8Text``: a Gymnasium space of any Unicode text up to a number of UTF-8 bytes.

Gymnasium's :class:`~gymnasium.spaces.Text` holds strings over a fixed character set and flattens
each character to an index into it, so it cannot describe what an LLM reads and writes (any
Unicode) without a character set of a million code points. ``Utf8Text`` holds every Python
``str`` whose UTF-8 encoding fits in ``max_bytes`` and flattens a string to its UTF-8 bytes:

- :func:`~gymnasium.spaces.utils.flatten` gives a ``uint8`` array of ``max_bytes`` entries, the
  encoding followed by ``0xFF`` padding (a byte that never occurs in UTF-8), and
  :func:`~gymnasium.spaces.utils.unflatten` inverts it exactly (NUL characters included);
- :func:`~gymnasium.spaces.utils.flatdim` is ``max_bytes``;
- :class:`~gymnasium.vector.AsyncVectorEnv` shares observations through ``max_bytes`` bytes of
  shared memory per environment (the default ``shared_memory=True`` works; the batch it reads is a
  live :class:`SharedTexts` view, and a ``tuple`` once copied, as ``copy=True`` does);
- the vector utilities batch it as a :class:`~gymnasium.spaces.Tuple` of texts (like ``Text``).

Lone surrogates (which ``str`` allows and UTF-8 does not) are encoded with ``surrogatepass``, so
every ``str`` round-trips.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence as PySequence
from multiprocessing.sharedctypes import SynchronizedArray
from types import ModuleType
from typing import Any, Callable

import numpy as np
from gymnasium.spaces import Box, Space, Tuple
from gymnasium.spaces import utils as space_utils
from gymnasium.vector.utils import shared_memory as shm
from gymnasium.vector.utils import space_utils as vector_utils
from gymnasium.wrappers import utils as wrapper_utils

__all__ = ["PAD_BYTE", "SharedTexts", "Utf8Text", "fit_bytes", "shorten_text", "utf8_size"]

#: Fills the flattened form after the text's bytes; UTF-8 never uses it.
PAD_BYTE = 0xFF

_ENCODING_ERRORS = "surrogatepass"

# Characters ``sample`` draws from: ASCII, whitespace, accented and Greek letters, arrows, logic and
# maths symbols, CJK, an emoji and NUL, so samples exercise 1- to 4-byte encodings and parsers.
_SAMPLE_CHARACTERS = [chr(c) for c in range(32, 127)] + list("\n\t\r\x00") + list("éüñçßÆøπΣλ→←⇒⇔∀∃∧∨¬≤≥≠∞∑√∫—“”«»") + list("中文字漢𝔸𝕏😀🚀")


def utf8_size(text: str) -> int:
    """Returns the number of bytes ``text`` takes in a :class:`Utf8Text` (its UTF-8 encoding)."""
    return len(text.encode("utf-8", _ENCODING_ERRORS))


class Utf8Text(Space[str]):
    """Strings of any Unicode characters whose UTF-8 encoding is at most ``max_bytes`` bytes.

    Args:
        max_bytes: Most UTF-8 bytes of a string in the space (``0``: only ``""``).
        seed: Seed of the space's sampler.

    Example:
        >>> from gymnasium.spaces.utils import flatdim, flatten, unflatten
        >>> space = Utf8Text(16)
        >>> space.contains("x → y ∧ ¬z"), space.contains("é" * 9)
        (True, False)
        >>> unflatten(space, flatten(space, "naïve")), flatdim(space)
        ('naïve', 16)
    """

    def __init__(self, max_bytes: int, *, seed: int | np.random.Generator | None = None) -> None:
        if not isinstance(max_bytes, (int, np.integer)) or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, got {max_bytes!r}")
        self.max_bytes = int(max_bytes)
        super().__init__(dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Always true: a string flattens to a fixed-size ``uint8`` array."""
        return True

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a ``str`` of at most ``max_bytes`` UTF-8 bytes."""
        return isinstance(x, str) and utf8_size(x) <= self.max_bytes

    def sample(self, mask: int | None = None, probability: None = None) -> str:
        """Returns a random string of mixed 1- to 4-byte characters that fits the space.

        Args:
            mask: ``None`` (up to 64 characters, a uniformly drawn count) or the number of
                characters to draw (the result is then cut to ``max_bytes``).
            probability: Not supported (must be ``None``).

        Returns:
            A string in the space.
        """
        if probability is not None:
            raise ValueError("Utf8Text.sample does not take a probability")
        count = int(self.np_random.integers(0, 65)) if mask is None else int(mask)
        if count < 0:
            raise ValueError(f"the number of characters to sample must be >= 0, got {mask!r}")
        picks = self.np_random.integers(len(_SAMPLE_CHARACTERS), size=count)
        return fit_bytes("".join(_SAMPLE_CHARACTERS[i] for i in picks), self.max_bytes)

    def __repr__(self) -> str:
        return f"Utf8Text({self.max_bytes})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Utf8Text) and self.max_bytes == other.max_bytes

    def __hash__(self) -> int:
        return hash(("Utf8Text", self.max_bytes))

    def encode(self, text: str) -> np.ndarray:
        """Returns the flattened form of ``text``: its UTF-8 bytes, then ``PAD_BYTE`` up to ``max_bytes``.

        Raises:
            ValueError: When ``text`` is not in the space.
        """
        if not isinstance(text, str):
            raise ValueError(f"{self!r} holds str values, got {type(text).__name__}")
        data = text.encode("utf-8", _ENCODING_ERRORS)
        if len(data) > self.max_bytes:
            raise ValueError(f"a text of {len(data)} UTF-8 bytes is longer than {self!r} allows")
        flat = np.full(self.max_bytes, PAD_BYTE, dtype=np.uint8)
        flat[: len(data)] = np.frombuffer(data, dtype=np.uint8)
        return flat

    def decode(self, flat: Any) -> str:
        """Returns the string whose flattened form is ``flat`` (the inverse of :meth:`encode`).

        Raises:
            ValueError: When ``flat`` has the wrong size or its bytes are not UTF-8.
        """
        values = np.asarray(flat).reshape(-1)
        if values.size != self.max_bytes:
            raise ValueError(f"{self!r} flattens to {self.max_bytes} values, got {values.size}")
        padding = np.flatnonzero(values == PAD_BYTE)
        end = int(padding[0]) if padding.size else values.size
        return values[:end].astype(np.uint8).tobytes().decode("utf-8", _ENCODING_ERRORS)


def fit_bytes(text: str, max_bytes: int) -> str:
    """Returns ``text`` cut at a character boundary to at most ``max_bytes`` UTF-8 bytes."""
    data = text.encode("utf-8", _ENCODING_ERRORS)
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore") if max_bytes else ""


def shorten_text(text: str, max_bytes: int) -> str:
    """Returns ``text`` if it fits in ``max_bytes`` UTF-8 bytes, else its head and tail around a
    marker saying how many bytes were cut from the middle (at most ``max_bytes`` in all)."""
    data = text.encode("utf-8", _ENCODING_ERRORS)
    if len(data) <= max_bytes:
        return text
    template = "\n[... {} bytes cut ...]\n"
    room = max_bytes - len(template.format(len(data)))
    if room < 2:
        return fit_bytes(text, max_bytes)
    head = data[: (room + 1) // 2].decode("utf-8", "ignore")
    tail = data[len(data) - room // 2 :].decode("utf-8", "ignore")
    cut = len(data) - utf8_size(head) - utf8_size(tail)
    return head + template.format(cut) + tail


# ------------------------------------------------------------------ Gymnasium's space utilities


def _register(function: Any, implementation: Callable[..., Any]) -> None:
    """Registers ``implementation`` for :class:`Utf8Text` on a singledispatch utility."""
    if function is not None and hasattr(function, "registry"):
        function.register(Utf8Text)(implementation)


_register(space_utils.flatdim, lambda space: space.max_bytes)
_register(space_utils.flatten, lambda space, x: space.encode(x))
_register(space_utils.unflatten, lambda space, x: space.decode(x))
_register(space_utils.flatten_space, lambda space: Box(0, 255, shape=(space.max_bytes,), dtype=np.uint8))
# Private in Gymnasium 1.x but consulted when a Dict or Tuple holding this space is flattened.
_register(getattr(space_utils, "_flat_dtype", None), lambda space: np.dtype(np.uint8))
_register(
    getattr(space_utils, "is_space_dtype_shape_equiv", None),
    lambda space, other: isinstance(other, Utf8Text) and space.max_bytes == other.max_bytes,
)


def _batch_differing(spaces: PySequence[Utf8Text]) -> Tuple:
    return Tuple([Utf8Text(space.max_bytes) for space in spaces])


def _empty_texts(space: Utf8Text, n: int = 1, fn: Callable[..., Any] = np.zeros) -> tuple[str, ...]:
    return ("",) * n


_register(vector_utils.batch_differing_spaces, _batch_differing)
_register(vector_utils.create_empty_array, _empty_texts)


def _create_shared_memory(space: Utf8Text, n: int = 1, ctx: ModuleType = mp) -> SynchronizedArray:
    # At least one byte: a zero-length shared array cannot be mapped.
    memory = ctx.Array(np.dtype(np.uint8).char, max(1, n * space.max_bytes))
    np.frombuffer(memory.get_obj(), dtype=np.uint8).fill(PAD_BYTE)  # reads as "" until written
    return memory


class SharedTexts(PySequence[str]):
    """The texts of ``n`` environments in shared memory, decoded on every read.

    :class:`~gymnasium.vector.AsyncVectorEnv` reads its shared memory once and expects a live view
    (as numpy gives for arrays), so a tuple of strings would never change. A copy
    (``copy.deepcopy``, which ``AsyncVectorEnv(copy=True)``, the default, makes of every batch)
    or a pickle is a plain ``tuple`` snapshot.

    Args:
        space: The space of one text.
        buffer: The shared bytes, shape ``(n, space.max_bytes)``.
    """

    def __init__(self, space: Utf8Text, buffer: np.ndarray) -> None:
        self._space = space
        self._buffer = buffer

    def __len__(self) -> int:
        return int(self._buffer.shape[0])

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        return self._space.decode(self._buffer[index])

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, (tuple, list, SharedTexts)) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # a live view has no stable hash

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


def _read_shared_memory(space: Utf8Text, shared_memory: SynchronizedArray, n: int = 1) -> SharedTexts:
    buffer = np.frombuffer(shared_memory.get_obj(), dtype=np.uint8)  # type: ignore[call-overload]  # a ctypes array is a buffer; numpy's stubs leave it out
    data = buffer[: n * space.max_bytes].reshape(n, space.max_bytes)
    return SharedTexts(space, data)


def _write_shared_memory(space: Utf8Text, index: int, value: str, shared_memory: SynchronizedArray) -> None:
    destination = np.frombuffer(shared_memory.get_obj(), dtype=np.uint8)  # type: ignore[call-overload]  # a ctypes array is a buffer; numpy's stubs leave it out
    size = space.max_bytes
    np.copyto(destination[index * size : (index + 1) * size], space.encode(value))


_register(shm.create_shared_memory, _create_shared_memory)
_register(shm.read_from_shared_memory, _read_shared_memory)
_register(shm.write_to_shared_memory, _write_shared_memory)


# The zero element of wrappers that pad observations (DelayObservation, StickyAction, ...).
_register(getattr(wrapper_utils, "create_zero_array", None), lambda space: "")
