"""LiveCodeBench suite: loading, safe private-test decoding, question text, and grading in a sandbox."""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import pytest

import conductor_env  # noqa: F401  (registers the gym ids)
from conductor_env.envs import EnvSetup
from conductor_env.sandboxes import docker_available, get_sandbox
from conductor_env.tasks import Problem, SuiteError
from conductor_env.tasks.lcb_dataset import release_files
from conductor_env.tasks.lcb_private_tests import PrivateTestsError, decode_private_tests
from conductor_env.tasks.public_tests import PublicOnlyError, PublicOnlyWarning, check_training_use
from conductor_env.tasks.suites.livecodebench import LCB_IMPORT_HEADER, LiveCodeBenchSuite
from conductor_env.workers.base import WorkerSpec
from conductor_env.workers.pool import WorkerPool

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lcb"
SAMPLE = FIXTURES / "lcb_sample.jsonl"
SAMPLE_PARQUET = FIXTURES / "lcb_sample.parquet"
PUBLIC_ONLY = FIXTURES / "lcb_public_only.jsonl"
MALICIOUS = [FIXTURES / "lcb_malicious_reduce.jsonl", FIXTURES / "lcb_malicious_sneaky.jsonl"]
SHARED = Path(os.environ.get("CONDUCTOR_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
KAGGLE_ROW = SHARED / "lcb_1873A_with_private_kaggle_demo.jsonl"
V1_PUBLIC = SHARED / "lcb_release_v1_public_only.jsonl"


def fenced(code: str) -> str:
    return f"Here is my solution.\n\n```python\n{textwrap.dedent(code).strip()}\n```\n"


# Right answers to the fixture problems, and wrong ones of the kinds LiveCodeBench must reject.
RIGHT = {
    "fixture901_a": """
        a, b = map(int, input().split())
        print(a + b)
    """,
    # Prints 0.5 where the tests expect 0.50, and 7.0 for 7.000: equal as decimals.
    "9001_B": """
        import sys
        data = sys.stdin.read().split()
        n = int(data[0])
        values = list(map(int, data[1:1 + n]))
        print(min(values), sum(values) / n)
    """,
    # Returns a tuple (the tests expect a list) and uses List without importing it.
    "3901": """
        class Solution:
            def pairWithTarget(self, nums: List[int], target: int) -> List[int]:
                seen = {}
                for j, x in enumerate(nums):
                    if target - x in seen:
                        return (seen[target - x], j)
                    seen[x] = j
    """,
    "3902": """
        class Solution:
            def almostPalindrome(self, s: str) -> bool:
                def is_pal(i, j):
                    return all(s[i + k] == s[j - k] for k in range((j - i + 1) // 2))
                i, j = 0, len(s) - 1
                while i < j:
                    if s[i] != s[j]:
                        return is_pal(i + 1, j) or is_pal(i, j - 1)
                    i, j = i + 1, j - 1
                return True
    """,
    "fixture950_b": """
        q = int(input())
        for _ in range(q):
            x = int(input())
            print("  Even " if x % 2 == 0 else "Odd")
    """,
}


BACKENDS = [pytest.param("local", id="local"), pytest.param("docker", id="docker", marks=pytest.mark.docker)]


@pytest.fixture(scope="module")
def suite() -> LiveCodeBenchSuite:
    """The fixture problems, for tests that never reach a sandbox."""
    return LiveCodeBenchSuite(data_files=str(SAMPLE), sandbox="local")


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request):
    if request.param == "docker" and (why := docker_available()):
        pytest.skip(why)
    box = get_sandbox(request.param)
    yield box
    box.close()


@pytest.fixture(scope="module")
def graded(sandbox) -> LiveCodeBenchSuite:
    """The fixture problems, graded in each sandbox backend."""
    return LiveCodeBenchSuite(data_files=str(SAMPLE), sandbox=sandbox)


def problem(suite: LiveCodeBenchSuite, problem_id: str):
    return next(p for p in suite.problems() if p.id == problem_id)


# ---------------------------------------------------------------------------------------------
# Private tests: decoding and refusing crafted payloads
# ---------------------------------------------------------------------------------------------


def test_compressed_private_tests_decode():
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    decoded = decode_private_tests(rows[0]["private_test_cases"])
    assert decoded == [
        {"input": "100 200\n", "output": "300\n", "testtype": "stdin"},
        {"input": "0 0\n", "output": "0\n", "testtype": "stdin"},
        {"input": "-7 -8\n", "output": "-15\n", "testtype": "stdin"},
    ]
    # Plain JSON text is accepted too (LiveCodeBench tries JSON first).
    assert decode_private_tests(rows[1]["private_test_cases"])[0]["output"] == "7 7.000\n"
    assert decode_private_tests("") == [] and decode_private_tests(None) == []


@pytest.mark.skipif(not KAGGLE_ROW.exists(), reason="shared LiveCodeBench row with private tests absent")
def test_real_compressed_payload_decodes():
    row = json.loads(KAGGLE_ROW.read_text().splitlines()[0])
    tests = decode_private_tests(row["private_test_cases"])
    assert len(tests) == 4
    assert tests[0] == {"input": "1\nabc\n", "output": "YES\n", "testtype": "stdin"}


@pytest.mark.parametrize("path", MALICIOUS, ids=lambda p: p.stem)
def test_crafted_pickle_runs_code_when_unpickled_naively(path, tmp_path):
    """Control: the fixture really is malicious (checked in a separate process)."""
    marker = tmp_path / "marker"
    naive = "import base64, json, pickle, sys, zlib; row = json.loads(open(sys.argv[1]).readline()); pickle.loads(zlib.decompress(base64.b64decode(row['private_test_cases'])))"
    subprocess.run([sys.executable, "-c", naive, str(path)], env={**os.environ, "LCB_PICKLE_MARKER": str(marker)}, check=True)
    assert marker.read_text() == "the pickle ran"


@pytest.mark.parametrize("path", MALICIOUS, ids=lambda p: p.stem)
def test_crafted_pickle_is_refused_and_nothing_runs(path, tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    monkeypatch.setenv("LCB_PICKLE_MARKER", str(marker))
    with pytest.raises(PrivateTestsError) as refused:
        LiveCodeBenchSuite(data_files=str(path), sandbox="local")
    message = str(refused.value)
    assert "crafted_" in message and "GLOBAL" in message and "could run code" in message
    payload = json.loads(path.read_text().splitlines()[0])["private_test_cases"]
    with pytest.raises(PrivateTestsError):
        decode_private_tests(payload)
    assert not marker.exists()


def test_other_pickled_values_are_refused():
    def payload(value: object) -> str:
        return base64.b64encode(zlib.compress(pickle.dumps(value))).decode()

    for value in ([{"input": "1", "output": "1"}], b"bytes", 42, ("a", "b")):
        with pytest.raises(PrivateTestsError):
            decode_private_tests(payload(value))


def test_malformed_and_oversized_payloads_are_refused():
    with pytest.raises(PrivateTestsError, match="neither JSON nor base64"):
        decode_private_tests("not base64 at all!")
    with pytest.raises(PrivateTestsError, match="zlib"):
        decode_private_tests(base64.b64encode(b"plain bytes").decode())
    with pytest.raises(PrivateTestsError, match="list of tests"):
        decode_private_tests('{"input": "1"}')
    big = base64.b64encode(zlib.compress(pickle.dumps("[" + " " * 100_000 + "]"))).decode()
    with pytest.raises(PrivateTestsError, match="more than"):
        decode_private_tests(big, max_bytes=10_000)
    truncated = base64.b64encode(zlib.compress(pickle.dumps("[]"))[:-3]).decode()
    with pytest.raises(PrivateTestsError):
        decode_private_tests(truncated)


# ---------------------------------------------------------------------------------------------
# Loading and questions
# ---------------------------------------------------------------------------------------------


def test_fixture_rows_load_as_problems(suite):
    problems = suite.problems()
    assert [p.id for p in problems] == ["fixture901_a", "9001_B", "3901", "3902", "fixture950_b"]
    assert {p.id: p.metadata["kind"] for p in problems} == {
        "fixture901_a": "stdin",
        "9001_B": "stdin",
        "3901": "functional",
        "3902": "functional",
        "fixture950_b": "stdin",
    }
    assert all(p.domain == "code" for p in problems)
    leetcode = problem(suite, "3901")
    assert leetcode.metadata["func_name"] == "pairWithTarget"
    assert leetcode.tests[0] == {"input": "[2, 7, 11, 15]\n9", "output": "[0, 1]", "testtype": "functional"}
    assert len(suite.tests_for(leetcode)) == 4  # 2 public + 2 private


def test_questions_show_statement_starter_code_and_format(suite):
    stdin_question = problem(suite, "fixture901_a").question
    assert "Print A+B." in stdin_question
    assert "standard input" in stdin_question and "```python" in stdin_question
    functional_question = problem(suite, "3901").question
    assert "def pairWithTarget(self, nums: List[int], target: int) -> List[int]:" in functional_question
    assert "class" in functional_question and "single fenced ```python" in functional_question
    assert "standard input" not in functional_question


def test_parquet_and_jsonl_load_alike(suite):
    from_parquet = LiveCodeBenchSuite(data_files=str(SAMPLE_PARQUET), sandbox="local")
    assert [(p.id, p.question, p.tests) for p in from_parquet.problems()] == [(p.id, p.question, p.tests) for p in suite.problems()]
    assert from_parquet.tests_for(from_parquet.problems()[0]) == suite.tests_for(suite.problems()[0])


def test_date_window_is_inclusive_like_livecodebench():
    window = LiveCodeBenchSuite(data_files=str(SAMPLE), start_date="2024-02-20", end_date="2025-03-01", sandbox="local")
    assert [p.id for p in window.problems()] == ["9001_B", "3901", "3902"]
    with pytest.raises(SuiteError, match="no LiveCodeBench problems selected"):
        LiveCodeBenchSuite(data_files=str(SAMPLE), start_date="2030-01-01", sandbox="local")
    with pytest.raises(SuiteError, match="start_date"):
        LiveCodeBenchSuite(data_files=str(SAMPLE), start_date="March 2024", sandbox="local")


def test_release_versions_follow_livecodebench():
    assert release_files("release_v1") == ["test.jsonl"]
    assert release_files("release_v6") == ["test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl"]
    assert release_files("release_latest") == release_files("release_v6")
    assert release_files("v6") == ["test6.jsonl"]
    assert release_files("v2_v4") == ["test2.jsonl", "test3.jsonl", "test4.jsonl"]
    with pytest.raises(SuiteError, match="release_v1"):
        release_files("release_v9")


def test_bad_rows_get_clear_errors(tmp_path):
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    duplicate = tmp_path / "duplicate.jsonl"
    duplicate.write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[0]) + "\n")
    with pytest.raises(SuiteError, match="appears twice"):
        LiveCodeBenchSuite(data_files=str(duplicate), sandbox="local")
    missing = tmp_path / "missing.jsonl"
    missing.write_text(json.dumps({k: v for k, v in rows[0].items() if k != "public_test_cases"}) + "\n")
    with pytest.raises(SuiteError, match="public_test_cases"):
        LiveCodeBenchSuite(data_files=str(missing), sandbox="local")
    undated = tmp_path / "undated.jsonl"
    undated.write_text(json.dumps({**rows[0], "contest_date": "last spring"}) + "\n")
    with pytest.raises(SuiteError, match="contest_date"):
        LiveCodeBenchSuite(data_files=str(undated), sandbox="local")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({**rows[0], "public_test_cases": "[{"}) + "\n")
    with pytest.raises(SuiteError, match="fixture901_a"):
        LiveCodeBenchSuite(data_files=str(broken), sandbox="local")


