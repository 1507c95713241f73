"""Strict checks of the reasoning-gym suite: one normalised answer, compared exactly with the gold one.

reasoning-gym's scorers pay partial credit from substring and prefix heuristics, and some pay
answers that need no solving; the datasets listed in :data:`STRICT_CHECKS` are graded here
instead (see :mod:`~conductor_env.tasks.suites.procedural`).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Callable, Mapping

_MARKER = re.compile(r"answer:", re.IGNORECASE | re.ASCII)
_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", re.ASCII)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_WRAPPERS = ("`", '"', "'", "$")


def final_answer(response: str) -> str:
    """Returns the text after the last ``Answer:`` (any case), or the last non-empty line.

    Args:
        response: The workflow's final response.

    Returns:
        The answer text, stripped of surrounding whitespace; ``""`` when there is none.
    """
    last = None
    for last in _MARKER.finditer(response):
        pass
    if last is not None:
        return response[last.end() :].strip()
    lines = [line.strip() for line in response.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _unwrap(text: str) -> str:
    """Strips markdown emphasis, one layer of quotes, backticks or dollars, and a final full stop."""
    text = text.strip().strip("*").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in _WRAPPERS:
        text = text[1:-1].strip()
    if text.endswith("."):
        text = text[:-1].rstrip()
    return text


def _ascii_lower(text: str) -> str:
    # str.lower() folds some non-ASCII look-alikes onto ASCII letters (the Kelvin sign onto "k").
    return text.translate(_ASCII_LOWER)


def exact_number(answer: str, gold: str, entry: Mapping[str, Any]) -> bool:
    """Whether ``answer`` is one plain decimal number equal to ``gold``.

    Accepted: an optional sign (``+``, ``-`` or the minus sign U+2212), ASCII digits with
    optional thousands commas in groups of three, an optional fractional part. Rejected:
    expressions, scientific or hexadecimal notation, other digit scripts, several numbers.
    For ``simple_equations`` a ``<variable> =`` prefix is allowed (``"x = 5"``).

    Args:
        answer: The extracted answer.
        gold: The gold answer (a plain number).
        entry: The reasoning-gym entry.

    Returns:
        True when the answer is exactly the gold number.
    """
    text = _unwrap(answer).replace("\u2212", "-")
    variable = entry.get("metadata", {}).get("variable")
    if isinstance(variable, str) and variable:
        head, equals, tail = text.partition("=")
        if equals and head.strip() == variable:
            text = tail.strip()
    if not text.isascii() or _NUMBER.fullmatch(text) is None:
        return False
    return Decimal(text.replace(",", "")) == Decimal(str(gold))


def exact_word(answer: str, gold: str, entry: Mapping[str, Any]) -> bool:
    """Whether ``answer`` is ``gold`` up to ASCII case (reasoning-gym ignores case here too).

    Args:
        answer: The extracted answer.
        gold: The gold answer (one word).
        entry: The reasoning-gym entry (unused).

    Returns:
        True when the answer is the gold word.
    """
    text = _unwrap(answer)
    return text.isascii() and _ascii_lower(text) == _ascii_lower(str(gold))


def knights_knaves_roles(text: str) -> dict[str, str] | None:
    """Parses ``"A is a knight, and B is a knave"`` into ``{"a": "knight", "b": "knave"}``.

    Clauses must be exactly ``<name> is a|an <role>``, joined by ``,``, ``and`` or ``, and``;
    anything else (``if``/``then``, ``or``, ``not``, a name given twice) makes it unreadable,
    so a statement copied from the question is not read as an assignment.

    Args:
        text: The answer (or gold answer) text.

    Returns:
        The lower-cased name-to-role mapping, or ``None`` when the text is not such a list.
    """
    text = _unwrap(text)
    if not text.isascii():
        return None
    tokens = _ascii_lower(text).replace(",", " , ").split()
    roles: dict[str, str] = {}
    position = 0
    while True:
        clause = tokens[position : position + 4]
        if len(clause) < 4 or clause[1] != "is" or clause[2] not in ("a", "an") or clause[0] in roles:
            return None
        if not (clause[0].isalpha() and clause[3].isalpha()):
            return None
        roles[clause[0]] = clause[3]
        position += 4
        if position == len(tokens):
            return roles
        if tokens[position : position + 2] == [",", "and"]:
            position += 2
        elif tokens[position] in (",", "and"):
            position += 1
        else:
            return None


def exact_knights_knaves(answer: str, gold: str, entry: Mapping[str, Any]) -> bool:
    """Whether ``answer`` assigns every inhabitant the gold role, and says nothing else.

    Args:
        answer: The extracted answer.
        gold: The gold answer (``"A is a knight, and B is a knave."``).
        entry: The reasoning-gym entry (unused).

    Returns:
        True when both parse and the assignments are equal.
    """
    expected = knights_knaves_roles(str(gold))
    return expected is not None and knights_knaves_roles(answer) == expected


def exact_word_list(answer: str, gold: str, entry: Mapping[str, Any]) -> bool:
    """Whether ``answer`` is the gold list of words, comma-separated, in the gold order and case.

    The words are compared exactly (case included: the sort order is ASCII's, so case is part of
    the answer) with ``entry["metadata"]["sorted_words"]``; spaces around commas are ignored. A
    word left out, repeated or added, another separator, or the question's unsorted list is wrong.

    Args:
        answer: The extracted answer.
        gold: The gold answer (``"Hart, find, inform"``).
        entry: The reasoning-gym entry; its ``metadata["sorted_words"]`` is the gold list
            (``gold`` split on commas where it is missing).

    Returns:
        True when the answer lists exactly the gold words in the gold order.
    """
    words = entry.get("metadata", {}).get("sorted_words")
    expected = [str(word) for word in words] if isinstance(words, list) else [word.strip() for word in str(gold).split(",")]
    text = answer.strip().strip("*").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in _WRAPPERS:
        text = text[1:-1].strip()
    given = [word.strip() for word in text.split(",")]
    if given and given[-1].endswith(".") and not expected[-1].endswith("."):
        given[-1] = given[-1][:-1].rstrip()
    return given == expected


#: The suite's strict check for each audited dataset: ``check(answer, gold, entry)``.
STRICT_CHECKS: dict[str, Callable[[str, str, Mapping[str, Any]], bool]] = {
    "basic_arithmetic": exact_number,
    "chain_sum": exact_number,
    "simple_equations": exact_number,
    "letter_counting": exact_number,
    "spell_backward": exact_word,
    "word_sorting": exact_word_list,
    "knights_knaves": exact_knights_knaves,
    "family_relationships": exact_word,
}


def family_relationship(entry: Mapping[str, Any], female_names: set[str]) -> str:
    """Returns the right answer of a family_relationships entry.

    reasoning-gym 0.1.x labels two relations wrongly: when person2 is the parent of person1's
    spouse it answers ``mother-in-law``/``father-in-law`` (person2's relation to person1, not
    person1's to person2), and it picks ``niece``/``nephew`` by person2's gender instead of
    person1's. The question always asks what person1 is to person2.

    Args:
        entry: The reasoning-gym entry.
        female_names: The dataset's female first names (``config.female_names``).

    Returns:
        The corrected relation (``daughter-in-law``, ``son-in-law``, ``niece``, ``nephew``), or
        the entry's own answer for the other relations.
    """
    answer = str(entry["answer"])
    female = entry["metadata"]["person1"] in female_names
    if answer in ("mother-in-law", "father-in-law"):
        return "daughter-in-law" if female else "son-in-law"
    if answer in ("niece", "nephew"):
        return "niece" if female else "nephew"
    return answer
