"""The ``conductor-env`` command: one module per command, assembled here.

Each command module (:data:`COMMANDS`) adds its subcommand through ``register(subparsers)``; a
subcommand's handler receives the parsed arguments and returns an exit code.
"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import Sequence

from conductor_env.cli import demo, models, report, routers, sandbox, serve, train, unseen
from conductor_env.cli import eval as evaluate
from conductor_env.cli.common import UsageError

#: Command modules, in the order ``--help`` lists their commands.
COMMANDS: tuple[ModuleType, ...] = (evaluate, report, demo, sandbox, models, train, routers, serve, unseen)

__all__ = ["COMMANDS", "UsageError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """Returns the full argument parser with every command."""
    parser = argparse.ArgumentParser(
        prog="conductor-env",
        description="LLM orchestration as a Gymnasium environment: evaluate, train and inspect Conductor policies.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line.

    Args:
        argv: Arguments without the program name (``None``: ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UsageError as error:
        print(f"conductor-env {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
