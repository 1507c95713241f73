"""Request bounds and error replies for the package's HTTP servers (OpenEnv's and ``conductor-env serve``).

- :func:`limit_request_bodies`: counts the bytes of each request body as they arrive
  (:class:`RequestBodyLimit`), whatever the transfer encoding: a chunked body without a
  ``Content-Length`` and a ``Content-Length`` that lies are both cut off at the limit with 413,
  not read whole, and the app's own error handlers write the 413. The same call bounds each
  WebSocket message (:class:`WebSocketMessageLimit`), whatever ``ws_max_size`` the server was
  started with. (FastAPI's and Starlette's own body limits count bytes too, but answer a
  declared length over the limit in plain text whatever the app's error format is.)
- :func:`validation_problems`: what a request-validation error says (field locations and
  messages) without the ``input`` FastAPI's default 422 reply echoes back, so an error never
  carries the request body.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Iterable, Mapping, MutableMapping

from starlette.exceptions import HTTPException

__all__ = ["WEBSOCKET_MESSAGE_TOO_BIG", "RequestBodyLimit", "RequestBodyTooLarge", "WebSocketMessageLimit", "limit_request_bodies", "validation_problems", "validation_summary"]

#: The WebSocket close code for a message over the limit (RFC 6455: "message too big").
WEBSOCKET_MESSAGE_TOO_BIG = 1009
#: Most problems an error reply lists, and most characters of each message.
MAX_PROBLEMS = 10
MAX_MESSAGE_CHARS = 200

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def limit_request_bodies(app: Any, max_bytes: int) -> None:
    """Bounds every HTTP request body and WebSocket message ``app`` receives to ``max_bytes``.

    Adds :class:`RequestBodyLimit` and :class:`WebSocketMessageLimit`. A body over the limit
    makes the app's read of it raise :class:`RequestBodyTooLarge` (a 413 ``HTTPException``), so
    the app's own handler for 413 (or for ``HTTPException``) writes the reply in its format.

    Args:
        app: A Starlette or FastAPI app that has not started serving.
        max_bytes: The most bytes a body or a WebSocket message may hold.

    Raises:
        ValueError: For a negative limit.
    """
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, not {max_bytes}")
    app.add_middleware(RequestBodyLimit, max_bytes=max_bytes)
    app.add_middleware(WebSocketMessageLimit, max_bytes=max_bytes)


class RequestBodyTooLarge(HTTPException):
    """Raised by the app's read of a body over the limit: a 413 its exception handlers answer.

    Args:
        max_bytes: The limit.
    """

    def __init__(self, max_bytes: int) -> None:
        super().__init__(status_code=413, detail=f"request body over {max_bytes} bytes")
        self.max_bytes = max_bytes


class RequestBodyLimit:
    """ASGI middleware: an HTTP request body is counted as it arrives and cut off past ``max_bytes``.

    Chunked bodies (no ``Content-Length``) are counted like any other, and a ``Content-Length``
    over the limit fails the first read before anything is read; one under it that lies is
    never believed, since only the bytes received are counted. The app sees
    :class:`RequestBodyTooLarge` from ``receive`` and answers it with its own handlers (unlike
    Starlette's ``RequestBodyLimitMiddleware``, which replaces the app's reply with plain text
    when the declared length is over). A body the app never reads is never read.

    Args:
        app: The wrapped ASGI app.
        max_bytes: The most bytes a body may hold.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            if declared is not None and declared > self.max_bytes:
                raise RequestBodyTooLarge(self.max_bytes)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise RequestBodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, counted_receive, send)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or ():
        if name.lower() == b"content-length":
            return int(value) if value.isdigit() else None  # a malformed one is refused by the server first
    return None


class WebSocketMessageLimit:
    """ASGI middleware: closes a WebSocket (1009) whose client sends a message over ``max_bytes``.

    The app then sees the client disconnect; whatever it sends afterwards is dropped.

    Args:
        app: The wrapped ASGI app.
        max_bytes: The most bytes (UTF-8 for text) one message may hold.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        closed = False

        async def bounded_receive() -> Message:
            nonlocal closed
            message = await receive()
            if message["type"] == "websocket.receive" and _message_bytes(message) > self.max_bytes:
                closed = True
                await send({"type": "websocket.close", "code": WEBSOCKET_MESSAGE_TOO_BIG, "reason": f"message over {self.max_bytes} bytes"})
                return {"type": "websocket.disconnect", "code": WEBSOCKET_MESSAGE_TOO_BIG}
            return message

        async def guarded_send(message: Message) -> None:
            if not closed:
                await send(message)

        await self.app(scope, bounded_receive, guarded_send)


def _message_bytes(message: Mapping[str, Any]) -> int:
    data = message.get("bytes")
    if data is not None:
        return len(data)
    text = message.get("text") or ""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def validation_problems(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Field locations, messages and types of validation errors, without their inputs.

    Pydantic's and FastAPI's errors carry ``input`` (the offending value, for a malformed body
    the whole body) and ``ctx``; neither is kept.

    Args:
        errors: ``RequestValidationError.errors()`` or ``ValidationError.errors()``.

    Returns:
        Up to :data:`MAX_PROBLEMS` ``{"loc", "msg", "type"}`` dicts.
    """
    problems: list[dict[str, Any]] = []
    for error in errors:
        if len(problems) == MAX_PROBLEMS:
            break
        loc = [part if isinstance(part, int) else str(part)[:64] for part in error.get("loc", ())]
        problems.append({"loc": loc, "msg": str(error.get("msg", "invalid"))[:MAX_MESSAGE_CHARS], "type": str(error.get("type", ""))[:64]})
    return problems


def validation_summary(errors: Iterable[Mapping[str, Any]]) -> str:
    """One line naming the problems of :func:`validation_problems`: ``body.action.seed: Input should be ...``."""
    problems = validation_problems(errors)
    return "; ".join(f"{'.'.join(str(part) for part in problem['loc']) or 'body'}: {problem['msg']}" for problem in problems) or "invalid request"
