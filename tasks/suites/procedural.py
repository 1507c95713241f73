"""reasoning-gym procedural suites: offline, seeded, graded exactly.

reasoning-gym's own scorers pay partial credit from substring and prefix heuristics, and some
accept answers that need no solving (see :data:`GAMEABLE_DATASETS`). So the datasets of the
default mix are graded by a strict check of the suite (:data:`STRICT_CHECKS`): one normalised
answer, compared exactly with the gold answer. Other datasets count as correct only when their
scorer gives full marks. Partial credit (the scorer's fraction) is an opt-in suite option.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, Callable, Mapping, Sequence

from conductor_env.suite import Problem, Score, TaskSuite
from conductor_env.tasks.registry import SuiteError

#: The default mix: arithmetic, algebra, logic and string tasks, each with a single right answer
#: that a strict check of :data:`STRICT_CHECKS` grades.
DEFAULT_DATASETS = ("basic_arithmetic", "chain_sum", "simple_equations", "knights_knaves", "letter_counting", "spell_backward")

#: Coarse domains of some reasoning-gym datasets (others default to ``reasoning``).
DATASET_DOMAINS = {
    "basic_arithmetic": "math",
    "chain_sum": "math",
    "simple_equations": "math",
    "decimal_arithmetic": "math",
    "gcd": "math",
    "lcm": "math",
    "prime_factorization": "math",
    "fraction_simplification": "math",
    "letter_counting": "language",
    "spell_backward": "language",
    "word_sorting": "language",
}

#: Datasets whose reasoning-gym scorer pays answers that need no solving, with the reason. The
#: suite refuses them unless built with ``allow_gameable=True``.
GAMEABLE_DATASETS = {
    "propositional_logic": (
        "its scorer accepts any statement the premises entail, so a premise copied from the question "
        "gets full marks (and so does anything at all when the premises contradict each other); "
        "it has no gold answer to compare with"
    ),
}

_ANSWER_INSTRUCTION = "\n\nGive only the final answer on the last line, in the form: Answer: <answer>"

SPLIT_SEEDS = {"train": 0, "validation": 1, "test": 2}

#: An extracted answer longer than this many characters, or than four times the gold answer if
#: that is longer, is wrong without being scored: it cannot be a single answer, and some scorers
#: (propositional_logic's parser) take time quadratic in the answer's length.
MAX_ANSWER_CHARS = 1024

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


#: The suite's strict check for each audited dataset: ``check(answer, gold, entry)``.
STRICT_CHECKS: dict[str, Callable[[str, str, Mapping[str, Any]], bool]] = {
    "basic_arithmetic": exact_number,
    "chain_sum": exact_number,
    "simple_equations": exact_number,
    "letter_counting": exact_number,
    "spell_backward": exact_word,
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


def _option(name: str, value: object) -> bool:
    if not isinstance(value, bool):  # a string such as "no" must not switch an option on
        raise SuiteError(f"{name} must be true or false, got {value!r}")
    return value


class ReasoningGymSuite(TaskSuite):
    """Procedural problems from reasoning-gym, graded exactly.

    The datasets of :data:`STRICT_CHECKS` (the default mix among them) are graded by the suite's
    strict check against the gold answer; any other dataset is correct only when its
    reasoning-gym scorer gives full marks. By default the score is 1.0 for a correct answer and
    0.0 otherwise.

    Args:
        datasets: reasoning-gym dataset names (any of ``reasoning_gym.factory.DATASETS``).
        size: Problems per dataset and split.
        seed: Base seed; each split uses ``seed`` plus a split offset, so splits differ.
        dataset_options: Per-dataset keyword options for ``reasoning_gym.create_dataset``.
        partial_credit: Score a wrong answer with the reasoning-gym scorer's fraction (e.g. the
            share of a reversed word's letters in place) instead of 0.0. ``correct`` still needs
            a fully correct answer, and an answer that the scorer pays in full but the strict
            check rejects scores 0.0.
        allow_gameable: Allow datasets of :data:`GAMEABLE_DATASETS`, whose scorers pay
            answers that need no solving (for evaluation, not training).

    Raises:
        SuiteError: For an unknown dataset, a gameable one without ``allow_gameable``, or an
            option that is not a bool.
    """

    name = "rg"
    blocking_verify = False

    def __init__(
        self,
        datasets: Sequence[str] | str = DEFAULT_DATASETS,
        *,
        size: int = 50,
        seed: int = 0,
        dataset_options: dict[str, dict[str, Any]] | None = None,
        partial_credit: bool = False,
        allow_gameable: bool = False,
    ) -> None:
        import reasoning_gym
        from reasoning_gym.factory import DATASETS

        names = [datasets] if isinstance(datasets, str) else list(datasets)
        unknown = [n for n in names if n not in DATASETS]
        if unknown:
            raise SuiteError(f"unknown reasoning-gym datasets {unknown}; see reasoning_gym.factory.DATASETS")
        self.partial_credit = _option("partial_credit", partial_credit)
        self.allow_gameable = _option("allow_gameable", allow_gameable)
        gameable = [n for n in names if n in GAMEABLE_DATASETS]
        if gameable and not self.allow_gameable:
            reasons = "; ".join(f"{n}: {GAMEABLE_DATASETS[n]}" for n in gameable)
            raise SuiteError(f"reasoning-gym datasets {gameable} reward answers that need no solving ({reasons}); pass allow_gameable=True to use them anyway")
        self.datasets = names
        self.size = size
        self.seed = seed
        self._create = reasoning_gym.create_dataset
        self._options = dataset_options or {}
        self._splits: dict[str, list[Problem]] = {}
        self._scorers: dict[str, Any] = {}

    def problems(self, split: str | None = None) -> Sequence[Problem]:
        """Returns ``size`` problems per dataset for ``split``.

        Args:
            split: ``train``, ``validation`` or ``test``; ``None`` means :attr:`default_split`.

        Returns:
            The problems, dataset by dataset, the same every call.

        Raises:
            SuiteError: For an unknown split.
        """
        split = split or self.default_split
        if split not in SPLIT_SEEDS:
            raise SuiteError(f"unknown split {split!r} for reasoning-gym; use one of {sorted(SPLIT_SEEDS)}")
        if split not in self._splits:
            problems = []
            for offset, name in enumerate(self.datasets):
                seed = self.seed * 1000 + SPLIT_SEEDS[split] * 100 + offset
                dataset = self._create(name, size=self.size, seed=seed, **self._options.get(name, {}))
                self._scorers[f"{split}/{name}"] = dataset
                for index in range(len(dataset)):
                    entry = dataset[index]
                    answer = entry["answer"]
                    if name == "family_relationships":
                        answer = family_relationship(entry, set(dataset.config.female_names))
                    problems.append(
                        Problem(
                            id=f"{name}/{split}/{index}",
                            question=entry["question"] + _ANSWER_INSTRUCTION,
                            domain=DATASET_DOMAINS.get(name, "reasoning"),
                            answer=answer,
                            metadata={"dataset": name, "split": split, "entry": entry},
                        )
                    )
            self._splits[split] = problems
        return self._splits[split]

    def verify(self, problem: Problem, answer: str) -> Score:
        """Grades the text after the last ``Answer:``; never raises on the answer.

        Args:
            problem: A problem of this suite.
            answer: The workflow's final response.

        Returns:
            ``correct`` when the strict check (or, for datasets without one, the reasoning-gym
            scorer with full marks) accepts the answer; ``score`` 1.0 then, else 0.0 (or the
            scorer's fraction with ``partial_credit``).
        """
        if not isinstance(answer, str):
            return Score(False, 0.0, f"answer is {type(answer).__name__}, not text")
        name = problem.metadata["dataset"]
        entry = problem.metadata["entry"]
        extracted = final_answer(answer)
        if not extracted:
            return Score(False, 0.0, "empty answer")
        limit = max(MAX_ANSWER_CHARS, 4 * len(str(problem.answer or "")))
        if len(extracted) > limit:
            return Score(False, 0.0, f"answer too long ({len(extracted)} characters, at most {limit})")
        check = STRICT_CHECKS.get(name)
        fraction, failure = 0.0, ""
        if check is None or self.partial_credit:
            fraction, failure = self._library_score(problem, extracted)
        correct = check(extracted, str(problem.answer), entry) if check is not None else fraction >= 1.0
        if correct:
            return Score(True, 1.0, "match")
        # Full marks from the scorer for an answer the strict check rejects means the scorer was
        # gamed (a look-alike, a list of candidates): no credit for it.
        score = fraction if self.partial_credit and fraction < 1.0 else 0.0
        expected = f"expected {problem.answer!r}" if problem.answer is not None else "not accepted by the scorer"
        return Score(False, score, failure or expected)

    def _library_score(self, problem: Problem, extracted: str) -> tuple[float, str]:
        """Returns reasoning-gym's score in [0, 1] and, when its scorer failed, why."""
        key = f"{problem.metadata['split']}/{problem.metadata['dataset']}"
        if key not in self._scorers:
            self.problems(problem.metadata["split"])
        try:
            value = float(self._scorers[key].score_answer(extracted, problem.metadata["entry"]))
        except Exception as error:  # noqa: BLE001 - a scorer crash on odd input is a wrong answer
            return 0.0, f"scorer rejected the answer: {type(error).__name__}"
        if not math.isfinite(value):
            return 0.0, "scorer returned no number"
        return max(0.0, min(1.0, value)), ""

    def reference_response(self, problem: Problem) -> str | None:
        """Returns a response with the gold answer, or ``None`` for a dataset without one."""
        if problem.answer is None:
            return None
        return f"Working through it carefully.\nAnswer: {problem.answer}"

    def wrong_response(self, problem: Problem) -> str:
        """Returns a response that every scorer rejects."""
        return "I could not finish the computation.\nAnswer: unknown"
