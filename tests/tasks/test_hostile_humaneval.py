"""HumanEval's verifier against answers built to be paid without solving, on both backends.

Every attack here was rewarded, crashed the grader or hung it when the candidate and the checks
shared one program; now the checks run in a process of their own and call the candidate through a
plain-data proxy. Honest controls beside them must pass.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"))

from sandbox_helpers import BACKENDS, open_backend  # noqa: E402

from conductor_env.sandboxes import Limits  # noqa: E402
from conductor_env.tasks.suites.humaneval import HumanEvalSuite  # noqa: E402

LIMITS = Limits(wall_s=4.0, cpu_s=3, memory_mb=512, processes=32, output_bytes=1 << 16)

#: A correct body for HumanEval/0, used by attacks that answer right only if they found the tests.
HONEST_0 = """
    for i, a in enumerate(numbers):
        for j, b in enumerate(numbers):
            if i != j and abs(a - b) < threshold:
                return True
    return False
"""
SIGNATURE_0 = "def has_close_elements(numbers, threshold):"
#: Text that occurs only in HumanEval/0's checks.
CHECK_TEXT_0 = "assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
#: A pattern for it whose source does not hold the text, so the program's own file and memory do
#: not match (sre keeps a literal as an array of code points, not as the bytes themselves).
CHECK_PATTERN_0 = re.escape(CHECK_TEXT_0.encode()).replace(b"\\ ", b"[ ]")


def block(code: str) -> str:
    return f"```python\n{code.strip()}\n```"


def cheat_if_visible(search: str) -> str:
    """A program that answers HumanEval/0 correctly only if ``search`` (code) finds the checks."""
    return block(
        f"""
import os, re
def _found():
    needle = re.compile({CHECK_PATTERN_0!r})
{search}
FOUND = _found()
{SIGNATURE_0}
    if not FOUND:
        return None
{HONEST_0}
"""
    )


#: Ways to look for the checks from the candidate's process (each returns True if it found them).
SEARCHES = {
    "own file": "    return needle.search(open(__file__, 'rb').read()) is not None",
    "work directories": """
    for root in ('/tmp', '/dev/shm', os.getcwd(), '/var/tmp'):
        for folder, _dirs, files in os.walk(root):
            for name in files:
                try:
                    if needle.search(open(os.path.join(folder, name), 'rb').read(1 << 22)):
                        return True
                except OSError:
                    pass
    return False""",
    "other processes": """
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        for part in ('cmdline', 'environ', 'mem'):
            try:
                if needle.search(open(f'/proc/{pid}/{part}', 'rb').read(1 << 22)):
                    return True
            except (OSError, ValueError):
                pass
        try:
            for fd in os.listdir(f'/proc/{pid}/fd'):
                if needle.search(open(f'/proc/{pid}/fd/{fd}', 'rb').read(1 << 20)):
                    return True
        except OSError:
            pass
    return False""",
    "own memory": """
    try:  # become dumpable, so that /proc/self/mem opens (ctypes is there: nothing to hide here)
        import ctypes
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
    except Exception:
        pass
    with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb', 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith('r'):
                continue
            start, end = (int(x, 16) for x in span.split('-'))
            try:
                mem.seek(start)
                if needle.search(mem.read(min(end - start, 1 << 26))):
                    return True
            except (OSError, ValueError, OverflowError):
                pass
    return False""",
    "arguments and environment": "    return needle.search((' '.join(__import__('sys').argv) + str(dict(os.environ))).encode()) is not None",
}

#: Answers to HumanEval/0 that do not solve it, and must not be paid.
ATTACKS = {
    "always-equal object": block(f"""
class Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
{SIGNATURE_0}
    return Anything()"""),
    "bool subclass": block(f"""
class Truthy(int):
    def __eq__(self, other): return True
{SIGNATURE_0}
    return Truthy(1)"""),
    "list subclass": block(f"""
class Same(list):
    def __eq__(self, other): return True
{SIGNATURE_0}
    return Same()"""),
    "patched builtins": block(f"""
import builtins
builtins.AssertionError = type('Quiet', (Exception,), {{}})
builtins.abs = lambda x: 0
builtins.isinstance = lambda *a: True
{SIGNATURE_0}
    return None"""),
    "patched math": block(f"""
import math
math.fabs = lambda x: 0.0
math.isclose = lambda *a, **k: True
{SIGNATURE_0}
    return None"""),
    "redefined check": block(f"""
{SIGNATURE_0}
    return None
def check(candidate):
    pass"""),
    "sys.exit at top level": block(f"""
