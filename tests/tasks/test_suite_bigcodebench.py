"""Conductor-BigCodeBench-v0: loading, prompts, subsets, programs, and the host's reading of tests."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from conductor_env.sandboxes.unittest_grading import (
    build_tests,
    declared_test_names,
    unittest_verdict,
)
from conductor_env.tasks import SuiteError
from conductor_env.tasks.suites.bigcodebench import (
    BigCodeBenchSuite,
    build_program,
    needs_real_ctypes,
    preload_modules,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bigcodebench"
SAMPLE = FIXTURES / "bcb_sample.jsonl"
REAL = Path("/work/shared/data/bigcodebench_v0.1.0_hf.jsonl.gz")


def suite(**options) -> BigCodeBenchSuite:
    return BigCodeBenchSuite(data_files=str(SAMPLE), sandbox="local", **options)


def test_loads_local_jsonl_and_gz(tmp_path):
    plain = suite()
    assert [p.id for p in plain.problems()] == ["Fixture/0", "Fixture/1", "Fixture/2"]
    packed = tmp_path / "rows.jsonl.gz"
    with gzip.open(packed, "wb") as handle:
        handle.write(SAMPLE.read_bytes())
    assert [p.id for p in BigCodeBenchSuite(data_files=str(packed), sandbox="local").problems()] == [p.id for p in plain.problems()]


def test_prompt_modes_show_the_signature_or_the_prose():
    complete = suite(prompt="complete").problems()[0].question
    instruct = suite(prompt="instruct").problems()[0].question
    assert "def task_func(words):" in complete and '"""Count the words' in complete
    assert instruct.startswith("Count the words") and '"""' not in instruct
    with pytest.raises(SuiteError, match="prompt must be"):
        suite(prompt="chat")


def test_hard_subset_from_an_id_file_and_refused_without_one(tmp_path):
    assert [p.id for p in suite(subset="hard", hard_ids=FIXTURES / "hard_ids.txt").problems()] == ["Fixture/1"]
    as_json = tmp_path / "ids.json"
    as_json.write_text(json.dumps(["Fixture/0", "Fixture/2"]))
    assert [p.id for p in suite(subset="hard", hard_ids=as_json).problems()] == ["Fixture/0", "Fixture/2"]
    with pytest.raises(SuiteError, match="needs hard_ids"):
        suite(subset="hard")
    with pytest.raises(SuiteError, match="subset must be"):
        suite(subset="easy")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(SuiteError, match="expected task ids"):
        suite(subset="hard", hard_ids=bad)


def test_rows_outside_the_schema_and_duplicates_are_refused(tmp_path):
    row = json.loads(SAMPLE.read_text().splitlines()[0])
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({**row, "test": None}) + "\n")
    with pytest.raises(SuiteError, match="lacks test"):
        BigCodeBenchSuite(data_files=str(broken), sandbox="local")
    twice = tmp_path / "twice.jsonl"
    twice.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(SuiteError, match="appears twice"):
        BigCodeBenchSuite(data_files=str(twice), sandbox="local")


def test_program_is_full_code_with_the_prompts_imports_or_a_completion():
    problem = suite().problems()[0]
    full = build_program(problem, "def task_func(words):\n    return collections.Counter(words)\n")
    assert full.startswith("import collections\ndef task_func(words):") and full.count("def task_func") == 1
    body = build_program(problem, "    return None\n")
    assert body == "import collections\ndef task_func(words):\n    return None\n\n"


def test_no_code_block_is_a_wrong_answer_without_running_anything():
    score = suite().verify(suite().problems()[0], "the answer is obvious")
    assert not score.correct and score.reason == "no code block"


def test_host_reads_test_names_inherited_ones_included():
    source = (
        "import unittest\nclass Base(unittest.TestCase):\n    def test_base(self): pass\nclass TestCases(Base):\n    def test_b(self): pass\n    def test_a(self): pass\n    def helper(self): pass\n"
    )
    assert declared_test_names(source) == ["test_a", "test_b", "test_base"]
    assert declared_test_names("import unittest\n") == []
    with pytest.raises(ValueError, match="not valid Python"):
        declared_test_names("class TestCases(:\n")
    with pytest.raises(ValueError, match="exactly one test"):
        build_tests([{"checks": 1}])


