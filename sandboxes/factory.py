"""``get_sandbox``: a sandbox by name, ``auto`` choosing Docker when a daemon and the image are there."""

from __future__ import annotations

import importlib
import logging
import os
from typing import Any

from conductor_env.sandboxes.base import Sandbox, SandboxUnavailable

logger = logging.getLogger(__name__)

NAMES = ("auto", "docker", "local", "ray")
#: Backends plugged in by name from layers above (imported only when asked for, so the default
#: install never imports Ray): name -> ``"module:Class"``.
PLUGINS = {"ray": "conductor_env.distributed.sandbox:RaySandbox"}
#: Options both backends accept (``auto`` passes only these).
COMMON_OPTIONS = ("pool_size", "limits")
#: Environment variable that overrides what ``auto`` picks (``docker`` or ``local``).
ENV_OVERRIDE = "CONDUCTOR_SANDBOX"


def docker_available(image: str | None = None) -> str | None:
    """Why the docker backend cannot be used here, or ``None`` when it can.

    Args:
        image: The image to look for (``None``: the default image).
    """
    from conductor_env.sandboxes.image import DEFAULT_IMAGE, docker_client, image_exists

    try:
        client = docker_client(timeout=10)
    except SandboxUnavailable as error:
        return str(error)
    try:
        tag = image or DEFAULT_IMAGE
        if not image_exists(client, tag):
            return f"the sandbox image {tag!r} is missing: build it with `conductor-env sandbox build`"
    finally:
        client.close()
    return None


def get_sandbox(name: str = "auto", **options: Any) -> Sandbox:
    """Returns a sandbox backend.

    Args:
        name: ``"docker"``, ``"local"``, ``"auto"`` (docker when a daemon answers and the
            image is built, else local; the environment variable ``CONDUCTOR_SANDBOX`` can force
            either), or ``"ray"`` (sandbox hosts on the Ray cluster this process is connected
            to; needs the ``ray`` extra, see :mod:`conductor_env.distributed`).
        **options: Passed to :class:`DockerSandbox`, :class:`LocalSandbox` or the plug-in
            (``pool_size``, ``limits``, and each backend's own; ``auto`` passes only
            ``pool_size`` and ``limits``).

    Returns:
        A started sandbox (its workers start on first use); close it when done.

    Raises:
        SandboxUnavailable: When the named backend cannot run here (the message says why).
        ValueError: For an unknown name.
    """
    from conductor_env.sandboxes.docker import DockerSandbox
    from conductor_env.sandboxes.local import LocalSandbox

    choice = (name or "auto").strip().lower()
    if choice not in NAMES:
        raise ValueError(f"unknown sandbox {name!r}: use one of {', '.join(NAMES)}")
    if choice in PLUGINS:
        return _plugin(choice, options)
    if choice == "auto":
        forced = os.environ.get(ENV_OVERRIDE, "").strip().lower()
        if forced in ("docker", "local"):
            choice = forced
        else:
            common = {key: value for key, value in options.items() if key in COMMON_OPTIONS}
            try:
                return DockerSandbox(**common)
            except SandboxUnavailable as error:
                logger.info("sandbox 'auto': using the local backend (%s)", error)
                return LocalSandbox(**common)
    if choice == "docker":
        return DockerSandbox(**options)
    return LocalSandbox(**options)


def _plugin(name: str, options: dict[str, Any]) -> Sandbox:
    module_name, _, class_name = PLUGINS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SandboxUnavailable(f"sandbox {name!r} needs {error.name or 'its extra'}: pip install 'conductor-env[{name}]'") from error
    return getattr(module, class_name)(**options)
