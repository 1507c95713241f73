"""Kind ``unittest`` (BigCodeBench): the four classes of attack of issue 57, on both backends.

(a) code planted for the interpreter to run while the tests' module loads (import hooks,
class-creation hooks); (b) objects of classes compiled outside any loaded module that pose as a
library's; (c) new members added to the tests' own class; (d) non-callable values in the tests'
globals (a module rebound, a list of expected values rebound or mutated) and in the modules
they hold. Each hostile program answers wrongly unless its trick works: each must fail, and the
honest controls beside them must pass. Stdlib fixture tasks, so the default image serves.
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

#: Tests that reach modules, data and a lazy import through their own globals (task "reach").
REACH_TESTS = """import unittest
import statistics
import string
EXPECTED = ["a", "x"]
CASES = {"nested": [["p", "p", "o"], "p"]}
class TestCases(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(task_func(["a", "b", "a"]), EXPECTED[0])
    def test_tie(self):
        self.assertEqual(task_func(["x", "y", "x"]), EXPECTED[1])
    def test_nested(self):
        words, expected = CASES["nested"]
        self.assertEqual(task_func(words), expected)
    def test_mode(self):
        self.assertEqual(task_func(["q", "r", "q"]), statistics.mode(["q", "r", "q"]))
    def test_letters(self):
        self.assertEqual(task_func(["z", "z"]), string.ascii_lowercase[-1])
    def test_lazy(self):
        import colorsys
        self.assertEqual(task_func(["b", "b"]), "b" if colorsys.ONE_THIRD else None)
"""
#: Right on every input of task "reach" but those in ``WRONG_ON`` (each hostile program below
#: is paid only if its trick works).
RIGHT = "import collections\ndef _right(words):\n    return collections.Counter(words).most_common(1)[0][0] if words else None\n"


def wrong_on(*inputs: list, value: str = "'zzz'") -> str:
    """``task_func`` that answers ``value`` on ``inputs`` and rightly elsewhere."""
    return RIGHT + f"def task_func(words):\n    return {value} if words in {list(inputs)!r} else _right(words)\n"


#: Tests that rebind their own global between tests (as BigCodeBench/652 does): honest.
REBINDING_TESTS = """import unittest
COUNT = 0
class TestCases(unittest.TestCase):
    def test_one(self):
        global COUNT
        COUNT += 1
        self.assertEqual(task_func(["a", "b", "a"]), "a")
    def test_two(self):
        global COUNT
        COUNT += 1
        self.assertEqual(task_func(["x", "y", "x"]), "x")
"""
#: Tests whose own code, run inside a call of the entry point, changes their globals in place
#: (as BigCodeBench/402's mock pops its responses) and that set their class's attributes: honest.
SELF_CHANGING_TESTS = """import unittest
SEEN = []
class Words(list):
    def __iter__(self):
        SEEN.append(len(self))
        return list.__iter__(self)
class TestCases(unittest.TestCase):
    def test_one(self):
        TestCases.last = "one"
        self.assertEqual(task_func(Words(["a", "b", "a"])), "a")
        self.assertEqual(SEEN[-1], 3)
    def test_two(self):
        TestCases.last = "two"
        self.assertEqual(task_func(Words(["x", "y", "x"])), "x")
"""
#: Tests of a value whose class a lazily imported library module defines (task "charset").
CHARSET_TESTS = """import unittest
class TestCases(unittest.TestCase):
    def test_charset(self):
        self.assertEqual(str(task_func("utf-8")), "utf-8")
    def test_other(self):
        self.assertEqual(str(task_func("latin-1")), "iso-8859-1")
"""
WRONG = "def task_func(words):\n    return 'zzz'\n"
#: Replaces every test method of the tests' classes by one that passes; used from the hooks.
PASS_ALL = (
    "def _pass_all(*_args, **_kwargs):\n    import unittest\n    for case in unittest.TestCase.__subclasses__():\n"
    "        for name in list(vars(case)):\n            if name.startswith('test'):\n"
    "                setattr(case, name, lambda self, *a, **k: None)\n"
)


def _suite(sandbox, tmp_path_factory, name: str, tests: str, prompt: str = "import collections\ndef task_func(words):\n") -> BigCodeBenchSuite:
    row = json.loads(SAMPLE.read_text().splitlines()[0])
    path = tmp_path_factory.mktemp("bcb") / f"{name}.jsonl"
    path.write_text(json.dumps({**row, "task_id": f"Fixture/{name}", "test": tests, "code_prompt": prompt, "libs": "['collections']"}) + "\n")
    return BigCodeBenchSuite(data_files=str(path), sandbox=sandbox, limits=LIMITS)


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request):
    opened = open_backend(request.param, pool_size=1, limits=LIMITS)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def suites(sandbox, tmp_path_factory):
    return {
        "sample": BigCodeBenchSuite(data_files=str(SAMPLE), sandbox=sandbox, limits=LIMITS),
        "reach": _suite(sandbox, tmp_path_factory, "reach", REACH_TESTS),
        "rebinding": _suite(sandbox, tmp_path_factory, "rebinding", REBINDING_TESTS),
        "charset": _suite(sandbox, tmp_path_factory, "charset", CHARSET_TESTS, "def task_func(name):\n"),
        "self_changing": _suite(sandbox, tmp_path_factory, "self_changing", SELF_CHANGING_TESTS),
    }


def grade(suite: BigCodeBenchSuite, code: str):
    return suite.verify(suite.problems()[0], block(code))


#: (a) Hooks the import system or class creation would run while the tests' module loads.
#: The tests are built before the program's top level, so none of them runs then; those left
#: in place are compared with what the tests reached before the program ran.
WHILE_LOADING = {
    "init_subclass_on_testcase": PASS_ALL + "import unittest\n"
    "def _hook(cls, **kw):\n    _pass_all()\n    del unittest.TestCase.__init_subclass__\n"
    "unittest.TestCase.__init_subclass__ = classmethod(_hook)\n" + WRONG,
    "init_subclass_used_and_removed": PASS_ALL + "import unittest\n"
    "unittest.TestCase.__init_subclass__ = classmethod(lambda cls, **kw: _pass_all())\n"
    "class Probe(unittest.TestCase):\n    pass\ndel unittest.TestCase.__init_subclass__\n" + WRONG,
    "build_class_hook": PASS_ALL + "import builtins\n_real = builtins.__build_class__\n"
    "def _build(func, name, *bases, **kw):\n    cls = _real(func, name, *bases, **kw)\n"
    "    if name == 'TestCases':\n        _pass_all()\n        builtins.__build_class__ = _real\n    return cls\n"
    "builtins.__build_class__ = _build\n" + WRONG,
    "import_hook_builtins": PASS_ALL + "import builtins\n_real = builtins.__import__\n"
    "def _import(name, *a, **k):\n    _pass_all()\n    return _real(name, *a, **k)\n"
    "builtins.__import__ = _import\n" + WRONG,
}
#: Import-system hooks that serve the tests' lazy ``import colorsys`` (task "reach": the
#: program answers wrongly on the lazy test's input only).
FAKE_COLORSYS = (
    "import sys, importlib.util\nclass Loader:\n    def create_module(self, spec):\n        return None\n"
    "    def exec_module(self, module):\n        module.ONE_THIRD = 0\n"
    "class Finder:\n    def find_spec(self, name, path=None, target=None):\n"
    "        return importlib.util.spec_from_loader(name, Loader()) if name == 'colorsys' else None\n"
    "    def invalidate_caches(self):\n        pass\n"
)
LAZY_WRONG = wrong_on(["b", "b"], value="None")
IMPORT_SYSTEM = {
    "meta_path_finder": FAKE_COLORSYS + "sys.modules.pop('colorsys', None)\nsys.meta_path.insert(0, Finder())\n" + LAZY_WRONG,
    "meta_path_finder_in_call": FAKE_COLORSYS + RIGHT + "def task_func(words):\n    sys.modules.pop('colorsys', None)\n"
    "    sys.meta_path.insert(0, Finder())\n    return None if words == ['b', 'b'] else _right(words)\n",
    "path_hook": FAKE_COLORSYS + "sys.path_hooks.insert(0, lambda entry: Finder())\nsys.path_importer_cache.clear()\nsys.modules.pop('colorsys', None)\n" + LAZY_WRONG,
    "path_importer_cache_finder": FAKE_COLORSYS + "for key in list(sys.path_importer_cache):\n    sys.path_importer_cache[key] = Finder()\nsys.modules.pop('colorsys', None)\n" + LAZY_WRONG,
    "sys_path_front": "import sys, os\nos.makedirs('shadow', exist_ok=True)\n"
    "open('shadow/colorsys.py', 'w').write('ONE_THIRD = 0\\n')\nsys.path.insert(0, os.path.abspath('shadow'))\n"
    "sys.modules.pop('colorsys', None)\n" + LAZY_WRONG,
    "sys_modules_entry": "import sys, types\nfake = types.ModuleType('colorsys')\nfake.ONE_THIRD = 0\nsys.modules['colorsys'] = fake\n" + LAZY_WRONG,
}

#: (b) Objects of classes compiled outside any loaded module that pose as a library's
#: (task "sample": an always-equal string where a word is expected).
EQUAL_SOURCE = "class E(str):\\n    def __eq__(self, other):\\n        return True\\n    __hash__ = str.__hash__\\n"
POSING = {
    "module_and_qualname": "class E(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n"
    "E.__module__ = 'json.decoder'\nE.__qualname__ = 'JSONObject'\n"
    "def task_func(words):\n    return E('zzz') if words else None\n",
    "held_by_a_library_module": "import json\nclass E(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n"
    "E.__module__ = 'json'\njson.E = E\ndef task_func(words):\n    return E('zzz') if words else None\n",
    "fake_globals_and_file": "import json, os\npath = os.path.join(os.path.dirname(json.__file__), '.', '__init__.py')\n"
    f"ns = {{'__name__': 'json', '__file__': path}}\nexec(compile('{EQUAL_SOURCE}', path, 'exec'), ns)\n"
    "def task_func(words):\n    return ns['E']('zzz') if words else None\n",
    "path_variant_in_module_namespace": "import json, os\npath = os.path.dirname(json.__file__) + '//__init__.py'\n"
    f"exec(compile('{EQUAL_SOURCE}', path, 'exec'), vars(json))\n"
    "def task_func(words):\n    return json.E('zzz') if words else None\n",
    "ast_compiled_under_the_file": "import ast, json\n"
    f"exec(compile(ast.parse('{EQUAL_SOURCE}'), json.__file__, 'exec'), vars(json))\n"
    "def task_func(words):\n    return json.E('zzz') if words else None\n",
    "module_made_for_a_library_file": "import ast, sys, types, os, json\n"
    "path = os.path.join(os.path.dirname(os.path.dirname(json.__file__)), 'colorsys.py')\n"
    "m = types.ModuleType('colorsys_x')\nm.__file__ = path\nsys.modules['colorsys_x'] = m\n"
    f"exec(compile(ast.parse('{EQUAL_SOURCE}'), path, 'exec'), vars(m))\n"
    "def task_func(words):\n    return m.E('zzz') if words else None\n",
    "file_changed_then_restored": "import json\nreal = json.__file__\njson.__file__ = '/nowhere.py'\n"
    f"code = compile('{EQUAL_SOURCE}', real, 'exec')\njson.__file__ = real\nexec(code, vars(json))\n"
    "def task_func(words):\n    return json.E('zzz') if words else None\n",
    "slot_of_another_type": "import json\nclass E(str):\n    __eq__ = str.__ne__\n    __hash__ = str.__hash__\n"
    "E.__module__ = 'json'\njson.E = E\ndef task_func(words):\n    return E('zzz') if words else None\n",
    "partialmethod_member": "import functools, json\nclass E(str):\n    __eq__ = functools.partialmethod(lambda self, other, x: True, 1)\n"
    "    __hash__ = str.__hash__\nE.__module__ = 'json'\njson.E = E\ndef task_func(words):\n    return E('zzz') if words else None\n",
    "dataclass_lookalike": "import json\nsrc = 'class E(str):\\n    __dataclass_fields__ = {}\\n    def __eq__(self, other):\\n        return True\\n    __hash__ = str.__hash__\\n'\n"
    "exec(compile(src, '<string>', 'exec'), vars(json))\ndef task_func(words):\n    return json.E('zzz') if words else None\n",
}

#: (c) New members on the tests' own class, added during a call or at top level (task "sample").
GETATTRIBUTE = "def _get(self, name):\n    if name.startswith('assert'):\n        return lambda *a, **k: None\n    return object.__getattribute__(self, name)\n"
NEW_MEMBERS = {
    "assert_override_in_call": "import unittest\ndef task_func(words):\n"
    "    for case in [c for c in unittest.TestCase.__subclasses__() if c.__name__ == 'TestCases']:\n"
    "        case.assertEqual = lambda self, *a, **k: None\n        case.assertIsNone = lambda self, *a, **k: None\n"
    "    return 'zzz'\n",
    "assert_override_at_top_level": "import unittest\nfor case in [c for c in unittest.TestCase.__subclasses__() if c.__name__ == 'TestCases']:\n"
    "    case.assertEqual = lambda self, *a, **k: None\n    case.assertIsNone = lambda self, *a, **k: None\n" + WRONG,
    "getattribute_in_call": "import unittest\n"
    + GETATTRIBUTE
    + "def task_func(words):\n    for case in [c for c in unittest.TestCase.__subclasses__() if c.__name__ == 'TestCases']:\n        case.__getattribute__ = _get\n    return 'zzz'\n",
    "getattribute_at_top_level": "import unittest\n"
    + GETATTRIBUTE
    + "for case in [c for c in unittest.TestCase.__subclasses__() if c.__name__ == 'TestCases']:\n    case.__getattribute__ = _get\n"
    + WRONG,
}

#: (d) Non-callable values in the tests' globals and in the modules they hold (task "reach").
FIND_GLOBALS = (
    "import unittest\ndef _tests_globals():\n    for case in unittest.TestCase.__subclasses__():\n"
    "        for value in vars(case).values():\n"
    "            if hasattr(value, '__globals__') and 'EXPECTED' in value.__globals__:\n                return value.__globals__\n"
)
GLOBALS_DATA = {
    "rebind_expected_list": FIND_GLOBALS + RIGHT + "def task_func(words):\n    g = _tests_globals()\n"
    "    g['EXPECTED'] = ['zzz', 'zzz']\n    g['CASES'] = {'nested': [['p', 'p', 'o'], 'zzz']}\n"
    "    return 'zzz' if words in (['a', 'b', 'a'], ['x', 'y', 'x'], ['p', 'p', 'o']) else _right(words)\n",
    "mutate_expected_in_place": FIND_GLOBALS + RIGHT + "def task_func(words):\n    g = _tests_globals()\n"
    "    g['EXPECTED'][:] = ['zzz', 'zzz']\n    g['CASES']['nested'][1] = 'zzz'\n"
    "    return 'zzz' if words in (['a', 'b', 'a'], ['x', 'y', 'x'], ['p', 'p', 'o']) else _right(words)\n",
    "mutate_at_top_level": FIND_GLOBALS + "g = _tests_globals()\ng['EXPECTED'][:] = ['zzz', 'zzz']\ng['CASES']['nested'][1] = 'zzz'\n" + wrong_on(["a", "b", "a"], ["x", "y", "x"], ["p", "p", "o"]),
    "rebind_module_in_tests_globals": FIND_GLOBALS
    + "import types\nfake = types.ModuleType('statistics')\nfake.mode = lambda words: 'zzz'\n"
    + RIGHT
    + "def task_func(words):\n    _tests_globals()['statistics'] = fake\n    return 'zzz' if words == ['q', 'r', 'q'] else _right(words)\n",
    "patch_function_of_their_module": "import statistics\nstatistics.mode = lambda words: 'zzz'\n" + wrong_on(["q", "r", "q"]),
    "module_class_changed": "import statistics, types\nclass M(types.ModuleType):\n"
    "    def __getattribute__(self, name):\n        if name == 'mode':\n            return lambda words: 'zzz'\n"
    "        return types.ModuleType.__getattribute__(self, name)\n" + RIGHT + "def task_func(words):\n    statistics.__class__ = M\n    return 'zzz' if words == ['q', 'r', 'q'] else _right(words)\n",
    "module_class_with_a_property": "import statistics, types\nclass M(types.ModuleType):\n"
    "    mode = property(lambda self: (lambda words: 'zzz'))\n" + RIGHT + "def task_func(words):\n    statistics.__class__ = M\n    return 'zzz' if words == ['q', 'r', 'q'] else _right(words)\n",
    "public_constant_of_their_module": "import string\nstring.ascii_lowercase = 'y'\n" + wrong_on(["z", "z"], value="'y'"),
}

HOSTILE = {**{f"a_{k}": ("sample", v) for k, v in WHILE_LOADING.items()},
           **{f"a_{k}": ("reach", v) for k, v in IMPORT_SYSTEM.items()},
           **{f"b_{k}": ("sample", v) for k, v in POSING.items()},
           **{f"c_{k}": ("sample", v) for k, v in NEW_MEMBERS.items()},
           **{f"d_{k}": ("reach", v) for k, v in GLOBALS_DATA.items()}}  # fmt: skip


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_four_classes_are_not_paid(suites, name):
    task, code = HOSTILE[name]
    score = grade(suites[task], code)
    assert not score.correct and score.score == 0.0, (name, score.reason)
    assert score.reason


HONEST = "import collections\ndef task_func(words):\n    return collections.Counter(words).most_common(1)[0][0] if words else None\n"


def test_honest_controls_pass(suites):
    assert grade(suites["sample"], HONEST).correct
    assert grade(suites["reach"], HONEST).correct
    # Tests that rebind their own globals between tests.
    assert grade(suites["rebinding"], HONEST).correct
    # A program that appends to sys.path (BigCodeBench/714), imports what the tests import and
    # makes classes of its own without comparison members.
    busy = (
        "import sys, statistics, string, json, dataclasses\nsys.path.append('/nonexistent/extra')\n"
        "@dataclasses.dataclass(eq=False)\nclass Tally:\n    words: list\n"
        "def task_func(words):\n    sys.path.append('/nonexistent/more')\n    json.dumps(words)\n"
        "    return statistics.mode(Tally(words).words)\n"
    )
    assert grade(suites["reach"], busy).correct
    # Tests that change their own globals in place during a call and set class attributes.
    assert grade(suites["self_changing"], HONEST).correct
    # A value of a class that a library module imported during the call defines; the module
    # imported beside it (pstats) defines dataclasses, whose generated __eq__ is compiled from text.
    charset = "def task_func(name):\n    import email.charset, pstats\n    return email.charset.Charset(name)\n"
    score = grade(suites["charset"], charset)
    assert score.correct, score.reason


def test_wrong_answers_fail(suites):
    for task in ("reach", "rebinding", "self_changing"):
        score = grade(suites[task], WRONG)
        assert not score.correct and "AssertionError" in score.reason