@pytest.mark.parametrize(
    "results, verdict",
    [
        ([["test_a", "pass", ""], ["test_b", "pass", ""]], "pass"),
        ([["test_a", "pass", ""]], "wrong"),  # a test left out
        ([["test_a", "pass", ""], ["test_b", "pass", ""], ["test_c", "pass", ""]], "wrong"),  # one made up
        ([["test_a", "pass", ""], ["test_a", "pass", ""]], "wrong"),  # one counted twice
        ([["test_a", "pass", ""], ["test_b", "tampered", "x"]], "wrong"),
        ([["test_a", "pass", ""], ["test_b", "error", "x"]], "runtime_error"),
        ("not rows", "wrong"),
        ("test_a\x1fpass\x1fzz\x1etest_b\x1fpass\x1f", "wrong"),  # a message that is not hex
        ([["test_a"]], "wrong"),
    ],
)
def test_verdict_needs_exactly_the_hosts_tests_each_passed(results, verdict):
    def encode(row: list) -> str:
        return "\x1f".join([*row[:2], *(field.encode().hex() for field in row[2:])])

    text = results if isinstance(results, str) else "\x1e".join(encode(row) for row in results)
    outcome = {"record": {"status": "ok", "results": text}}
    assert unittest_verdict(outcome, json.dumps(["test_a", "test_b"]))[0] == verdict


def test_zero_tests_and_no_record_fail():
    ok = {"record": {"status": "ok", "results": ""}}
    assert unittest_verdict(ok, "[]") == ("wrong", "the tests define no test methods in TestCases")
    assert unittest_verdict({"record": None, "exit_code": 0}, '["test_a"]')[0] == "runtime_error"


@pytest.mark.skipif(not REAL.exists(), reason="the real BigCodeBench rows (/work/shared/data) are not here")
def test_real_rows_load_in_both_prompt_modes(tmp_path):
    copy = tmp_path / REAL.name
    shutil.copy(REAL, copy)
    problems = BigCodeBenchSuite(data_files=str(copy), sandbox="local").problems()
    assert len(problems) == 1140 and problems[0].id == "BigCodeBench/0"
    assert all(declared_test_names(p.metadata["test"]) for p in problems)


def test_preload_is_the_tasks_libraries_and_the_tests_imports():
    tests = "import unittest\nfrom sklearn.linear_model import LinearRegression\nimport os.path\n"
    names = preload_modules("['pandas', 'matplotlib', 'random']", tests)
    assert names == [
        "matplotlib", "matplotlib.pyplot", "os.path", "pandas", "random", "sklearn.linear_model",
        "sklearn.linear_model.LinearRegression", "unittest",
    ]  # fmt: skip
    assert needs_real_ctypes(names) and not needs_real_ctypes(["pandas", "numpy", "matplotlib.pyplot"])
    assert preload_modules("not a list [", "") == [] and preload_modules(None, "class (:") == []
    assert preload_modules(["os; import evil", "json"], "") == ["json"]


def test_tasks_that_need_the_real_ctypes_are_unverified_and_refused_for_training():
    """Tasks whose libraries need the real ctypes are marked, and training needs the opt-in (warned once)."""
    import json
    import warnings

    import pytest

    from conductor_env.tasks.public_tests import PublicOnlyError, PublicOnlyWarning, check_training_use
    from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite

    rows = [
        {
            "task_id": "T/0",
            "complete_prompt": "",
            "instruct_prompt": "",
            "code_prompt": "import scipy.stats\ndef task_func(x):\n",
            "canonical_solution": "    return x\n",
            "test": "import unittest\n",
            "entry_point": "task_func",
            "libs": "['scipy']",
        },
        {
            "task_id": "T/1",
            "complete_prompt": "",
            "instruct_prompt": "",
            "code_prompt": "import os\ndef task_func(x):\n",
            "canonical_solution": "    return x\n",
            "test": "import unittest\n",
            "entry_point": "task_func",
            "libs": "['os']",
        },
    ]
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        suite = BigCodeBenchSuite(data_files=str(path), sandbox="local")
        marked = {problem.id: problem.metadata.get("test_set", "") for problem in suite.problems()}
        assert marked == {"T/0": "unverified", "T/1": ""}
        with pytest.raises(PublicOnlyError, match="allow_unverified"):
            check_training_use(suite, suite.problems(), what="BigCodeBench")
        check_training_use(suite, suite.problems()[1:], what="BigCodeBench")  # verified tasks only: fine
        opted = BigCodeBenchSuite(data_files=str(path), sandbox="local", allow_unverified=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_training_use(opted, opted.problems(), what="BigCodeBench")
            check_training_use(opted, opted.problems(), what="BigCodeBench")
        assert sum(issubclass(w.category, PublicOnlyWarning) for w in caught) == 1
        with pytest.raises(Exception, match="allow_unverified|true or false"):
            BigCodeBenchSuite(data_files=str(path), sandbox="local", allow_unverified="yes")
