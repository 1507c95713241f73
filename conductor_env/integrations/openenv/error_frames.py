"""OpenEnv's WebSocket error frames without what the client sent.

OpenEnv's ``/ws`` handler answers a message that does not validate with pydantic's errors, each
carrying its ``input`` (``{"type": "error", "data": {"errors": [{"input": ...}]}}``), and an
unknown message type with the type itself in the message, so an error frame could carry a
client's whole message back. :class:`ErrorFrameScrub` rewrites the error frames the app sends:
the errors keep their locations, messages and types (:func:`~conductor_env.http_limits.validation_problems`),
the message is cut to :data:`~conductor_env.http_limits.MAX_MESSAGE_CHARS` characters, and the
unknown type is not repeated. Frames of any other kind pass unchanged.
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, MutableMapping

from conductor_env.http_limits import MAX_MESSAGE_CHARS, validation_problems

__all__ = ["ErrorFrameScrub", "scrub_error_frame"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: How OpenEnv's ``WSErrorResponse.model_dump_json()`` starts.
_ERROR_FRAME_START = '{"type":"error"'


def scrub_error_frame(text: str) -> str:
    """An OpenEnv error frame (JSON text) without the client's input; other text unchanged.

    Args:
        text: A frame the server is about to send.

    Returns:
        The frame with ``data.errors`` reduced to locations, messages and types, ``data.message``
        cut short and an unknown message type not repeated.
    """
    if not text.startswith(_ERROR_FRAME_START):
        return text
    try:
        frame = json.loads(text)
    except ValueError:
        return text
    data = frame.get("data") if isinstance(frame, dict) else None
    if not isinstance(data, dict):
        return text
    if data.get("code") == "UNKNOWN_TYPE":
        data["message"] = "Unknown message type: send reset, step, state, close or mcp"
    elif isinstance(data.get("message"), str):
        data["message"] = data["message"][:MAX_MESSAGE_CHARS]
    if isinstance(data.get("errors"), list):
        data["errors"] = validation_problems(error for error in data["errors"] if isinstance(error, dict))
    return json.dumps(frame, separators=(",", ":"))


class ErrorFrameScrub:
    """ASGI middleware: every WebSocket error frame the app sends goes through :func:`scrub_error_frame`.

    Args:
        app: The wrapped ASGI app.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def scrubbed_send(message: Message) -> None:
            text = message.get("text") if message["type"] == "websocket.send" else None
            if isinstance(text, str) and text.startswith(_ERROR_FRAME_START):
                message = {**message, "text": scrub_error_frame(text)}
            await send(message)

        await self.app(scope, receive, scrubbed_send)
