"""The results file: one JSON line per finished episode, appended and fsynced as it finishes.

A killed run loses at most the episodes in flight: every finished episode is on disk before the
next one is recorded, a partially written last line (the process died mid-write) is dropped when
the file is reopened, and a rerun skips every episode whose key is already present.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

try:  # POSIX advisory locks; elsewhere two writers are simply not detected
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

RESULTS_NAME = "results.jsonl"
MANIFEST_NAME = "run.json"
LOCK_NAME = ".results.lock"

#: An episode's identity in a results file: (env id, pool, policy, problem id, sample).
EpisodeKey = tuple[str, str, str, str, int]


def episode_key(record: dict[str, Any]) -> EpisodeKey:
    """Returns the key that identifies a record's episode for resuming.

    Args:
        record: A results record (needs ``env_id``, ``pool``, ``policy``, ``problem_id``, ``sample``).

    Returns:
        The key tuple.
    """
    return (str(record["env_id"]), str(record["pool"]), str(record["policy"]), str(record["problem_id"]), int(record.get("sample", 0)))


def truncate_text(text: Any, limit: int) -> str:
    """Returns ``text`` cut to ``limit`` characters, saying how much was dropped.

    Args:
        text: Any value (``None`` gives ``""``; non-strings are converted).
        limit: The most characters kept before the marker.

    Returns:
        The text, or its head followed by ``… [N more characters]``.
    """
    if text is None:
        return ""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


@dataclass
class LoadedResults:
    """What :func:`read_results` found.

    Attributes:
        records: The last record of each episode key, in file order of those last records.
        skipped_lines: Lines that were not valid records (a crash mid-write, hand edits).
        duplicates: Records replaced by a later record with the same key.
    """

    records: list[dict[str, Any]]
    skipped_lines: int = 0
    duplicates: int = 0


def _iter_lines(path: Path) -> Iterator[str]:
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        yield from handle


def read_results(path: str | os.PathLike[str]) -> LoadedResults:
    """Reads a results file, tolerating a partial last line and invalid lines.

    Args:
        path: A ``results.jsonl`` file or the folder holding one.

    Returns:
        The records, one per episode key (the last one written wins).

    Raises:
        FileNotFoundError: When there is no results file there.
    """
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no results file at {str(path)!r}")
    by_key: dict[EpisodeKey, dict[str, Any]] = {}
    skipped = duplicates = 0
    for line in _iter_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            key = episode_key(record)
        except (ValueError, KeyError, TypeError):
            skipped += 1
            continue
        if key in by_key:
            duplicates += 1
            del by_key[key]  # the newest record takes the later position
        by_key[key] = record
    return LoadedResults(list(by_key.values()), skipped_lines=skipped, duplicates=duplicates)


class ResultsWriter:
    """Appends records to ``DIR/results.jsonl`` with one fsync per record.

    Opening takes an exclusive advisory lock on the folder (a second writer fails fast instead
    of interleaving lines) and drops a partially written last line left by a killed run.

    Args:
        folder: The output folder (created if needed).

    Raises:
        RuntimeError: When another process is writing to the same folder.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / RESULTS_NAME
        self._lock = (self.folder / LOCK_NAME).open("a+")
        if fcntl is not None:
            try:
                fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                self._lock.close()
                raise RuntimeError(f"another conductor-env process is writing to {str(self.folder)!r}") from error
        _drop_partial_tail(self.path)
        self._handle = self.path.open("a", encoding="utf-8")

    def append(self, record: dict[str, Any]) -> None:
        """Writes one record as a line and forces it to disk.

        Args:
            record: A JSON-serialisable mapping (non-JSON values are converted with ``str``).
        """
        line = json.dumps(record, ensure_ascii=False, default=str, allow_nan=False)
        self._handle.write(line + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def append_many(self, records: Iterable[dict[str, Any]]) -> None:
        """Appends several records (each fsynced)."""
        for record in records:
            self.append(record)

    def close(self) -> None:
        """Closes the file and releases the folder lock (safe to call twice)."""
        if not self._handle.closed:
            self._handle.close()
        if not self._lock.closed:
            self._lock.close()

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_partial_tail(path: Path) -> None:
    """Truncates ``path`` after its last newline (a record cut short by a kill)."""
    if not path.exists():
        return
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        position = size
        chunk = 1 << 16
        while position > 0:
            start = max(0, position - chunk)
            handle.seek(start)
            data = handle.read(position - start)
            newline = data.rfind(b"\n")
            if newline != -1:
                handle.truncate(start + newline + 1)
                break
            position = start
        else:
            handle.truncate(0)
        handle.flush()
        os.fsync(handle.fileno())


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Returns the run settings stored beside the results (``None`` when absent or unreadable)."""
    path = Path(folder) / MANIFEST_NAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_manifest(folder: str | os.PathLike[str], manifest: dict[str, Any]) -> None:
    """Atomically writes the run settings beside the results."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / (MANIFEST_NAME + ".tmp")
    temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(temporary, folder / MANIFEST_NAME)
