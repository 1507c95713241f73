"""What a step may say about a grade before its episode ends.

A verifier's reason often quotes what the answer was graded against: ``"expected 42, got 41"``, a
failing hidden test's input and expected output, the names of a test class's methods. Shown
before the episode ends, it hands a multi-round Conductor the gold answer: a round-2 workflow that
tells a worker to print it is paid. So a round that does not end its episode reports only a
:class:`PublicVerdict`, which is built from the score's ``correct``, ``score`` and ``test_set``
and has no field that could hold the grader's text: its :attr:`~PublicVerdict.reason` is one of
a fixed set of sentences. The grader's own reasons reach ``info`` only on the step that ends the
episode (``info["reason"]`` for the last round, ``info["round_reasons"]`` for every round), and
from there the records.
"""

from __future__ import annotations

from dataclasses import dataclass

from conductor_env.suite import Score

__all__ = ["CORRECT", "PARTIAL", "WRONG", "PUBLIC_REASONS", "PublicVerdict"]

#: The in-episode reason of an answer the verifier accepted.
CORRECT = "graded correct (the grader's reason is given when the episode ends)"
#: The in-episode reason of a rejected answer that earned partial credit (some tests passed).
PARTIAL = "graded wrong with partial credit (the grader's reason is given when the episode ends)"
#: The in-episode reason of a rejected answer.
WRONG = "graded wrong (the grader's reason is given when the episode ends)"
#: Every reason a round that does not end its episode can report.
PUBLIC_REASONS = frozenset({CORRECT, PARTIAL, WRONG})


@dataclass(frozen=True)
class PublicVerdict:
    """The part of a :class:`~conductor_env.suite.Score` a step may show before its episode ends.

    Attributes:
        correct: Whether the answer was accepted.
        score: Its score in [0, 1] (the reward already reveals it).
        test_set: Which tests graded it (``"public"``, ``"public+private"`` or ``""``).
    """

    correct: bool
    score: float
    test_set: str

    @classmethod
    def of(cls, score: Score) -> PublicVerdict:
        """Returns the public part of ``score`` (its ``reason`` is left behind)."""
        return cls(bool(score.correct), float(score.score), str(score.test_set))

    @property
    def reason(self) -> str:
        """One of :data:`PUBLIC_REASONS`."""
        if self.correct:
            return CORRECT
        return PARTIAL if self.score > 0 else WRONG
