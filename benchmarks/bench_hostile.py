"""Replays the hostile-answer batteries of the code, math and choice suites and counts outcomes.

Each attack from ``tests/tasks/test_hostile_humaneval.py``, ``tests/tasks/test_hostile_lcb.py``,
``tests/tasks/test_hostile_math_choice.py``, the BigCodeBench batteries
(``tests/sandboxes/test_bigcodebench_integrity.py`` and ``test_bigcodebench_reach.py``) and the
programs that leave a tree the clean-up cannot walk (``tests/sandboxes/test_sandbox_attribution.py``,
graded through each code suite) is graded by the importable ``conductor_env`` and counted
as *paid* (graded correct), *partial* (a score above 0 though not correct: paid only by the
opt-in ``correctness`` reward), *crash* (the verifier raised), *hang* (no verdict in 30 s) or *not
paid*; the honest controls are counted as passed or not. A crash or a hang replaces the sandbox,
so one wedged pool does not hide the attacks after it. Point ``PYTHONPATH`` at an older checkout
(its ``conductor_env`` package assembled as the editable install does) to count the same attacks
against it.

Usage: python benchmarks/bench_hostile.py [--backends local docker] [--no-math] [--json PATH]
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS / "tasks"), str(TESTS / "sandboxes"), str(TESTS), str(TESTS / "fixtures" / "sandbox")]

import test_bigcodebench_integrity as bcb_integrity_battery  # noqa: E402
import test_bigcodebench_reach as bcb_reach_battery  # noqa: E402
import test_hostile_humaneval as humaneval_battery  # noqa: E402
import test_hostile_lcb as lcb_battery  # noqa: E402
import test_sandbox_attribution as attribution_battery  # noqa: E402

import conductor_env  # noqa: E402
from conductor_env.sandboxes import get_sandbox  # noqa: E402
from conductor_env.tasks.suites.bigcodebench import BigCodeBenchSuite  # noqa: E402
from conductor_env.tasks.suites.choice import GPQASuite  # noqa: E402
from conductor_env.tasks.suites.humaneval import HumanEvalSuite  # noqa: E402
from conductor_env.tasks.suites.livecodebench import LiveCodeBenchSuite  # noqa: E402
from conductor_env.tasks.suites.math_suites import AIMESuite, Math500Suite  # noqa: E402

HANG_S = 30.0


def grade(verify: Callable[[], Any]) -> tuple[str, float, str]:
    """Runs one verification with a time bound; returns (outcome, seconds, reason)."""
    pool = futures.ThreadPoolExecutor(1)
    start = time.perf_counter()
    future = pool.submit(verify)
    pool.shutdown(wait=False)  # a hung verification must not hold the benchmark
    try:
        score = future.result(timeout=HANG_S)
    except futures.TimeoutError:
        return "hang", time.perf_counter() - start, ""
    except Exception as error:  # noqa: BLE001 - counted
        return "crash", time.perf_counter() - start, f"{type(error).__name__}: {str(error)[:120]}"
    outcome = "paid" if score.correct else "partial" if score.score > 0 else "not paid"
    return outcome, time.perf_counter() - start, str(score.reason)[:120]


def code_cases(backend: str) -> list[tuple[str, str, bool, Callable[[Any], Any]]]:
    """(suite, name, honest, verify(sandbox)) for HumanEval and LiveCodeBench."""
    cases = []
    humaneval = humaneval_battery
    for name, answer in {**humaneval.ATTACKS, **{f"honest: {k}": v for k, v in humaneval.HONEST.items()}}.items():

        def verify(box, answer=answer):
            suite = HumanEvalSuite(sandbox=box, limits=humaneval.LIMITS)
            return suite.verify(suite.problems()[0], answer)

        cases.append(("humaneval", name, name.startswith("honest: "), verify))
    lcb = lcb_battery
    attacks = [("fixture901_a", n, a) for n, a in lcb.STDIN_ATTACKS.items()]
    attacks += [("3901", n, a) for n, a in lcb.FUNCTIONAL_ATTACKS.items()]
    attacks += [(problem_id, f"honest: {problem_id}", code) for problem_id, code in lcb.HONEST.items()]
    for problem_id, name, code in attacks:

        def verify(box, problem_id=problem_id, code=code):
            suite = LiveCodeBenchSuite(data_files=str(lcb.SAMPLE), sandbox=box, limits=lcb.LIMITS)
            return suite.verify(lcb.problem(suite, problem_id), lcb.fenced(code))

        cases.append(("livecodebench", name, name.startswith("honest: "), verify))
    cases += bigcodebench_cases()
    cases += attribution_cases()
    return cases


def bigcodebench_cases() -> list[tuple[str, str, bool, Callable[[Any], Any]]]:
    """The BigCodeBench batteries on the stdlib fixture tasks (the default image serves)."""
    cases = []
    sample, limits = bcb_reach_battery.SAMPLE, bcb_reach_battery.LIMITS
    hostile = {**bcb_integrity_battery.HOSTILE, **bcb_reach_battery.HOSTILE}
    names_row = json.loads(sample.read_text().splitlines()[0])
    names_row = {**names_row, "task_id": "Fixture/names", "test": bcb_reach_battery.PROMPT_NAME_TESTS}
    for name, code in hostile.items():

        def verify(box, name=name, code=code):
            if name == "rebind_prompt_module":
                import tempfile

                folder = tempfile.mkdtemp()
                path = Path(folder) / "names.jsonl"
                path.write_text(json.dumps(names_row) + "\n")
                suite = BigCodeBenchSuite(data_files=str(path), sandbox=box, limits=limits)
            else:
                suite = BigCodeBenchSuite(data_files=str(sample), sandbox=box, limits=limits)
            return suite.verify(suite.problems()[0], bcb_reach_battery.block(code))

        cases.append(("bigcodebench", name, False, verify))
    for task in (0, 1):

        def verify(box, task=task):
            suite = BigCodeBenchSuite(data_files=str(sample), sandbox=box, limits=limits)
            return suite.verify(suite.problems()[task], suite.reference_response(suite.problems()[task]))

        cases.append(("bigcodebench", f"honest: Fixture/{task}", True, verify))
    return cases


def attribution_cases() -> list[tuple[str, str, bool, Callable[[Any], Any]]]:
    """Programs that leave a file tree the runner's clean-up cannot walk, through each code suite."""
    cases = []
    for tree, code in attribution_battery.TREES.items():

        def humaneval(box, code=code):
            suite = HumanEvalSuite(sandbox=box, limits=humaneval_battery.LIMITS)
            problem = suite.problems()[0]
            return suite.verify(problem, f"```python\n{code}\ndef {problem.metadata['entry_point']}(*a):\n    return None\n```")

        def lcb(box, code=code):
            suite = LiveCodeBenchSuite(data_files=str(lcb_battery.SAMPLE), sandbox=box, limits=lcb_battery.LIMITS)
            return suite.verify(lcb_battery.problem(suite, "fixture901_a"), lcb_battery.fenced(code + "print('wrong')\n"))

        def bigcodebench(box, code=code):
            suite = BigCodeBenchSuite(data_files=str(bcb_reach_battery.SAMPLE), sandbox=box, limits=bcb_reach_battery.LIMITS)
            return suite.verify(suite.problems()[0], bcb_reach_battery.block(code + "def task_func(words):\n    return 'zzz'\n"))

        for suite_name, verify in (("humaneval", humaneval), ("livecodebench", lcb), ("bigcodebench", bigcodebench)):
            cases.append((f"{suite_name} (file tree)", tree, False, verify))
    return cases


