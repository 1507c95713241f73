"""Raw HTTP/1.1 over a socket, for requests no client library sends: a ``Content-Length`` that lies."""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit

#: Seconds to wait for the server's answer.
READ_TIMEOUT_S = 60


def raw_post(url: str, path: str, content_length: int | str, body: bytes) -> tuple[int, bytes]:
    """Sends ``POST path`` declaring ``content_length`` but sending ``body``, and reads the first answer.

    The body is sent as far as the server takes it (it may answer and close before the end).

    Args:
        url: The server's root (``http://127.0.0.1:PORT``).
        path: The route.
        content_length: What the ``Content-Length`` header says.
        body: What is actually sent.

    Returns:
        The status of the first answer (0 when the server closed without one) and its bytes.
    """
    parts = urlsplit(url)
    head = f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\nContent-Length: {content_length}\r\n\r\n".encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=READ_TIMEOUT_S) as connection:

        def send() -> None:
            try:
                connection.sendall(head + body)
            except OSError:
                pass  # answered and closed before the whole body went out

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        answer = b""
        try:
            while b"\r\n\r\n" not in answer or len(answer) < _answer_length(answer):
                data = connection.recv(65536)
                if not data:
                    break
                answer += data
        except OSError:
            pass
        with contextlib.suppress(OSError):
            connection.shutdown(socket.SHUT_RDWR)  # ends a send the server stopped reading
    sender.join(READ_TIMEOUT_S)
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
    return status, answer


def _answer_length(answer: bytes) -> int:
    head, _, _ = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return len(head) + 4 + int(value.strip())
    return len(answer) + 1  # unknown: read until the server closes
