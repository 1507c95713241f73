"""Train a Conductor LLM with GRPO (TRL) against a Conductor env.

The defaults are the paper's recipe (200 steps of 4 questions x 64 samples, lr 1e-6 cosine,
warmup 3%, clip 0.2, beta 0, loss "bnpo", group reward scaling, 1024 completion tokens at
temperature 1.0, vLLM colocated on a CUDA GPU). A real run wants a GPU and a strong model::

    python examples/train_grpo.py --model Qwen/Qwen2.5-7B-Instruct --env Conductor-Mix-v0 --pool paper

``--cpu-demo`` uses the cpu profile of ``conductor-env train grpo`` for 4 steps: the local
Gemma 3 270M as the Conductor, one simulated expert per domain, LoRA, the compact prompt and a
format warm start first, since the tiny base model rarely writes the three lists on its own
(see conductor_env/agents/training/profiles.py and warmstart.py)::

    python examples/train_grpo.py --cpu-demo

The same run from the command line: ``conductor-env train grpo --help``.
"""

from __future__ import annotations

import argparse

import conductor_env  # noqa: F401  (registers the Conductor-*-v0 ids)
from conductor_env.envs import EnvSetup
from conductor_env.agents.training import GRPORecipe, train_grpo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m", help="local model name, folder or hub id")
    parser.add_argument("--env", default="Conductor-RG-v0")
    parser.add_argument("--pool", default="simulated")
    parser.add_argument("--max-rounds", type=int, default=1, help="rounds per episode (round credit when > 1)")
    parser.add_argument("--output-dir", default="runs/grpo")
    parser.add_argument("--cpu-demo", action="store_true", help="a few small steps on CPU")
    args = parser.parse_args()

    recipe = GRPORecipe(
        model=args.model,
        setup=EnvSetup.from_id(args.env, pool=args.pool, split="train", max_rounds=args.max_rounds),
        output_dir=args.output_dir,
    )
    if args.cpu_demo:
        # The cpu profile of `conductor-env train grpo` (conductor_env/agents/training/profiles.py): the
        # settings that learned to route in BENCHMARKS.md, here for 4 steps instead of its 24.
        from conductor_env.agents.training.recipe import recipe_from_settings
        from conductor_env.agents.training.profiles import CPU_PROFILE, recipe_settings

        recipe = recipe_from_settings(recipe_settings(CPU_PROFILE, {"output_dir": args.output_dir, "max_steps": 4, "env_options": {"max_rounds": args.max_rounds}}))

    run = train_grpo(recipe, progress=True, say=print)
    print("mean env reward per step:", [round(r, 3) for r in run.rewards])
    print("final model saved to", run.final_dir)


if __name__ == "__main__":
    main()
