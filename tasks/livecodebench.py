"""LiveCodeBench code generation (``Conductor-LCB-v0``): competitive programming graded by tests.

Rows come from the hub dataset ``livecodebench/code_generation_lite`` (a release such as
``release_v6``, the evaluation default, or ``release_v1``, the paper's training data) or from
local jsonl/parquet files in the same schema. A worker answers with one fenced Python block;
the block runs in a sandbox against the problem's public and private tests, graded as
LiveCodeBench grades them (the sandbox runner implements the comparison rules):

- ``stdin`` problems (AtCoder, Codeforces): the whole output and the expected output are stripped,
  split into lines and each line stripped; the line counts must be equal and each line must be
  equal, or all its whitespace-separated tokens equal as decimals (``0.50`` == ``0.5``).
- ``functional`` problems (LeetCode): ``Solution().<func_name>(*args)`` with one JSON value per
  input line; the result must ``==`` the expected JSON value after a tuple becomes a list (the
  sandbox turns nested tuples into lists too, where LiveCodeBench converts only the top level).

Like LiveCodeBench's harness, every program runs after :data:`LCB_IMPORT_HEADER` (the standard
library star-imports LiveCodeBench prepends, so ``List``, ``Counter``, ``heapq`` ... need no
import), with a 50,000-digit limit for printing integers and a recursion limit of 50,000.

Private tests are stored as ``base64(zlib(pickle(json text)))``. They are decoded by
:func:`decode_private_tests`, which reads the pickle's opcodes with :mod:`pickletools` and accepts
only a lone string: nothing in a payload can import or call anything, and a crafted row is refused
with :class:`PrivateTestsError` when the suite is built.
"""

from __future__ import annotations

import base64
import binascii
import json
import pickletools
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any, Iterator, Mapping, Sequence

from conductor_env.sandboxes.base import Limits
from conductor_env.suite import Problem, Score
from conductor_env.tasks.extract import extract_code
from conductor_env.tasks.public_tests import PUBLIC_AND_PRIVATE, PUBLIC_ONLY, graded_test_set, resolve_opt_in
from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.sandboxed import SandboxedSuite, SandboxRef, run_until_failure, summarize_report

__all__ = [
    "DEFAULT_VERSION",
    "HUB_DATASET",
    "LCB_IMPORT_HEADER",
    "LiveCodeBenchSuite",
    "PrivateTestsError",
    "TRAIN_VERSION",
    "build_program",
    "decode_private_tests",
    "release_files",
]

#: The hub dataset the suite loads when no local files are given.
HUB_DATASET = "livecodebench/code_generation_lite"
ENV_ID = "Conductor-LCB-v0"
#: Release used for evaluation by default (problems from May 2023 to April 2025).
DEFAULT_VERSION = "release_v6"
#: The release the paper trains on (May 2023 to March 2024, 400 problems).
TRAIN_VERSION = "release_v1"

_SHARDS = ["test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl"]

#: Release tags as LiveCodeBench's dataset defines them: each ``release_vN`` is cumulative (all
#: shards up to N). Windows from LiveCodeBench's README: v1 2023-05..2024-03 (400 problems),
#: v2 ..2024-05 (511), v3 ..2024-07 (612), v4 ..2024-09 (713), v5 ..2025-01 (880),
#: v6 ..2025-04 (1055). ``vN`` is shard N alone and ``vA_vB`` shards A to B.
RELEASES: dict[str, list[str]] = {
    **{f"release_v{n}": _SHARDS[:n] for n in range(1, len(_SHARDS) + 1)},
    "release_latest": list(_SHARDS),
    **{f"v{n}": [_SHARDS[n - 1]] for n in range(1, len(_SHARDS) + 1)},
    **{
        f"v{a}_v{b}": _SHARDS[a - 1 : b]
        for a in range(1, len(_SHARDS) + 1)
        for b in range(a + 1, len(_SHARDS) + 1)
    },
}

#: Prepended to every program, as LiveCodeBench's grader does (same modules, same order: the
#: order decides which name wins, e.g. ``from builtins import *`` restores ``pow`` and ``open``
#: after ``math`` and ``io`` shadowed them). LiveCodeBench's evaluation process also raises
#: Python's int-to-string digit limit to 50,000; the sandbox child inherits nothing, so the
#: header sets it.
LCB_IMPORT_HEADER = "\n".join(
    [
        *(
            f"from {module} import *"
            for module in (
                "string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math",
                "random", "statistics", "itertools", "functools", "operator", "io", "sys",
                "json", "builtins", "typing",
            )
        ),
        *(
            f"import {module}"
            for module in (
                "string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math",
                "random", "statistics", "itertools", "functools", "operator", "io", "sys",
                "json",
            )
        ),
        "sys.setrecursionlimit(50000)",
        "if hasattr(sys, 'set_int_max_str_digits'):",
        "    sys.set_int_max_str_digits(50000)",
    ]
) + "\n\n"

