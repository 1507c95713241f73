"""A free question: a one-problem suite built from a request's text, with no gold answer.

The served system answers questions nobody has graded, so its episodes run over this suite
instead of a dataset's: the problem is the request's question, the verifier grades nothing (every
answer is "not scored", reward 0, and the server reports no reward), and simulated workers, which
answer from a suite's gold and wrong responses, always give :data:`UNGRADED_RESPONSE`.
"""

from __future__ import annotations

from typing import Sequence

from conductor_env.suite import Problem, Score, TaskSuite

#: What a simulated worker answers a free question with (it has no gold answer to give).
UNGRADED_RESPONSE = "A simulated worker cannot answer a free question: it knows only the answers a suite grades."
#: The verdict on every answer to a free question.
NOT_SCORED = Score(correct=False, score=0.0, reason="not scored: a served question has no gold answer")


class FreeQuestion(TaskSuite):
    """One question from a request, in a given domain, graded by no one.

    Args:
        question: The question text.
        domain: Its domain (``math``, ``code``, ``choice``, ``reasoning`` or any other name): it
            picks the Conductor prompt's worked examples and simulated workers' skills.
        problem_id: The problem's id (the request's id, for logs).
    """

    name = "free-question"
    default_split = "request"
    blocking_verify = False

    def __init__(self, question: str, domain: str, problem_id: str = "request") -> None:
        self.problem = Problem(id=problem_id, question=question, domain=domain)

    def problems(self, split: str | None = None) -> Sequence[Problem]:
        """Returns the one problem (whatever the split)."""
        return (self.problem,)

    def verify(self, problem: Problem, answer: str) -> Score:
        """Returns :data:`NOT_SCORED`: a free question has nothing to grade against."""
        return NOT_SCORED

    def wrong_response(self, problem: Problem) -> str:
        """Returns :data:`UNGRADED_RESPONSE`, what simulated workers answer."""
        return UNGRADED_RESPONSE
