"""The OpenEnv server of a Conductor env: OpenEnv's FastAPI app, with clear errors and a size limit.

OpenEnv's :func:`~openenv.core.env_server.http_server.create_app` gives the WebSocket ``/ws``
(one :class:`~conductor_env.integrations.openenv.environment.ConductorEnvironment` per
connection, up to ``max_sessions`` at once) and the stateless HTTP ``/reset`` and ``/step``,
which build a new environment for every request. This module adds what a public server needs:

- a request the env refuses (step before reset, unknown problem, a row that is not the running
  episode) answers 400/404/409 with the reason, not 500; a malformed action answers 422;
- request bodies over :data:`MAX_BODY_BYTES` answer 413, counted as they arrive (chunked or not,
  whatever ``Content-Length`` says), and WebSocket messages over it close the socket (1009);
- a request that does not validate answers 422 naming the fields and what is wrong, never
  echoing the request (FastAPI's default reply carries the whole body back);
- ``GET /conductor/stats``: sessions built, steps started and finished, and the most steps that
  were in flight at once.

Run it::

    python -m conductor_env.integrations.openenv.server --env Conductor-RG-v0 --pool simulated --port 8000
    uvicorn conductor_env.integrations.openenv.server:app    # configured by CONDUCTOR_OPENENV_* variables
"""

from __future__ import annotations

import argparse
import functools
import json
import os
from typing import Any, MutableMapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from openenv.core.env_server.http_server import create_app

from conductor_env.envs import EnvSetup
from conductor_env.http_limits import MAX_MESSAGE_CHARS, limit_request_bodies, validation_problems
from conductor_env.integrations.openenv.environment import ConductorEnvironment, ConductorHub, ConductorRequestError
from conductor_env.integrations.openenv.error_frames import ErrorFrameScrub
from conductor_env.integrations.openenv.models import ConductorAction, ConductorObservation, ConductorState
from conductor_env.options import parse_key_values

__all__ = ["MAX_BODY_BYTES", "create_conductor_app", "main", "setup_from_environ"]

#: Largest request body the server reads (an action holds at most 256 KiB of text).
MAX_BODY_BYTES = 2 * 1024 * 1024
#: The default number of concurrent WebSocket sessions.
DEFAULT_MAX_SESSIONS = 64


async def _too_large(request: Request, error: Exception) -> JSONResponse:
    return JSONResponse({"detail": f"request body over {MAX_BODY_BYTES} bytes", "code": "too_large"}, status_code=413)


async def _invalid(request: Request, error: Exception) -> JSONResponse:
    # FastAPI's default reply, and OpenEnv's for an action that does not validate, carry each
    # error's input: for a malformed body, the whole body.
    if isinstance(error, RequestValidationError):
        problems: Any = validation_problems(error.errors())
    else:
        detail = getattr(error, "detail", None)
        problems = validation_problems(e for e in detail if isinstance(e, dict)) if isinstance(detail, list) else str(detail)[:MAX_MESSAGE_CHARS]
    return JSONResponse({"detail": problems}, status_code=422)


async def _refused(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ConductorRequestError)
    return JSONResponse({"detail": str(error), "code": error.code}, status_code=error.status_code)


def create_conductor_app(setup: EnvSetup | None = None, *, max_sessions: int = DEFAULT_MAX_SESSIONS, session_timeout_s: float | None = None) -> FastAPI:
    """Builds the OpenEnv app of a Conductor env.

    Args:
        setup: The env every session plays (default: :func:`setup_from_environ`).
        max_sessions: Most concurrent WebSocket sessions.
        session_timeout_s: Idle sessions are closed after this many seconds (``None``: never).

    Returns:
        The FastAPI app; ``app.state.conductor_hub`` holds the shared parts and counters.

    Raises:
        SetupError, EnvOptionError: For an unknown env id or option.
    """
    from openenv.core.env_server.types import ConcurrencyConfig

    hub = ConductorHub(setup or setup_from_environ())
    hub.parts  # built now: a broken setup fails at start, not in a session
    app = create_app(
        functools.partial(ConductorEnvironment, hub),
        ConductorAction,
        ConductorObservation,
        env_name="conductor_env",
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=session_timeout_s),
        state_cls=ConductorState,
    )
    app.add_exception_handler(ConductorRequestError, _refused)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(422, _invalid)
    app.add_middleware(ErrorFrameScrub)
    app.add_exception_handler(413, _too_large)
    limit_request_bodies(app, MAX_BODY_BYTES)
    app.state.conductor_hub = hub

    @app.get("/conductor/stats", tags=["Conductor"])
    async def stats() -> dict[str, int]:
        """Sessions built, steps started and finished, steps in flight now and at most."""
        return hub.counters.snapshot()

    app.router.on_shutdown.append(hub.close)
    return app


