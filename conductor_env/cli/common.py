"""What the ``conductor-env`` commands share: the usage error, the table console, and joining Ray for ``--ray``."""

from __future__ import annotations

from typing import Any

from rich.console import Console

#: Where code suites can run programs (the ``--sandbox`` choices).
SANDBOXES = ("docker", "local", "auto", "ray")


class UsageError(Exception):
    """A bad argument; printed as one line (problem and fix) with exit status 2."""


def ray_backend(address: str, workers: int) -> Any:
    """Joins the Ray cluster for ``--ray ADDRESS`` and returns :mod:`conductor_env.distributed`.

    Raises:
        UsageError: When Ray is not installed, the cluster cannot be joined, or ``workers < 1``.
    """
    if workers < 1:
        raise UsageError(f"--ray-workers must be at least 1, got {workers}")
    try:
        from conductor_env import distributed
    except ImportError as error:
        raise UsageError(f"--ray needs Ray ({error.name} is missing): pip install 'conductor-env[ray]'") from error
    try:
        distributed.connect(address)
    except distributed.RayUnavailable as error:
        raise UsageError(str(error)) from error
    return distributed


def output_console() -> Console:
    """Returns the console for tables: the terminal's width, or a wide one when piped to a file."""
    console = Console()
    return console if console.is_terminal else Console(width=160)
