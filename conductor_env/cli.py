"""The ``conductor-env`` command.

Each area of the package contributes its subcommands through a ``register(subparsers)``
function in its own ``commands`` module, listed in :data:`COMMAND_MODULES`; a subcommand's
handler receives the parsed arguments and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

#: Modules whose ``register(subparsers)`` adds subcommands.
COMMAND_MODULES: list[str] = [
    "conductor_env.evaluation.commands",
    "conductor_env.sandboxes.commands",
    "conductor_env.workers.commands",
    "conductor_env.agents.commands",
]


class UsageError(Exception):
    """A bad argument; printed as one line (problem and fix) with exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    """Returns the full argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="conductor-env",
        description="LLM orchestration as a Gymnasium environment: evaluate, train and inspect Conductor policies.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
