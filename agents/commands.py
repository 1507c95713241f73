"""``conductor-env train grpo``: GRPO training of a Conductor LLM, with the paper's defaults."""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import Any

from conductor_env.cli import UsageError

#: Recipe fields set from same-named command-line flags (``--max-steps`` -> ``max_steps``).
_RECIPE_FLAGS = (
    "model", "env", "pool", "split", "problems", "balance_domains", "prompt", "output_dir", "max_steps", "questions_per_step",
    "num_generations", "per_device_batch_size", "learning_rate", "lr_scheduler_type", "warmup_ratio",
    "epsilon", "beta", "loss_type", "scale_rewards", "max_completion_length", "temperature",
    "round_discount", "lora_r", "lora_alpha", "lora_top_layers", "format_warmup_steps", "format_warmup_lr", "seed",
    "logging_steps", "save_steps",
)  # fmt: skip


def register(subparsers: Any) -> None:
    """Adds ``train`` (with its ``grpo`` subcommand) to the ``conductor-env`` parser."""
    from conductor_env.agents.grpo import GRPORecipe

    defaults = GRPORecipe()
    train = subparsers.add_parser("train", help="train a Conductor policy", description="Train a Conductor policy.")
    kinds = train.add_subparsers(dest="trainer", metavar="TRAINER", required=True)
    grpo = kinds.add_parser(
        "grpo",
        help="GRPO with TRL against a Conductor env (paper defaults)",
        description=(
            "Train a Conductor LLM with TRL's GRPOTrainer against a Conductor env. Defaults are the paper's: "
            "200 steps of 4 questions x 64 samples, lr 1e-6 cosine, 3 percent warmup, clip 0.2, beta 0, loss bnpo, "
            "group reward scaling, 1024 completion tokens at temperature 1.0; vLLM colocated when a CUDA GPU "
            "and vLLM are present, else CPU."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = grpo.add_argument
    add("--model", default=defaults.model, help="local model name (see `conductor-env models`), model folder or hub id")
    add("--env", default=defaults.env, help="gym id (Conductor-RG-v0, ...) or suite name")
    add("--pool", default=defaults.pool, help="worker pool preset or .toml path")
    add("--split", default=defaults.split, help="training split")
    add("--env-option", action="append", default=[], metavar="KEY=VALUE", help="ConductorEnv option, e.g. max_rounds=2 (repeatable; JSON values)")
    add("--suite-option", action="append", default=[], metavar="KEY=VALUE", help="task-suite option, e.g. size=20 (repeatable; JSON values)")
    add("--problems", type=int, default=defaults.problems, help="use at most this many problems of the split")
    add(
        "--balance-domains", action=argparse.BooleanOptionalAction, default=defaults.balance_domains,
        help="give every step each domain equally (round-robin order, no shuffle; not in the paper)",
    )
    add("--prompt", default=defaults.prompt, choices=["full", "compact"], help="the env's Conductor prompt, or a compact one (question + workers) for small models after a format warm start")
    add("--output-dir", default=defaults.output_dir, help="checkpoints, final model and rewards.json")
    add("--max-steps", type=int, default=defaults.max_steps, help="optimizer steps")
    add("--questions-per-step", type=int, default=defaults.questions_per_step, help="distinct questions per step")
    add("--num-generations", type=int, default=defaults.num_generations, help="samples per question (GRPO group)")
    add("--per-device-batch-size", type=int, default=defaults.per_device_batch_size, help="completions per pass (default: <= 8, dividing the step's batch)")
    add("--learning-rate", type=float, default=defaults.learning_rate)
    add("--lr-scheduler-type", default=defaults.lr_scheduler_type)
    add("--warmup-ratio", type=float, default=defaults.warmup_ratio)
    add("--epsilon", type=float, default=defaults.epsilon, help="clip range")
    add("--beta", type=float, default=defaults.beta, help="KL coefficient")
    add("--loss-type", default=defaults.loss_type)
    add("--scale-rewards", default=defaults.scale_rewards, choices=["group", "batch", "none"])
    add("--max-completion-length", type=int, default=defaults.max_completion_length)
    add("--temperature", type=float, default=defaults.temperature)
    add("--round-discount", type=float, default=defaults.round_discount, help="round credit discount (with max_rounds > 1)")
    add("--lora-r", type=int, default=defaults.lora_r, help="LoRA rank (0: full fine-tuning)")
    add("--lora-alpha", type=int, default=defaults.lora_alpha)
    add("--lora-top-layers", type=int, default=defaults.lora_top_layers, help="adapt only the top N layers (cheaper on a CPU)")
    vllm = grpo.add_mutually_exclusive_group()
    vllm.add_argument("--vllm", dest="use_vllm", action="store_const", const=True, default=None, help="generate with vLLM (colocated; needs CUDA)")
    vllm.add_argument("--no-vllm", dest="use_vllm", action="store_const", const=False, help="generate with transformers")
    add("--format-warmup-steps", type=int, default=defaults.format_warmup_steps, help="supervised format warm start steps before GRPO (not in the paper)")
    add("--format-warmup-lr", type=float, default=defaults.format_warmup_lr)
    add("--seed", type=int, default=defaults.seed)
    add("--logging-steps", type=int, default=defaults.logging_steps)
    add("--save-steps", type=int, default=defaults.save_steps, help="checkpoint every N steps (0: final model only)")
    add("--trainer-option", action="append", default=[], metavar="KEY=VALUE", help="extra trl.GRPOConfig field (repeatable; JSON values)")
    grpo.set_defaults(handler=run_grpo_command)


def _options(pairs: list[str], flag: str) -> dict[str, Any]:
    """Parses ``KEY=VALUE`` flags with the eval command's parser (JSON values when they parse)."""
    from conductor_env.evaluation.setup import EvalConfigError, parse_option_values

    try:
        return parse_option_values(pairs, flag)
    except EvalConfigError as error:
        raise UsageError(str(error)) from error


def recipe_from_args(args: argparse.Namespace) -> Any:
    """Returns the :class:`~conductor_env.agents.grpo.GRPORecipe` that parsed arguments describe.

    Raises:
        UsageError: For malformed ``KEY=VALUE`` options or an unknown env option.
    """
    import inspect

    from conductor_env.agents.grpo import GRPORecipe
    from conductor_env.env import ConductorEnv

    env_options = _options(args.env_option, "--env-option")
    accepted = set(inspect.signature(ConductorEnv.__init__).parameters) - {"self", "suite", "pool", "split", "suite_options"}
    unknown = sorted(set(env_options) - accepted)
    if unknown:
        raise UsageError(f"unknown --env-option {unknown}; env options: {', '.join(sorted(accepted))}")
    known = {f.name for f in fields(GRPORecipe)}
    values = {name: getattr(args, name) for name in _RECIPE_FLAGS if name in known}
    return GRPORecipe(
        **values,
        env_options=env_options,
        suite_options=_options(args.suite_option, "--suite-option"),
        use_vllm=args.use_vllm,
        trainer_options=_options(args.trainer_option, "--trainer-option"),
    )


def run_grpo_command(args: argparse.Namespace) -> int:
    """Runs ``conductor-env train grpo``; prints the reward curve's start and end."""
    from conductor_env.agents.grpo import train_grpo

    recipe = recipe_from_args(args)
    try:
        run = train_grpo(recipe)
    except (ValueError, KeyError) as error:
        raise UsageError(str(error).splitlines()[0]) from error
    if run.rewards:
        print(f"mean env reward: first step {run.rewards[0]:.3f}, last step {run.rewards[-1]:.3f} over {len(run.rewards)} logged steps")
    print(f"final model: {run.final_dir}\nrewards and episodes: {recipe.output_dir}/rewards.json")
    return 0