def setup_from_environ(environ: MutableMapping[str, str] | None = None) -> EnvSetup:
    """Reads the served env from ``CONDUCTOR_OPENENV_*`` variables (how the image is configured).

    ``CONDUCTOR_OPENENV_ENV`` (a gym id, default ``Conductor-RG-v0``), ``CONDUCTOR_OPENENV_POOL``
    (a preset or a TOML path, default ``simulated``), ``CONDUCTOR_OPENENV_SPLIT`` and
    ``CONDUCTOR_OPENENV_OPTIONS`` (a JSON object of env options, e.g. ``{"max_rounds": 2}``) and
    ``CONDUCTOR_OPENENV_SANDBOX`` (where code suites run programs: ``docker``, ``local``, ``auto``).

    Raises:
        ValueError: When the options are not a JSON object.
    """
    environ = os.environ if environ is None else environ
    options = json.loads(environ.get("CONDUCTOR_OPENENV_OPTIONS") or "{}")
    if not isinstance(options, dict):
        raise ValueError('CONDUCTOR_OPENENV_OPTIONS must be a JSON object of env options, e.g. {"max_rounds": 2}')
    split = environ.get("CONDUCTOR_OPENENV_SPLIT") or None
    sandbox = environ.get("CONDUCTOR_OPENENV_SANDBOX") or None
    return EnvSetup.from_id(environ.get("CONDUCTOR_OPENENV_ENV") or "Conductor-RG-v0", pool=environ.get("CONDUCTOR_OPENENV_POOL") or "simulated", split=split, sandbox=sandbox, **options)


@functools.lru_cache(maxsize=1)
def _environ_app() -> FastAPI:
    return create_conductor_app(max_sessions=int(os.environ.get("CONDUCTOR_OPENENV_MAX_SESSIONS") or DEFAULT_MAX_SESSIONS))


def __getattr__(name: str) -> Any:
    # ``app`` is built on first access (``uvicorn ...server:app``), not at import.
    if name == "app":
        return _environ_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Serves a Conductor env over OpenEnv's protocol (``python -m conductor_env.integrations.openenv.server``)."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--env", default=os.environ.get("CONDUCTOR_OPENENV_ENV") or "Conductor-RG-v0", help="a Conductor gym id")
    parser.add_argument("--pool", default=os.environ.get("CONDUCTOR_OPENENV_POOL") or "simulated", help="a pool preset or TOML path")
    parser.add_argument("--split", default=os.environ.get("CONDUCTOR_OPENENV_SPLIT") or None)
    parser.add_argument("--sandbox", default=os.environ.get("CONDUCTOR_OPENENV_SANDBOX") or None, help="where code suites run programs (docker, local, auto)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="an env option (repeatable), e.g. max_rounds=2")
    parser.add_argument("--max-sessions", type=int, default=int(os.environ.get("CONDUCTOR_OPENENV_MAX_SESSIONS") or DEFAULT_MAX_SESSIONS))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    options = json.loads(os.environ.get("CONDUCTOR_OPENENV_OPTIONS") or "{}") | parse_key_values(args.option, "--option")
    setup = EnvSetup.from_id(args.env, pool=args.pool, split=args.split, sandbox=args.sandbox, **options)
    uvicorn.run(create_conductor_app(setup, max_sessions=args.max_sessions), host=args.host, port=args.port, log_level="warning", ws_max_size=MAX_BODY_BYTES)


if __name__ == "__main__":
    main()
