"""The BigCodeBench image: a pandas fixture task passes honestly and fails wrongly there.

Skipped when the image is not built (it is large and built on demand:
``sudo conductor-env sandbox build --variant bigcodebench``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conductor_env.sandboxes import SandboxUnavailable
from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite, default_sandbox, preload_modules

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "bigcodebench" / "bcb_sample.jsonl"

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def suite():
    try:
        sandbox = default_sandbox(pool_size=1)
    except SandboxUnavailable as error:
        pytest.skip(f"the BigCodeBench image is not available: {error}")
    yield BigCodeBenchSuite(data_files=str(SAMPLE), sandbox=sandbox)
    sandbox.close()


def test_pandas_task_passes_with_the_reference_and_fails_wrong(suite):
    problem = suite.problems()[2]
    assert suite.verify(problem, suite.reference_response(problem)).correct
    wrong = "```python\nimport pandas as pd\ndef task_func(values):\n    return pd.DataFrame({'value': values})\n```"
    score = suite.verify(problem, wrong)
    assert not score.correct and score.reason


LIBRARIES = ["numpy", "pandas", "scipy", "sklearn", "seaborn", "statsmodels", "requests", "bs4", "nltk", "pytz",
             "dateutil", "cv2", "matplotlib", "sympy", "PIL", "django", "flask", "openpyxl", "xlwt", "wordcloud"]


def test_the_libraries_load_and_matplotlib_draws_headless(suite):
    program = "import " + ", ".join(LIBRARIES) + "\nimport matplotlib.pyplot as plt\n"
    program += "def task_func():\n    fig, ax = plt.subplots()\n    ax.plot([1, 2])\n    fig.savefig('plot.png')\n    return ax\n"
    tests = (
        "import unittest\nimport matplotlib\nclass TestCases(unittest.TestCase):\n"
        "    def test_draws(self):\n        ax = task_func()\n        self.assertEqual(len(ax.get_lines()), 1)\n"
        "        self.assertEqual(matplotlib.get_backend().lower(), 'agg')\n"
    )
    job = [{"checks": tests, "preload": preload_modules(LIBRARIES), "real_ctypes": True}]
    report = suite.sandbox().run_tests(program, job, kind="unittest", limits=suite.limits)
    assert report.passed, report