def test_no_hub_fails_at_make_with_a_helpful_message(monkeypatch):
    # A closed loopback port stands in for an unreachable hub, wherever the tests run.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(SuiteError) as failure:
        gym.make("Conductor-LCB-v0", pool="simulated", suite_options={"version": "release_v1"})
    message = str(failure.value)
    assert "livecodebench/code_generation_lite" in message
    assert "data_files" in message and "HF_HUB_OFFLINE" in message


def _fake_hub_cache(root: Path) -> None:
    """A huggingface_hub cache holding the fixture as release_v1's shard, in the real layout."""
    repo = root / "datasets--livecodebench--code_generation_lite"
    commit = "0" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "test.jsonl").write_bytes(SAMPLE.read_bytes())


def test_offline_hub_reads_the_cache_and_reports_what_is_missing(tmp_path):
    _fake_hub_cache(tmp_path / "hub")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "HF_DATASETS_CACHE": str(tmp_path / "datasets"),
    }
    script = textwrap.dedent(
        """
        from conductor_env.tasks import SuiteError
        from conductor_env.tasks.suites.livecodebench import LiveCodeBenchSuite
        suite = LiveCodeBenchSuite(version="release_v1", sandbox="local")
        first = suite.problems()[0]
        print(len(suite.problems()), len(suite.tests_for(first)))
        try:
            LiveCodeBenchSuite(version="release_v2", sandbox="local")
        except SuiteError as error:
            print("ERROR", error)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "5 5"
    assert lines[1].startswith("ERROR") and "HF_HUB_OFFLINE" in lines[1] and "test2.jsonl" in lines[1]


def test_unknown_split_and_version_are_refused(suite):
    with pytest.raises(SuiteError, match="one split"):
        suite.problems("train")
    with pytest.raises(SuiteError, match="unknown LiveCodeBench version"):
        LiveCodeBenchSuite(version="release_v0", sandbox="local")


@pytest.mark.skipif(not V1_PUBLIC.exists(), reason="shared LiveCodeBench release_v1 rows absent")
def test_real_release_v1_rows_load():
    real = LiveCodeBenchSuite(data_files=str(V1_PUBLIC), sandbox="local")
    problems = real.problems()
    assert len(problems) == 400
    kinds = [p.metadata["kind"] for p in problems]
    assert kinds.count("functional") == 181  # every LeetCode row, by func_name
    assert all(p.metadata["platform"] == "leetcode" for p in problems if p.metadata["kind"] == "functional")
    assert sum(len(p.tests) for p in problems) == 604 + 439
    functional = next(p for p in problems if p.metadata["kind"] == "functional")
    assert f"def {functional.metadata['func_name']}(" in functional.question


def test_import_header_matches_livecodebench():
    lines = LCB_IMPORT_HEADER.splitlines()
    assert lines[0] == "from string import *" and "from typing import *" in lines
    assert lines.index("from builtins import *") > lines.index("from math import *")
    assert "sys.setrecursionlimit(50000)" in lines
    compile(LCB_IMPORT_HEADER, "header", "exec")


def test_answers_without_a_code_block_score_zero(suite):
    score = suite.verify(problem(suite, "fixture901_a"), "The answer is to add the numbers.")
    assert (score.correct, score.score, score.reason) == (False, 0.0, "no code block")
    assert suite.reference_response(problem(suite, "fixture901_a")) is None


# ---------------------------------------------------------------------------------------------
# Grading in the sandbox, as LiveCodeBench grades
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("problem_id", list(RIGHT))
def test_right_answers_pass_every_test(graded, problem_id):
    target = problem(graded, problem_id)
    score = graded.verify(target, fenced(RIGHT[problem_id]))
    total = len(graded.tests_for(target))
    assert (score.correct, score.score, score.reason) == (True, 1.0, f"passed {total}/{total} tests")


@pytest.mark.parametrize("problem_id", list(RIGHT))
def test_wrong_responses_fail(graded, problem_id):
    target = problem(graded, problem_id)
    score = graded.verify(target, graded.wrong_response(target))
    assert not score.correct and score.score < 1.0
    assert score.reason.startswith("test 1/")


@pytest.mark.parametrize(
    ("printed", "passes"),
    [
        ("print(0, 0.5)", True),  # 0.5 == 0.50 as decimals
        ("print('0', '0.500000')", True),
        ("print('  0   0.50  ')", True),  # whitespace around and between tokens
        ("print(0.0, 0.5)", True),  # 0.0 == 0 as decimals
        ("print(0, 0.5000001)", False),  # no tolerance: LiveCodeBench compares exactly
        ("print('0 0.50 1')", False),  # an extra token
        ("print(0)\nprint(0.5)", False),  # two lines where one is expected
        ("print('zero 0.50')", False),
    ],
)
def test_decimal_token_comparison(graded, printed, passes):
    mean = problem(graded, "9001_B")
    code = "import sys\nsys.stdin.read()\n" + printed
    report = graded.sandbox().run_tests(LCB_IMPORT_HEADER + code, [mean.tests[0]], kind="stdin")
    assert report.passed is passes, report


def test_functional_calls_follow_leetcode_rules(graded):
    pair = problem(graded, "3901")
    # A list return passes as well as a tuple; a wrong pair fails at its test.
    as_list = RIGHT["3901"].replace("return (seen[target - x], j)", "return [seen[target - x], j]")
    assert graded.verify(pair, fenced(as_list)).correct
    reversed_pair = RIGHT["3901"].replace("return (seen[target - x], j)", "return [j, seen[target - x]]")
    score = graded.verify(pair, fenced(reversed_pair))
    assert not score.correct and "test 1/4: wrong" in score.reason
    # A missing method is a runtime error, not a crash of the grader.
    renamed = RIGHT["3901"].replace("def pairWithTarget", "def pair_with_target")
    assert "runtime_error" in graded.verify(pair, fenced(renamed)).reason


def test_main_guards_run_for_stdin_but_not_for_functional_programs(graded):
    # stdin: LiveCodeBench unwraps a final main guard, so main() must run.
    stdin_main = "def main():\n    a, b = map(int, input().split())\n    print(a + b)\n\nif __name__ == '__main__':\n    main()"
    assert graded.verify(problem(graded, "fixture901_a"), fenced(stdin_main)).correct
    # functional: LiveCodeBench imports the code, so a demo reading input must not run.
    demo = textwrap.dedent(RIGHT["3901"]) + "\nif __name__ == '__main__':\n    print(Solution().pairWithTarget(eval(input()), 9))\n"
    assert graded.verify(problem(graded, "3901"), fenced(demo)).correct


def test_failures_on_private_tests_count(graded):
    sum_problem = problem(graded, "fixture901_a")
    # Right on both public tests, wrong on the private ones (which add to 300 and -15).
    cheat = "a, b = map(int, input().split())\nprint(8 if (a, b) == (3, 5) else 0)"
    score = graded.verify(sum_problem, fenced(cheat))
    assert not score.correct and "test 3/5: wrong" in score.reason
    assert 0.0 < score.score < 1.0


def test_runtime_errors_and_timeouts_are_failures(graded):
    sum_problem = problem(graded, "fixture901_a")
    crash = graded.verify(sum_problem, fenced("raise ValueError('boom')"))
    assert not crash.correct and "runtime_error" in crash.reason and "boom" in crash.reason
    slow = LiveCodeBenchSuite(data_files=str(SAMPLE), sandbox=graded.sandbox(), limits={"wall_s": 1.0, "cpu_s": 1})
    hang = slow.verify(problem(slow, "fixture901_a"), fenced("while True:\n    pass"))
    assert not hang.correct and "timeout" in hang.reason
    assert hang.score == 0.0 and hang.reason.startswith("test 1/5")


def test_early_stop_runs_only_until_the_first_failing_batch(graded):
    sum_problem = problem(graded, "fixture901_a")
    everything = LiveCodeBenchSuite(data_files=str(SAMPLE), sandbox=graded.sandbox(), early_stop=False)
    wrong = fenced("print(0)")
    # Expected outputs 8, 0, 300, 0, -15: "0" passes tests 2 and 4.
    assert everything.verify(problem(everything, "fixture901_a"), wrong).score == pytest.approx(2 / 5)
    stopped = graded.verify(sum_problem, wrong)
    assert stopped.score == 0.0 and stopped.reason.startswith("test 1/5: wrong")


@pytest.mark.skipif(not KAGGLE_ROW.exists(), reason="shared LiveCodeBench row with private tests absent")
def test_real_row_with_private_tests_grades(sandbox):
    real = LiveCodeBenchSuite(data_files=str(KAGGLE_ROW), sandbox=sandbox)
    short_sort = real.problems()[0]
    assert len(real.tests_for(short_sort)) == 5
    solution = """
        t = int(input())
        for _ in range(t):
            s = input().strip()
            print("YES" if sum(a != b for a, b in zip(s, "abc")) in (0, 2) else "NO")
    """
    assert real.verify(short_sort, fenced(solution)).correct
    always_yes = "t = int(input())\nfor _ in range(t):\n    input()\n    print('YES')"
    assert not real.verify(short_sort, fenced(always_yes)).correct


@pytest.mark.skipif(not V1_PUBLIC.exists(), reason="shared LiveCodeBench release_v1 rows absent")
def test_wrong_responses_fail_on_every_real_release_v1_problem(sandbox):
    real = LiveCodeBenchSuite(data_files=str(V1_PUBLIC), sandbox=sandbox)
    problems = real.problems()
    with ThreadPoolExecutor(max_workers=4) as pool:
        scores = list(pool.map(lambda p: real.verify(p, real.wrong_response(p)), problems))
    assert [p.id for p, s in zip(problems, scores) if s.correct] == []
    assert all(": wrong" in s.reason for s in scores)  # graded, not crashed


def test_gym_make_builds_the_lcb_env(sandbox):
    env = gym.make("Conductor-LCB-v0", pool="simulated", sandbox=sandbox, suite_options={"data_files": str(SAMPLE)})
    try:
        observation, _info = env.reset(seed=0, options={"problem_id": "3901"})
        assert "pairWithTarget" in observation["question"]
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------
# Rows without hidden tests: graded on the statement's examples, marked, refused for training
# ---------------------------------------------------------------------------------------------

SOLVE_WITH_0 = 'model_id = [0]\nsubtasks = ["Solve it."]\naccess_list = [[]]'


def lookup_table_program(target: Problem) -> str:
    """The hostile answer: the statement's example outputs, looked up by their inputs."""
    if target.metadata["kind"] == "functional":
        table = {json.dumps([json.loads(line) for line in t["input"].split("\n")]): json.loads(t["output"]) for t in target.tests}
        return fenced(
            f"""
            import json
            TABLE = {table!r}
            class Solution:
                def {target.metadata["func_name"]}(self, *args):
                    return TABLE.get(json.dumps(list(args)))
            """
        )
    table = {t["input"].strip(): t["output"] for t in target.tests}
    return fenced(
        f"""
        import sys
        TABLE = {table!r}
        sys.stdout.write(TABLE.get(sys.stdin.read().strip(), "0"))
        """
    )


class LookupAnsweringSuite(LiveCodeBenchSuite):
    """LiveCodeBench whose simulated "solvers" answer with the lookup table (a hostile worker)."""

    def reference_response(self, problem: Problem) -> str:
        return lookup_table_program(problem)


def test_rows_record_whether_they_have_hidden_tests(suite):
    assert all(p.metadata["has_private_tests"] and p.metadata["test_set"] == "public+private" for p in suite.problems())
    public_only = LiveCodeBenchSuite(data_files=str(PUBLIC_ONLY), sandbox="local")
    problems = public_only.problems()
    assert [p.id for p in problems] == ["fixture902_p", "3903"]
    assert all(not p.metadata["has_private_tests"] and p.metadata["test_set"] == "public" for p in problems)
    assert all(public_only.tests_for(p) == list(p.tests) for p in problems)
    assert public_only.allow_public_only is False
    with pytest.raises(SuiteError, match="allow_public_only must be true or false"):
        LiveCodeBenchSuite(data_files=str(PUBLIC_ONLY), sandbox="local", allow_public_only="yes")


def test_a_lookup_table_of_the_examples_passes_public_only_rows_but_not_hidden_tests(sandbox):
    public_only = LiveCodeBenchSuite(data_files=str(PUBLIC_ONLY), sandbox=sandbox)
    for target in public_only.problems():
        score = public_only.verify(target, lookup_table_program(target))
        # The verifier cannot tell it from a solution: the mark is all that warns the reader.
        assert (score.correct, score.test_set) == (True, "public"), (target.id, score)
        wrong = public_only.verify(target, public_only.wrong_response(target))
        assert (wrong.correct, wrong.test_set) == (False, "public")
    honest = public_only.verify(problem(public_only, "fixture902_p"), fenced(RIGHT["fixture901_a"]))
    assert (honest.correct, honest.test_set) == (True, "public")
    assert public_only.verify(problem(public_only, "3903"), "no code").test_set == "public"
    hidden = LiveCodeBenchSuite(data_files=str(SAMPLE), sandbox=sandbox)
    for problem_id in ("fixture901_a", "3901", "3902"):
        target = problem(hidden, problem_id)
        score = hidden.verify(target, lookup_table_program(target))
        assert (score.correct, score.test_set) == (False, "public+private"), (problem_id, score)
        # Every printed example passes; the first hidden test fails.
        assert score.reason.startswith(f"test {len(target.tests) + 1}/{len(hidden.tests_for(target))}: wrong")


def test_env_info_says_which_tests_graded_the_answer(sandbox):
    pool = WorkerPool([WorkerSpec("lookup", "simulated", options={"skill": 1.0})], name="lookup")
    cases = [(PUBLIC_ONLY, "fixture902_p", True, "public"), (SAMPLE, "fixture901_a", False, "public+private")]
    for path, problem_id, correct, test_set in cases:
        env = EnvSetup.from_kwargs(suite=LookupAnsweringSuite(data_files=str(path), sandbox=sandbox), pool=pool).make()
        try:
            env.reset(seed=0, options={"problem_id": problem_id})
            _, reward, terminated, _, info = env.step(SOLVE_WITH_0)
            assert terminated and (info["correct"], info["test_set"]) == (correct, test_set)
            assert (reward == 1.0) is correct  # the paper's reward pays the lookup table in full on public-only rows
            env.reset(seed=0, options={"problem_id": problem_id})
            _, _, _, _, unparsed = env.step("no workflow here")
            assert unparsed["parse_error"] and unparsed["test_set"] == ""  # nothing was graded
        finally:
            env.close()


def test_public_only_rows_are_served_for_evaluation_without_the_opt_in():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PublicOnlyWarning)
        env = gym.make("Conductor-LCB-v0", pool="simulated", sandbox="local", suite_options={"data_files": str(PUBLIC_ONLY)})
        try:
            _, info = env.reset(seed=0)
            assert info["problem_id"] in ("fixture902_p", "3903")
        finally:
            env.close()


