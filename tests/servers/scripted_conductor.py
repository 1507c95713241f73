"""A real OpenAI-compatible Chat Completions server on loopback whose "model" is a scripted Conductor.

It stands in for the Conductor model when a test drives an LLM-RL framework's real client (the
framework is what is tested): ``POST /v1/chat/completions``, streamed (server-sent events with a
usage chunk, as ``stream_options.include_usage`` asks) or not. The model name picks the script:

- ``conductor-solve``: a one-step workflow (JSON) in the first round, three empty lists (keep the
  answer) in later rounds;
- ``conductor-revise``: the same first workflow, then a two-step three-lists workflow;
- ``conductor-garbage``: text that is no workflow; ``conductor-huge``: 2 MB of it;
  ``conductor-hostile``: the two in turn.

A later round is recognised by an assistant message in the request. Each answer waits
``delay_s`` so overlapping requests can be counted: ``max_in_flight`` is the most seen at once.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from .transformers_serve import free_port

FIRST = json.dumps({"model_id": [0], "subtasks": ["Solve the task step by step and end with the final answer."], "access_list": [[]]})
KEEP = "model_id = []\nsubtasks = []\naccess_list = []"
REVISE = 'model_id = [1, 0]\nsubtasks = ["Check the previous answer.", "Give the final answer."]\naccess_list = ["all", "all"]'


def scripted_reply(model: str, messages: list[Any], count: int = 0) -> str:
    """Returns the scripted Conductor's reply to a conversation (``count``: requests so far)."""
    later = any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages)
    if model.endswith("hostile"):
        model = "garbage" if count % 2 else "huge"
    if model.endswith("garbage"):
        return "I would rather not write a workflow today."
    if model.endswith("huge"):
        return "x" * 2_000_000
    if not later:
        return FIRST
    return REVISE if model.endswith("revise") else KEEP


class ScriptedConductorServer:
    """The server, in a background thread: ``with ScriptedConductorServer() as server: server.base_url``.

    Attributes:
        requests: The model name and messages of every request, in order.
        max_in_flight: The most requests answered at once.
    """

    def __init__(self, delay_s: float = 0.2, api_key: str = "scripted-key") -> None:
        self.delay_s = delay_s
        self.api_key = api_key
        self.port = free_port()
        self.requests: list[tuple[str, list[Any]]] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        app = Starlette(routes=[Route("/v1/chat/completions", self._complete, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"))
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedConductorServer:
        self._thread = threading.Thread(target=self._server.run, name="scripted-conductor", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the scripted Conductor server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)

    async def _complete(self, request: Request) -> Any:
        if request.headers.get("authorization", "") != f"Bearer {self.api_key}":
            return JSONResponse({"error": {"message": "bad key", "type": "invalid_request_error"}}, status_code=401)
        body = await request.json()
        model, messages = str(body.get("model", "")), body.get("messages") or []
        with self._lock:
            self.requests.append((model, messages))
            count = len(self.requests)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            with self._lock:
                self._in_flight -= 1
        text = scripted_reply(model, messages, count)
        usage = {"prompt_tokens": 10 * len(messages), "completion_tokens": max(1, len(text) // 4), "total_tokens": 10 * len(messages) + max(1, len(text) // 4)}
        head = {"id": f"chatcmpl-scripted-{len(self.requests)}", "created": int(time.time()), "model": model}
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            return JSONResponse({**head, "object": "chat.completion", "choices": [choice], "usage": usage})
        return StreamingResponse(self._chunks(head, text, usage, bool((body.get("stream_options") or {}).get("include_usage"))), media_type="text/event-stream")

    @staticmethod
    async def _chunks(head: dict[str, Any], text: str, usage: dict[str, int], with_usage: bool) -> Any:
        def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            return f"data: {json.dumps({**head, 'object': 'chat.completion.chunk', 'choices': choices, **extra})}\n\n".encode()

        yield event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        for start in range(0, len(text), 65536):
            yield event([{"index": 0, "delta": {"content": text[start : start + 65536]}, "finish_reason": None}])
        yield event([{"index": 0, "delta": {}, "finish_reason": "stop"}])
        if with_usage:
            yield event([], usage=usage)
        yield b"data: [DONE]\n\n"
