"""Record any backend's completions to JSONL, and replay them: identical results, no live calls.

Recording wraps live workers; every call (and every failure, so retries replay the same way)
is appended to one JSONL file::

    from conductor_env.workers.replay import record_pool, replay_pool
    env = gym.make("Conductor-RG-v0", pool=record_pool("paper", "runs/calls.jsonl"))
    ...                                        # later, offline and free:
    env = gym.make("Conductor-RG-v0", pool=replay_pool("paper", "runs/calls.jsonl"))

or in a pool file::

    [[workers]]
    id = "gpt-5"
    backend = "replay"
    model = "gpt-5"
    path = "runs/calls.jsonl"
    fallthrough = false        # or a table describing the live worker, or a backend name

A call is keyed by the model, the messages, ``max_tokens``, ``temperature``, the seed and the
other call options, plus its *occurrence*: the n-th identical call of a worker gets the n-th
recorded answer, so G identical samples of a GRPO group replay as G distinct samples. Replayed
completions report the recorded tokens, cost and latency (so results match the live run byte for
byte) unless ``replay_cost = "zero"``. A call that was never recorded raises
:class:`ReplayMissError` (not retryable), or goes to the live ``fallthrough`` worker and is then
recorded too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from conductor_env.calls import Completion, Message, WorkerError

from conductor_env.workers.base import Worker, WorkerSpec
from conductor_env.workers.pool import WorkerPool, load_pool, spec_from_mapping

#: Call options that carry run context rather than sampling parameters (never part of a key).
NON_KEY_OPTIONS = frozenset({"problem", "oracle"})

#: Options of a ``replay`` spec that configure the replay itself.
REPLAY_OPTIONS = frozenset({"path", "fallthrough", "record_fallthrough", "replay_cost"})


class ReplayMissError(WorkerError):
    """A call has no recorded completion and no fallthrough worker is configured."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


def _jsonable(value: Any) -> Any:
    """Returns ``value`` as plain JSON data, or raises TypeError for things that are not data."""
    return json.loads(json.dumps(value, sort_keys=True, ensure_ascii=False))


def call_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the call options that belong in a key (JSON data only, run context dropped)."""
    kept: dict[str, Any] = {}
    for name in sorted(options):
        if name in NON_KEY_OPTIONS:
            continue
        try:
            kept[name] = _jsonable(options[name])
        except (TypeError, ValueError):
            continue  # callables and objects are context, not sampling parameters
    return kept


def request_key(
    model: str,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    temperature: float,
    seed: int | None,
    options: Mapping[str, Any],
) -> str:
    """Returns the content hash of one call (without its occurrence).

    Args:
        model: The model name.
        messages: The conversation.
        max_tokens: The effective output limit (defaults already applied).
        temperature: The effective temperature.
        seed: The call's seed or sample index.
        options: Call options (see :func:`call_options`).

    Returns:
        A hex SHA-256 of the canonical JSON of all of the above.
    """
    payload = {
        "model": model,
        "messages": [{"role": str(m["role"]), "content": str(m["content"])} for m in messages],
        "max_tokens": int(max_tokens),
        "temperature": float(temperature),
        "seed": seed,
        "options": call_options(options),
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class _Occurrences:
    """Counts identical calls so the n-th one maps to the n-th record (thread-safe)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def next(self, key: str) -> int:
        with self._lock:
            occurrence = self._counts[key]
            self._counts[key] += 1
            return occurrence

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {"counts": Counter(self._counts)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._counts = state["counts"]
        self._lock = threading.Lock()


class _JsonlWriter:
    """Appends one JSON line per record; each line is written in one call (safe across workers)."""

    _locks: dict[str, threading.Lock] = {}
    _locks_guard = threading.Lock()

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        with self._locks_guard:
            self._lock = self._locks.setdefault(str(self.path.resolve()), threading.Lock())

    def append(self, record: Mapping[str, Any]) -> None:
        line = json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]


