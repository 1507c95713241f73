"""Failures a program causes are its own: a wrong answer with a reason, never "not scored".

Programs that leave their sandbox in a state the runner's clean-up cannot walk (trees deeper
than any recursion, directories that refuse the runner, names too long to join) are graded
wrong on every kind and both backends, and the sandbox serves the next job. Only a failure of
the infrastructure itself (here: a worker whose runner is lost, with a probe that fails too)
is "not scored".
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"))

from sandbox_helpers import BACKENDS, open_backend

from conductor_env.sandboxes import Limits
from conductor_env.sandboxes.wire import ProtocolError
from conductor_env.suite import VerifierError
from conductor_env.tasks.sandboxed import summarize_report

LIMITS = Limits(wall_s=20.0, memory_mb=512, processes=32, file_size_mb=8, open_files=64, output_bytes=1 << 16)

#: Each builds a tree the clean-up must survive, then answers wrongly.
TREES = {
    "deep_tree": "import os\nos.chdir(os.environ.get('TMPDIR', '.'))\nfor _ in range(3000):\n    os.mkdir('d'); os.chdir('d')\n",
    "locked_directories": "import os\nbase = os.environ.get('TMPDIR', '.')\nfor i in range(20):\n"
    "    p = os.path.join(base, f'locked{i}'); os.mkdir(p); open(os.path.join(p, 'f'), 'w').close()\n"
    "    os.chmod(p, 0)\nos.chmod(base, 0o500)\n",
    "long_names": "import os\nos.chdir(os.environ.get('TMPDIR', '.'))\nfor _ in range(40):\n    name = 'n' * 250\n    os.mkdir(name); os.chdir(name)\n",
}


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request):
    opened = open_backend(request.param, pool_size=1, limits=LIMITS)
    yield opened
    opened.close()


def _program(kind: str, tree: str) -> str:
    if kind == "stdin":
        return tree + "print('wrong')\n"
    if kind == "functional":
        return tree + "def answer(x):\n    return -1\n"
    return tree + "def task_func(words):\n    return 'zzz'\n"


UNITTEST = "import unittest\nclass TestCases(unittest.TestCase):\n    def test_one(self):\n        self.assertEqual(task_func(['a']), 'a')\n"


def _run(sandbox, kind: str, program: str):
    if kind == "stdin":
        return sandbox.run_tests(program, [{"input": "", "output": "right"}], kind="stdin", limits=LIMITS)
    if kind == "functional":
        return sandbox.run_tests(program, [{"input": "1", "output": "1"}], kind="functional", func_name="answer", limits=LIMITS)
    return sandbox.run_tests(program, [{"checks": UNITTEST}], kind="unittest", limits=LIMITS)


@pytest.mark.parametrize("kind", ["stdin", "functional", "unittest"])
@pytest.mark.parametrize("tree", sorted(TREES))
def test_a_tree_the_cleanup_cannot_walk_is_a_wrong_answer(sandbox, kind, tree):
    report = _run(sandbox, kind, _program(kind, TREES[tree]))
    assert report.error is None, report.error  # scored, not "not scored"
    assert not report.passed
    # The sandbox still serves: an honest program passes next.
    honest = {"stdin": "print('right')\n", "functional": "def answer(x):\n    return x\n", "unittest": "def task_func(words):\n    return words[0]\n"}[kind]
    assert _run(sandbox, kind, honest).passed


@pytest.mark.parametrize("tree", sorted(TREES))
def test_humaneval_program_leaving_a_tree_is_wrong_not_unscored(sandbox, tree):
    """Kind ``isolated`` (HumanEval), through the suite as the env grades it."""
    from conductor_env.tasks.suites.humaneval import HumanEvalSuite

    suite = HumanEvalSuite(sandbox=sandbox)
    problem = suite.problems()[0]
    wrong = f"```python\n{TREES[tree]}\ndef {problem.metadata['entry_point']}(*args):\n    return None\n```"
    score = suite.verify(problem, wrong)  # a VerifierError here would be "not scored"
    assert not score.correct and score.reason
    assert suite.verify(problem, suite.reference_response(problem)).correct


def test_a_lost_runner_is_the_programs_when_a_probe_passes(sandbox, monkeypatch):
    """A runner lost mid-job (here: a reply that never comes) is a wrong answer once a fresh
    probe job passes; when the probe fails too, the job is not scored."""
    worker_class = type(sandbox._make_worker(0))  # an unstarted worker: its class is what is patched
    real_request = worker_class.request
    calls = {"n": 0}

    def lose_first(self, job, timeout):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ProtocolError("the runner exited")
        return real_request(self, job, timeout)

    monkeypatch.setattr(worker_class, "request", lose_first)
    report = _run(sandbox, "stdin", "print('right')\n")
    assert report.error is None and report.tests[0].verdict == "runtime_error", report
    assert "probe job passed" in report.tests[0].detail

    def lose_all(self, job, timeout):
        raise ProtocolError("the daemon is gone")

    monkeypatch.setattr(worker_class, "request", lose_all)
    report = _run(sandbox, "stdin", "print('right')\n")
    assert report.error is not None and "probe" in report.error
    with pytest.raises(VerifierError):  # the env's "not scored"
        summarize_report(report)
