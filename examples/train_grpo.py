"""Train a Conductor LLM with GRPO (TRL) against a Conductor env, from Python.

A recipe is a TOML file (docs/TRAINING.md); ``load_recipe`` reads a shipped one by name and
``build`` applies changes, nested by section. The ``paper-hparams`` recipe is the paper's
hyperparameters (200 steps of 4 questions x 64 samples, lr 1e-6 cosine, ...); a real run wants a
GPU and a strong model::

    python examples/train_grpo.py --recipe paper-hparams --model Qwen/Qwen2.5-7B-Instruct --env Conductor-Mix-v0 --pool paper

By default it runs the ``cpu`` recipe for 4 steps: the local Gemma 3 270M as the Conductor, one
simulated expert per domain, LoRA, the compact prompt and a format warm start first, since the
tiny base model rarely writes the three lists on its own::

    python examples/train_grpo.py

The same from the command line: ``conductor-env train grpo --recipe cpu --max-steps 4``.
"""

from __future__ import annotations

import argparse

import conductor_env  # noqa: F401  (registers the Conductor-*-v0 ids)
from conductor_env.agents.training import load_recipe, train_grpo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="cpu", help="a shipped recipe name or a recipe .toml file")
    parser.add_argument("--model", default=None, help="local model name, folder or hub id (default: the recipe's)")
    parser.add_argument("--env", default=None, help="gym id (default: the recipe's)")
    parser.add_argument("--pool", default=None, help="pool preset or .toml file (default: the recipe's)")
    parser.add_argument("--max-rounds", type=int, default=1, help="rounds per episode (round credit when > 1)")
    parser.add_argument("--max-steps", type=int, default=4, help="GRPO steps")
    parser.add_argument("--output-dir", default="runs/grpo")
    args = parser.parse_args()

    changes: dict = {"grpo": {"max_steps": args.max_steps}, "env": {"options": {"max_rounds": args.max_rounds}}, "output_dir": args.output_dir}
    if args.model:
        changes["model"] = {"name": args.model}
    for key, value in (("id", args.env), ("pool", args.pool)):
        if value:
            changes["env"][key] = value
    recipe = load_recipe(args.recipe).build(changes)
    run = train_grpo(recipe, progress=True, say=print)
    print("mean env reward per step:", [round(r, 3) for r in run.rewards])
    print("final model saved to", run.final_dir)


if __name__ == "__main__":
    main()
