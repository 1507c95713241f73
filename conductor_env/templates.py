"""Prompt templates: the Conductor prompt and the worker message as text a user can replace.

A template is a small TOML file with up to three messages::

    kind = "worker"          # optional: "conductor" or "worker" (checked when given)
    description = "..."      # optional, one line
    system = '''...'''       # optional: a system message
    user = '''...'''         # required: the user message, with named {placeholders}
    prefill = '''...'''      # optional: the start of the assistant's reply

Placeholders are written ``{name}``; ``{{`` and ``}}`` are literal braces. Only the names listed
in :data:`PLACEHOLDERS` are allowed, with no attribute, index, conversion or format spec
(``{x.y}``, ``{x[0]}``, ``{x!r}``, ``{x:>9}``): anything else is a one-line
:class:`TemplateError` when the file loads, never a failure mid-episode. Values are inserted
once and never read as template text, so a question that contains ``{question}`` or ``$var``
appears exactly as written. ``system`` may use only the placeholders that are fixed for an env
(:data:`SYSTEM_PLACEHOLDERS`); ``prefill`` uses none (its braces are still escaped as ``{{ }}``).

Templates are chosen by name (a file shipped in ``conductor_env/prompt_templates/<kind>/``,
see :func:`template_names`) or by path (a ``.toml`` file). docs/PROMPTS.md describes the
placeholders and the shipped templates.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.resources
import os
import string
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TemplateKind = Literal["conductor", "worker"]
KINDS: tuple[TemplateKind, ...] = ("conductor", "worker")

#: The placeholders a template's ``user`` text may use, by kind, with what each holds.
PLACEHOLDERS: dict[str, dict[str, str]] = {
    "conductor": {
        "question": "the task (or a self-call frame's subtask)",
        "workers": "the numbered pool, one 'Model id N' line per worker",
        "max_steps": "the most steps a workflow may have",
        "access_help": "how access_list entries are written (binary or index mode)",
        "examples": "the worked examples ('' when none are shown)",
        "examples_section": "the worked examples under the default heading, then a blank line ('' when none)",
        "history": "earlier rounds' workflows and answers ('' in the first round)",
        "history_section": "the earlier rounds with the default instructions, then a blank line ('' in the first round)",
    },
    "worker": {
        "question": "the overall task",
        "subtask": "this step's instruction",
        "previous": "the earlier steps this worker may read, subtask and response each ('' when none)",
        "previous_section": "those steps under the default heading, then a blank line ('' when none)",
    },
}
#: The placeholders a template's ``system`` text may use: those fixed for an env.
SYSTEM_PLACEHOLDERS: dict[str, frozenset[str]] = {
    "conductor": frozenset({"max_steps", "access_help"}),
    "worker": frozenset(),
}
_KEYS = ("kind", "description", "system", "user", "prefill")
_TEMPLATE_DIR = "prompt_templates"


class TemplateError(ValueError):
    """A template cannot be found, read or used; the message is one line naming the fix."""


@functools.lru_cache(maxsize=256)
def _segments(text: str) -> tuple[tuple[str, str | None], ...]:
    """Splits ``text`` into ``(literal, placeholder or None)`` pairs (raises ``ValueError`` on bad braces)."""
    return tuple((literal, name) for literal, name, _, _ in string.Formatter().parse(text))


def _check_text(text: str, allowed: frozenset[str], where: str) -> None:
    """Raises :class:`TemplateError` unless ``text`` is a valid template over ``allowed`` names."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as error:
        raise TemplateError(f"{where}: {error}; write {{{{ and }}}} for literal braces") from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if not name.isidentifier() or spec or conversion:
            raise TemplateError(f"{where}: placeholder {shown} must be a plain name like {{question}}; write {{{{ and }}}} for literal braces")
        if name not in allowed:
            hint = next(iter(difflib.get_close_matches(name, sorted(allowed), n=1)), "")
            known = ", ".join("{" + n + "}" for n in sorted(allowed)) or "none"
            raise TemplateError(f"{where}: unknown placeholder {shown}{f' (did you mean {{{hint}}}?)' if hint else ''}; allowed here: {known}")


def render_text(text: str, values: Mapping[str, Any]) -> str:
    """Fills the placeholders of a checked template text (values are inserted literally, once)."""
    return "".join(literal + ("" if name is None else str(values[name])) for literal, name in _segments(text))


