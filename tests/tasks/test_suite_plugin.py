"""Third-party suites: an installed distribution's entry point becomes a gym id; the example runs.

The plugin test really installs a tiny distribution into the running interpreter's environment
(``pip install --no-deps --no-build-isolation``), checks it from fresh interpreters, and
uninstalls it. Its distribution and module names are unique per run so parallel runs do not
collide; only the suite name ``mysuite`` is shared.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PLUGIN_MODULE = '''
"""A third-party suite: one arithmetic question per number, graded on the last line."""

from conductor_env.tasks import Problem, Score, TaskSuite


class DoublingSuite(TaskSuite):
    name = "mysuite"

    def __init__(self, count=3):
        self._problems = [
            Problem(id=str(n), question=f"What is 2 x {n}? Reply with the number only.", domain="math", answer=str(2 * n))
            for n in range(1, count + 1)
        ]

    def problems(self, split=None):
        return self._problems

    def verify(self, problem, answer):
        lines = answer.strip().splitlines() or [""]
        correct = lines[-1].strip() == problem.answer
        return Score(correct, float(correct), "match" if correct else f"expected {problem.answer}")

    def reference_response(self, problem):
        return problem.answer


def factory(**options):
    return DoublingSuite(**options)
'''

CHECK = """
import gymnasium as gym
import conductor_env
from conductor_env.tasks import get_suite, suite_names

assert "mysuite" in suite_names(), suite_names()
env = gym.make("Conductor-Mysuite-v0", pool="simulated", suite_options={"count": 2})
observation, info = env.reset(options={"problem_id": "2"})
assert observation["question"] == "What is 2 x 2? Reply with the number only.", observation["question"]
_, reward, terminated, _, info = env.step('model_id = [0]\\nsubtasks = ["Answer."]\\naccess_list = [[]]')
assert terminated and reward in (0.5, 1.0), reward
assert type(get_suite("mysuite")).__name__ == "DoublingSuite"
print("plugin ok", info["problem_id"], len(env.unwrapped.problems))
"""


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)


@pytest.mark.slow
def test_entry_point_suite_appears_after_pip_install(tmp_path: Path) -> None:
    token = f"{os.getpid()}_{tmp_path.name[-6:]}".replace("-", "_")
    module = f"conductor_plugin_probe_{token}"
    distribution = module.replace("_", "-")
    project = tmp_path / "plugin"
    (project / module).mkdir(parents=True)
    (project / module / "__init__.py").write_text(PLUGIN_MODULE)
    (project / "pyproject.toml").write_text(
        textwrap.dedent(f'''
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{distribution}"
        version = "0.0.1"

        [project.entry-points."conductor_env.tasks"]
        mysuite = "{module}:factory"

        [tool.setuptools]
        packages = ["{module}"]
    ''')
    )
    install = run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", str(project)])
    assert install.returncode == 0, install.stderr
    try:
        # A fresh interpreter started elsewhere: the suite comes from the installed entry point.
        checked = run([sys.executable, "-c", CHECK], cwd=tmp_path)
        assert checked.returncode == 0, checked.stderr
        assert checked.stdout.startswith("plugin ok 2 2")
    finally:
        removed = run([sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", distribution])
        assert removed.returncode == 0, removed.stderr
    gone = run([sys.executable, "-c", "import conductor_env\nfrom conductor_env.tasks import suite_names\nprint(suite_names())"], cwd=tmp_path)
    assert gone.returncode == 0 and "mysuite" not in gone.stdout


def test_custom_suite_example_is_short_and_runs() -> None:
    example = REPO / "examples" / "custom_suite.py"
    assert len(example.read_text().splitlines()) < 50
    result = run([sys.executable, str(example)], cwd=REPO)
    assert result.returncode == 0, result.stderr
    question, outcome = result.stdout.strip().splitlines()
    assert question.startswith("What is the capital of ")
    assert "reward=" in outcome and "correct=" in outcome


def test_example_suite_registers_in_process() -> None:
    import gymnasium as gym

    sys.path.insert(0, str(REPO / "examples"))
    try:
        import custom_suite
    finally:
        sys.path.remove(str(REPO / "examples"))
    env = gym.make("Conductor-Capitals-v0", pool="simulated", suite_options={"countries": ["Kenya"]})
    try:
        suite = env.unwrapped.suite
        problem = suite.problems()[0]
        assert isinstance(suite, custom_suite.CapitalsSuite)
        assert suite.verify(problem, "It is Nairobi.\nAnswer: Nairobi.").correct
        assert not suite.verify(problem, "Answer: Mombasa").correct
    finally:
        env.close()
