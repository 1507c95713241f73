"""Shipped and user recipes as TOML files: ``conductor-env train grpo --recipe NAME|FILE``.

A recipe file holds the sections of :class:`~conductor_env.agents.training.recipe.GRPORecipe`
(``[model]``, ``[env]``, ``[grpo]``, ``[warm_start]``, ``[heldout]``) and three optional keys:
``summary`` (one line printed at start), ``extends`` (a recipe it changes: its tables merge key by
key into that one's, and ``warm_start = false`` drops an inherited section) and ``requires``
(``["cuda"]``: the preflight refuses the recipe without a CUDA GPU). The shipped ones live in
``conductor_env/recipes/`` beside the pools (docs/TRAINING.md lists them); with no ``--recipe``,
:func:`default_recipe_name` picks ``gpu`` when CUDA is present and ``cpu`` otherwise.
"""

from __future__ import annotations

import importlib.resources
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from conductor_env.agents.training.recipe import GRPORecipe, RecipeError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: How many ``extends`` a recipe may chain (a loop is refused before this).
_MAX_EXTENDS = 8


@dataclass(frozen=True)
class RecipeFile:
    """A recipe as its file states it, before command-line changes.

    Attributes:
        name: The shipped name, or the file's path.
        summary: One line saying what the recipe is.
        settings: The nested settings, with ``extends`` resolved.
        requires: What the machine must have (``"cuda"``).
    """

    name: str
    summary: str
    settings: Mapping[str, Any]
    requires: tuple[str, ...] = field(default=())

    def build(self, changes: Mapping[str, Any] | None = None) -> GRPORecipe:
        """Returns the recipe with ``changes`` (nested, as :func:`merge_settings` takes them) on top.

        Raises:
            RecipeError: For an unknown setting or a recipe the validation refuses.
            EnvOptionError, SetupError: For an env option or id the env refuses.
        """
        return GRPORecipe.from_mapping(merge_settings(self.settings, changes or {}), where=f"recipe {self.name}")


def recipes_folder() -> Path:
    """The folder of the shipped recipe files."""
    return Path(str(importlib.resources.files("conductor_env") / "recipes"))


def recipe_names() -> list[str]:
    """The shipped recipes' names."""
    return sorted(path.stem for path in recipes_folder().glob("*.toml"))


def default_recipe_name(*, cuda: bool) -> tuple[str, str]:
    """Returns the recipe to train with when none is named, and why, as a printable reason."""
    if cuda:
        return "gpu", "a CUDA GPU is present"
    return "cpu", "no CUDA GPU found; --recipe gpu runs the bigger GPU default anyway, --recipe paper the paper's whole setup"


def load_recipe(name_or_path: str) -> RecipeFile:
    """Reads a shipped recipe by name, or a recipe file by path.

    Raises:
        RecipeError: For an unknown name, an unreadable file, bad TOML, or an ``extends`` loop.
    """
    settings, chain = _read_chain(name_or_path)
    summary = str(settings.pop("summary", ""))
    requires = settings.pop("requires", [])
    settings.pop("extends", None)
    if not isinstance(requires, list) or not all(item in ("cuda",) for item in requires):
        raise RecipeError(f"recipe {name_or_path}: requires must be a list of 'cuda', got {requires!r}")
    return RecipeFile(name=chain[0], summary=summary, settings=settings, requires=tuple(requires))


def _read_chain(name_or_path: str) -> tuple[dict[str, Any], list[str]]:
    """Reads a recipe and every recipe it extends; returns the merged settings and the chain of names."""
    chain: list[str] = []
    layers: list[dict[str, Any]] = []
    current: str | None = name_or_path
    while current is not None:
        if current in chain or len(chain) >= _MAX_EXTENDS:
            raise RecipeError(f"recipe {name_or_path}: extends loops ({' -> '.join([*chain, current])})")
        data = _read_one(current)
        chain.append(current)
        layers.append(data)
        parent = data.get("extends")
        if parent is not None and not isinstance(parent, str):
            raise RecipeError(f"recipe {current}: extends must be a recipe name or path, got {parent!r}")
        current = parent
    merged: dict[str, Any] = {}
    for layer in reversed(layers):
        merged = merge_settings(merged, layer)
    return merged, chain


def _read_one(name_or_path: str) -> dict[str, Any]:
    path = Path(name_or_path).expanduser()
    if not (name_or_path.endswith(".toml") or path.is_file()):
        path = recipes_folder() / f"{name_or_path}.toml"
        if not path.is_file():
            raise RecipeError(f"unknown recipe {name_or_path!r}: use one of {', '.join(recipe_names())}, or a .toml file")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise RecipeError(f"recipe {name_or_path}: cannot read {path}: {error.strerror or error}") from error
    except tomllib.TOMLDecodeError as error:
        raise RecipeError(f"recipe {name_or_path}: bad TOML in {path}: {error}") from error


def merge_settings(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """Returns ``base`` with ``changes`` on top: tables merge key by key, other values replace.

    A section set to ``False`` (``warm_start = false``) replaces the table, so it drops an
    inherited warm start or held-out evaluation. Changing the env id drops the base's
    ``suite_options``, which belong to its suite.
    """
    out = {key: (dict(value) if isinstance(value, Mapping) else value) for key, value in base.items()}
    for key, value in changes.items():
        mine = out.get(key)
        if isinstance(value, Mapping) and isinstance(mine, Mapping):
            if key == "env" and "id" in value and value["id"] != mine.get("id", value["id"]):
                mine = {k: v for k, v in mine.items() if k != "suite_options"}
            out[key] = merge_settings(mine, value)
        else:
            out[key] = dict(value) if isinstance(value, Mapping) else value
    return out