@dataclass(frozen=True)
class PromptTemplate:
    """One prompt template: an optional system message, the user message and an optional prefill.

    Attributes:
        kind: ``"conductor"`` or ``"worker"``: which placeholders ``user`` may use.
        user: The user message, with ``{placeholders}`` (see :data:`PLACEHOLDERS`).
        system: The system message (``""``: none).
        prefill: The start of the assistant's reply (``""``: none). For the Conductor, the
            reply continues it and the action is prefill + reply.
        name: A name for messages and records (a shipped name or the file's path).
        description: One line about the template.

    Raises:
        TemplateError: From the constructor, for an unknown kind or a bad placeholder.
    """

    kind: str
    user: str
    system: str = ""
    prefill: str = ""
    name: str = "custom"
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TemplateError(f"template {self.name!r}: kind must be 'conductor' or 'worker', got {self.kind!r}")
        for key in ("user", "system", "prefill", "name", "description"):
            if not isinstance(getattr(self, key), str):
                raise TemplateError(f"{self.kind} template {self.name!r}: {key} must be a string, got {type(getattr(self, key)).__name__}")
        if not self.user.strip():
            raise TemplateError(f"{self.kind} template {self.name!r}: 'user' is required and may not be empty")
        where = f"{self.kind} template {self.name!r}"
        _check_text(self.user, frozenset(PLACEHOLDERS[self.kind]), f"{where}, user")
        _check_text(self.system, SYSTEM_PLACEHOLDERS[self.kind], f"{where}, system")
        _check_text(self.prefill, frozenset(), f"{where}, prefill")

    def placeholders(self) -> dict[str, int]:
        """Returns how many times each placeholder appears in ``user``."""
        counts: dict[str, int] = {}
        for _, name in _segments(self.user):
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
        return counts

    def render_user(self, values: Mapping[str, Any]) -> str:
        """Returns the user message with ``values`` (every placeholder ``user`` uses) filled in."""
        return render_text(self.user, values)

    def render_system(self, values: Mapping[str, Any]) -> str:
        """Returns the system message (``""`` when none) with the env's fixed values filled in."""
        return render_text(self.system, values)

    def render_prefill(self) -> str:
        """Returns the prefill text (``{{``/``}}`` unescaped; ``""`` when none)."""
        return render_text(self.prefill, {})

    def to_dict(self) -> dict[str, str]:
        """Returns a JSON-friendly copy (what a run records for a template given as an object)."""
        return dataclasses.asdict(self)


def template_names(kind: str) -> list[str]:
    """Returns the names of the templates of ``kind`` shipped with the package."""
    folder = importlib.resources.files("conductor_env") / _TEMPLATE_DIR / kind
    if not folder.is_dir():
        return []
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def parse_template(text: str, *, kind: str, name: str) -> PromptTemplate:
    """Builds a template of ``kind`` from TOML ``text``.

    Raises:
        TemplateError: For invalid TOML, an unknown key, a kind that differs, or a bad placeholder.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise TemplateError(f"{kind} template {name!r}: invalid TOML: {str(error).splitlines()[0]}") from None
    for key in data:
        if key not in _KEYS:
            hint = next(iter(difflib.get_close_matches(key, _KEYS, n=1)), "")
            raise TemplateError(f"{kind} template {name!r}: unknown key {key!r}{f' (did you mean {hint!r}?)' if hint else ''}; keys: {', '.join(_KEYS)}")
    declared = data.pop("kind", kind)
    if declared != kind:
        raise TemplateError(f"template {name!r} is a {declared} template; a {kind} template is needed here")
    if "user" not in data:
        raise TemplateError(f"{kind} template {name!r}: the 'user' message is missing")
    return PromptTemplate(kind=kind, name=name, **data)


def _is_path(spec: str) -> bool:
    return spec.endswith(".toml") or "/" in spec or os.sep in spec or spec.startswith("~")


@functools.lru_cache(maxsize=64)
def _load_named(spec: str, kind: str) -> PromptTemplate:
    if _is_path(spec):
        path = Path(spec).expanduser()
        if not path.is_file():
            raise TemplateError(f"{kind} template file {spec!r} not found")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise TemplateError(f"{kind} template file {spec!r} cannot be read: {error}") from None
        return parse_template(text, kind=kind, name=spec)
    names = template_names(kind)
    if spec not in names:
        hint = next(iter(difflib.get_close_matches(spec, names, n=1)), "")
        raise TemplateError(f"unknown {kind} template {spec!r}{f' (did you mean {hint!r}?)' if hint else ''}; use one of {', '.join(names)} or a .toml file path")
    resource = importlib.resources.files("conductor_env") / _TEMPLATE_DIR / kind / f"{spec}.toml"
    return parse_template(resource.read_text(encoding="utf-8"), kind=kind, name=spec)


def load_template(spec: str | PromptTemplate | Mapping[str, Any], kind: str) -> PromptTemplate:
    """Returns the template ``spec`` names.

    Args:
        spec: A shipped template's name (``"default"``), a path to a ``.toml`` file, a
            :class:`PromptTemplate`, or its fields as a mapping (as a run records it).
        kind: ``"conductor"`` or ``"worker"``.

    Returns:
        The template (files are read once per process and cached).

    Raises:
        TemplateError: For an unknown name, a missing or unreadable file, malformed TOML, a
            template of the other kind, or an unknown placeholder.
    """
    if kind not in KINDS:
        raise TemplateError(f"kind must be 'conductor' or 'worker', got {kind!r}")
    if type(spec) is str and spec:  # the common case first: a name or path, cached (rendering calls this per step)
        return _load_named(spec, kind)
    if isinstance(spec, PromptTemplate):
        if spec.kind != kind:
            raise TemplateError(f"template {spec.name!r} is a {spec.kind} template; a {kind} template is needed here")
        return spec
    if isinstance(spec, Mapping):
        fields = {k: v for k, v in spec.items() if k != "kind"}
        declared = spec.get("kind", kind)
        if declared != kind:
            raise TemplateError(f"template {fields.get('name', 'custom')!r} is a {declared} template; a {kind} template is needed here")
        try:
            return PromptTemplate(kind=kind, **fields)
        except TypeError as error:
            raise TemplateError(f"{kind} template: {error}") from None
    if not isinstance(spec, str) or not spec:
        raise TemplateError(f"a {kind} template is a name, a .toml path or a PromptTemplate, got {spec!r}")
    return _load_named(spec, kind)