def count_code(backend: str) -> list[dict]:
    rows: list[dict] = []
    box = get_sandbox(backend, pool_size=2, limits=humaneval_battery.LIMITS)
    for suite_name, name, honest, verify in code_cases(backend):
        outcome, seconds, reason = grade(lambda: verify(box))
        rows.append({"suite": suite_name, "backend": backend, "case": name, "honest": honest, "outcome": outcome, "seconds": round(seconds, 3), "reason": reason})
        if outcome in ("crash", "hang"):  # the pool may have lost a worker for good: start afresh
            box = get_sandbox(backend, pool_size=2, limits=humaneval_battery.LIMITS)
    return rows


def count_math_and_choice() -> list[dict]:
    import test_hostile_math_choice as math_battery  # noqa: PLC0415 - only when counted (--no-math skips it)

    rows: list[dict] = []
    math500 = Math500Suite(data_files=math_battery.FIXTURES / "math500.jsonl")
    problem = math500.problems()[0]
    for name, answer in math_battery.MATH_ATTACKS.items():
        outcome, seconds, reason = grade(lambda: math500.verify(problem, answer))
        rows.append({"suite": "math500", "case": name, "honest": False, "outcome": outcome, "seconds": round(seconds, 3), "reason": reason})
    for answer in math_battery.MATH_HONEST:
        outcome, seconds, reason = grade(lambda: math500.verify(problem, answer))
        rows.append({"suite": "math500", "case": f"honest: {answer}", "honest": True, "outcome": outcome, "seconds": round(seconds, 3), "reason": reason})
    aime = AIMESuite(data_files=math_battery.FIXTURES / "aime25.jsonl")
    first = aime.problems()[0]
    gold = int(first.answer)
    for name, answer in {"two integers in one box": rf"\boxed{{{gold}, {gold + 1}}}", "10,000 digits": r"\boxed{" + "9" * 10_000 + "}"}.items():
        outcome, seconds, reason = grade(lambda: aime.verify(first, answer))
        rows.append({"suite": "aime", "case": name, "honest": False, "outcome": outcome, "seconds": round(seconds, 3), "reason": reason})
    gpqa = GPQASuite(data_files=str(math_battery.FIXTURES / "gpqa_diamond.jsonl"))
    for name, template in math_battery.CHOICE_ATTACKS.items():
        for problem in gpqa.problems():
            other = next(letter for letter in "ABCD" if letter != problem.answer)
            answer = template.format(gold=problem.answer, other=other)
            outcome, seconds, reason = grade(lambda: gpqa.verify(problem, answer))
            rows.append({"suite": "gpqa", "case": f"{name} ({problem.id})", "honest": False, "outcome": outcome, "seconds": round(seconds, 3), "reason": reason})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=["local", "docker"])
    parser.add_argument("--json", type=Path, default=None, help="also write the counts and cases here")
    parser.add_argument("--no-math", action="store_true", help="code suites only (an older checkout's math API differs)")
    args = parser.parse_args(argv)
    rows = [] if args.no_math else count_math_and_choice()
    for backend in args.backends:
        rows += count_code(backend)
    groups: dict[tuple, dict] = {}
    for row in rows:
        key = (row["suite"], row.get("backend", "-"))
        group = groups.setdefault(key, {"attacks": 0, "paid": 0, "partial": 0, "crash": 0, "hang": 0, "honest": 0, "honest passed": 0, "slowest s": 0.0})
        if row["honest"]:
            group["honest"] += 1
            group["honest passed"] += row["outcome"] == "paid"
        else:
            group["attacks"] += 1
            if row["outcome"] in ("paid", "partial", "crash", "hang"):
                group[row["outcome"]] += 1
            group["slowest s"] = max(group["slowest s"], row["seconds"])
    print(f"conductor_env from {Path(conductor_env.__file__).parent}")
    print(f"{'suite':14} {'backend':8} {'attacks':>7} {'paid':>5} {'partial':>7} {'crash':>6} {'hang':>5} {'honest':>7} {'slowest':>8}")
    for (suite, backend), group in groups.items():
        print(
            f"{suite:14} {backend:8} {group['attacks']:7} {group['paid']:5} {group['partial']:7} {group['crash']:6} {group['hang']:5} "
            f"{group['honest passed']:3}/{group['honest']:<3} {group['slowest s']:7.2f}s"
        )
    for row in rows:
        if (row["outcome"] not in ("not paid", "partial")) != row["honest"]:
            print(f"  {row['suite']} {row.get('backend', '')} {row['case']}: {row['outcome']} {row['reason']}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        summary = [{"suite": suite, "backend": backend, **group} for (suite, backend), group in groups.items()]
        args.json.write_text(
            json.dumps({"command": "python benchmarks/bench_hostile.py " + " ".join(sys.argv[1:]), "package": str(Path(conductor_env.__file__).parent), "summary": summary, "cases": rows}, indent=1)
            + "\n"
        )
        print(f"wrote {args.json}")
    sys.stdout.flush()
    os._exit(0)  # hung verifications (when counting an old version) must not keep the process


if __name__ == "__main__":
    raise SystemExit(main())