import sys
{SIGNATURE_0}
    return None
sys.exit(0)"""),
    "os._exit at top level": block(f"""
import os
{SIGNATURE_0}
    return None
os._exit(0)"""),
    "forged success output": block(f"""
import os, sys
print('All tests passed')
sys.stdout.flush()
{SIGNATURE_0}
    os._exit(0)"""),
    "exit inside the call": block(f"""
import os
{SIGNATURE_0}
    os._exit(0)"""),
    "kill everything": block(f"""
import os, signal
{SIGNATURE_0}
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    return True"""),
    "kill the parent": block(f"""
import os
os.kill(os.getppid(), 9)
{SIGNATURE_0}
    return True"""),
    "stop every other process": block(f"""
import os, signal
for pid in os.listdir('/proc'):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            os.kill(int(pid), signal.SIGSTOP)
        except OSError:
            pass
{SIGNATURE_0}
    return True"""),
    "forged replies on the pipes": block(f"""
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'{{"ready":true}}\\n' + b'{{"ok":true}}\\n' * 64)
    except OSError:
        pass
{SIGNATURE_0}
    return True"""),
    "garbage on the pipes": block(f"""
import os
for fd in range(3, 64):
    try:
        os.write(fd, b'\\x00{{"ok": {{"t": [1, 2}}\\n' * 1000)
    except OSError:
        pass
{SIGNATURE_0}
    return True"""),
    "unreadable nesting": block(f"""
{SIGNATURE_0}
    value = True
    for _ in range(100000):
        value = [value]
    return value"""),
    "huge integer": block(f"""
{SIGNATURE_0}
    return 10 ** 200000"""),
    "not a number": block(f"""
{SIGNATURE_0}
    return float('nan')"""),
    "generator": block(f"""
{SIGNATURE_0}
    return (x for x in [True])"""),
    "exception with a hostile __str__": block(f"""
class Boom(Exception):
    def __str__(self): raise RuntimeError('no')
{SIGNATURE_0}
    raise Boom()"""),
    "never answers": block(f"""
