"""The caller's side of a sandbox run: requests validated into jobs, replies graded into reports.

Expected outputs stay on this side: a job carries the program and the test inputs only, and
:func:`report_from_reply` grades each outcome here
(:func:`conductor_env.sandboxes.grading.grade_outcome`). Checks that are code (kinds ``isolated``
and ``unittest``) do enter the sandbox, but only the checker child there reads them (see
:func:`conductor_env.sandboxes.wire.encode_job`). How jobs and replies travel as bytes is
:mod:`conductor_env.sandboxes.wire`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict
from typing import Any, Mapping, Sequence

from conductor_env.sandboxes import grading, unittest_grading
from conductor_env.sandboxes.base import Limits, Report, TestResult

#: Characters of stdout/stderr kept in a :class:`TestResult`.
HEAD_CHARS = 2000
KINDS = ("stdin", "functional", "script", "isolated", "unittest")


def build_job(
    program: str,
    tests: Sequence[Mapping[str, Any]],
    *,
    kind: str,
    limits: Limits,
    func_name: str | None,
) -> tuple[dict, list[str | None]]:
    """Validates a request and returns the job to send and the expected outputs to keep.

    Args:
        program: Python source.
        tests: ``{"input", "output"}`` dicts (ignored for ``script``); for ``isolated``, one
            ``{"checks": source, "call": statement}`` (the checks run apart from the program).
        kind: ``stdin``, ``functional``, ``script`` or ``isolated``.
        limits: Resource limits.
        func_name: Method name for ``functional``; the candidate's function for ``isolated``.

    Returns:
        ``(job, expected)``: the job has inputs only; ``expected`` holds one output per test
        (``[None]`` for ``script`` and ``isolated``, which run once).

    Raises:
        ValueError: With what is wrong with the request.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    if not isinstance(program, str):
        raise ValueError(f"program must be a string, got {type(program).__name__}")
    if kind == "script":
        inputs: list[Any] = []
        expected: list[str | None] = [None]
    elif kind == "isolated":
        inputs, expected = [_isolated_checks(tests, func_name)], [None]
    elif kind == "unittest":
        inputs, expected = unittest_grading.build_tests(tests)
    else:
        if not tests:
            raise ValueError(f"a {kind} job needs at least one test")
        if kind == "functional" and not func_name:
            raise ValueError("a functional job needs func_name")
        inputs, expected = [], []
        for number, test in enumerate(tests, start=1):
            if not isinstance(test, Mapping) or "input" not in test or "output" not in test:
                raise ValueError(f"test {number} must be a mapping with 'input' and 'output'")
            test_input, test_output = test["input"], test["output"]
            if not isinstance(test_input, str) or not isinstance(test_output, str):
                raise ValueError(f"test {number}: 'input' and 'output' must be strings")
            if kind == "functional":
                _check_json_lines(test_input, f"test {number} input")
                _check_json_lines(test_output, f"test {number} output", single=True)
            inputs.append(test_input)
            expected.append(test_output)
    job = {
        "id": uuid.uuid4().hex,
        "program": program,
        "kind": kind,
        "tests": inputs if kind in ("isolated", "unittest") else [{"input": text} for text in inputs],
        "func_name": func_name,
        "limits": asdict(limits),
    }
    return job, expected


def _isolated_checks(tests: Sequence[Mapping[str, Any]], func_name: str | None) -> dict[str, str]:
    """Validates the one ``{"checks", "call"}`` test of an ``isolated`` job."""
    if not func_name or not func_name.isidentifier():
        raise ValueError("an isolated job needs func_name, the candidate's function name")
    if len(tests) != 1 or not isinstance(tests[0], Mapping):
        raise ValueError("an isolated job takes exactly one test: {'checks': source, 'call': statement}")
    checks, call = tests[0].get("checks"), tests[0].get("call")
    if not isinstance(checks, str) or not isinstance(call, str):
        raise ValueError("an isolated job's test needs 'checks' and 'call' as strings")
    return {"checks": checks, "call": call}


def _check_json_lines(text: str, what: str, *, single: bool = False) -> None:
    lines = [line for line in text.split("\n") if line.strip()]
    if single:
        lines = [text]
    for line in lines:
        try:
            json.loads(line, parse_int=str)  # syntax only: integers past Python's digit limit are fine
        except ValueError as error:
            raise ValueError(f"{what} is not JSON ({error}): {line[:80]!r}") from None


def job_timeout(job: dict, limits: Limits) -> float:
    """Seconds to wait for a job's reply: every test at its deadline, plus slack."""
    runs = max(1, len(job["tests"]))
    return runs * (limits.wall_s + 2.0) + 10.0


def report_from_reply(job: dict, expected: Sequence[str | None], reply: Mapping[str, Any], limits: Limits) -> Report:
    """Grades a runner reply.

    Args:
        job: The job sent.
        expected: The expected outputs kept by :func:`build_job`.
        reply: The runner's reply.
        limits: The limits the job ran under.

    Returns:
        The report (``error`` set when the reply does not belong to the job or says the runner
        could not run it; a ``runtime_error`` when the runner failed after the program started).
    """
    if reply.get("id") != job["id"]:
        return Report(error=f"the runner answered another job ({reply.get('id')!r})")
    if reply.get("program_fault"):  # the runner failed after the program started: the program's doing
        return Report(tests=(TestResult(verdict="runtime_error", detail=str(reply["program_fault"])[:500]),))
    if reply.get("error"):
        return Report(error=str(reply["error"]))
    outcomes = reply.get("outcomes") or []
    if len(outcomes) != len(expected):
        return Report(error=f"the runner returned {len(outcomes)} results for {len(expected)} tests")
    results = []
    for outcome, want in zip(outcomes, expected):
        if not isinstance(outcome, Mapping):
            return Report(error=f"the runner returned an unreadable result: {str(outcome)[:200]!r}")
        verdict, detail = grading.grade_outcome(job["kind"], outcome, want, limits.cpu_floor_s)
        results.append(
            TestResult(
                verdict=verdict,  # type: ignore[arg-type]
                time_s=float(outcome.get("time_s", 0.0)),
                stdout_head=str(outcome.get("stdout", ""))[:HEAD_CHARS],
                stderr_head=str(outcome.get("stderr", ""))[:HEAD_CHARS],
                detail=detail,
            )
        )
    return Report(tests=tuple(results))