def _effective(spec: WorkerSpec, max_tokens: int | None, temperature: float | None) -> tuple[int, float]:
    return (
        int(max_tokens if max_tokens is not None else spec.max_tokens),
        float(temperature if temperature is not None else spec.temperature),
    )


def _completion_record(completion: Completion) -> dict[str, Any]:
    return dataclasses.asdict(completion)


class RecordingWorker(Worker):
    """Wraps a live worker and appends every call and its outcome to a JSONL file.

    Args:
        inner: The live worker.
        path: The JSONL file (created; appended to when it exists).
    """

    def __init__(self, inner: Worker, path: str | os.PathLike[str]) -> None:
        super().__init__(inner.spec)
        self.inner = inner
        self.writer = _JsonlWriter(path)
        self._occurrences = _Occurrences()

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        **options: Any,
    ) -> Completion:
        """Calls the live worker and records the request with its completion or error.

        Raises:
            WorkerError: Whatever the live worker raised (after recording it).
        """
        max_tokens, temperature = _effective(self.spec, max_tokens, temperature)
        key = request_key(self.spec.model, messages, max_tokens=max_tokens, temperature=temperature, seed=seed, options=options)
        return await self.record_call(
            key, self._occurrences.next(key), messages, max_tokens=max_tokens, temperature=temperature, seed=seed, **options
        )

    async def record_call(
        self,
        key: str,
        occurrence: int,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        **options: Any,
    ) -> Completion:
        """Calls the live worker and records the outcome under ``key`` and ``occurrence``.

        Raises:
            WorkerError: Whatever the live worker raised (after recording it).
        """
        spec = self.spec
        record: dict[str, Any] = {
            "key": key,
            "occurrence": occurrence,
            "worker": spec.name,
            "backend": spec.backend,
            "model": spec.model,
            "request": {
                "messages": [{"role": str(m["role"]), "content": str(m["content"])} for m in messages],
                "max_tokens": max_tokens,
                "temperature": temperature,
                "seed": seed,
                "options": call_options(options),
            },
        }
        try:
            completion = await self.inner.complete(
                messages, max_tokens=max_tokens, temperature=temperature, seed=seed, **options
            )
        except WorkerError as error:
            record["error"] = {"message": str(error), "retryable": bool(error.retryable)}
            self.writer.append(record)
            raise
        except asyncio.CancelledError:
            # The caller's timeout (or the end of the episode) cancelled the call; the caller will
            # see a timeout, so the replay raises one at this point too and the retries line up.
            record["error"] = {"message": "the call was cancelled (timed out)", "retryable": True, "cancelled": True}
            self.writer.append(record)
            raise
        record["completion"] = _completion_record(completion)
        self.writer.append(record)
        return completion

    async def aclose(self) -> None:
        """Closes the live worker."""
        await self.inner.aclose()


