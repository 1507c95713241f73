"""OpenEnv's error replies without what the client sent.

OpenEnv's ``/ws`` handler answers a message that does not validate with pydantic's errors, each
carrying its ``input`` (``{"type": "error", "data": {"errors": [{"input": ...}]}}``), and an
unknown message type with the type itself in the message; its MCP endpoints (``POST /mcp`` and
``{"type": "mcp"}`` messages, JSON-RPC) put the method name or pydantic's whole error text,
inputs included, in the error message. So an error could carry a client's message back.
:class:`ErrorFrameScrub` rewrites them as the app sends them: validation errors keep their
locations, messages and types (:func:`~conductor_env.http_limits.validation_problems`), other
messages are cut to :data:`~conductor_env.http_limits.MAX_MESSAGE_CHARS` characters, the unknown
type is not repeated, and JSON-RPC errors about the request (parse error, invalid request,
unknown method, invalid params) say the standard sentence for their code. Other replies pass
unchanged.
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, MutableMapping

from conductor_env.http_limits import MAX_MESSAGE_CHARS, validation_problems

__all__ = ["ErrorFrameScrub", "scrub_error_frame", "scrub_jsonrpc_error"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: How OpenEnv's ``WSErrorResponse`` and ``WSMCPResponse`` frames (``model_dump_json()``) start.
_ERROR_FRAME_START = '{"type":"error"'
_MCP_FRAME_START = '{"type":"mcp"'
#: JSON-RPC's own messages for the errors a request causes (the spec's wording).
JSONRPC_MESSAGES = {-32700: "Parse error", -32600: "Invalid Request", -32601: "Method not found", -32602: "Invalid params"}


def scrub_jsonrpc_error(reply: dict[str, Any]) -> None:
    """Rewrites a JSON-RPC reply's ``error.message`` in place: the spec's sentence for an error the
    request caused, otherwise the message cut short."""
    error = reply.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        code = error.get("code")
        error["message"] = JSONRPC_MESSAGES[code] if code in JSONRPC_MESSAGES else error["message"][:MAX_MESSAGE_CHARS]


def scrub_error_frame(text: str) -> str:
    """An OpenEnv error frame (JSON text) without the client's input; other text unchanged.

    Args:
        text: A frame the server is about to send.

    Returns:
        The frame with ``data.errors`` reduced to locations, messages and types, ``data.message``
        cut short and an unknown message type not repeated.
    """
    if not text.startswith((_ERROR_FRAME_START, _MCP_FRAME_START)):
        return text
    try:
        frame = json.loads(text)
    except ValueError:
        return text
    data = frame.get("data") if isinstance(frame, dict) else None
    if not isinstance(data, dict):
        return text
    if frame.get("type") == "mcp":
        scrub_jsonrpc_error(data)
        return json.dumps(frame, separators=(",", ":"))
    if data.get("code") == "UNKNOWN_TYPE":
        data["message"] = "Unknown message type: send reset, step, state, close or mcp"
    elif isinstance(data.get("message"), str):
        data["message"] = data["message"][:MAX_MESSAGE_CHARS]
    if isinstance(data.get("errors"), list):
        data["errors"] = validation_problems(error for error in data["errors"] if isinstance(error, dict))
    return json.dumps(frame, separators=(",", ":"))


class ErrorFrameScrub:
    """ASGI middleware: WebSocket error and MCP frames go through :func:`scrub_error_frame`, and
    ``POST /mcp`` replies through :func:`scrub_jsonrpc_error`.

    Args:
        app: The wrapped ASGI app.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self.app(scope, receive, self._websocket_send(send))
        elif scope["type"] == "http" and scope.get("path") == "/mcp":
            await self._mcp(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    @staticmethod
    def _websocket_send(send: Send) -> Send:
        async def scrubbed_send(message: Message) -> None:
            text = message.get("text") if message["type"] == "websocket.send" else None
            if isinstance(text, str) and text.startswith((_ERROR_FRAME_START, _MCP_FRAME_START)):
                message = {**message, "text": scrub_error_frame(text)}
            await send(message)

        return scrubbed_send

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The reply is held until it is whole (JSON-RPC replies are one small JSON object).
        start: Message | None = None
        chunks: list[bytes] = []

        async def held_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    body = _scrubbed_jsonrpc(b"".join(chunks))
                    assert start is not None
                    headers = [(name, value) for name, value in start.get("headers", []) if name.lower() != b"content-length"]
                    await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body})
            else:
                await send(message)

        await self.app(scope, receive, held_send)


def _scrubbed_jsonrpc(body: bytes) -> bytes:
    try:
        reply = json.loads(body)
    except ValueError:
        return body
    if not isinstance(reply, dict) or not isinstance(reply.get("error"), dict):
        return body
    scrub_jsonrpc_error(reply)
    return json.dumps(reply, separators=(",", ":")).encode()
