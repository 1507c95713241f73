"""What the ``conductor-env`` commands share: the usage error and the table console."""

from __future__ import annotations

from rich.console import Console

#: Where code suites can run programs (the ``--sandbox`` choices).
SANDBOXES = ("docker", "local", "auto", "ray")


class UsageError(Exception):
    """A bad argument; printed as one line (problem and fix) with exit status 2."""


def output_console() -> Console:
    """Returns the console for tables: the terminal's width, or a wide one when piped to a file."""
    console = Console()
    return console if console.is_terminal else Console(width=160)