def load_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Reads a recording.

    Args:
        path: The JSONL file written by :class:`RecordingWorker`.

    Returns:
        The records in file order.

    Raises:
        ValueError: For a line that is not a JSON object with a ``key`` (names the line).
    """
    records: list[dict[str, Any]] = []
    with open(Path(path).expanduser(), encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON ({error})") from error
            if not isinstance(record, dict) or "key" not in record:
                raise ValueError(f"{path}:{number}: not a recorded call")
            records.append(record)
    return records


def _fallthrough_spec(spec: WorkerSpec, setting: Any) -> WorkerSpec | None:
    """Builds the live worker's spec from a replay spec's ``fallthrough`` option."""
    if setting is None or setting is False:
        return None
    if isinstance(setting, WorkerSpec):
        return setting
    base = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec) if f.name not in ("options", "backend")}
    options = {k: v for k, v in spec.options.items() if k not in REPLAY_OPTIONS}
    if isinstance(setting, str):
        return spec_from_mapping({**base, "backend": setting, "options": options})
    if isinstance(setting, Mapping):
        return spec_from_mapping({**base, "options": options, **setting})
    raise WorkerError(
        f"worker {spec.name!r}: fallthrough must be false, a backend name or a worker table, got {setting!r}",
        retryable=False,
    )


class ReplayWorker(Worker):
    """Answers from a recording made by :class:`RecordingWorker`.

    Args:
        spec: A ``replay`` spec. ``options["path"]`` is the JSONL file; ``options["fallthrough"]``
            is ``False`` (default: a miss raises :class:`ReplayMissError`), a backend name (the
            live worker is this spec with that backend), a table of worker fields, or a
            :class:`WorkerSpec`; ``record_fallthrough`` (default true) appends live answers to
            the file; ``replay_cost`` is ``"recorded"`` (default) or ``"zero"``.

    Attributes:
        hits: Calls answered from the recording.
        live_calls: Calls sent to the fallthrough worker.
    """

    def __init__(self, spec: WorkerSpec) -> None:
        super().__init__(spec)
        self.path = spec.options.get("path")
        self.hits = 0
        self.live_calls = 0
        self._occurrences = _Occurrences()
        self._index: dict[tuple[str, str, int], dict[str, Any]] | None = None
        self._any_worker: dict[tuple[str, int], dict[str, Any]] = {}
        self._live: Worker | None = None
        self._writer: _JsonlWriter | None = None
        self._lock = threading.Lock()

    def _load(self) -> dict[tuple[str, str, int], dict[str, Any]]:
        with self._lock:
            if self._index is not None:
                return self._index
            if not self.path:
                raise WorkerError(f"worker {self.spec.name!r}: a replay worker needs a 'path' to a recording", retryable=False)
            index: dict[tuple[str, str, int], dict[str, Any]] = {}
            path = Path(str(self.path)).expanduser()
            if path.exists():
                try:
                    records = load_records(path)
                except (OSError, ValueError) as error:
                    raise WorkerError(f"worker {self.spec.name!r}: cannot read recording: {error}", retryable=False) from None
                for record in records:
                    occurrence = int(record.get("occurrence", 0))
                    index.setdefault((str(record.get("worker", "")), record["key"], occurrence), record)
                    self._any_worker.setdefault((record["key"], occurrence), record)
            elif self.spec.options.get("fallthrough") in (None, False):
                raise WorkerError(f"worker {self.spec.name!r}: recording {str(path)!r} does not exist", retryable=False)
            self._index = index
            return index

    def _live_worker(self) -> Worker | None:
        if self._live is None:
            live_spec = _fallthrough_spec(self.spec, self.spec.options.get("fallthrough", False))
            if live_spec is None:
                return None
            live = WorkerPool([live_spec]).worker(0)
            if self.spec.options.get("record_fallthrough", True):
                live = RecordingWorker(live, str(self.path))
            self._live = live
        return self._live

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        **options: Any,
    ) -> Completion:
        """Returns the recorded completion of this call (or re-raises its recorded error).

        Raises:
            ReplayMissError: When the call was not recorded and there is no fallthrough.
            WorkerError: A recorded failure, or the fallthrough worker's failure.
        """
        index = self._load()
        max_tokens, temperature = _effective(self.spec, max_tokens, temperature)
        key = request_key(self.spec.model, messages, max_tokens=max_tokens, temperature=temperature, seed=seed, options=options)
        occurrence = self._occurrences.next(key)
        record = index.get((self.spec.name, key, occurrence)) or self._any_worker.get((key, occurrence))
        if record is not None:
            self.hits += 1
            return self._replayed(record)
        live = self._live_worker()
        if live is None:
            preview = str(messages[-1]["content"])[:80] if messages else ""
            raise ReplayMissError(
                f"worker {self.spec.name!r}: no recorded completion in {self.path} for model {self.spec.model!r}, "
                f"key {key[:12]} occurrence {occurrence} (last message {preview!r}); record it with "
                "RecordingWorker/record_pool or set fallthrough"
            )
        self.live_calls += 1
        if isinstance(live, RecordingWorker):
            return await live.record_call(
                key, occurrence, messages, max_tokens=max_tokens, temperature=temperature, seed=seed, **options
            )
        return await live.complete(messages, max_tokens=max_tokens, temperature=temperature, seed=seed, **options)

    def _replayed(self, record: Mapping[str, Any]) -> Completion:
        """Rebuilds a recorded outcome: a completion, a :class:`WorkerError` or a timeout."""
        if "error" in record:
            error = record["error"]
            if error.get("cancelled"):
                raise asyncio.TimeoutError(str(error.get("message", "timed out")))
            raise WorkerError(str(error.get("message", "recorded failure")), retryable=bool(error.get("retryable", True)))
        data = dict(record["completion"])
        if self.spec.options.get("replay_cost", "recorded") == "zero":
            data["cost_usd"] = 0.0
        return Completion(**{f.name: data[f.name] for f in dataclasses.fields(Completion) if f.name in data})

    async def aclose(self) -> None:
        """Closes the fallthrough worker, if one was started."""
        if self._live is not None:
            await self._live.aclose()
            self._live = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the worker with its loaded index and call counts; the copy's fallthrough
        worker, if any, opens its own clients."""
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


