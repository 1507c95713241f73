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


LIBRARIES = [
    "numpy",
    "pandas",
    "scipy",
    "sklearn",
    "seaborn",
    "statsmodels",
    "requests",
    "bs4",
    "nltk",
    "pytz",
    "dateutil",
    "cv2",
    "matplotlib",
    "sympy",
    "PIL",
    "django",
    "flask",
    "openpyxl",
    "xlwt",
    "wordcloud",
]


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


def _pins() -> dict[str, str]:
    from conductor_env.sandboxes.image import BIGCODEBENCH_PIP

    return dict(pin.split("==") for pin in BIGCODEBENCH_PIP)


def test_every_pinned_library_is_installed_at_its_pinned_version(suite):
    tests = (
        "import unittest, importlib.metadata\n"
        f"PINS = {_pins()!r}\n"
        "class TestCases(unittest.TestCase):\n"
        "    def test_versions(self):\n"
        "        found = {name: importlib.metadata.version(name) for name in PINS}\n"
        "        self.assertEqual(found, PINS)\n"
    )
    job = [{"checks": tests, "preload": [], "real_ctypes": False}]
    report = suite.sandbox().run_tests("def task_func():\n    pass\n", job, kind="unittest", limits=suite.limits)
    assert report.passed, report


def test_nltk_stopwords_and_the_python_command_are_there(suite):
    program = (
        "import subprocess\nfrom nltk.corpus import stopwords\ndef task_func():\n"
        "    run = subprocess.run(['python', '-c', 'print(6 * 7)'], capture_output=True, text=True)\n"
        "    return stopwords.words('english'), run.stdout\n"
    )
    tests = (
        "import unittest\nclass TestCases(unittest.TestCase):\n"
        "    def test_both(self):\n        words, out = task_func()\n"
        "        self.assertIn('the', words)\n        self.assertEqual(out.strip(), '42')\n"
    )
    job = [{"checks": tests, "preload": preload_modules(["nltk", "subprocess"]), "real_ctypes": True}]
    report = suite.sandbox().run_tests(program, job, kind="unittest", limits=suite.limits)
    assert report.passed, report


REAL = Path("/work/shared/data/bigcodebench_v0.1.0_hf.jsonl.gz")
#: Canonical solutions that failed on the Debian-only image (tag 1) and pass on this one: Faker,
#: requests_mock, xlrd 2, matplotlib 3.7's Axes, NLTK's stopwords, the `python` command.
FORMERLY_FAILING = ["BigCodeBench/236", "BigCodeBench/272", "BigCodeBench/501", "BigCodeBench/307",
                    "BigCodeBench/290", "BigCodeBench/1101"]  # fmt: skip


@pytest.fixture(scope="module")
def real(suite):
    if not REAL.exists():
        pytest.skip("the real BigCodeBench rows (/work/shared/data) are not here")
    real = BigCodeBenchSuite(data_files=str(REAL), sandbox=suite.sandbox())
    return real, {problem.id: problem for problem in real.problems()}


@pytest.mark.parametrize("task_id", FORMERLY_FAILING)
def test_formerly_failing_canonical_solutions_pass(real, task_id):
    real, problems = real
    problem = problems[task_id]
    score = real.verify(problem, real.reference_response(problem))
    assert score.correct, score.reason
