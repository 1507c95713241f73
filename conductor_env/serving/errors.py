"""Errors the server answers with, in OpenAI's error format (``{"error": {"message", "type", "param", "code"}}``)."""

from __future__ import annotations

from typing import Any, Mapping

#: The error ``type`` OpenAI's API gives for each status the server uses.
ERROR_TYPES = {
    400: "invalid_request_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
    504: "server_error",
}


class ServingError(Exception):
    """A request the server answers with an error status instead of a completion.

    Args:
        status: The HTTP status.
        message: What went wrong and, where the client can, how to fix it (one line).
        code: A short machine-readable code (``"model_not_found"``, ``"queue_full"``, ...).
        param: The request field at fault, if any (``"messages"``, ``"model"``, ...).
        headers: Extra response headers (``Retry-After`` on 429).
    """

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        """Returns the JSON body: OpenAI's error envelope."""
        return error_body(self.status, self.message, code=self.code, param=self.param)


def error_body(status: int, message: str, *, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """Returns OpenAI's error envelope for a status and a message.

    Args:
        status: The HTTP status (picks the error ``type``).
        message: The explanation.
        code: A short machine-readable code, or ``None``.
        param: The request field at fault, or ``None``.

    Returns:
        ``{"error": {"message": ..., "type": ..., "param": ..., "code": ...}}``.
    """
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
