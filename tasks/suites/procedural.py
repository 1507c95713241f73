"""reasoning-gym procedural suites: offline, seeded, graded exactly.

reasoning-gym's own scorers pay partial credit from substring and prefix heuristics, and some
accept answers that need no solving (see :data:`GAMEABLE_DATASETS`). So the datasets of the
default mix are graded by a strict check of the suite (:data:`STRICT_CHECKS`): one normalised
answer, compared exactly with the gold answer. Other datasets count as correct only when their
scorer gives full marks. Partial credit (the scorer's fraction) is an opt-in suite option.

Which datasets may be used without an opt-in is measured, not listed: the trivial-answer audit
(:mod:`~conductor_env.tasks.suites.rg_audit`, ``scripts/audit_reasoning_gym.py``,
docs/REASONING_GYM_AUDIT.md) grades constants, the question echoed back, the most common gold
answer and any text through :meth:`ReasoningGymSuite.verify` on every dataset, and the suite
refuses without ``allow_gameable=True`` each dataset where one of them is paid on more than 10%
of the problems, or that the shipped table does not cover.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

from conductor_env.suite import Problem, Score, TaskSuite
from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.suites.rg_audit import GameableDatasetWarning, audit_refusal
from conductor_env.tasks.suites.rg_checks import (  # noqa: F401  (re-exported: the suite's checks)
    STRICT_CHECKS,
    exact_knights_knaves,
    exact_number,
    exact_word,
    exact_word_list,
    family_relationship,
    final_answer,
    knights_knaves_roles,
)

#: The default mix: arithmetic, algebra, logic and string tasks, each with a single right answer
#: that a strict check of :data:`STRICT_CHECKS` grades, and none paying a trivial answer on more
#: than 10% of problems in the audit (``letter_counting``, whose answer is ``1`` about 4 times in
#: 10, was replaced by ``word_sorting``).
DEFAULT_DATASETS = ("basic_arithmetic", "chain_sum", "simple_equations", "knights_knaves", "word_sorting", "spell_backward")

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

#: Datasets whose reasoning-gym scorer pays answers that need no solving in a way the trivial-answer
#: audit cannot show (no fixed answer), with the reason. The suite refuses them unless built with
#: ``allow_gameable=True``, as it does the datasets the audit finds (:func:`gameable_reasons`).
GAMEABLE_DATASETS = {
    "propositional_logic": (
        "its scorer accepts any statement the premises entail, so a premise copied from the question "
        "gets full marks (and so does anything at all when the premises contradict each other); "
        "it has no gold answer to compare with"
    ),
}


def gameable_reasons(names: Sequence[str]) -> dict[str, str]:
    """Why each of ``names`` is refused without ``allow_gameable``; datasets that pass are left out.

    A dataset is refused when it is in :data:`GAMEABLE_DATASETS`, or when the shipped audit
    (:func:`~conductor_env.tasks.suites.rg_audit.audit_refusal`) finds a trivial answer paid
    above the threshold or does not cover it.

    Args:
        names: reasoning-gym dataset names.

    Returns:
        ``name -> reason`` for the refused datasets, in the order given.
    """
    reasons = {}
    for name in names:
        reason = GAMEABLE_DATASETS.get(name) or audit_refusal(name)
        if reason is not None:
            reasons[name] = reason
    return reasons


_ANSWER_INSTRUCTION = "\n\nGive only the final answer on the last line, in the form: Answer: <answer>"

SPLIT_SEEDS = {"train": 0, "validation": 1, "test": 2}

#: An extracted answer longer than this many characters, or than four times the gold answer if
#: that is longer, is wrong without being scored: it cannot be a single answer, and some scorers
#: (propositional_logic's parser) take time quadratic in the answer's length.
MAX_ANSWER_CHARS = 1024


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
        allow_gameable: Allow datasets that may pay answers needing no solving (for evaluation,
            not training): those of :data:`GAMEABLE_DATASETS`, those where the trivial-answer
            audit found a trivial answer paid on more than 10% of problems, and those it does
            not cover (a newer reasoning-gym). Building with them warns
            (:class:`~conductor_env.tasks.suites.rg_audit.GameableDatasetWarning`) with the reasons.
            The audit measured each dataset with its default options; ``dataset_options`` can
            change its answers' spread.

    Raises:
        SuiteError: For an unknown dataset, a gameable or unaudited one without
            ``allow_gameable``, or an option that is not a bool.
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
        refused = gameable_reasons(names)
        if refused and not self.allow_gameable:
            reasons = "; ".join(f"{n}: {reason}" for n, reason in refused.items())
            raise SuiteError(f"reasoning-gym datasets {list(refused)} may reward answers that need no solving ({reasons}); pass allow_gameable=True to use them anyway (for evaluation, not training)")
        if refused:
            reasons = "; ".join(f"{n}: {reason}" for n, reason in refused.items())
            warnings.warn(f"reasoning-gym datasets {list(refused)} allowed by allow_gameable=True: {reasons}", GameableDatasetWarning, stacklevel=2)
        self.datasets = names
        #: The allowed gameable datasets and why; their problems carry ``metadata["gameable"]``,
        #: which training checks (:func:`conductor_env.envs.training.check_training`).
        self.gameable = refused
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
                            metadata={"dataset": name, "split": split, "entry": entry, **({"gameable": self.gameable[name]} if name in self.gameable else {})},
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
