"""Dataset rows for the suites: local files, or the Hugging Face hub through ``datasets``.

Local files (``data_files=``) are read directly: JSON Lines, JSON, CSV (each optionally
gzipped) and Parquet. Reading them directly keeps every value exactly as written (``datasets``'
JSON builder unifies column types across rows, turning AIME's ``"025"`` and ``25`` into one
type) and writes no Arrow cache for files of a few thousand rows.

Without local files the rows come from ``datasets.load_dataset``. When the hub is unreachable
``datasets`` retries for about half a minute per dataset, so before calling it this module
probes the hub endpoint once with a short timeout (``CONDUCTOR_HUB_PROBE_TIMEOUT`` seconds,
default 3; the result is remembered for a minute) and fails fast with a :class:`SuiteError`
that names the dataset, the ``data_files`` option and ``HF_HUB_OFFLINE``. With
``HF_HUB_OFFLINE=1`` set before Python starts, the probe is skipped and ``datasets`` answers
from its cache only.
"""

from __future__ import annotations

import csv
import glob
import gzip
import io
import json
import os
import time
from pathlib import Path
from typing import IO, Any, Mapping, Sequence, Union

from conductor_env.tasks.registry import SuiteError

__all__ = ["DataFiles", "ensure_hub_reachable", "hub_help", "hub_offline", "load_rows", "read_data_files"]

PathLike = Union[str, "os.PathLike[str]"]
#: One path, several paths, or a mapping from split name to path(s).
DataFiles = Union[PathLike, Sequence[PathLike], Mapping[str, Union[PathLike, Sequence[PathLike]]]]

_PROBE_TTL_S = 60.0
_probe_cache: dict[str, tuple[float, str | None]] = {}