#: Largest decompressed private-test payload accepted (a zlib bomb is refused, not expanded).
MAX_PRIVATE_BYTES = 1 << 30

_REQUIRED_FIELDS = ("question_id", "question_content", "public_test_cases")

_STRING_OPCODES = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"}
# Opcodes that only frame or memoize; together with one string they make a pickled ``str``.
_HARMLESS_OPCODES = {"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "STOP"}


class PrivateTestsError(SuiteError):
    """A private-test payload is malformed or is not a pickled plain string (possibly crafted)."""


# ---------------------------------------------------------------------------------------------
# Test decoding
# ---------------------------------------------------------------------------------------------


def _string_from_pickle(raw: bytes) -> str:
    """Returns the string a pickle holds, refusing any pickle that holds anything else.

    The opcodes are read with :func:`pickletools.genops`, which parses and never executes; a
    pickle that imports (``GLOBAL``), calls (``REDUCE``), builds objects or holds anything but
    one string is refused before any object exists.
    """
    found: str | None = None
    try:
        for opcode, argument, position in pickletools.genops(raw):
            if opcode.name in _STRING_OPCODES:
                if found is not None:
                    raise PrivateTestsError("the pickle holds more than one string")
                found = argument
            elif opcode.name not in _HARMLESS_OPCODES:
                detail = f" {argument!r}" if argument is not None else ""
                raise PrivateTestsError(
                    f"refused pickle opcode {opcode.name}{detail} at byte {position}: private tests "
                    "must be a pickled plain string, and this payload could run code"
                )
    except PrivateTestsError:
        raise
    except Exception as error:  # genops raises ValueError and friends on truncated input
        raise PrivateTestsError(f"the pickle is malformed: {error}") from error
    if found is None:
        raise PrivateTestsError("the pickle holds no string")
    return found


def _inflate(compressed: bytes, max_bytes: int) -> bytes:
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(compressed, max_bytes)
    except zlib.error as error:
        raise PrivateTestsError(f"the payload is not zlib data: {error}") from error
    if inflater.unconsumed_tail:
        raise PrivateTestsError(f"the payload inflates to more than {max_bytes} bytes; refused")
    if not inflater.eof:
        raise PrivateTestsError("the zlib stream is truncated")
    return raw


def _as_tests(value: Any, what: str) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise PrivateTestsError(f"{what} must be a JSON list of tests, got {type(value).__name__}")
    tests = []
    for index, test in enumerate(value):
        if not isinstance(test, Mapping) or not isinstance(test.get("input"), str) or not isinstance(test.get("output"), str):
            raise PrivateTestsError(f"{what}[{index}] is not a test with string 'input' and 'output'")
        tests.append({"input": test["input"], "output": test["output"], "testtype": str(test.get("testtype", ""))})
    return tests


def _pickled_text(payload: str, max_bytes: int) -> str:
    """Returns the string inside ``base64(zlib(pickle(str)))``, executing nothing."""
    try:
        compressed = base64.b64decode(payload.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError) as error:
        raise PrivateTestsError(f"private_test_cases is neither JSON nor base64: {error}") from error
    return _string_from_pickle(_inflate(compressed, max_bytes))


def _plain_json(payload: str) -> Any:
    try:
        return json.loads(payload)
    except ValueError:
        return None


def decode_private_tests(payload: str | None, *, max_bytes: int = MAX_PRIVATE_BYTES) -> list[dict[str, str]]:
    """Decodes a ``private_test_cases`` field.

    The field is plain JSON text, or ``base64(zlib(pickle(json text)))``; LiveCodeBench tries
    JSON first, and so does this function.

    Args:
        payload: The field's value (``None`` or ``""``: no private tests).
        max_bytes: Largest decompressed pickle accepted.

    Returns:
        The tests: dicts with ``input``, ``output`` and ``testtype`` strings.

    Raises:
        PrivateTestsError: For a payload that is not valid base64/zlib, a pickle holding anything
            but one string (e.g. one that would import and call a function), or JSON that is not
            a list of tests. Nothing in the payload is ever executed.
    """
    if payload is None or not payload.strip():
        return []
    plain = _plain_json(payload)
    if plain is not None:
        return _as_tests(plain, "private_test_cases")
    text = _pickled_text(payload, max_bytes)
    try:
        tests = json.loads(text)
    except ValueError as error:
        raise PrivateTestsError(f"the decoded private tests are not JSON: {error}") from error
    return _as_tests(tests, "decoded private_test_cases")


def _check_private_payload(payload: str | None) -> None:
    """Validates a payload at load time, keeping nothing: decoded, a release is gigabytes."""
    if payload is None or not payload.strip():
        return
    plain = _plain_json(payload)
    if plain is not None:
        _as_tests(plain, "private_test_cases")
    else:
        _pickled_text(payload, MAX_PRIVATE_BYTES)


# ---------------------------------------------------------------------------------------------
# Rows -> problems
# ---------------------------------------------------------------------------------------------


def release_files(version: str) -> list[str]:
    """Returns the hub files (shards) of a LiveCodeBench release tag.

    Raises:
        SuiteError: For an unknown tag, listing the valid ones.
    """
    if version not in RELEASES:
        main = ", ".join(sorted(k for k in RELEASES if k.startswith("release_")))
        raise SuiteError(f"unknown LiveCodeBench version {version!r}; use one of {main}, or vN / vA_vB")
    return list(RELEASES[version])


def _parse_date(value: str | date | datetime | None, option: str) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    try:
        return datetime.strptime(str(value), "%Y-%m-%d")
    except ValueError as error:
        raise SuiteError(f"{option} must be a date like '2025-02-01', got {value!r}") from error


def _json_field(row: Mapping[str, Any], key: str, default: Any) -> Any:
    value = row.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        return value  # parquet exports sometimes hold the decoded value already
    return json.loads(value)


@dataclass(frozen=True)
class _Row:
    """One parsed row: the problem and its contest date."""

    problem: Problem
    contest_date: datetime | None


def _format_instruction(starter_code: str, func_name: str | None) -> str:
    if func_name:
        return (
            "Complete the following starter code; keep the class and the method signature. "
            f"`Solution().{func_name}(...)` is called once per test with the arguments shown in the examples.\n"
            f"```python\n{starter_code.rstrip()}\n```\n\n"
            "Answer with a single fenced ```python code block holding the complete class."
        )
    starter = f"Starter code:\n```python\n{starter_code.rstrip()}\n```\n\n" if starter_code.strip() else ""
    return (
        f"{starter}Write a complete Python 3 program that reads the input from standard input and "
        "prints the answer to standard output (do not hard-code the sample tests).\n\n"
        "Answer with a single fenced ```python code block holding the complete program."
    )


def _row_to_problem(row: Mapping[str, Any], index: int, has_private: bool) -> _Row:
    missing = [key for key in _REQUIRED_FIELDS if key not in row]
    if missing:
        raise SuiteError(
            f"LiveCodeBench row {index} lacks {', '.join(missing)}; rows need the "
            f"{HUB_DATASET} schema (question_id, question_content, public_test_cases, ...)"
        )
    question_id = str(row["question_id"])
    try:
        public = _as_tests(_json_field(row, "public_test_cases", []), "public_test_cases")
        metadata = _json_field(row, "metadata", {})
    except (ValueError, PrivateTestsError) as error:
        raise SuiteError(f"LiveCodeBench row {question_id!r}: {error}") from error
    if not isinstance(metadata, Mapping):
        raise SuiteError(f"LiveCodeBench row {question_id!r}: metadata must be a JSON object")
    func_name = metadata.get("func_name") or None
    starter_code = str(row.get("starter_code") or "")
    # LiveCodeBench decides the call style by the presence of func_name, not by testtype.
    kind = "functional" if func_name else "stdin"
    raw_date = row.get("contest_date")
    contest_date = None
    if raw_date:
        try:
            contest_date = raw_date if isinstance(raw_date, datetime) else datetime.fromisoformat(str(raw_date))
        except ValueError as error:
            raise SuiteError(f"LiveCodeBench row {question_id!r}: contest_date {raw_date!r} is not an ISO date") from error
    title = str(row.get("question_title") or question_id)
    question = (
        f"### {title}\n\n{str(row['question_content']).strip()}\n\n"
        f"### Format\n{_format_instruction(starter_code, func_name)}"
    )
    problem = Problem(
        id=question_id,
        question=question,
        domain="code",
        tests=public,
        metadata={
            "title": title,
            "platform": row.get("platform"),
            "contest_id": row.get("contest_id"),
            "contest_date": contest_date.isoformat() if contest_date else None,
            "difficulty": row.get("difficulty"),
            "starter_code": starter_code,
            "func_name": func_name,
            "kind": kind,
            "has_private_tests": has_private,
            "test_set": PUBLIC_AND_PRIVATE if has_private else PUBLIC_ONLY,
        },
    )
    return _Row(problem, contest_date)


#: First line of functional programs: LiveCodeBench imports them as a module (``tmp_sol``), so
#: an ``if __name__ == "__main__":`` demo (often reading input) does not run.
NOT_MAIN = '__name__ = "solution"  # imported, not run: `if __name__ == "__main__":` blocks stay off\n'


def build_program(code: str, kind: str = "stdin") -> str:
    """Returns the program LiveCodeBench would run for a worker's code.

    Args:
        code: The worker's code.
        kind: ``stdin`` (run as ``__main__``, as LiveCodeBench runs a final main guard) or
            ``functional`` (not ``__main__``: LiveCodeBench imports the code).

    Returns:
        :data:`LCB_IMPORT_HEADER` + code (functional programs also leave ``__main__``).
    """
    return (NOT_MAIN if kind == "functional" else "") + LCB_IMPORT_HEADER + code


# ---------------------------------------------------------------------------------------------
# The suite
# ---------------------------------------------------------------------------------------------

class LiveCodeBenchSuite(SandboxedSuite):
    """LiveCodeBench code generation, graded in a sandbox.

    Options (``gym.make("Conductor-LCB-v0", suite_options={...})``):
        version: Release tag, ``release_v1`` ... ``release_v6``/``release_latest`` (cumulative),
            or ``vN``/``vA_vB`` (single shards); default ``release_v6``. Picks the hub files;
            with ``data_files`` the files are the selection and ``version`` is not applied.
        start_date, end_date: Keep problems with ``start_date <= contest_date <= end_date``
            (``"YYYY-MM-DD"``, as LiveCodeBench's ``--start_date``/``--end_date``). The window
            the literature calls "LiveCodeBench v6" is ``2025-02-01`` to ``2025-05-01``.
        data_files: Local jsonl/parquet file(s) in the hub schema, instead of the hub (read
            into memory; a full release is several gigabytes, for which the hub cache is leaner).
        revision: A hub revision (commit or tag) to pin.
        sandbox: A sandbox name for :func:`conductor_env.sandboxes.get_sandbox` (``"auto"``,
            ``"docker"``, ``"local"``) or a :class:`Sandbox` instance (not closed by the suite).
        limits: :class:`Limits` (or a dict of its fields) per test; default the sandbox's.
        early_stop: Stop at the first failing test, as LiveCodeBench does (tests run in
            batches of doubling size; ``score`` then counts the tests not run as failed). With
            ``False`` every test runs and ``score`` is the full pass fraction.
        allow_public_only: Allow *training* on rows without private tests (default ``False``).
            Such rows are graded only on the examples printed in their statement, which a
            lookup table of them passes. Evaluating on them is always allowed; their problems
            have ``metadata["test_set"] == "public"`` (else ``"public+private"``) and every
            score of them says ``test_set="public"``. Training code (the GRPO and SB3 agents,
            ``Conductor-Mix-v0``'s ``train`` split) refuses them without this option and warns
            once with it (:mod:`conductor_env.tasks.public_tests`).

    Splits: ``"test"`` holds every selected problem.

    Raises:
        SuiteError: Unknown version, bad dates, a row outside the schema, no problems selected,
            or no hub access (the message names the dataset, ``data_files`` and HF_HUB_OFFLINE).
        PrivateTestsError: A row whose private tests are not a pickled plain string.
    """

    name = "lcb"
    default_split = "test"
    #: How many problems' decoded private tests are kept (a GRPO group shares one problem).
    private_cache_size = 4

    def __init__(
        self,
        *,
        version: str | None = None,
        start_date: str | date | None = None,
        end_date: str | date | None = None,
        data_files: str | Sequence[str] | None = None,
        revision: str | None = None,
        sandbox: SandboxRef = "auto",
        limits: Limits | Mapping[str, Any] | None = None,
        early_stop: bool = True,
        allow_public_only: bool = False,
    ) -> None:
        super().__init__(sandbox=sandbox, limits=limits)
        self.early_stop = early_stop
        self.allow_public_only = resolve_opt_in(allow_public_only)
        self.version = version or DEFAULT_VERSION
        self.start_date = _parse_date(start_date, "start_date")
        self.end_date = _parse_date(end_date, "end_date")
        self._lock = threading.Lock()
        self._private_cache: OrderedDict[str, list[dict[str, str]]] = OrderedDict()

        if data_files is not None:
            source: _RowSource = _LocalRows(data_files)
        else:
            source = _HubRows(release_files(self.version), self.version, revision)
        self._source = source
        self._problems: list[Problem] = []
        self._row_of: dict[str, int] = {}
        for index, row in enumerate(source.rows()):
            payload = source.payload(index)
            parsed = _row_to_problem(row, index, has_private=bool(payload and payload.strip()))
            if not self._in_window(parsed.contest_date):
                continue
            if parsed.problem.id in self._row_of:
                raise SuiteError(f"LiveCodeBench question_id {parsed.problem.id!r} appears twice in the data")
            try:
                _check_private_payload(payload)
            except PrivateTestsError as error:
                raise PrivateTestsError(
                    f"LiveCodeBench row {parsed.problem.id!r}: private_test_cases refused: {error}"
                ) from error
            self._row_of[parsed.problem.id] = index
            self._problems.append(parsed.problem)
        if not self._problems:
            window = f" between {start_date or 'the start'} and {end_date or 'the end'}" if (start_date or end_date) else ""
            raise SuiteError(f"no LiveCodeBench problems selected{window} ({source.count()} rows loaded)")

    def _in_window(self, contest_date: datetime | None) -> bool:
        if self.start_date is None and self.end_date is None:
            return True
        if contest_date is None:
            return False
        naive = contest_date.replace(tzinfo=None)
        if self.start_date is not None and naive < self.start_date:
            return False
        return self.end_date is None or naive <= self.end_date

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the suite without its lock and its cache of decoded private tests (rebuilt on
        demand); the sandbox is handled by :class:`SandboxedSuite`."""
        state = super().__getstate__()
        del state["_lock"]
        state["_private_cache"] = OrderedDict()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._lock = threading.Lock()

    # -- TaskSuite -------------------------------------------------------------------------------

    def problems(self, split: str | None = None) -> Sequence[Problem]:
        """Returns the selected problems (``"test"``, the only split), in file order.

        Raises:
            SuiteError: For another split name.
        """
        split = split or self.default_split
        if split != "test":
            raise SuiteError(f"LiveCodeBench has one split, 'test' (select releases with version=), got {split!r}")
        return list(self._problems)

    def tests_for(self, problem: Problem) -> list[dict[str, str]]:
        """Returns all tests of a problem, public then private (as LiveCodeBench grades them).

        Private tests are decoded on demand and the last few problems' kept: decoded, a release
        holds many gigabytes of tests.

        Raises:
            PrivateTestsError: When the private payload cannot be decoded safely.
        """
        public = list(problem.tests or [])
        index = self._row_of.get(problem.id)
        if index is None or not problem.metadata.get("has_private_tests"):
            return public
        with self._lock:
            private = self._private_cache.get(problem.id)
            if private is not None:
                self._private_cache.move_to_end(problem.id)
        if private is None:
            private = decode_private_tests(self._source.payload(index))
            with self._lock:
                self._private_cache[problem.id] = private
                while len(self._private_cache) > self.private_cache_size:
                    self._private_cache.popitem(last=False)
        return public + private

    def verify(self, problem: Problem, answer: str) -> Score:
        """Grades the last fenced Python block of ``answer`` on all the problem's tests.

        Args:
            problem: A problem of this suite.
            answer: The worker's response; its last fenced block (Python preferred) is the program.

        Returns:
            ``correct`` when every test passes; ``score`` the fraction passed; ``reason`` the
            first failing test's verdict and detail, ``"no code block"``, or a sandbox error;
            ``test_set`` the problem's (``"public"`` for a row without private tests, whose
            ``correct`` says only that the printed examples pass).

        Raises:
            VerifierError: When the sandbox could not run the program.
        """
        return replace(self._grade(problem, answer), test_set=graded_test_set(problem))

    def _grade(self, problem: Problem, answer: str) -> Score:
        code = extract_code(answer or "")
        if code is None:
            return Score(False, 0.0, "no code block")
        try:
            tests = self.tests_for(problem)
        except PrivateTestsError as error:
            return Score(False, 0.0, f"private tests refused: {error}")
        if not tests:
            return Score(False, 0.0, "the problem has no tests")
        kind = problem.metadata.get("kind", "stdin")
        options = {
            "kind": kind,
            "limits": self.limits,
            "func_name": problem.metadata.get("func_name") if kind == "functional" else None,
        }
        jobs = [{"input": test["input"], "output": test["output"]} for test in tests]
        program = build_program(code, kind)
        if self.early_stop:
            report = run_until_failure(self.sandbox(), program, jobs, **options)
        else:
            report = self.sandbox().run_tests(program, jobs, **options)
        return summarize_report(report, total=len(jobs))

    def reference_response(self, problem: Problem) -> str | None:
        """LiveCodeBench ships no reference solutions: ``None``."""
        return None

    def wrong_response(self, problem: Problem) -> str:
        """A plausible program that fails: it answers the first test with a value it does not expect."""
        first = (problem.tests or [{"output": ""}])[0]
        if problem.metadata.get("kind") == "functional":
            try:
                expected = json.loads(first["output"])
            except ValueError:
                expected = None
            value = "0" if expected is None else "None"
            func_name = problem.metadata.get("func_name") or "solve"
            code = f"class Solution:\n    def {func_name}(self, *args):\n        return {value}\n"
        else:
            value = "1" if first["output"].strip() == "0" else "0"
            code = f"import sys\n\ndata = sys.stdin.read().split()\nprint({value})\n"
        return f"A simple approach:\n\n```python\n{code}```\n"


# ---------------------------------------------------------------------------------------------
# Row sources
# ---------------------------------------------------------------------------------------------


class _RowSource:
    """Rows without their private tests, and each row's private payload on demand."""

    def rows(self) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def count(self) -> int:
        raise NotImplementedError

    def payload(self, index: int) -> str | None:
        raise NotImplementedError


