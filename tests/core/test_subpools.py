"""Held-out sub-pools: ``exclude_subpools`` never shows a listed worker set, and bad lists fail at once."""

from __future__ import annotations

import json
import pickle
import random
from collections import Counter

import gymnasium as gym
import pytest

import conductor_env  # noqa: F401  (registers the ids)
from conductor_env.evaluation.setup import parse_option_values
from conductor_env.options import EnvOptionError, EnvOptions
from conductor_env.subpools import check_excluded_subpools, draw_subpool

NAMES = ("flash", "solver", "checker")
SMALL = {"size": 5}


def shown_names(info: dict) -> tuple[str, ...]:
    return tuple(sorted(name for name in info["worker_map"].values() if name != "conductor"))


def test_an_excluded_pair_is_never_shown_in_any_order_and_the_rest_still_are() -> None:
    env = gym.make(
        "Conductor-RG-v0",
        pool="orchestra-judge",
        suite_options=SMALL,
        show_names=True,
        subpool_size=[2, 3],
        exclude_subpools=[["flash", "checker"]],  # written in another order than it is drawn
    ).unwrapped
    seen = Counter(shown_names(env.reset(seed=seed)[1]) for seed in range(200))
    assert ("checker", "flash") not in seen
    assert set(seen) == {("flash", "solver"), ("checker", "solver"), ("checker", "flash", "solver")}
    observation, info = env.reset(seed=3)
    assert all(name in observation["workers"] for name in shown_names(info))  # the names the prompt shows are the ones drawn


def test_exclusion_redraws_only_the_draws_it_rejects() -> None:
    """Runs recorded without the option keep their sub-pools: a draw that is not excluded is unchanged."""
    excluded = (("checker", "flash"),)
    for seed in range(300):
        plain = draw_subpool(random.Random(seed), NAMES, (2, 3))
        held_out = draw_subpool(random.Random(seed), NAMES, (2, 3), excluded)
        if tuple(sorted(NAMES[i] for i in plain)) not in excluded:
            assert held_out == plain
        else:
            assert tuple(sorted(NAMES[i] for i in held_out)) not in excluded


def test_the_whole_pool_in_canonical_order_ignores_exclusions_of_other_sets() -> None:
    assert draw_subpool(random.Random(0), NAMES, None, (("checker", "flash"),)) == (0, 1, 2)


def test_one_pair_left_is_the_only_one_drawn() -> None:
    """The eval side of a held-out pair: exclude the others and every episode shows it."""
    others = (("flash", "solver"), ("checker", "solver"))
    check_excluded_subpools(NAMES, 2, others)
    draws = {tuple(sorted(NAMES[i] for i in draw_subpool(random.Random(seed), NAMES, 2, others))) for seed in range(50)}
    assert draws == {("checker", "flash")}


@pytest.mark.parametrize(
    ("size", "excluded", "message"),
    [
        (2, [("flash", "solver"), ("checker", "solver"), ("checker", "flash")], "every draw of sub-pools of 2 workers"),
        (None, [("checker", "flash", "solver")], "every draw of the whole pool"),
        ((3, 5), [("checker", "flash", "solver")], "every draw"),
        (2, [("flash", "oracle")], "'oracle', not in the pool"),
    ],
)
def test_an_exclusion_that_leaves_nothing_to_draw_or_names_a_stranger_fails_before_any_episode(size, excluded, message) -> None:
    with pytest.raises(ValueError, match=message):
        check_excluded_subpools(NAMES, size, [tuple(sorted(names)) for names in excluded])
    with pytest.raises(EnvOptionError, match=message):  # the env refuses it up front instead of looping in reset
        gym.make("Conductor-RG-v0", pool="orchestra-judge", suite_options=SMALL, subpool_size=size, exclude_subpools=excluded)


@pytest.mark.parametrize("value", ["flash", [["flash"], "solver"], [[]], [["flash", "flash"]], [[1, 2]], 7, [None]])
def test_malformed_exclusions_are_clear_option_errors(value) -> None:
    with pytest.raises(EnvOptionError, match="exclude_subpools must be a list of worker-name lists"):
        EnvOptions(subpool_size=2, exclude_subpools=value)


def test_exclusions_normalise_to_sorted_hashable_names_and_survive_json_and_pickle() -> None:
    options = EnvOptions.from_mapping(parse_option_values(['exclude_subpools=[["flash","checker"],["checker","flash"]]', "subpool_size=[2,3]"], "--env-option"))
    assert options.exclude_subpools == (("checker", "flash"),)
    hash(options)
    recorded = json.loads(json.dumps(options.changed()))
    assert recorded == {"subpool_size": [2, 3], "exclude_subpools": [["checker", "flash"]]}
    assert EnvOptions.from_mapping(recorded) == options == pickle.loads(pickle.dumps(options))
