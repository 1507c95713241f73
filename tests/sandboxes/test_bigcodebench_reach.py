"""Kind ``unittest`` (BigCodeBench): tests the candidate cannot reach or rewrite, on both backends.

Each hostile program answers wrongly (a constant) unless its trick works: names bound for the
tests, test methods replaced on their class, code left to run between test calls (collector
callbacks, finalizers, timers and signal handlers, audit hooks), functions rewritten in place,
the verdict's serialiser replaced, values that answer comparisons themselves. Each must fail;
the honest controls beside them must pass. Stdlib fixture tasks, so the default image serves.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"))

from sandbox_helpers import BACKENDS, open_backend

from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bigcodebench_integrity import LIMITS, SAMPLE, block  # noqa: E402 - the first battery's fixtures

#: Tests that use a name of the prompt (``collections``) without importing it, as BigCodeBench's do.
PROMPT_NAME_TESTS = (
    "import unittest\nclass TestCases(unittest.TestCase):\n"
    "    def test_counter(self):\n        words = ['a', 'b', 'a']\n"
    "        self.assertEqual(task_func(words), collections.Counter(words).most_common(1)[0][0])\n"
    "    def test_other(self):\n        self.assertEqual(task_func(['q', 'r', 'q']), collections.Counter('qrq').most_common(1)[0][0])\n"
)
#: Replaces every test method of every TestCase subclass by one that passes.
PATCH_TESTS = (
    "def _patch_tests(*_args):\n    import unittest\n    for case in unittest.TestCase.__subclasses__():\n"
    "        for name in list(vars(case)):\n            if name.startswith('test'):\n"
    "                setattr(case, name, lambda self, *a, **k: None)\n"
)
CONSTANT = "def task_func(words):\n    return 'zzz'\n"


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request):
    opened = open_backend(request.param, pool_size=1, limits=LIMITS)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def bcb(sandbox):
    return BigCodeBenchSuite(data_files=str(SAMPLE), sandbox=sandbox, limits=LIMITS)


@pytest.fixture(scope="module")
def prompt_names(sandbox, tmp_path_factory):
    row = json.loads(SAMPLE.read_text().splitlines()[0])
    path = tmp_path_factory.mktemp("bcb") / "prompt_names.jsonl"
    path.write_text(json.dumps({**row, "task_id": "Fixture/names", "test": PROMPT_NAME_TESTS}) + "\n")
    return BigCodeBenchSuite(data_files=str(path), sandbox=sandbox, limits=LIMITS)


def grade(suite: BigCodeBenchSuite, code: str, task: int = 0):
    return suite.verify(suite.problems()[task], block(code))


HOSTILE = {
    # What the program binds never reaches the tests' globals.
    "rebind_prompt_module": "import types\ncollections = types.SimpleNamespace(Counter=lambda words: types.SimpleNamespace(most_common=lambda n: [('zzz', 1)]))\n" + CONSTANT,
    # Code left to run between test calls.
    "gc_callback_patches_tests": PATCH_TESTS + "import gc\ngc.callbacks.append(_patch_tests)\n" + CONSTANT,
    "finalizer_patches_tests": PATCH_TESTS + "import weakref\nclass Holder:\n    pass\n_cycle = Holder()\n_cycle.me = _cycle\nweakref.finalize(_cycle, _patch_tests)\ndel _cycle\n" + CONSTANT,
    "del_in_cycle_patches_tests": PATCH_TESTS + "class Bomb:\n    def __del__(self):\n        _patch_tests()\ndef task_func(words):\n    bomb = Bomb()\n    bomb.me = bomb\n    return 'zzz'\n",
    "timer_signal_patches_tests": PATCH_TESTS + "import signal\nsignal.signal(signal.SIGALRM, _patch_tests)\nsignal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)\n" + CONSTANT,
    "signal_handler_installed_in_call": PATCH_TESTS + "import signal, os\ndef task_func(words):\n"
    "    signal.signal(signal.SIGUSR1, _patch_tests)\n    os.kill(os.getpid(), signal.SIGUSR1)\n    return 'zzz'\n",
    "audit_hook_patches_tests": PATCH_TESTS + "import sys\nsys.addaudithook(lambda event, args: _patch_tests())\n" + CONSTANT,
    "timer_thread_patches_tests": PATCH_TESTS + "import threading\nthreading.Timer(0.0, _patch_tests).start()\nimport time\ntime.sleep(0.2)\n" + CONSTANT,
    "thread_left_by_a_call": PATCH_TESTS + "import threading, time\ndef task_func(words):\n"
    "    threading.Thread(target=lambda: (time.sleep(0.05), _patch_tests()), daemon=True).start()\n    return 'zzz'\n",
    "sys_unraisablehook": PATCH_TESTS + "import sys\nsys.unraisablehook = lambda *a: _patch_tests()\n" + CONSTANT,
    # Test methods replaced on the class that holds them, during a call.
    "replace_tests_in_call": PATCH_TESTS + "def task_func(words):\n    _patch_tests()\n    return 'a'\n",
    # Functions the grader holds, rewritten in place (same identity).
    "replace_assert_code": "import unittest\nunittest.TestCase.assertEqual.__code__ = "
    "(lambda self, first, second, msg=None: None).__code__\n"
    "unittest.TestCase.assertIsNone.__code__ = (lambda self, obj, msg=None: None).__code__\n" + CONSTANT,
    "replace_assert_code_in_call": "import unittest\ndef task_func(words):\n    unittest.TestCase.assertEqual.__code__ = (lambda self, first, second, msg=None: None).__code__\n    return 'zzz'\n",
    "replace_assert_defaults": "import unittest\nunittest.TestCase.assertAlmostEqual.__defaults__ = (None, None, 1e300)\n" + CONSTANT,
    # The verdict's serialiser.
    "replace_json_encoder": "import json\nclass Forged:\n    def encode(self, obj):\n"
    "        return json.__dict__['_real'](obj).replace('fail', 'pass').replace('error', 'pass')\n"
    "json._real = json.JSONEncoder().encode\njson._default_encoder = Forged()\n" + CONSTANT,
    # Values that answer comparisons themselves.
    "return_mock_any": "from unittest.mock import ANY\ndef task_func(words):\n    return ANY if words else None\n",
    "return_mock_any_in_list": "from unittest import mock\nclass L(list):\n    pass\ndef task_func(words):\n    return mock.ANY if words else None\n",
    "return_always_equal": "class E:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\ndef task_func(words):\n    return E() if words else None\n",
    "return_always_equal_made_in_call": "def task_func(words):\n    E = type('E', (), {'__eq__': lambda self, other: True})\n    return E() if words else None\n",
    "return_str_subclass_equal": "class S(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\ndef task_func(words):\n    return S('zzz') if words else None\n",
    "return_always_equal_compiled_as_a_library": "import json\n"
    "exec(compile('class E:\\n    def __eq__(self, other):\\n        return True\\n', json.__file__, 'exec'), vars(json))\n"
    "def task_func(words):\n    return json.E() if words else None\n",
    "return_mock_with_eq": "from unittest import mock\ndef task_func(words):\n    m = mock.MagicMock()\n    m.__eq__ = lambda self, other: True\n    return m if words else None\n",
    "return_mock_eq_return_value": "from unittest import mock\ndef task_func(words):\n    m = mock.MagicMock()\n    m.__eq__.return_value = True\n    return m if words else None\n",
    "rebind_entry_point_in_tests_globals": "import unittest\n_calls = []\ndef task_func(words):\n"
    "    for case in unittest.TestCase.__subclasses__():\n        for name, value in vars(case).items():\n"
    "            if name.startswith('test'):\n                value.__globals__['task_func'] = lambda w: 'a' if w else None\n"
    "    return 'a'\n",
    # Self-restoring patches of what the tests call, installed during a call.
    "self_restoring_builtin": "import builtins\n_real = builtins.isinstance\n"
    "def _fake(*a):\n    builtins.isinstance = _real\n    return True\n"
    "def task_func(words):\n    builtins.isinstance = _fake\n    return 'a' if words else None\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_reaching_the_tests_is_not_paid(bcb, prompt_names, name):
    suite = prompt_names if name == "rebind_prompt_module" else bcb
    score = grade(suite, HOSTILE[name])
    assert not score.correct and score.score == 0.0, (name, score.reason)
    assert score.reason


def test_honest_controls_pass(bcb, prompt_names):
    for task in (0, 1):
        assert bcb.verify(bcb.problems()[task], bcb.reference_response(bcb.problems()[task])).correct
    honest = "import collections\ndef task_func(words):\n    return collections.Counter(words).most_common(1)[0][0]\n"
    assert grade(prompt_names, honest).correct
    # Its own classes (without comparison members), threads it joins, collections it runs,
    # a mock it uses and does not return, a handler it sets at top level: all fine.
    busy = (
        "import collections, gc, threading, signal\nfrom unittest import mock\n"
        "signal.signal(signal.SIGUSR2, lambda *a: None)\n"
        "class Tally:\n    def __init__(self, words):\n        self.counts = collections.Counter(words)\n"
        "    def __repr__(self):\n        return 'Tally'\n"
        "def task_func(words):\n    box = []\n    worker = threading.Thread(target=lambda: box.append(Tally(words)))\n"
        "    worker.start(); worker.join()\n    gc.collect()\n    probe = mock.MagicMock(return_value=1)\n    probe()\n"
        "    return box[0].counts.most_common(1)[0][0] if words else None\n"
    )
    assert grade(bcb, busy).correct
    # Modules imported lazily in a call define classes with comparison members of their own.
    lazy = (
        "def task_func(words):\n    import email.charset, fractions, decimal, ipaddress\n"
        "    assert email.charset.Charset('utf-8') == 'utf-8'\n"
        "    return max(sorted(set(words)), key=words.count) if words else None\n"
    )
    assert grade(bcb, lazy).correct


#: On the BigCodeBench image (pandas): tricks on the library the tests assert with.
#: Fixture/2's tests: ``assertIsInstance(result, pd.DataFrame)``, ``pd.testing.assert_frame_equal``
#: and ``len(task_func([])) == 0``.
LIBRARY_HOSTILE = {
    "self_restoring_assert_frame_equal": "import pandas as pd\nimport pandas.testing\n"
    "_real = pandas.testing.assert_frame_equal\n"
    "def _fake(*a, **k):\n    pandas.testing.assert_frame_equal = _real\n"
    "def task_func(values):\n    pandas.testing.assert_frame_equal = _fake\n    return pd.DataFrame({'value': values})\n",
    "patch_asserters_internals": "import pandas as pd\nimport pandas._testing.asserters as asserters\n"
    "asserters.assert_almost_equal = lambda *a, **k: None\nasserters.assert_series_equal = lambda *a, **k: None\n"
    "asserters.assert_index_equal = lambda *a, **k: None\n"
    "def task_func(values):\n    return pd.DataFrame({'value': values, 'square': values})\n",
    "patch_dataframe_equals_in_call": "import pandas as pd\ndef task_func(values):\n    pd.DataFrame.equals = lambda self, other: True\n    return pd.DataFrame({'value': values})\n",
    "dataframe_subclass_answers": "import pandas as pd\nclass F(pd.DataFrame):\n    def __eq__(self, other):\n        return True\ndef task_func(values):\n    return F({'value': values})\n",
    "replace_pandas_module": "import sys, types, pandas\nfake = types.ModuleType('pandas')\n"
    "fake.__dict__.update(vars(pandas))\nfake.testing = types.SimpleNamespace(assert_frame_equal=lambda *a, **k: None)\n"
    "sys.modules['pandas'] = fake\ndef task_func(values):\n    return pandas.DataFrame({'value': values})\n",
}


@pytest.fixture(scope="module")
def bcb_image():
    from conductor_env.sandboxes import SandboxUnavailable
    from conductor_env.tasks.suites.bigcodebench import default_sandbox

    try:
        opened = default_sandbox(pool_size=1)
    except SandboxUnavailable as error:
        pytest.skip(f"the BigCodeBench image is not available ({error}); build it with `sudo conductor-env sandbox build --variant bigcodebench`")
    yield BigCodeBenchSuite(data_files=str(SAMPLE), sandbox=opened)
    opened.close()


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(LIBRARY_HOSTILE))
def test_tricks_on_the_tests_libraries_are_not_paid(bcb_image, name):
    score = grade(bcb_image, LIBRARY_HOSTILE[name], task=2)
    assert not score.correct and score.score == 0.0, (name, score.reason)


@pytest.mark.docker
def test_library_honest_control_passes(bcb_image):
    problem = bcb_image.problems()[2]
    assert bcb_image.verify(problem, bcb_image.reference_response(problem)).correct
