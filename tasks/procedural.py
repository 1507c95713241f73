"""reasoning-gym procedural suites: offline, seeded, with the library's own scorers."""

from __future__ import annotations

from typing import Any, Sequence

from conductor_env.tasks.base import Problem, Score, TaskSuite
from conductor_env.tasks.registry import SuiteError

#: The default mix: arithmetic, algebra, logic and string tasks, each graded by reasoning-gym.
DEFAULT_DATASETS = ("basic_arithmetic", "chain_sum", "simple_equations", "propositional_logic", "letter_counting", "spell_backward")

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

_ANSWER_INSTRUCTION = "\n\nGive only the final answer on the last line, in the form: Answer: <answer>"

SPLIT_SEEDS = {"train": 0, "validation": 1, "test": 2}


def final_answer(response: str) -> str:
    """Returns the text after the last ``Answer:`` (or the last non-empty line)."""
    marker = response.lower().rfind("answer:")
    if marker != -1:
        return response[marker + len("answer:") :].strip()
    lines = [line.strip() for line in response.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


class ReasoningGymSuite(TaskSuite):
    """Procedural problems from reasoning-gym, graded by each dataset's ``score_answer``.

    Args:
        datasets: reasoning-gym dataset names (any of ``reasoning_gym.factory.DATASETS``).
        size: Problems per dataset and split.
        seed: Base seed; each split uses ``seed`` plus a split offset, so splits differ.
        dataset_options: Per-dataset keyword options for ``reasoning_gym.create_dataset``.
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
    ) -> None:
        import reasoning_gym
        from reasoning_gym.factory import DATASETS

        names = [datasets] if isinstance(datasets, str) else list(datasets)
        unknown = [n for n in names if n not in DATASETS]
        if unknown:
            raise SuiteError(f"unknown reasoning-gym datasets {unknown}; see reasoning_gym.factory.DATASETS")
        self.datasets = names
        self.size = size
        self.seed = seed
        self._create = reasoning_gym.create_dataset
        self._options = dataset_options or {}
        self._splits: dict[str, list[Problem]] = {}
        self._scorers: dict[str, Any] = {}

    def problems(self, split: str | None = None) -> Sequence[Problem]:
        """Returns ``size`` problems per dataset for ``split`` (train, validation or test)."""
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
                    problems.append(
                        Problem(
                            id=f"{name}/{split}/{index}",
                            question=entry["question"] + _ANSWER_INSTRUCTION,
                            domain=DATASET_DOMAINS.get(name, "reasoning"),
                            answer=entry["answer"],
                            metadata={"dataset": name, "split": split, "entry": entry},
                        )
                    )
            self._splits[split] = problems
        return self._splits[split]

    def verify(self, problem: Problem, answer: str) -> Score:
        """Scores the text after the last ``Answer:`` with reasoning-gym's scorer."""
        entry = problem.metadata["entry"]
        scorer = self._scorers.get(f"{problem.metadata['split']}/{problem.metadata['dataset']}")
        if scorer is None:
            self.problems(problem.metadata["split"])
            scorer = self._scorers[f"{problem.metadata['split']}/{problem.metadata['dataset']}"]
        extracted = final_answer(answer)
        if not extracted:
            return Score(False, 0.0, "empty answer")
        try:
            value = float(scorer.score_answer(extracted, entry))
        except Exception as error:  # noqa: BLE001 - a scorer crash on odd input is a wrong answer
            return Score(False, 0.0, f"scorer rejected the answer: {type(error).__name__}")
        correct = value >= 1.0
        return Score(correct, max(0.0, min(1.0, value)), "match" if correct else f"expected {problem.answer!r}")

    def reference_response(self, problem: Problem) -> str | None:
        return f"Working through it carefully.\nAnswer: {problem.answer}"

    def wrong_response(self, problem: Problem) -> str:
        return "I could not finish the computation.\nAnswer: unknown"
