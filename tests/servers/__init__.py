"""Real servers on loopback for the worker tests: `transformers serve` (OpenAI-compatible) and a
Messages API server backed by the local model. Import them as ``from servers import ...`` (pytest
puts ``tests/`` on ``sys.path``)."""

from .messages_server import MessagesServer
from .transformers_serve import TransformersServe, free_port, shared_server

__all__ = ["MessagesServer", "TransformersServe", "free_port", "shared_server"]
