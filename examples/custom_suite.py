"""Add a task suite in one class: register it and ``gym.make("Conductor-Capitals-v0")`` works.

Run: ``python examples/custom_suite.py``. To ship a suite as its own package instead, advertise
the factory in the ``conductor_env.tasks`` entry-point group (``capitals = "mypkg:CapitalsSuite"``).
"""

import gymnasium as gym

import conductor_env  # noqa: F401  (registers the built-in ids)
from conductor_env.tasks import Problem, Score, TaskSuite, register_suite

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Kenya": "Nairobi", "Peru": "Lima"}


class CapitalsSuite(TaskSuite):
    """Capital cities, graded on the text after the last ``Answer:``."""

    name = "capitals"
    blocking_verify = False  # a string comparison: no need for a worker thread

    def __init__(self, countries: list[str] | None = None) -> None:
        self._problems = [Problem(id=c.lower(), question=f"What is the capital of {c}? End with 'Answer: <city>'.", domain="geography", answer=CAPITALS[c]) for c in countries or CAPITALS]

    def problems(self, split: str | None = None) -> list[Problem]:
        return self._problems

    def verify(self, problem: Problem, answer: str) -> Score:
        said = answer.rpartition("Answer:")[2].strip().rstrip(".")
        correct = said.lower() == problem.answer.lower()
        return Score(correct, float(correct), "match" if correct else f"expected {problem.answer}")

    def reference_response(self, problem: Problem) -> str:
        return f"Answer: {problem.answer}"


register_suite("capitals", CapitalsSuite)  # -> "Conductor-Capitals-v0"

if __name__ == "__main__":
    env = gym.make("Conductor-Capitals-v0", pool="simulated", suite_options={"countries": ["Japan", "Peru"]})
    observation, info = env.reset(seed=0)
    print(observation["question"])
    _, reward, _, _, info = env.step('model_id = [0]\nsubtasks = ["Answer the question."]\naccess_list = [[]]')
    print(f"answer={info['answer']!r} correct={info['correct']} reward={reward}")
    env.close()
