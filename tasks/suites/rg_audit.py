"""Trivial-answer audit of reasoning-gym: the shipped table, and which datasets it refuses.

:mod:`~conductor_env.tasks.suites.rg_measure` measures, for every dataset reasoning-gym
registers, how often trivial answers (constants, the question echoed back, the most common gold
answer, any text) are graded correct by the suite; ``scripts/audit_reasoning_gym.py`` writes the
result as ``rg_trivial_answers.json`` next to this module. The suite reads it (:func:`load_audit`)
and refuses, unless opted in, every dataset whose *trivial share* (the best trivial answer's
share of paid problems) is above :data:`TRIVIAL_SHARE_THRESHOLD`, or that the table does not
cover (:func:`audit_refusal`).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.resources
import json
from typing import Any, Mapping


class GameableDatasetWarning(UserWarning):
    """A dataset that pays answers needing no solving (or was not audited) was allowed by opt-in."""


#: A dataset whose best trivial answer is paid on more than this share of problems is refused
#: without an opt-in. See docs/REASONING_GYM_AUDIT.md for why 10%.
TRIVIAL_SHARE_THRESHOLD = 0.10

#: The file of the shipped table, next to this module.
AUDIT_FILE = "rg_trivial_answers.json"

#: Kinds of trivial answer, as recorded in the table.
KIND_CONSTANT, KIND_ECHO, KIND_MODAL, KIND_ANY = "constant", "echo of the question", "most common gold answer", "any text"


def reasoning_gym_version() -> str:
    """Returns the installed reasoning-gym's version (``"unknown"`` if its metadata is missing)."""
    try:
        return importlib.metadata.version("reasoning-gym")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@functools.lru_cache(maxsize=1)
def load_audit() -> Mapping[str, Any]:
    """Returns the shipped audit table (read once, then cached).

    Returns:
        The parsed ``rg_trivial_answers.json``: ``reasoning_gym_version``, ``size``, ``seed``,
        ``threshold``, ``datasets`` (name -> row, or ``{"error": ...}`` for a dataset that failed).
        Without the file (a broken install) the table is empty, so no dataset counts as audited.
    """
    try:
        text = importlib.resources.files(__package__).joinpath(AUDIT_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:  # a broken install: nothing counts as audited
        return {"reasoning_gym_version": "none (the table is missing)", "datasets": {}}
    return json.loads(text)


def audit_refusal(name: str, threshold: float = TRIVIAL_SHARE_THRESHOLD) -> str | None:
    """Why the audit refuses ``name`` without an opt-in, or ``None`` when it passes.

    Args:
        name: A reasoning-gym dataset name.
        threshold: The largest trivial share allowed.

    Returns:
        ``None`` for a dataset whose best trivial answer is paid on at most ``threshold`` of the
        audited problems; otherwise a reason naming the trivial answer and its share, or saying
        the dataset was not audited (absent from the table, or its audit failed).
    """
    audit = load_audit()
    row = audit["datasets"].get(name)
    if row is None:
        return f"not audited: absent from {AUDIT_FILE} (audited with reasoning-gym {audit['reasoning_gym_version']}, installed {reasoning_gym_version()}); rerun scripts/audit_reasoning_gym.py"
    if "error" in row:
        return f"not audited: it failed to generate or grade in the audit ({row['error']})"
    best = row["best"]
    if best["share"] > threshold:
        shown = "the question echoed back" if best["kind"] == KIND_ECHO else f"{best['answer']!r} ({best['kind']})"
        return f"the trivial answer {shown} is graded correct on {best['share']:.0%} of {row['n']} audited problems (threshold {threshold:.0%})"
    return None