class _LocalRows(_RowSource):
    """Rows read from local files into memory."""

    def __init__(self, data_files: str | Sequence[str]) -> None:
        from conductor_env.tasks.loading import load_rows

        rows = load_rows(HUB_DATASET, split="test", data_files=data_files, env_id=ENV_ID)
        self._payloads = [row.pop("private_test_cases", None) for row in rows]
        self._rows = rows

    def rows(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)

    def count(self) -> int:
        return len(self._rows)

    def payload(self, index: int) -> str | None:
        payload = self._payloads[index]
        return payload if isinstance(payload, str) else None


class _HubRows(_RowSource):
    """A release's shards from the hub, as a memory-mapped Arrow table (payloads stay on disk).

    The hub repository's loading script is not run (``datasets`` no longer runs scripts): the
    shards the script would read for the release are downloaded with ``huggingface_hub``
    (cached; ``HF_HUB_OFFLINE=1`` reads the cache) and read by the ``json`` builder.
    """

    def __init__(self, files: list[str], version: str, revision: str | None) -> None:
        from conductor_env.tasks.loading import ensure_hub_reachable, hub_help, hub_offline

        where = f"{HUB_DATASET} ({version}: {', '.join(files)})"
        ensure_hub_reachable(where, dataset=HUB_DATASET, env_id=ENV_ID)
        try:
            import datasets
            from huggingface_hub import hf_hub_download

            paths = [hf_hub_download(HUB_DATASET, name, repo_type="dataset", revision=revision) for name in files]
            table = datasets.load_dataset("json", data_files=paths, split="train")
        except Exception as error:  # huggingface_hub and datasets raise many types
            offline_note = " (HF_HUB_OFFLINE is set and it is not in the cache)" if hub_offline() else ""
            message = str(error).split("\n")[0][:300]
            raise SuiteError(
                f"cannot load {where} from the Hugging Face hub{offline_note}: {type(error).__name__}: {message}. "
                + hub_help(HUB_DATASET, ENV_ID)
            ) from error
        columns = set(table.column_names)
        self._table = table.remove_columns(["private_test_cases"]) if "private_test_cases" in columns else table
        self._private = table.select_columns(["private_test_cases"]) if "private_test_cases" in columns else None

    def rows(self) -> Iterator[dict[str, Any]]:
        return iter(self._table)

    def count(self) -> int:
        return len(self._table)

    def payload(self, index: int) -> str | None:
        return None if self._private is None else self._private[index]["private_test_cases"]
