"""Utf8Text: any Unicode text within a UTF-8 byte budget, flattened to its bytes."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from gymnasium.spaces import Dict, Discrete
from gymnasium.spaces.utils import flatdim, flatten, flatten_space, unflatten
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, create_shared_memory, iterate, read_from_shared_memory, write_to_shared_memory
from gymnasium.wrappers.utils import create_zero_array

from conductor_env.spaces import PAD_BYTE, Utf8Text, fit_bytes, shorten_text, utf8_size

TEXTS = [
    "",
    "plain ascii",
    "x → y ⇒ ∀z ∃w (¬p ∧ q ∨ r) ≤ ∞",
    "naïve café, Ærøskøbing, Straße",
    "中文 + emoji 😀🚀 + math 𝔸",
    "nul\x00inside\x00",
    "lone surrogate \ud800 survives",
    "\n\t\r" * 3,
]


@pytest.mark.parametrize("text", TEXTS)
def test_every_string_round_trips_through_flatten(text: str) -> None:
    space = Utf8Text(64)
    assert space.contains(text)
    flat = flatten(space, text)
    assert flat.dtype == np.uint8 and flat.shape == (64,)
    assert flatten_space(space).contains(flat)
    assert unflatten(space, flat) == text


def test_the_bound_is_in_utf8_bytes() -> None:
    space = Utf8Text(4)
    assert space.contains("abcd") and not space.contains("abcde")
    assert space.contains("éé") and not space.contains("ééa")  # 2 bytes each
    assert space.contains("😀") and not space.contains("😀a")  # 4 bytes
    assert not space.contains(b"ab") and not space.contains(None)
    with pytest.raises(ValueError, match="longer than"):
        flatten(space, "abcde")
    assert Utf8Text(0).contains("") and not Utf8Text(0).contains(" ")
    assert flatdim(Utf8Text(0)) == 0 and flatten(Utf8Text(0), "").shape == (0,)
    with pytest.raises(ValueError, match="non-negative"):
        Utf8Text(-1)


def test_samples_are_seeded_varied_and_in_the_space() -> None:
    space = Utf8Text(40, seed=3)
    samples = [space.sample() for _ in range(300)]
    assert all(space.contains(s) for s in samples)
    assert any(utf8_size(s) > len(s) for s in samples)  # multi-byte characters come up
    assert len({len(s) for s in samples}) > 20
    again = Utf8Text(40, seed=3)
    assert [again.sample() for _ in range(300)] == samples
    assert len(space.sample(mask=10)) <= 10 and space.contains(space.sample(mask=500))


def test_flatdim_is_the_byte_budget_in_a_dict() -> None:
    space = Dict({"text": Utf8Text(100), "round": Discrete(3)})
    assert flatdim(space) == 103
    value = {"text": "∀ é 😀", "round": 2}
    flat = flatten(space, value)
    assert flat.shape == (103,) and flatten_space(space).contains(flat)
    assert unflatten(space, flat) == value


def test_shared_memory_is_a_live_view_and_copies_are_tuples() -> None:
    space = Dict({"text": Utf8Text(24), "round": Discrete(2), "none": Utf8Text(0)})
    memory = create_shared_memory(space, n=3)
    view = read_from_shared_memory(space, memory, n=3)  # AsyncVectorEnv reads once, at start
    assert view["text"] == ("", "", "") and len(view["text"]) == 3
    write_to_shared_memory(space, 1, {"text": "x → ∀y 😀", "round": 1, "none": ""}, memory)
    assert view["text"] == ("", "x → ∀y 😀", "") and view["text"][1:] == ("x → ∀y 😀", "")
    assert view["none"] == ("", "", "") and list(view["round"]) == [0, 1, 0]
    snapshot = copy.deepcopy(view)
    assert type(snapshot["text"]) is tuple and batch_space(space, 3).contains(snapshot)
    assert type(pickle.loads(pickle.dumps(view["text"]))) is tuple
    write_to_shared_memory(space, 1, {"text": "next", "round": 0, "none": ""}, memory)
    assert view["text"][1] == "next" and snapshot["text"][1] == "x → ∀y 😀"


def test_vector_batching_utilities() -> None:
    space = Utf8Text(8)
    batched = batch_space(space, 3)
    items = ("a", "ü", "")
    assert batched.contains(items) and list(iterate(batched, items)) == list(items)
    assert create_empty_array(space, 2) == ("", "")
    assert concatenate(space, ["a", "b"], create_empty_array(space, 2)) == ("a", "b")
    assert create_zero_array(space) == ""


def test_equality_and_pickling() -> None:
    space = Utf8Text(10, seed=1)
    assert space == Utf8Text(10) and space != Utf8Text(11) and hash(space) == hash(Utf8Text(10))
    assert pickle.loads(pickle.dumps(space)) == space


def test_decoding_stops_at_the_padding() -> None:
    space = Utf8Text(6)
    flat = np.full(6, PAD_BYTE, dtype=np.uint8)
    flat[:2] = [0xC3, 0xA9]  # é
    assert space.decode(flat) == "é"
    with pytest.raises(ValueError, match="flattens to 6"):
        space.decode(np.zeros(5, dtype=np.uint8))


def test_fitting_and_shortening_keep_the_byte_budget() -> None:
    text = "ab😀" * 100
    assert utf8_size(fit_bytes(text, 7)) <= 7 and fit_bytes(text, 7) == "ab😀a"
    assert shorten_text("short", 100) == "short"
    short = shorten_text(text, 120)
    assert utf8_size(short) <= 120 and short.startswith("ab😀") and short.endswith("ab😀")
    assert "bytes cut" in short
    assert utf8_size(shorten_text(text, 5)) <= 5
