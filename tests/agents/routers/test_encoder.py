"""The offline sentence encoder: the packaged all-MiniLM-L6-v2, as sentence-transformers computes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conductor_env.agents.routers import encoder as router_encoder
from conductor_env.agents.routers.encoder import EncoderError, SentenceEncoder, packaged_model_path, shared_encoder

TEXTS = [
    "What is the sum of 17 and 25?",
    "Add 17 and 25. What do you get?",
    "Spell the word 'lantern' backwards.",
    "If all cats are mammals and Tom is a cat, is Tom a mammal?",
    "",
    "Ünïcode — texts are fine too 🚀",
]


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return shared_encoder()


def test_loads_offline_from_the_package_and_gives_unit_384_d_vectors(encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert (packaged_model_path() / "model.safetensors").is_file()
    vectors = encoder.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_matches_sentence_transformers(encoder: SentenceEncoder) -> None:
    sentence_transformers = pytest.importorskip("sentence_transformers")
    reference = sentence_transformers.SentenceTransformer(str(packaged_model_path()), device="cpu").encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(encoder.encode(TEXTS), reference, atol=1e-5)


def test_a_paraphrase_is_closer_than_an_unrelated_question(encoder: SentenceEncoder) -> None:
    a, paraphrase, unrelated, other = encoder.encode(TEXTS[:4])
    assert a @ paraphrase > 0.8
    assert a @ paraphrase > a @ unrelated + 0.3
    assert a @ paraphrase > a @ other + 0.3


def test_a_texts_embedding_does_not_depend_on_its_batch(encoder: SentenceEncoder) -> None:
    fresh = SentenceEncoder(batch_size=4)  # its own cache: every text goes through the model
    batched = fresh.encode(TEXTS * 2 + ["a much longer text that pads nothing, " * 5])
    alone = SentenceEncoder().encode(TEXTS, batch_size=1)
    assert np.array_equal(batched[: len(TEXTS)], alone)
    assert np.array_equal(batched[len(TEXTS) : 2 * len(TEXTS)], alone)


def test_the_cache_answers_repeated_texts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = SentenceEncoder(cache_dir=tmp_path)
    first = encoder.encode(TEXTS[:3])
    assert (encoder.hits, encoder.misses) == (0, 3)
    again = encoder.encode([TEXTS[1], TEXTS[1], TEXTS[0]])
    assert (encoder.hits, encoder.misses) == (3, 3)
    assert np.array_equal(again, first[[1, 1, 0]])
    # On disk: a new encoder of the same model answers the cached texts without loading the model
    # (here the model cannot load), and fails on a text nobody embedded.
    (tmp_path / "empty-model").mkdir()
    monkeypatch.setattr(router_encoder, "resolve_model", lambda model: str(tmp_path / "empty-model"))
    from_disk = SentenceEncoder(cache_dir=tmp_path)
    assert np.array_equal(from_disk.encode(TEXTS[:2]), first[:2])
    assert (from_disk.hits, from_disk.misses) == (2, 0)
    with pytest.raises(EncoderError, match="cannot load"):
        from_disk.encode(["a text nobody embedded"])


def test_bad_input_and_bad_models_are_clear_errors(tmp_path: Path) -> None:
    encoder = SentenceEncoder()
    with pytest.raises(TypeError, match="strings"):
        encoder.encode(["fine", 3])  # type: ignore[list-item]
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(EncoderError, match="cannot load the encoder"):
        SentenceEncoder(tmp_path / "empty-model").encode(["x"])
    with pytest.raises(ValueError, match="batch_size"):
        SentenceEncoder(batch_size=0)


def test_the_encoder_and_local_engines_load_models_one_at_a_time(monkeypatch):
    """Two threads importing from transformers at once can fail in its lazy module (a local
    Conductor's engine beside a router's encoder in one `conductor-env unseen` run did): both load
    under one process-wide lock."""
    from conductor_env.workers import local_engine
    from conductor_env.workers.local_models import MODEL_LOAD_LOCK

    held: list[bool] = []
    load = SentenceEncoder._load_unlocked
    monkeypatch.setattr(SentenceEncoder, "_load_unlocked", lambda self: (held.append(MODEL_LOAD_LOCK.locked()), load(self))[1])
    assert SentenceEncoder().dim > 0 and held == [True]
    assert local_engine._LOAD_LOCK is MODEL_LOAD_LOCK
