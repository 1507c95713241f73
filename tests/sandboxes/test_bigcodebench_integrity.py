"""Kind ``unittest`` (BigCodeBench) against programs built to be paid without solving, on both backends.

Stdlib fixture tasks (tests/fixtures/bigcodebench), so the default image serves. Every hostile
program below answers wrongly unless its trick works; each must fail, and the honest controls
beside them must pass.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"))

from sandbox_helpers import BACKENDS, open_backend

from conductor_env.sandboxes import Limits
from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "bigcodebench" / "bcb_sample.jsonl"
LIMITS = Limits(wall_s=8.0, memory_mb=1024, processes=32, output_bytes=1 << 16)
WRONG = "def task_func(words):\n    return 'zzz'\n"


def block(code: str) -> str:
    return f"```python\n{code.strip()}\n```"


@pytest.fixture(scope="module", params=BACKENDS)
def bcb(request):
    sandbox = open_backend(request.param, pool_size=1, limits=LIMITS)
    suite = BigCodeBenchSuite(data_files=str(SAMPLE), sandbox=sandbox, limits=LIMITS)
    yield suite
    sandbox.close()


def grade(suite: BigCodeBenchSuite, code: str, task: int = 0):
    return suite.verify(suite.problems()[task], block(code))


def test_honest_controls_pass(bcb):
    for task in (0, 1):
        reference = bcb.reference_response(bcb.problems()[task])
        score = bcb.verify(bcb.problems()[task], reference)
        assert score.correct, score.reason
    # A full solution with its own imports, and one that prints and uses threads, pass too.
    honest = (
        "import collections, threading\ndef task_func(words):\n    print('thinking')\n"
        "    t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
        "    return collections.Counter(words).most_common(1)[0][0] if words else None\n"
    )
    assert grade(bcb, honest).correct


def test_wrong_answer_fails(bcb):
    score = grade(bcb, WRONG)
    assert not score.correct and "AssertionError" in score.reason


HOSTILE = {
    "prints_success": "print('OK')\nprint('Ran 3 tests in 0.001s')\n" + WRONG,
    "sys_exit_top_level": "import sys\nsys.exit(0)\n" + WRONG,
    "os_exit_top_level": "import os\nos._exit(0)\n" + WRONG,
    "os_exit_in_call": "import os\ndef task_func(words):\n    os._exit(0)\n",
    "sys_exit_in_call": "import sys\ndef task_func(words):\n    sys.exit(0)\n",
    "kill_runner": "import os, signal\ndef task_func(words):\n    for pid in (1, os.getppid()):\n"
    "        try:\n            os.kill(pid, signal.SIGKILL)\n        except OSError:\n            pass\n    return 'zzz'\n",
    "kill_everything": "import os, signal\ndef task_func(words):\n    try:\n        os.kill(-1, signal.SIGKILL)\n    except OSError:\n        pass\n    return 'zzz'\n",
    "patch_assert_top_level": "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\nunittest.TestCase.assertIsNone = lambda *a, **k: None\n" + WRONG,
    "patch_assert_in_call": "import unittest\ndef task_func(words):\n"
    "    unittest.TestCase.assertEqual = lambda *a, **k: None\n    unittest.TestCase.assertIsNone = lambda *a, **k: None\n"
    "    return 'zzz'\n",
    "self_restoring_patch": "import unittest\nORIGINAL = unittest.TestCase.assertEqual\n"
    "def fake(self, *a, **k):\n    unittest.TestCase.assertEqual = ORIGINAL\n"
    "def task_func(words):\n    unittest.TestCase.assertEqual = fake\n    return 'zzz'\n",
    "getattribute_on_testcase": "import unittest\ndef _get(self, name):\n"
    "    if name.startswith('assert'):\n        return lambda *a, **k: None\n    return object.__getattribute__(self, name)\n"
    "unittest.TestCase.__getattribute__ = _get\n" + WRONG,
    "patch_test_result": "import unittest\nunittest.TestResult.addFailure = lambda *a: None\n"
    "unittest.TestResult.addError = lambda *a: None\nunittest.TestResult.wasSuccessful = lambda self: True\n" + WRONG,
    "patch_outcome": "import unittest.case\nclass O:\n    def __init__(self, *a):\n        self.success = True\nunittest.case._Outcome = O\n" + WRONG,
    "patch_builtins": "import builtins\nbuiltins.isinstance = lambda *a: True\n" + WRONG,
    "skip_test": "import unittest\ndef task_func(words):\n    raise unittest.SkipTest('not today')\n",
    "keyboard_interrupt": "def task_func(words):\n    raise KeyboardInterrupt\n",
    "read_tests_at_top_level": "import os\ntry:\n    DATA = os.read(4, 1 << 16)\nexcept OSError:\n    DATA = b''\n" + WRONG,
    "forge_ready_token": "import os\ntry:\n    os.write(5, b'0' * 32)\nexcept OSError:\n    pass\n" + WRONG,
    "fake_tests_pipe": "import os\nr, w = os.pipe()\nos.write(w, b'x\\nimport unittest\\nclass TestCases(unittest.TestCase):\\n"
    "    def test_simple(self): pass\\n    def test_tie(self): pass\\n    def test_empty(self): pass\\n')\n"
    "os.close(w)\nos.dup2(r, 4)\n" + WRONG,
    "forge_record": "import os\nfor fd in range(3, 12):\n    try:\n        os.write(fd, b'0' * 32 + b'\\nok\\tresults=5b5d\\n')\n    except OSError:\n        pass\n" + WRONG,
    "thread_left_running": "import threading, time, unittest\nthreading.Thread(target=lambda: time.sleep(1), daemon=True).start()\n" + WRONG,
    "patch_unittest_util": "import unittest.util, unittest.case\nunittest.case._count_diff_all_purpose = lambda *a: []\nunittest.util.safe_repr = lambda *a, **k: ''\n" + WRONG,
    "ctypes_raw_memory": "import ctypes\ndef task_func(words):\n    return ctypes.string_at(id(words), 8)\n",
    "define_testcases": "import unittest\nclass TestCases(unittest.TestCase):\n    def test_ok(self):\n        pass\n" + WRONG,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_programs_are_not_paid(bcb, name):
    score = grade(bcb, HOSTILE[name])
    assert not score.correct and score.score == 0.0, (name, score.reason)
    assert score.reason


def test_a_task_without_tests_is_not_paid(bcb, tmp_path):
    import json

    row = json.loads(SAMPLE.read_text().splitlines()[0])
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({**row, "test": "import unittest\nclass TestCases(unittest.TestCase):\n    pass\n"}) + "\n")
    suite = BigCodeBenchSuite(data_files=str(empty), sandbox=bcb.sandbox(), limits=LIMITS)
    score = suite.verify(suite.problems()[0], suite.reference_response(suite.problems()[0]))
    assert not score.correct and "no test methods" in score.reason


def test_patched_library_calls_in_the_tests_still_work(bcb):
    """The fixture's tests patch ``os.listdir`` and assert on the mock: honest code passes, wrong fails."""
    assert grade(bcb, bcb.problems()[1].metadata["code_prompt"] + "    return sorted(os.listdir(path))\n", 1).correct is False
    reference = bcb.reference_response(bcb.problems()[1])
    assert bcb.verify(bcb.problems()[1], reference).correct
