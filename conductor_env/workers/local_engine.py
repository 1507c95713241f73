"""The engine of the ``local`` backend: a transformers causal LM that batches concurrent calls.

Many episodes in flight must not mean one ``generate()`` per call, one after another. Every call
is queued to a generation thread owned by a :class:`LocalEngine` (one per loaded model, shared by
all workers that name it); the thread gathers what arrived within a few milliseconds (and
everything that queued up while the previous batch ran), left-pads it, and runs one
``generate()`` for the whole batch, off the event loop. Each row keeps its own temperature,
top-p/top-k, seed, output limit and stop, so batching never changes what a call asks for.

Greedy decoding when the temperature is 0; otherwise each row is sampled with its own
``torch.Generator`` seeded by the call's ``seed`` (so a seeded call gives the same text alone or in
a batch, up to floating-point effects of padding). :mod:`conductor_env.workers.local` is the
worker that queues calls here.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from conductor_env.calls import Message, WorkerError
from conductor_env.workers.local_models import MODEL_LOAD_LOCK

logger = logging.getLogger(__name__)

DEFAULT_MAX_BATCH_SIZE = 16
DEFAULT_BATCH_WAIT_MS = 5.0

#: Engines (and every other model this process loads) load one at a time: see MODEL_LOAD_LOCK.
_LOAD_LOCK = MODEL_LOAD_LOCK


@dataclass
class GenerationRequest:
    """One queued call.

    Attributes:
        messages: The conversation.
        max_new_tokens: Output limit of this row.
        temperature: 0 for greedy decoding.
        top_p: Nucleus sampling mass (``None``: off).
        top_k: Top-k sampling (``None``: off).
        seed: Seed of this row's sampler (``None``: random).
        ignore_eos: Generate exactly ``max_new_tokens`` (benchmarks).
        loop: The caller's event loop, where ``future`` resolves.
        future: Resolves to ``(text, prompt_tokens, completion_tokens)`` or a :class:`WorkerError`.
    """

    messages: Sequence[Message]
    max_new_tokens: int
    temperature: float
    top_p: float | None
    top_k: int | None
    seed: int | None
    ignore_eos: bool
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future = field(repr=False)


def _deliver(request: GenerationRequest, result: Any) -> None:
    """Resolves ``request.future`` from the generation thread (thread-safe)."""

    def resolve() -> None:
        if request.future.done():  # the caller gave up (timeout, cancellation)
            return
        if isinstance(result, BaseException):
            request.future.set_exception(result)
        else:
            request.future.set_result(result)

    try:
        request.loop.call_soon_threadsafe(resolve)
    except RuntimeError:  # the caller's loop is closed: nobody is waiting
        pass


class LocalEngine:
    """A loaded model, its tokenizer and the thread that runs batched generation.

    Args:
        model: A model name from :mod:`conductor_env.workers.local_models` or a model folder.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
        dtype: ``"auto"`` (float32 on CPU, bfloat16 on CUDA) or a torch dtype name.
        max_batch_size: Most rows in one ``generate()``.
        batch_wait_s: How long the first request of a batch waits for company.
    """

    def __init__(
        self,
        model: str,
        *,
        device: str = "auto",
        dtype: str = "auto",
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        batch_wait_s: float = DEFAULT_BATCH_WAIT_MS / 1000,
    ) -> None:
        self.model_name = model
        self.device_name = device
        self.dtype_name = dtype
        self.max_batch_size = max(1, int(max_batch_size))
        self.batch_wait_s = max(0.0, float(batch_wait_s))
        self.batch_sizes: list[int] = []  # size of every batch run (for tests and benchmarks)
        self._queue: queue.Queue[GenerationRequest | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._load_error: WorkerError | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def submit(self, request: GenerationRequest) -> None:
        """Queues a request (thread-safe); starts the generation thread on first use."""
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name=f"conductor-env-local:{self.model_name}", daemon=True)
                self._thread.start()
        self._queue.put(request)

    def stop(self, timeout: float | None = None) -> None:
        """Ends the generation thread after the batch in progress and frees the model."""
        self._queue.put(None)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _load(self) -> None:
        import torch
        from transformers import AutoTokenizer

        from conductor_env.workers.local_adapter import adapter_base_path, load_causal_lm
        from conductor_env.workers.local_models import resolve_model

        path = resolve_model(self.model_name)
        tokenizer_path = adapter_base_path(path) or path  # an adapter folder uses its base's tokenizer
        device = self.device_name
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype: Any = self.dtype_name
        if dtype == "auto":
            dtype = torch.float32 if device == "cpu" else torch.bfloat16
        elif isinstance(dtype, str):
            dtype = getattr(torch, dtype)
        started = time.perf_counter()
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_path), local_files_only=True)
        tokenizer.padding_side = "left"
        if tokenizer.chat_template is None:
            raise WorkerError(
                f"local model at {path} has no chat template; export it with `conductor-env models export`",
                retryable=False,
            )
        model = load_causal_lm(path, dtype=dtype)
        model.to(device).eval()
        self._tokenizer, self._model, self._device = tokenizer, model, device
        eos = model.generation_config.eos_token_id
        self._stop_ids = frozenset(eos if isinstance(eos, (list, tuple)) else ([eos] if eos is not None else []))
        pad = tokenizer.pad_token_id
        self._pad_id = pad if pad is not None else min(self._stop_ids or {0})
        self._max_positions = int(getattr(model.config, "max_position_embeddings", 1 << 30))
        logger.info("loaded %s on %s in %.1f s", path, device, time.perf_counter() - started)

    def _run(self) -> None:
        try:
            with _LOAD_LOCK:
                self._load()
        except Exception as error:  # reported to every caller rather than killing the thread
            message = str(error) if isinstance(error, WorkerError) else f"{type(error).__name__}: {error}"
            self._load_error = WorkerError(f"local model {self.model_name!r} failed to load: {message}", retryable=False)
        while True:
            batch = self._collect()
            if batch is None:
                break
            if self._load_error is not None:
                for request in batch:
                    _deliver(request, self._load_error)
                continue
            self._generate_batch(batch)
        self._model = self._tokenizer = None

    def _collect(self) -> list[GenerationRequest] | None:
        """Blocks for a first request, then gathers more for ``batch_wait_s``; None means stop."""
        first = self._queue.get()
        if first is None:
            return None
        batch = [first]
        deadline = time.monotonic() + self.batch_wait_s
        while len(batch) < self.max_batch_size:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._queue.put(None)  # stop after this batch
                break
            batch.append(item)
        return [r for r in batch if not r.future.done()]

    # -- generation ------------------------------------------------------------------------------

    def _encode(self, request: GenerationRequest) -> list[int]:
        messages = [{"role": m["role"], "content": str(m["content"])} for m in request.messages]
        prefill = bool(messages) and messages[-1]["role"] == "assistant"
        text = self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=not prefill, continue_final_message=prefill)
        return list(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def _admit(self, batch: list[GenerationRequest]) -> list[tuple[GenerationRequest, list[int]]]:
        """Encodes each request's prompt; one that cannot be built or does not fit fails alone.

        Returns:
            ``(request, prompt token ids)`` for the requests that go into ``generate()``.
        """
        rows: list[tuple[GenerationRequest, list[int]]] = []
        for request in batch:
            try:
                ids = self._encode(request)
            except Exception as error:
                _deliver(request, WorkerError(f"local model: cannot build the prompt: {error}", retryable=False))
                continue
            if len(ids) + request.max_new_tokens > self._max_positions:
                _deliver(
                    request,
                    WorkerError(
                        f"local model: prompt of {len(ids)} tokens + {request.max_new_tokens} new tokens exceeds the context of {self._max_positions}",
                        retryable=False,
                    ),
                )
                continue
            rows.append((request, ids))
        return rows

    def _generate_batch(self, batch: list[GenerationRequest]) -> None:
        import torch

        rows = self._admit(batch)
        if not rows:
            return
        self.batch_sizes.append(len(rows))
        width = max(len(ids) for _, ids in rows)
        input_ids = torch.full((len(rows), width), self._pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (_, ids) in enumerate(rows):
            input_ids[i, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention[i, width - len(ids) :] = 1
        requests = [r for r, _ in rows]
        try:
            with torch.inference_mode():
                output = self._model.generate(
                    input_ids=input_ids.to(self._device),
                    attention_mask=attention.to(self._device),
                    max_new_tokens=max(r.max_new_tokens for r in requests),
                    do_sample=False,  # sampling happens per row in _RowSampler
                    eos_token_id=None,
                    pad_token_id=self._pad_id,
                    logits_processor=_logits_processors(requests, self._device),
                    stopping_criteria=_stopping_criteria(requests, width, self._stop_ids),
                )
        except Exception as error:
            failure = WorkerError(f"local generation failed: {type(error).__name__}: {error}", retryable=False)
            for request in requests:
                _deliver(request, failure)
            return
        generated = output[:, width:].tolist()
        for (request, ids), tokens in zip(rows, generated):
            tokens = tokens[: request.max_new_tokens]
            if not request.ignore_eos:
                for position, token in enumerate(tokens):
                    if token in self._stop_ids:
                        tokens = tokens[: position + 1]
                        break
            text = self._tokenizer.decode(tokens, skip_special_tokens=True)
            _deliver(request, (text, len(ids), len(tokens)))


def _logits_processors(requests: Sequence[GenerationRequest], device: Any) -> Any:
    from transformers import LogitsProcessorList

    if all(r.temperature <= 0 for r in requests):
        return LogitsProcessorList()
    return LogitsProcessorList([_RowSampler(requests, device)])


def _stopping_criteria(requests: Sequence[GenerationRequest], prompt_width: int, stop_ids: frozenset[int]) -> Any:
    from transformers import StoppingCriteriaList

    return StoppingCriteriaList([_RowStop(requests, prompt_width, stop_ids)])


class _RowSampler:
    """Samples each sampled row with its own temperature, top-k/top-p and generator.

    ``generate`` runs greedily; for a sampled row this processor draws the token itself and
    leaves only that token finite, so the greedy argmax picks it. Greedy rows pass through.
    """

    def __init__(self, requests: Sequence[GenerationRequest], device: Any) -> None:
        import torch

        self.requests = list(requests)
        self.generators: list[Any] = []
        for request in self.requests:
            generator = None
            if request.temperature > 0:
                generator = torch.Generator(device=device)
                seed = request.seed if request.seed is not None else random.randrange(2**63)
                generator.manual_seed(int(seed))
            self.generators.append(generator)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        scores = scores.clone()
        for row, (request, generator) in enumerate(zip(self.requests, self.generators)):
            if generator is None:
                continue
            logits = scores[row].float() / request.temperature
            if request.top_k:
                kth = torch.topk(logits, min(int(request.top_k), logits.numel())).values[-1]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            if request.top_p is not None and 0 < request.top_p < 1:
                ordered, order = torch.sort(logits, descending=True)
                mass = torch.softmax(ordered, dim=-1).cumsum(dim=-1)
                drop = mass - torch.softmax(ordered, dim=-1) >= request.top_p  # keep the token crossing p
                logits[order[drop]] = float("-inf")
            token = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)
            chosen = scores[row, token].clone()
            scores[row] = float("-inf")
            scores[row, token] = chosen if torch.isfinite(chosen).all() else 0.0
        return scores


class _RowStop:
    """Marks a row finished at its own output limit or stop token (``generate`` stops when all are)."""

    def __init__(self, requests: Sequence[GenerationRequest], prompt_width: int, stop_ids: frozenset[int]) -> None:
        self.limits = [r.max_new_tokens for r in requests]
        self.use_stop = [not r.ignore_eos for r in requests]
        self.prompt_width = prompt_width
        self.stop_ids = stop_ids
        self.finished = [False] * len(requests)

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        produced = input_ids.shape[1] - self.prompt_width
        last = input_ids[:, -1].tolist()
        for row, token in enumerate(last):
            if produced >= self.limits[row] or (self.use_stop[row] and token in self.stop_ids):
                self.finished[row] = True
        return torch.tensor(self.finished, dtype=torch.bool, device=input_ids.device)
