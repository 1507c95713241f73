"""The ``generated`` recipe: every episode a new pool, and a warm start whose targets name that
episode's workers (not the family's placeholder slots)."""

from __future__ import annotations

import re

from conductor_env.agents.training.recipes import load_recipe
from conductor_env.agents.training.reward import EnvFactory
from conductor_env.agents.training.warmstart import WARM_START_SHAPES, warm_start_rows
from conductor_env.workflow import parse_workflow


def test_the_recipe_shows_every_drawn_worker_with_its_description():
    recipe = load_recipe("generated").build({"env": {"suite_options": {"size": 10}}})
    options = recipe.setup.options
    assert recipe.setup.pool == "generated" and options.show_names and options.subpool_size == 4
    assert (options.reward, options.price_weight, options.max_steps) == ("cost_aware", 1.0, 3)
    env = recipe.setup.make()
    try:
        rosters = set()
        for seed in range(8):
            observation, info = env.reset(seed=seed)
            assert len(info["worker_map"]) == len(env.unwrapped.episode_pool.specs)  # the whole draw is shown
            assert all(f"{spec.name} ({spec.description})" in observation["workers"] for spec in env.unwrapped.episode_pool.specs)
            rosters.add(frozenset(info["worker_map"].values()))
    finally:
        env.close()
    assert len(rosters) == 8


def test_the_warm_start_targets_name_the_episodes_own_workers():
    recipe = load_recipe("generated").build({"env": {"suite_options": {"size": 10}}})
    factory = EnvFactory(recipe.setup)
    try:
        groups = warm_start_rows(factory, limit=8, seed=1, subtask="Solve it.", shapes="orchestrate", plan=True)
    finally:
        factory.close()
    assert len(groups) == 8
    for group in groups:
        assert len(group) == len(WARM_START_SHAPES["orchestrate"])  # every shape has its workers in a drawn pool of 3-4
        prompt = group[0][0][-1]["content"]
        shown = {int(i): name for i, name in re.findall(r"Model id (\d+): (\w+)", prompt)}
        for _, action in group:
            written = re.match(r"Plan: ([\w=, ]+)\.\n", action).group(1).split(", ")
            steps = parse_workflow(action, num_workers=len(shown), max_steps=3).steps
            assert written == [f"{shown[s.worker]}={s.worker}" for s in steps]