import time
{SIGNATURE_0}
    time.sleep(60)"""),
    "burns CPU": block(f"""
{SIGNATURE_0}
    while True:
        pass"""),
    "constant answer": block(f"""
{SIGNATURE_0}
    return True"""),
    "no function": block("print('hello')"),
    **{f"reads the checks: {name}": cheat_if_visible(search) for name, search in SEARCHES.items()},
}

#: Program text built to crash or hold the host, which parses the candidate to find its function
#: (``tasks/program_text.py``): name -> (answer, refused on the host before any sandbox). Those
#: within the size bound that are plain syntax errors go to the sandbox (a completion may compile
#: after the prompt) and fail there.
TEXT_ATTACKS = {
    "null byte": (block(SIGNATURE_0 + HONEST_0 + "x = 1\0"), True),
    "lone surrogate": (block(SIGNATURE_0 + HONEST_0 + "s = '\ud800'"), True),
    "1 MB program": (block(SIGNATURE_0 + HONEST_0 + "y = [1, 2, 3]\n" * 75_000), True),
    "valid, 10^5 lines": (block(SIGNATURE_0 + HONEST_0 + "pass\n" * 100_000), True),
    "10^5 open parentheses": (block("(" * 100_000), True),
    "deep unary minus": (block(SIGNATURE_0 + HONEST_0 + "x = " + "-" * 60_000 + "1"), True),
    "long call chain": (block(SIGNATURE_0 + HONEST_0 + "x = f" + "()" * 30_000), True),
    "60,000 open parentheses": (block("(" * 60_000), False),
    "huge number literal": (block(SIGNATURE_0 + HONEST_0 + "x = " + "9" * 60_000), False),
}

#: Answers that solve HumanEval/0 in ways a strict grader must still accept.
HONEST = {
    "complete function": block(SIGNATURE_0 + HONEST_0),
    "bare completion": "```python\n" + HONEST_0.lstrip("\n") + "```",
    "prints while working": block(SIGNATURE_0 + "\n    print('checking', numbers)" + HONEST_0),
    "with a main guard": block(SIGNATURE_0 + HONEST_0 + "\nif __name__ == '__main__':\n    raise SystemExit(1)\n"),
    "long, within the size bound": block(SIGNATURE_0 + HONEST_0 + "# a comment line\n" * 3_000),
    "helper and imports": block(
        "import itertools\n\ndef _close(a, b, t):\n    return abs(a - b) < t\n\n" + SIGNATURE_0 + "\n    return any(_close(a, b, threshold) for a, b in itertools.combinations(numbers, 2))\n"
    ),
}


@pytest.fixture(scope="module", params=BACKENDS)
def suite(request):
    box = open_backend(request.param, pool_size=2, limits=LIMITS)
    box.warm()
    yield HumanEvalSuite(sandbox=box, limits=LIMITS)
    assert box.leftover_processes() == []
    box.close()


@pytest.fixture(scope="module")
def problem(suite):
    return suite.problems()[0]


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attacks_are_not_paid(suite, problem, name):
    score = suite.verify(problem, ATTACKS[name])  # raises (fails the test) if the grader breaks
    assert (score.correct, score.score) == (False, 0.0), score
    assert score.reason


@pytest.mark.parametrize("name", sorted(TEXT_ATTACKS))
def test_hostile_program_text_is_a_wrong_answer(suite, problem, name):
    answer, _on_host = TEXT_ATTACKS[name]
    score = suite.verify(problem, answer)  # raises (fails the test) if the host's parse breaks
    assert (score.correct, score.score) == (False, 0.0), score
    assert score.reason


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_answers_pass(suite, problem, name):
    score = suite.verify(problem, HONEST[name])
    assert score.correct, score


def test_the_search_pattern_matches_the_checks_but_not_itself():
    pattern = re.compile(CHECK_PATTERN_0)
    assert pattern.search(CHECK_TEXT_0.encode()) and not pattern.search(CHECK_PATTERN_0)


def test_the_checks_can_be_found_when_they_are_visible(suite, problem):
    """The search programs work: given the checks in their own file, they find them and pass."""
    visible = ATTACKS["reads the checks: own file"].replace("return needle.search(open(__file__, 'rb').read()) is not None", "return True")
    assert suite.verify(problem, visible).correct


def test_the_memory_search_finds_what_is_in_memory(suite, problem):
    """The own-memory search works in the sandbox: text the program itself builds is found."""
    planted = ATTACKS["reads the checks: own memory"].replace("def _found():", f"PLANTED = {CHECK_TEXT_0[:30]!r} + {CHECK_TEXT_0[30:]!r}\ndef _found():")
    assert suite.verify(problem, planted).correct


def test_results_keep_their_types(suite):
    """Tuples stay tuples across the proxy (HumanEval/8 expects ``(0, 1)``, not ``[0, 1]``)."""
    sum_product = next(p for p in suite.problems() if p.id == "HumanEval/8")
    as_list = block("def sum_product(numbers):\n    import math\n    return [sum(numbers), math.prod(numbers)]")
    as_tuple = block("def sum_product(numbers):\n    import math\n    return (sum(numbers), math.prod(numbers))")
    assert not suite.verify(sum_product, as_list).correct
    assert suite.verify(sum_product, as_tuple).correct


def test_checks_that_use_the_prompts_helpers(suite):
    """``find_zero``'s checks call the prompt's ``poly``; ``decode_cyclic``'s its encoder."""
    for task_id in ("HumanEval/32", "HumanEval/38", "HumanEval/50"):
        problem = next(p for p in suite.problems() if p.id == task_id)
        assert suite.verify(problem, suite.reference_response(problem)).correct, task_id
        assert not suite.verify(problem, suite.wrong_response(problem)).correct, task_id


def test_a_crash_storm_leaves_the_pool_working(suite, problem):
    """More failing, crashing and hanging answers than the pool has slots, then an honest one."""
    storm = ["kill everything", "garbage on the pipes", "unreadable nesting", "never answers", "kill the parent"]
    for name in storm * 2:
        assert not suite.verify(problem, ATTACKS[name]).correct
    assert suite.verify(problem, HONEST["complete function"]).correct


def test_checks_that_catch_exceptions_do_not_swallow_the_proxy(suite):
    """A check expecting the candidate to raise must not pass when the reply was not plain data."""
    checks = {"checks": "def check(f):\n    try:\n        f(0)\n    except Exception:\n        pass\n    f(1)\n", "call": "check(f)"}
    sneaky = "class Thing:\n    pass\ndef f(x):\n    return Thing()\n"
    report = suite.sandbox().run_tests(sneaky, [checks], kind="isolated", func_name="f", limits=LIMITS)
    assert [result.verdict for result in report.tests] == ["wrong"], report
    assert "plain data" in report.tests[0].detail
    honest = "def f(x):\n    if x == 0:\n        raise ValueError('no')\n    return x\n"
    assert suite.sandbox().run_tests(honest, [checks], kind="isolated", func_name="f", limits=LIMITS).passed
