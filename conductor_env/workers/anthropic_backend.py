"""The ``anthropic`` backend: Claude models through the Messages API.

    [[workers]]
    id = "claude-sonnet-4"
    backend = "anthropic"
    model = "claude-sonnet-4-20250514"
    price_in_per_m = 3.0
    price_out_per_m = 15.0
    thinking_budget = 1024     # optional: extended thinking with this many tokens

Options (pool keys, also accepted per call): ``thinking_budget`` (tokens of extended thinking;
the call's ``max_tokens`` then bounds the answer and the request asks for budget + max_tokens, and
the temperature is left at the API's default as thinking requires), ``send_temperature``
(false for models that reject sampling parameters), ``top_p``, ``top_k``, ``stop`` (stop
sequences). System messages become the ``system`` parameter; a final assistant
message is sent as a prefill. ``base_url`` reaches any server speaking the Messages API.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import anthropic

from conductor_env.calls import CallContext, Completion, Message, WorkerError
from conductor_env.workers.http_errors import read_api_key, worker_error_from_sdk
from conductor_env.workers.sdk_clients import PerLoopClientWorker

DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"


def split_system(messages: Sequence[Message]) -> tuple[str, list[dict[str, str]]]:
    """Separates system messages (joined) from the user/assistant turns.

    Args:
        messages: OpenAI-style messages.

    Returns:
        The system text (``""`` when none) and the remaining turns, consecutive turns of one role
        merged, as the Messages API requires alternating roles.
    """
    system_parts: list[str] = []
    turns: list[dict[str, str]] = []
    for message in messages:
        role, content = message["role"], str(message["content"])
        if role == "system":
            system_parts.append(content)
            continue
        role = "assistant" if role == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1] = {"role": role, "content": turns[-1]["content"] + "\n\n" + content}
        else:
            turns.append({"role": role, "content": content})
    if turns and turns[-1]["role"] == "assistant":  # the API rejects a prefill ending in whitespace
        turns[-1] = {"role": "assistant", "content": turns[-1]["content"].rstrip()}
    return "\n\n".join(system_parts), turns


class AnthropicWorker(PerLoopClientWorker):
    """A worker behind Anthropic's Messages API.

    Args:
        spec: The pool entry. ``api_key_env`` (default ``ANTHROPIC_API_KEY``) names the key's
            variable.
    """

    def _new_client(self) -> anthropic.AsyncAnthropic:
        key = read_api_key(self.spec, DEFAULT_KEY_ENV)
        if key is None:
            raise WorkerError(
                f"worker {self.spec.name!r}: no API key; set ${self.spec.api_key_env or DEFAULT_KEY_ENV}",
                retryable=False,
            )
        return anthropic.AsyncAnthropic(api_key=key, base_url=self.spec.base_url, timeout=float(self.spec.timeout_s), max_retries=0)

    def request_body(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None,
        temperature: float | None,
    ) -> dict[str, Any]:
        """Builds the keyword arguments of ``messages.create`` for one call.

        Raises:
            WorkerError: (not retryable) when no user or assistant turn is left.
        """
        opts = self.spec.options
        system, turns = split_system(messages)
        if not turns:
            raise WorkerError(f"worker {self.spec.name!r}: the messages hold no user turn", retryable=False)
        answer_tokens = int(max_tokens if max_tokens is not None else self.spec.max_tokens)
        body: dict[str, Any] = {"model": self.spec.model, "messages": turns, "max_tokens": answer_tokens}
        if system:
            body["system"] = system
        budget = opts.get("thinking_budget")
        # Sampling parameters travel in ``extra_body``: recent SDK releases dropped them from the
        # typed signature while the API still accepts them for the models that support them.
        sampling: dict[str, Any] = {}
        if budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": int(budget)}
            body["max_tokens"] = int(budget) + answer_tokens  # max_tokens must exceed the budget
        elif opts.get("send_temperature", True):
            sampling["temperature"] = float(temperature if temperature is not None else self.spec.temperature)
        for key in ("top_p", "top_k"):
            if opts.get(key) is not None:
                sampling[key] = opts[key]
        if sampling:
            body["extra_body"] = sampling
        if opts.get("stop") is not None:
            stop = opts["stop"]
            body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
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
        """Calls ``messages.create`` once (no SDK retries). The API takes no seed; it is ignored.

        Returns:
            The text blocks of the reply (thinking blocks dropped), with the billed usage
            (cache reads and writes counted as input) and its price.

        Raises:
            WorkerError: ``retryable`` for timeouts, connection errors, 408/409/429 and 5xx
                (including 529 overloaded); not retryable otherwise.
        """
        del context  # simulation context (the gold answer): never part of a request
        body = self.request_body(messages, max_tokens=max_tokens, temperature=temperature)
        client = self._client()
        started = time.perf_counter()
        try:
            response = await client.messages.create(**body)
        except anthropic.AnthropicError as error:
            raise worker_error_from_sdk(error, anthropic, spec=self.spec, secrets=[client.api_key]) from None
        latency = time.perf_counter() - started
        text = "".join(block.text for block in response.content if getattr(block, "type", "") == "text")
        usage = response.usage
        prompt_tokens = int(usage.input_tokens or 0) + int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
        prompt_tokens += int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        completion_tokens = int(usage.output_tokens or 0)
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=self.spec.cost(prompt_tokens, completion_tokens),
            latency_s=latency,
        )
