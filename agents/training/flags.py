"""Command-line flags generated from the recipe's dataclass fields and their help text.

Every field of :class:`~conductor_env.agents.training.recipe.GRPORecipe`'s sections becomes a
flag (``grpo.max_steps`` -> ``--max-steps``; the warm start's fields take ``--format-warmup-``,
the held-out ones ``--heldout-``; a field's ``flag`` metadata names it otherwise), so a new
setting needs no hand-written flag. A flag not given leaves the recipe's value;
:func:`changes_from_args` turns the given ones into nested changes for
:meth:`~conductor_env.agents.training.recipes.RecipeFile.build`.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from typing import Any, Callable, Mapping

from conductor_env.agents.training.recipe import OPTIONAL_SECTIONS, SECTIONS, GRPORecipe, RecipeError
from conductor_env.options import parse_key_values

#: The flag prefix of each section's fields.
PREFIXES = {"model": "", "env": "", "grpo": "", "warm_start": "format-warmup-", "heldout": "heldout-"}
#: The field of an optional section whose value 0 means "no such section", and that adds one.
SWITCHES = {"warm_start": "steps", "heldout": "questions"}
#: Where a run-wide field's value goes (``GRPORecipe`` itself, not a section).
RUN = ""


@dataclasses.dataclass(frozen=True)
class Flag:
    """One generated flag: the option string, and the recipe setting it changes."""

    option: str
    section: str
    name: str
    field: dataclasses.Field[Any]
    kind: Any

    @property
    def dest(self) -> str:
        return f"{self.section or 'run'}.{self.name}"


def recipe_flags() -> list[Flag]:
    """Every generated flag, in section and field order."""
    flags = []
    for section, settings in [*SECTIONS.items(), (RUN, GRPORecipe)]:
        hints = typing.get_type_hints(settings)
        for item in dataclasses.fields(settings):
            if settings is GRPORecipe and item.name in SECTIONS:
                continue
            option = item.metadata.get("flag") or "--" + (PREFIXES.get(section, "") + item.name).replace("_", "-")
            flags.append(Flag(option, section, item.name, item, hints[item.name]))
    return flags


def _is_optional(kind: Any) -> tuple[bool, Any]:
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return True, rest[0]
    return False, kind


def _converter(kind: Any, optional: bool) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        if optional and text.lower() == "none":
            return None
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}{' or none' if optional else ''}, got {text!r}") from None

    convert.__name__ = kind.__name__
    return convert


def add_recipe_flags(parser: argparse.ArgumentParser, defaults: Callable[[Flag], str] | None = None) -> None:
    """Adds a flag per recipe field to ``parser``.

    Args:
        parser: The ``train grpo`` parser.
        defaults: Returns the text of a flag's defaults for its help (e.g. per shipped recipe).
    """
    for flag in recipe_flags():
        optional, kind = _is_optional(flag.kind)
        text = flag.field.metadata.get("help", "") + (f" ({defaults(flag)})" if defaults else "")
        text = text.replace("%", "%%")
        common: dict[str, Any] = {"dest": flag.dest, "default": argparse.SUPPRESS, "help": text}
        if typing.get_origin(kind) is dict or kind is dict:
            parser.add_argument(flag.option, action="append", metavar="KEY=VALUE", **common)
        elif kind is bool:
            parser.add_argument(flag.option, action=argparse.BooleanOptionalAction, **common)
        else:
            choices = flag.field.metadata.get("choices")
            parser.add_argument(flag.option, type=_converter(kind, optional), choices=choices, metavar=None if choices else flag.option.lstrip("-").upper().replace("-", "_"), **common)


def parse_pairs(pairs: list[str], flag: str) -> dict[str, Any]:
    """Parses ``KEY=VALUE`` flags with the package's one parser (:func:`conductor_env.options.parse_key_values`).

    Raises:
        RecipeError: For a pair without ``=`` or an empty key.
    """
    try:
        return parse_key_values(pairs, flag)
    except ValueError as error:
        raise RecipeError(str(error)) from error


def changes_from_args(args: argparse.Namespace, base: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the recipe changes the given flags ask for, nested by section.

    Args:
        args: The parsed arguments.
        base: The recipe file's settings (to tell whether an optional section exists).

    Raises:
        RecipeError: For a malformed ``KEY=VALUE`` flag, or a setting of a warm start or
            held-out evaluation the recipe does not have, without the flag that adds one.
    """
    changes: dict[str, Any] = {}
    for flag in recipe_flags():
        if not hasattr(args, flag.dest):
            continue
        value = getattr(args, flag.dest)
        if isinstance(value, list):
            value = parse_pairs(value, flag.option)
        target = changes if flag.section == RUN else changes.setdefault(flag.section, {})
        target[flag.name] = value
    for section in OPTIONAL_SECTIONS:
        _switch_section(changes, base, section)
    return changes


def _switch_section(changes: dict[str, Any], base: Mapping[str, Any], section: str) -> None:
    """``--format-warmup-steps 0`` drops the warm start; a warm-start flag without one needs the steps flag."""
    given = changes.get(section)
    if not given:
        return
    switch = SWITCHES[section]
    option = "--" + (PREFIXES[section] + switch).replace("_", "-")
    if given.get(switch) == 0:
        changes[section] = False
    elif not base.get(section) and switch not in given:
        names = ", ".join("--" + (PREFIXES[section] + name).replace("_", "-") for name in given)
        raise RecipeError(f"{names}: this recipe has no {section.replace('_', ' ')}; add one with {option} N")