def hub_offline() -> bool:
    """Whether the hub is switched off (``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` truthy)."""
    return any(os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"} for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _library_offline() -> bool:
    """Whether huggingface_hub itself is offline (it reads the variable once, at import)."""
    import huggingface_hub.constants

    return bool(huggingface_hub.constants.HF_HUB_OFFLINE)


def _hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def _probe_hub() -> str | None:
    """Returns ``None`` when the hub endpoint answers, else why it does not (cached briefly)."""
    import httpx

    endpoint = _hub_endpoint()
    cached = _probe_cache.get(endpoint)
    if cached and time.monotonic() - cached[0] < _PROBE_TTL_S:
        return cached[1]
    timeout = float(os.environ.get("CONDUCTOR_HUB_PROBE_TIMEOUT", "3"))
    try:
        # Any HTTP answer, even an error status, proves the endpoint is reachable.
        httpx.head(endpoint, timeout=timeout, follow_redirects=False)
        problem = None
    except httpx.HTTPError as error:
        problem = f"{endpoint} is unreachable ({type(error).__name__}: {error or 'no answer'})"
    _probe_cache[endpoint] = (time.monotonic(), problem)
    return problem


def ensure_hub_reachable(what: str, *, dataset: str, env_id: str | None = None, gated: bool = False) -> None:
    """Fails fast when the hub cannot be reached, instead of letting ``datasets`` retry.

    Skipped when the hub libraries are in offline mode (they then read only their cache).

    Args:
        what: What is being loaded, for the message (e.g. ``"cais/mmlu (config 'all')"``).
        dataset: The hub id, for the help text.
        env_id: The gym id, for the help text.
        gated: Whether to explain authentication too.

    Raises:
        SuiteError: Naming ``what``, why the hub is unreachable, ``data_files`` and
            ``HF_HUB_OFFLINE``.
    """
    if hub_offline() and _library_offline():
        return
    problem = _probe_hub()
    if problem:
        raise SuiteError(f"cannot load {what} from the Hugging Face hub: {problem}. " + hub_help(dataset, env_id, gated))


def hub_help(dataset: str, env_id: str | None = None, gated: bool = False) -> str:
    """The advice appended to hub failures: local files, ``HF_HUB_OFFLINE``, authentication."""
    return _hub_help(dataset, env_id, gated)


def _hub_help(dataset: str, env_id: str | None, gated: bool) -> str:
    make = f'gym.make("{env_id}", ' if env_id else "gym.make(..., "
    lines = [
        f"Pass local files of {dataset!r} instead with the data_files option, e.g. "
        f'{make}suite_options={{"data_files": "path/to/rows.jsonl"}}) '
        "(JSON Lines, JSON, CSV or Parquet in the dataset's schema), "
        "or set HF_HUB_OFFLINE=1 to use a copy already in the datasets cache.",
    ]
    if gated:
        lines.append(f"{dataset!r} is gated on the hub: accept its terms on its hub page, then authenticate with `huggingface-cli login` (or `hf auth login`) or set HF_TOKEN.")
    return " ".join(lines)


def load_rows(
    dataset: str,
    *,
    config: str | None = None,
    split: str = "test",
    data_files: DataFiles | None = None,
    revision: str | None = None,
    gated: bool = False,
    env_id: str | None = None,
) -> list[dict[str, Any]]:
    """Loads the rows of one split of a dataset.

    Args:
        dataset: The hub id, e.g. ``"HuggingFaceH4/MATH-500"`` (also used in messages).
        config: The hub configuration (``"all"`` for MMLU, ``"gpqa_diamond"``).
        split: The split to load. With a mapping ``data_files`` it picks the entry.
        data_files: Local files to read instead of the hub: a path, a glob, a list of them, or
            ``{split: path(s)}``.
        revision: A hub revision (commit, tag or branch) to pin.
        gated: Whether the hub dataset needs an accepted licence and a token (the error then
            says how to authenticate).
        env_id: The gym id the rows are for, quoted in error messages.

    Returns:
        The rows as plain dicts, in file (or dataset) order.

    Raises:
        SuiteError: When a local file is missing or unreadable, or the hub cannot serve the
            dataset (offline, unreachable, gated, unknown); the message says what to do.
    """
    if data_files is not None:
        if isinstance(data_files, Mapping):
            if split not in data_files:
                raise SuiteError(f"data_files for {dataset!r} has no split {split!r} (it has {sorted(data_files)})")
            data_files = data_files[split]
        return read_data_files(data_files, dataset=dataset)
    return _load_from_hub(dataset, config=config, split=split, revision=revision, gated=gated, env_id=env_id)


def _load_from_hub(dataset: str, *, config: str | None, split: str, revision: str | None, gated: bool, env_id: str | None) -> list[dict[str, Any]]:
    name = dataset + (f" (config {config!r}, split {split!r})" if config else f" (split {split!r})")
    ensure_hub_reachable(name, dataset=dataset, env_id=env_id, gated=gated)
    try:
        import datasets
    except ImportError as error:  # pragma: no cover - datasets is a dependency
        raise SuiteError(f"loading {name} from the hub needs the `datasets` package: {error}") from error
    try:
        loaded = datasets.load_dataset(dataset, config, split=split, revision=revision)
    except Exception as error:  # datasets raises many types (ConnectionError, FileNotFoundError, ...)
        message = str(error).split("\n")[0][:300]
        is_gated = gated or "gated" in message.lower() or "authenticat" in message.lower()
        offline_note = " (HF_HUB_OFFLINE is set and it is not in the cache)" if hub_offline() else ""
        raise SuiteError(f"cannot load {name} from the Hugging Face hub{offline_note}: {type(error).__name__}: {message}. " + _hub_help(dataset, env_id, is_gated)) from error
    return [dict(row) for row in loaded]


def read_data_files(data_files: PathLike | Sequence[PathLike], *, dataset: str = "dataset") -> list[dict[str, Any]]:
    """Reads rows from local files, concatenated in the order given.

    Args:
        data_files: A path or glob, or a list of them. Formats by suffix: ``.jsonl``,
            ``.json``, ``.csv`` (each also ``.gz``) and ``.parquet``.
        dataset: The dataset name used in error messages.

    Returns:
        The rows as dicts.

    Raises:
        SuiteError: For a missing file, an unknown format or a malformed row.
    """
    patterns = [data_files] if isinstance(data_files, (str, os.PathLike)) else list(data_files)
    if not patterns:
        raise SuiteError(f"data_files for {dataset!r} is empty")
    rows: list[dict[str, Any]] = []
    for pattern in patterns:
        text = os.path.expanduser(os.fspath(pattern))
        paths = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        if not paths or not all(Path(p).is_file() for p in paths):
            missing = text if not paths else next(p for p in paths if not Path(p).is_file())
            raise SuiteError(f"data file for {dataset!r} not found: {missing}")
        for path in paths:
            rows.extend(_read_file(Path(path), dataset))
    return rows


def _read_file(path: Path, dataset: str) -> list[dict[str, Any]]:
    suffixes = [s.lower() for s in path.suffixes]
    compressed = bool(suffixes) and suffixes[-1] == ".gz"
    kind = suffixes[-2] if compressed and len(suffixes) > 1 else (suffixes[-1] if suffixes else "")
    try:
        if kind == ".parquet":
            import pyarrow.parquet

            return pyarrow.parquet.read_table(path).to_pylist()
        if kind not in {".jsonl", ".ndjson", ".json", ".csv"}:
            raise SuiteError(f"data file {path} for {dataset!r} has an unknown format; use .jsonl, .json, .csv (optionally .gz) or .parquet")
        with _open_text(path, compressed) as handle:
            if kind == ".csv":
                return [dict(row) for row in csv.DictReader(handle)]
            text = handle.read()
        if kind == ".json":
            return _json_rows(text, path, dataset)
        return _jsonl_rows(text, path, dataset)
    except SuiteError:
        raise
    except Exception as error:
        raise SuiteError(f"cannot read data file {path} for {dataset!r}: {type(error).__name__}: {error}") from error


def _open_text(path: Path, compressed: bool) -> IO[str]:
    if compressed:
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _jsonl_rows(text: str, path: Path, dataset: str) -> list[dict[str, Any]]:
    rows = []
    # Only "\n" ends a row: splitlines() would also split inside strings at U+2028, U+0085, ...
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise SuiteError(f"{path}:{number}: not valid JSON ({error.msg}) in data for {dataset!r}") from error
        if not isinstance(row, dict):
            raise SuiteError(f"{path}:{number}: a row must be a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows


def _json_rows(text: str, path: Path, dataset: str) -> list[dict[str, Any]]:
    """A JSON array of rows, ``{"data"|"rows": [...]}``, or JSON Lines saved as ``.json``."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return _jsonl_rows(text, path, dataset)
    if isinstance(document, dict):
        for key in ("data", "rows", "train", "test"):
            if isinstance(document.get(key), list):
                document = document[key]
                break
        else:
            document = [document]
    if not isinstance(document, list) or not all(isinstance(row, dict) for row in document):
        raise SuiteError(f"{path}: expected a JSON array of objects for {dataset!r}")
    return document
