"""Recording a live worker: every call and its outcome appended to a JSONL recording.

:class:`RecordingWorker` wraps any backend's worker; :func:`conductor_env.workers.replay.record_pool`
wraps a whole pool, and :class:`~conductor_env.workers.replay.ReplayWorker` answers from the file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from typing import Any, Sequence

from conductor_env.calls import CallContext, Completion, Message, WorkerError
from conductor_env.workers.base import Worker
from conductor_env.workers.recordings import JsonlWriter, Occurrences, effective_params, request_key


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
        self.writer = JsonlWriter(path)
        self._occurrences = Occurrences()

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        context: CallContext | None = None,
    ) -> Completion:
        """Calls the live worker and records the request with its completion or error.

        The context goes to the live worker but neither into the key nor into the recording.

        Raises:
            WorkerError: Whatever the live worker raised (after recording it).
        """
        max_tokens, temperature = effective_params(self.spec, max_tokens, temperature)
        key = request_key(self.spec.model, messages, max_tokens=max_tokens, temperature=temperature, seed=seed)
        return await self.record_call(key, self._occurrences.next(key), messages, max_tokens=max_tokens, temperature=temperature, seed=seed, context=context)

    async def record_call(
        self,
        key: str,
        occurrence: int,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        context: CallContext | None = None,
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
                "options": {},  # once the per-call backend options; kept for the file's readers
            },
        }
        try:
            completion = await self.inner.complete(messages, max_tokens=max_tokens, temperature=temperature, seed=seed, context=context)
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
