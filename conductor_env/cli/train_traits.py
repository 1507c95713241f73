"""``conductor-env train traits-ppo``: Stable-Baselines3's PPO on the structured view of generated pools."""

from __future__ import annotations

import argparse
from typing import Any

from conductor_env.cli.common import UsageError


def register_train_traits_ppo(kinds: Any) -> None:
    """Adds ``train traits-ppo`` to ``conductor-env train``."""
    from conductor_env.agents.training.trait_ppo import TraitPPOConfig

    defaults = TraitPPOConfig()
    parser = kinds.add_parser(
        "traits-ppo",
        help="PPO (Stable-Baselines3) choosing a workflow plan from the workers' stated traits, on the generated family's training part",
        description=(
            "Train a numeric policy on the structured view (each worker's stated level in the question's domain, whether it judges "
            "it, its price tier) that picks one of the binary-access plans over the pool's slots, with the env's own reward, on "
            "pools drawn from the generated family's training part. Checkpoints are scored (never chosen) by exact expected "
            "reward on the unseen protocol's eight held-out pools. Play the result with --policy traits-ppo:OUT (docs/ROUTERS.md)."
        ),
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder: model.zip and trait_ppo.json (the config and checkpoint scores)")
    parser.add_argument("--timesteps", type=int, default=defaults.timesteps, metavar="N", help=f"episodes of training (default {defaults.timesteps})")
    parser.add_argument("--seed", type=int, default=defaults.seed, help=f"seed of PPO and the envs (default {defaults.seed})")
    parser.add_argument("--learning-rate", type=float, default=defaults.learning_rate, metavar="LR", help=f"Adam's step size (default {defaults.learning_rate})")
    parser.add_argument("--eval-every", type=int, default=defaults.eval_every, metavar="N", help=f"timesteps between checkpoint scores (default {defaults.eval_every})")
    parser.set_defaults(handler=run_train_traits_ppo_command)


def run_train_traits_ppo_command(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env train traits-ppo``."""
    from conductor_env.agents.training.trait_ppo import TraitPPOConfig, train_trait_ppo
    from conductor_env.evaluation.unseen import UNSEEN_POOLS

    for flag, value in (("--timesteps", args.timesteps), ("--eval-every", args.eval_every)):
        if value < 1:
            raise UsageError(f"{flag} must be at least 1, got {value}")
    if not args.learning_rate > 0:
        raise UsageError(f"--learning-rate must be positive, got {args.learning_rate}")
    config = TraitPPOConfig(timesteps=args.timesteps, seed=args.seed, learning_rate=args.learning_rate, eval_every=args.eval_every, heldout=UNSEEN_POOLS)
    result = train_trait_ppo(config, args.out)
    last = result["checkpoints"][-1]
    print(f"held-out exact expected reward {last['mean']:.4f} after {last['timesteps']} episodes ({result['seconds']} s); play it with --policy traits-ppo:{args.out}")
    return 0