class _WrappingPool(WorkerPool):
    """A pool whose workers are built by ``make(index)`` (recording or replaying another pool)."""

    def __init__(self, specs: Sequence[WorkerSpec], *, name: str, make: Callable[[int], Worker], inner: WorkerPool | None) -> None:
        super().__init__(specs, name=name)
        self._make = make
        self._inner = inner
        self._wrapped: dict[int, Worker] = {}

    def worker(self, index: int) -> Worker:
        """Returns the wrapped worker ``index`` (built on first use)."""
        if index not in self._wrapped:
            self._wrapped[index] = self._make(index)
        return self._wrapped[index]

    async def aclose(self) -> None:
        """Closes the wrapped workers and the pool they wrap."""
        for worker in self._wrapped.values():
            await worker.aclose()
        self._wrapped.clear()
        if self._inner is not None:
            await self._inner.aclose()
        await super().aclose()

    def __getstate__(self) -> dict[str, Any]:
        """Pickles the pool without its wrapped workers (a copy builds its own on first use)."""
        state = super().__getstate__()
        state["_wrapped"] = {}
        return state


def _recording_worker(live: WorkerPool, path: str | os.PathLike[str], index: int) -> Worker:
    return RecordingWorker(live.worker(index), path)


def _replay_worker(specs: Sequence[WorkerSpec], index: int) -> ReplayWorker:
    return ReplayWorker(specs[index])


def record_pool(pool: str | WorkerPool | Sequence[WorkerSpec], path: str | os.PathLike[str]) -> WorkerPool:
    """Wraps every worker of ``pool`` in a :class:`RecordingWorker` writing to ``path``.

    Args:
        pool: A preset name, a pool file, a :class:`WorkerPool` or specs (see ``load_pool``).
        path: The JSONL recording (appended to).

    Returns:
        A pool with the same workers, ids and limits that records every call.
    """
    live = load_pool(pool)
    return _WrappingPool(live.specs, name=live.name, make=functools.partial(_recording_worker, live, path), inner=live)


def replay_pool(
    pool: str | WorkerPool | Sequence[WorkerSpec],
    path: str | os.PathLike[str],
    *,
    fallthrough: bool = False,
    replay_cost: str = "recorded",
) -> WorkerPool:
    """Builds a pool that answers ``pool``'s calls from the recording at ``path``.

    Args:
        pool: The pool that was recorded (its specs give names, models and defaults).
        path: The JSONL recording.
        fallthrough: Send unrecorded calls to the live worker (and record them) instead of
            raising :class:`ReplayMissError`.
        replay_cost: ``"recorded"`` (report the recorded cost) or ``"zero"``.

    Returns:
        A pool of :class:`ReplayWorker` with the same ids, limits and defaults.
    """
    live = load_pool(pool)
    specs = [
        dataclasses.replace(
            spec,
            backend="replay",
            options={
                "path": str(path),
                "fallthrough": spec if fallthrough else False,
                "replay_cost": replay_cost,
            },
        )
        for spec in live.specs
    ]
    return _WrappingPool(specs, name=live.name, make=functools.partial(_replay_worker, specs), inner=None)
