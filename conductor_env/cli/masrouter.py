"""``conductor-env train router --kind masrouter``: MASRouter trains on episodes of an env, not on a router-data table.

``--env``, ``--pool``, ``--split``, ``--episodes``, ``--env-option`` and ``--suite-option`` say which
episodes; ``--price-weight λ`` trains on the env's ``cost_aware`` reward with that λ. With
``--workers description`` the router knows each episode's workers by their descriptions, so it
trains on a family of generated pools (``--pool generated``) and plays pools it never saw.
"""

from __future__ import annotations

import argparse
from typing import Any

from conductor_env.cli.common import UsageError

#: The kinds that train on episodes instead of a table.
EPISODE_KINDS = ("masrouter",)


def add_episode_arguments(train: Any) -> None:
    """Adds the episode arguments of ``train router`` (used by ``--kind masrouter``)."""
    group = train.add_argument_group("episodes (--kind masrouter: REINFORCE on the env's reward instead of a table)")
    group.add_argument("--env", default=None, metavar="ID", help="a Conductor gym id, e.g. Conductor-RG-v0")
    group.add_argument("--pool", default=None, metavar="POOL", help="a pool preset or a .toml file (the router's workers); with --workers description also a family, e.g. generated")
    group.add_argument("--split", default="train", help="problem split (default: train)")
    group.add_argument("--episodes", type=int, default=2000, metavar="N", help="training episodes, in batches of --param batch= (default 2000)")
    group.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE", help="env option (repeatable; JSON values allowed), e.g. max_steps=4")
    group.add_argument("--suite-option", action="append", default=[], metavar="KEY=VALUE", help="suite option (repeatable; JSON values allowed)")


def run_episode_kind(args: argparse.Namespace) -> int:
    """Trains ``--kind masrouter`` and prints its summary and the eval line.

    Raises:
        UsageError: For missing or contradictory arguments, or a training error.
    """
    from conductor_env.agents.routers.encoder import DEFAULT_ENCODER, EncoderError
    from conductor_env.envs.setup import SetupError
    from conductor_env.evaluation.setup import EvalConfigError, parse_option_values
    from conductor_env.options import EnvOptionError, parse_key_values

    if args.data is not None or not args.env or not args.pool:
        raise UsageError(f"--kind {args.kind} trains on episodes: give --env and --pool (and --episodes), not --data")
    try:
        params = parse_key_values(args.param, "--param")
        suite_options = parse_option_values(args.suite_option, "--suite-option")
        env_options = parse_option_values(args.env_option, "--env-option")
        from conductor_env.agents.training.routers.masrouter import train_masrouter

        trained = train_masrouter(
            args.env,
            args.pool,
            args.out,
            split=args.split,
            episodes=args.episodes,
            price_weight=args.price_weight,
            env_options=env_options,
            suite_options=suite_options,
            seed=args.seed,
            encoder=args.encoder or DEFAULT_ENCODER,
            params=params,
            workers=args.workers,
            say=lambda line: print(line, flush=True),
        )
    except ImportError as error:
        raise UsageError(f"train router needs torch and transformers ({error.name} is missing): pip install 'conductor-env[routers]'") from error
    except (ValueError, TypeError, OSError, EncoderError, EvalConfigError, EnvOptionError, SetupError) as error:
        raise UsageError(" ".join(str(error).split())) from error
    print(trained.summary())
    if args.workers == "description":
        print(
            f"evaluate it on a pool it never saw: conductor-env eval --env {args.env} --pool generated-heldout#0 --split test --env-option show_names=true --policy router:{args.kind}:{trained.folder} ..."
        )
    else:
        print(f"evaluate it: conductor-env eval --env {args.env} --pool {args.pool} --split test --policy router:{args.kind}:{trained.folder} ...")
    return 0
