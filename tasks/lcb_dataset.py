"""LiveCodeBench's data: release tags, row sources (hub or local files), and rows as problems.

Rows come from the hub dataset ``livecodebench/code_generation_lite`` (a release such as
``release_v6``, the evaluation default, or ``release_v1``, the paper's training data) or from
local jsonl/parquet files in the same schema. A row source keeps the rows without their private
tests and hands out each row's private payload on demand (decoded by
:mod:`conductor_env.tasks.lcb_private_tests`): decoded, a release holds many gigabytes of tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Iterator, Mapping, Sequence

from conductor_env.suite import Problem
from conductor_env.tasks.lcb_private_tests import PrivateTestsError, as_tests
from conductor_env.tasks.public_tests import PUBLIC_AND_PRIVATE, PUBLIC_ONLY
from conductor_env.tasks.registry import SuiteError

__all__ = [
    "DEFAULT_VERSION",
    "ENV_ID",
    "HUB_DATASET",
    "HubRows",
    "LocalRows",
    "ParsedRow",
    "RELEASES",
    "RowSource",
    "TRAIN_VERSION",
    "open_rows",
    "parse_date",
    "release_files",
    "row_to_problem",
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
    **{f"v{a}_v{b}": _SHARDS[a - 1 : b] for a in range(1, len(_SHARDS) + 1) for b in range(a + 1, len(_SHARDS) + 1)},
}

_REQUIRED_FIELDS = ("question_id", "question_content", "public_test_cases")


def release_files(version: str) -> list[str]:
    """Returns the hub files (shards) of a LiveCodeBench release tag.

    Raises:
        SuiteError: For an unknown tag, listing the valid ones.
    """
    if version not in RELEASES:
        main = ", ".join(sorted(k for k in RELEASES if k.startswith("release_")))
        raise SuiteError(f"unknown LiveCodeBench version {version!r}; use one of {main}, or vN / vA_vB")
    return list(RELEASES[version])


def parse_date(value: str | date | datetime | None, option: str) -> datetime | None:
    """Returns a ``start_date``/``end_date`` option as a datetime (``None`` stays ``None``).

    Raises:
        SuiteError: For text that is not a ``YYYY-MM-DD`` date, naming ``option``.
    """
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    try:
        return datetime.strptime(str(value), "%Y-%m-%d")
    except ValueError as error:
        raise SuiteError(f"{option} must be a date like '2025-02-01', got {value!r}") from error


# ---------------------------------------------------------------------------------------------
# Rows -> problems
# ---------------------------------------------------------------------------------------------


def _json_field(row: Mapping[str, Any], key: str, default: Any) -> Any:
    value = row.get(key)
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        return value  # parquet exports sometimes hold the decoded value already
    return json.loads(value)


@dataclass(frozen=True)
class ParsedRow:
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


def row_to_problem(row: Mapping[str, Any], index: int, has_private: bool) -> ParsedRow:
    """Returns a row (without its private tests) as a problem whose tests are the public ones.

    Args:
        row: A row in the hub schema.
        index: The row's position, for error messages.
        has_private: Whether the row has a private-test payload (sets the problem's test set).

    Raises:
        SuiteError: For a row outside the schema (missing fields, bad JSON, a bad contest date).
    """
    missing = [key for key in _REQUIRED_FIELDS if key not in row]
    if missing:
        raise SuiteError(f"LiveCodeBench row {index} lacks {', '.join(missing)}; rows need the {HUB_DATASET} schema (question_id, question_content, public_test_cases, ...)")
    question_id = str(row["question_id"])
    try:
        public = as_tests(_json_field(row, "public_test_cases", []), "public_test_cases")
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
    question = f"### {title}\n\n{str(row['question_content']).strip()}\n\n### Format\n{_format_instruction(starter_code, func_name)}"
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
    return ParsedRow(problem, contest_date)


# ---------------------------------------------------------------------------------------------
# Row sources
# ---------------------------------------------------------------------------------------------


class RowSource:
    """Rows without their private tests, and each row's private payload on demand."""

    def rows(self) -> Iterator[dict[str, Any]]:
        """Returns the rows in file order, without ``private_test_cases``."""
        raise NotImplementedError

    def count(self) -> int:
        """Returns how many rows were loaded."""
        raise NotImplementedError

    def payload(self, index: int) -> str | None:
        """Returns row ``index``'s ``private_test_cases`` field, still encoded (``None``: none)."""
        raise NotImplementedError


class LocalRows(RowSource):
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


class HubRows(RowSource):
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
            raise SuiteError(f"cannot load {where} from the Hugging Face hub{offline_note}: {type(error).__name__}: {message}. " + hub_help(HUB_DATASET, ENV_ID)) from error
        columns = set(table.column_names)
        self._table = table.remove_columns(["private_test_cases"]) if "private_test_cases" in columns else table
        self._private = table.select_columns(["private_test_cases"]) if "private_test_cases" in columns else None

    def rows(self) -> Iterator[dict[str, Any]]:
        return iter(self._table)

    def count(self) -> int:
        return len(self._table)

    def payload(self, index: int) -> str | None:
        return None if self._private is None else self._private[index]["private_test_cases"]


def open_rows(data_files: str | Sequence[str] | None, version: str, revision: str | None) -> RowSource:
    """Returns the rows of local ``data_files`` if given, else of release ``version`` on the hub.

    Raises:
        SuiteError: For an unknown version (hub only), unreadable files, or no hub access.
    """
    if data_files is not None:
        return LocalRows(data_files)
    return HubRows(release_files(version), version, revision)