def test_training_on_public_only_rows_needs_the_opt_in_and_then_warns_once():
    from conductor_env.agents.training import EnvFactory

    options = {"data_files": str(PUBLIC_ONLY), "sandbox": "local"}
    test_split = {"split": "test", "allow_test_split": True}  # LiveCodeBench has only its test split
    with pytest.raises(PublicOnlyError) as refused:
        EnvFactory(EnvSetup.from_id("Conductor-LCB-v0", pool="simulated", suite_options=options, **test_split))
    message = str(refused.value)
    assert "allow_public_only" in message and "fixture902_p" in message and "Conductor-LCB-v0 split 'test'" in message
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        factory = EnvFactory(EnvSetup.from_id("Conductor-LCB-v0", pool="simulated", suite_options={**options, "allow_public_only": True}, **test_split))
        try:
            factory(), factory()
            check_training_use(factory.suite, factory.suite.problems(), what="the same suite again")
        finally:
            factory.close()
    public_only = [w for w in caught if issubclass(w.category, PublicOnlyWarning)]
    assert len(public_only) == 1 and "allow_public_only=True" in str(public_only[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PublicOnlyWarning)
        EnvFactory(EnvSetup.from_id("Conductor-LCB-v0", pool="simulated", suite_options={"data_files": str(SAMPLE), "sandbox": "local"}, **test_split)).close()


def test_sb3_routing_env_refuses_public_only_rows_without_the_opt_in():
    from conductor_env.agents.training.sb3 import RoutingEnv

    env = gym.make("Conductor-LCB-v0", pool="simulated", sandbox="local", suite_options={"data_files": str(PUBLIC_ONLY)})
    try:
        with pytest.raises(PublicOnlyError, match="allow_public_only"):
            RoutingEnv(env)
    finally:
        env.close()
