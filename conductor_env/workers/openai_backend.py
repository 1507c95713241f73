"""The ``openai`` backend: OpenAI's API and every OpenAI-compatible server.

One pool entry per model; ``base_url`` points at any server speaking the Chat Completions API
(vLLM, SGLang, ``transformers serve``, llama.cpp, Ollama, Gemini's OpenAI endpoint)::

    [[workers]]
    id = "qwen3-32b"
    backend = "openai"
    model = "Qwen/Qwen3-32B"
    base_url = "http://localhost:8000/v1"
    extra_body = { chat_template_kwargs = { enable_thinking = false } }

Options (pool keys beyond the :class:`~conductor_env.workers.base.WorkerSpec` fields, also
accepted per call): ``reasoning_effort`` (sent only when set), ``max_tokens_param``
(``"max_tokens"``, or ``"max_completion_tokens"`` for OpenAI reasoning models), ``send_temperature``
(false for models that only accept their default, such as GPT-5), ``send_seed`` (default true),
``top_p``, ``stop`` and ``extra_body`` (a table merged into the request body, for server-specific
fields). The SDK's own retries are off: :mod:`conductor_env.workers.retry` retries instead.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import openai

from conductor_env.calls import CallContext, Completion, Message, WorkerError
from conductor_env.workers.http_errors import read_api_key, redact, worker_error_from_sdk
from conductor_env.workers.sdk_clients import PerLoopClientWorker

DEFAULT_KEY_ENV = "OPENAI_API_KEY"

#: Sent when a self-hosted server needs no key (the SDK insists on some value).
NO_KEY_PLACEHOLDER = "no-key"


class OpenAIWorker(PerLoopClientWorker):
    """A worker behind the Chat Completions API.

    Args:
        spec: The pool entry. ``api_key_env`` (default ``OPENAI_API_KEY``) names the key's
            variable; without a key, a ``base_url`` server is called with a placeholder key.
    """

    def _api_key(self) -> str:
        key = read_api_key(self.spec, DEFAULT_KEY_ENV)
        if key:
            return key
        if self.spec.base_url:
            return NO_KEY_PLACEHOLDER
        raise WorkerError(
            f"worker {self.spec.name!r}: no API key; set ${self.spec.api_key_env or DEFAULT_KEY_ENV} or give a base_url of a server that needs none",
            retryable=False,
        )

    def _new_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key=self._api_key(), base_url=self.spec.base_url, timeout=float(self.spec.timeout_s), max_retries=0)

    def request_body(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None,
        temperature: float | None,
        seed: int | None,
    ) -> dict[str, Any]:
        """Builds the keyword arguments of ``chat.completions.create`` for one call.

        Args:
            messages: The conversation.
            max_tokens: Output limit (``None``: the spec's).
            temperature: Sampling temperature (``None``: the spec's).
            seed: Seed sent to servers that accept one.

        Returns:
            The request arguments (no secrets).
        """
        opts = self.spec.options
        body: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [dict(m) for m in messages],
            str(opts.get("max_tokens_param", "max_tokens")): int(max_tokens if max_tokens is not None else self.spec.max_tokens),
        }
        if opts.get("send_temperature", True):
            body["temperature"] = float(temperature if temperature is not None else self.spec.temperature)
        if seed is not None and opts.get("send_seed", True):
            body["seed"] = int(seed)
        for key in ("reasoning_effort", "top_p", "stop"):
            if opts.get(key) is not None:
                body[key] = opts[key]
        if opts.get("extra_body"):
            body["extra_body"] = dict(opts["extra_body"])
        return body

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        context: CallContext | None = None,
    ) -> Completion:
        """Calls ``chat.completions.create`` once (no SDK retries).

        Returns:
            The first choice's text with the server-reported token usage and its price.

        Raises:
            WorkerError: ``retryable`` for timeouts, connection errors, 408/409/429 and 5xx;
                not retryable for other statuses, a missing key, or a reply without choices.
        """
        del context  # simulation context (the gold answer): never part of a request
        body = self.request_body(messages, max_tokens=max_tokens, temperature=temperature, seed=seed)
        client = self._client()
        started = time.perf_counter()
        try:
            response = await client.chat.completions.create(**body)
        except openai.OpenAIError as error:
            raise worker_error_from_sdk(error, openai, spec=self.spec, secrets=[client.api_key]) from None
        latency = time.perf_counter() - started
        if not response.choices:
            raise WorkerError(
                redact(f"worker {self.spec.name!r}: the server returned no choices ({response.model_dump_json()[:300]})"),
                retryable=False,
            )
        text = response.choices[0].message.content or ""
        usage = response.usage
        prompt_tokens = int(usage.prompt_tokens or 0) if usage else 0
        completion_tokens = int(usage.completion_tokens or 0) if usage else 0
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=self.spec.cost(prompt_tokens, completion_tokens),
            latency_s=latency,
        )
