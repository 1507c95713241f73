"""Measures trivial answers on reasoning-gym datasets through the suite's own grading path.

Each dataset is built by :class:`~conductor_env.tasks.suites.procedural.ReasoningGymSuite` with
default options, and :meth:`~conductor_env.tasks.suites.procedural.ReasoningGymSuite.verify` (the
strict check where the suite has one, else the library scorer at full marks) grades trivial
answers: constants (:data:`TRIVIAL_CONSTANTS`), the question echoed back, the dataset's most
common gold answer (counted on another split's seeds) and a fixed nonsense text
(:data:`ANY_TEXT`). The highest share of problems one of them is paid on is the dataset's
*trivial share*. ``scripts/audit_reasoning_gym.py`` runs :func:`measure_dataset` on every dataset
and writes the table that :mod:`~conductor_env.tasks.suites.rg_audit` reads.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from typing import TYPE_CHECKING, Any

from conductor_env.tasks.suites.procedural import ReasoningGymSuite
from conductor_env.tasks.suites.rg_audit import KIND_ANY, KIND_CONSTANT, KIND_ECHO, KIND_MODAL, GameableDatasetWarning

if TYPE_CHECKING:
    from conductor_env.suite import Problem

#: Constant answers tried on every dataset (``""`` is an empty answer, which the suite refuses).
TRIVIAL_CONSTANTS = (
    "0", "1", "-1", "2", "3", "10",
    "yes", "no", "Yes", "No", "True", "False", "true", "false",
    "A", "B", "C", "D", "a",
    "None", "[]", "",
)  # fmt: skip

#: "Any text": a fixed string that answers nothing.
ANY_TEXT = "zqxv florp wibble"

_KIND_ORDER = (KIND_ANY, KIND_CONSTANT, KIND_ECHO, KIND_MODAL)

#: Split whose gold answers give the most common gold answer; the paid shares are measured on
#: ``MEASURE_SPLIT`` (other seeds), so the modal answer is not read off the problems it is tried on.
MODAL_SPLIT, MEASURE_SPLIT = "train", "test"


def modal_answer(problems: list[Problem]) -> str | None:
    """Returns the most common gold answer (as text) of ``problems``, or ``None`` if none has one.

    Args:
        problems: Problems of one dataset.

    Returns:
        The most common ``str(problem.answer)``; ties go to the answer seen first.
    """
    counts = Counter(str(p.answer) for p in problems if p.answer is not None)
    return counts.most_common(1)[0][0] if counts else None


def trivial_answers(problem: Problem, modal: str | None) -> dict[tuple[str, str], str]:
    """The trivial answers tried on ``problem``.

    Args:
        problem: A problem of the suite.
        modal: The dataset's most common gold answer on the modal draw, or ``None``.

    Returns:
        ``(kind, label) -> answer text``; the label names the answer in the table (the echo's
        label is the same for every problem, its text is the problem's own question).
    """
    answers = {(KIND_CONSTANT, c): c for c in TRIVIAL_CONSTANTS}
    answers[(KIND_ECHO, "<the question>")] = str(problem.metadata["entry"]["question"])
    answers[(KIND_ANY, ANY_TEXT)] = ANY_TEXT
    if modal is not None and modal not in TRIVIAL_CONSTANTS:
        answers[(KIND_MODAL, modal)] = modal
    return answers


def measure_suite(suite: ReasoningGymSuite) -> dict[str, Any]:
    """Measures a suite of one dataset: how often each trivial answer is graded correct.

    Args:
        suite: A suite built with one dataset (and ``allow_gameable=True``).

    Returns:
        The dataset's table row: ``n``, ``best`` (kind, answer, share), ``paid`` (every trivial
        answer paid at least once, ``"kind: label" -> share``), ``modal_answer``,
        ``modal_share`` (its share of the modal draw's gold answers) and ``honest`` (the share of
        reference responses graded correct; ``None`` without gold answers).
    """
    modal_draw = list(suite.problems(MODAL_SPLIT))
    problems = list(suite.problems(MEASURE_SPLIT))
    modal = modal_answer(modal_draw)
    paid: Counter[tuple[str, str]] = Counter()
    honest, with_gold = 0, 0
    for problem in problems:
        for key, text in trivial_answers(problem, modal).items():
            paid[key] += suite.verify(problem, f"Answer: {text}").correct
        reference = suite.reference_response(problem)
        if reference is not None:
            with_gold += 1
            honest += suite.verify(problem, reference).correct
    n = len(problems)
    shares = {key: count / n for key, count in paid.items() if count}
    # Ties go to the answer that needs least: any text, then a constant, the echo, the modal answer.
    best_key = max(shares, key=lambda key: (shares[key], -_KIND_ORDER.index(key[0]))) if shares else None
    modal_count = sum(str(p.answer) == modal for p in modal_draw) if modal is not None else 0
    return {
        "n": n,
        "best": {"kind": best_key[0], "answer": best_key[1], "share": round(shares[best_key], 4)} if best_key else {"kind": None, "answer": None, "share": 0.0},
        "paid": {f"{kind}: {label}": round(share, 4) for (kind, label), share in sorted(shares.items(), key=lambda item: -item[1])},
        "modal_answer": modal,
        "modal_share": round(modal_count / len(modal_draw), 4) if modal_draw else None,
        "honest": round(honest / with_gold, 4) if with_gold else None,
    }


def measure_dataset(name: str, size: int, seed: int = 0) -> dict[str, Any]:
    """Builds the suite on one dataset with default options and measures it (:func:`measure_suite`).

    Args:
        name: A reasoning-gym dataset name.
        size: Problems per draw (the modal draw and the measured one each have ``size``).
        seed: The suite's seed.

    Returns:
        The dataset's table row, with ``seconds`` added. Exceptions (a dataset that does not
        generate with default options) propagate; the script records them.
    """
    started = time.perf_counter()
    with warnings.catch_warnings():  # the opt-in's warning says what the audit is measuring
        warnings.simplefilter("ignore", GameableDatasetWarning)
        suite = ReasoningGymSuite([name], size=size, seed=seed, allow_gameable=True)
    row = measure_suite(suite)
    row["seconds"] = round(time.perf_counter() - started, 2)
    return row
