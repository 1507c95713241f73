"""The sandbox image: a minimal Debian with ``python3`` (the runner itself is sent at start-up).

:func:`build_image` builds it from ``debian:<suite>-slim`` when a registry is reachable, and
otherwise offline: ``debootstrap`` of a minimal Debian with ``python3`` from the Debian mirror
this machine's apt uses, trimmed and loaded with ``docker import``.
"""

from __future__ import annotations

import io
import logging
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

from conductor_env.sandboxes.base import SandboxUnavailable

logger = logging.getLogger(__name__)

#: The image the docker backend uses (``CONDUCTOR_SANDBOX_IMAGE`` overrides it); bump the tag
#: when the image's contents change.
DEFAULT_IMAGE = os.environ.get("CONDUCTOR_SANDBOX_IMAGE") or "conductor-env-sandbox:1"
IMAGE_LABEL = "conductor-env.sandbox-image"
DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: Paths removed from the offline root file system (documentation, caches, package lists).
TRIMMED = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/cache/apt", "var/lib/apt/lists")

HOW_TO_START_DOCKER = (
    "start a daemon with `sudo dockerd > /tmp/dockerd.log 2>&1 &` (or `sudo systemctl start docker`), "
    "or run scripts/setup_sandbox.sh, which installs and starts one"
)


def docker_client(timeout: int = 120) -> Any:
    """Returns a connected Docker client.

    Raises:
        SandboxUnavailable: When the SDK is missing or no daemon answers (says how to start one).
    """
    try:
        import docker
    except ImportError as error:
        raise SandboxUnavailable("the docker SDK is not installed: `pip install docker`") from error
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    client = None
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as error:  # DockerException, requests' connection errors
        if client is not None:
            client.close()
        raise SandboxUnavailable(
            f"no Docker daemon answers at {where} ({_short(error)}): {HOW_TO_START_DOCKER}"
        ) from error
    return client


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__


def image_exists(client: Any, tag: str) -> bool:
    """Whether the daemon has the image."""
    import docker

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def build_image(
    tag: str = DEFAULT_IMAGE,
    *,
    force: bool = False,
    offline: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> str:
    """Builds the sandbox image unless the daemon already has it.

    Args:
        tag: Image name and tag.
        force: Rebuild even when it exists.
        offline: ``True`` skips the registry, ``False`` never falls back to debootstrap;
            ``None`` tries the registry, then debootstrap.
        log: Receives progress lines (default: the module logger).

    Returns:
        The tag.

    Raises:
        SandboxUnavailable: When no daemon answers or neither way can build it (says why).
    """
    say = log or logger.info
    client = docker_client(timeout=600)
    if not force and image_exists(client, tag):
        say(f"image {tag} is already built")
        return tag
    if offline is not True:
        try:
            _build_from_registry(client, tag, say)
            return tag
        except Exception as error:  # registry unreachable, build failure: try offline
            if offline is False:
                raise SandboxUnavailable(f"cannot build {tag} from the registry: {_short(error)}") from error
            say(f"registry build unavailable ({_short(error)}); building offline with debootstrap")
    _build_offline(client, tag, say)
    return tag


def _build_from_registry(client: Any, tag: str, say: Callable[[str], None]) -> None:
    suite = os.environ.get("CONDUCTOR_DEBIAN_SUITE") or _host_suite()
    base = f"debian:{suite}-slim"
    say(f"pulling {base}")
    client.images.pull("debian", tag=f"{suite}-slim")
    dockerfile = (
        f"FROM {base}\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends python3 "
        "&& rm -rf /var/lib/apt/lists/* /usr/share/doc /usr/share/man\n"
    )
    say(f"building {tag} from {base}")
    client.images.build(
        fileobj=io.BytesIO(dockerfile.encode()), tag=tag, labels={IMAGE_LABEL: "1"}, rm=True, forcerm=True, pull=False
    )


def _build_offline(client: Any, tag: str, say: Callable[[str], None]) -> None:
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "the offline image build runs debootstrap, which needs root: `sudo conductor-env sandbox build`"
        )
    if shutil.which("debootstrap") is None:
        raise SandboxUnavailable(
            "debootstrap is not installed: `apt-get install debootstrap` (or run scripts/setup_sandbox.sh)"
        )
    suite, mirror = debian_source()
    workdir = tempfile.mkdtemp(prefix="conductor-rootfs-", dir="/var/tmp")
    rootfs = os.path.join(workdir, "rootfs")
    try:
        say(f"debootstrap {suite} from {mirror} (minbase + python3)")
        result = subprocess.run(
            ["debootstrap", "--variant=minbase", "--include=python3", suite, rootfs, mirror],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
            raise SandboxUnavailable(f"debootstrap failed (status {result.returncode}):\n" + "\n".join(tail))
        for relative in TRIMMED:
            shutil.rmtree(os.path.join(rootfs, relative), ignore_errors=True)
        say(f"importing the root file system as {tag}")
        repository, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "latest")
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", rootfs, "-cf", "-", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        try:
            client.api.import_image_from_stream(
                tar.stdout,
                repository=repository,
                tag=version,
                changes=[f"LABEL {IMAGE_LABEL}=1", 'CMD ["/usr/bin/python3"]'],
            )
        finally:
            tar.stdout.close()
            tar.wait()
        if tar.returncode != 0:
            raise SandboxUnavailable(f"tar of the root file system failed (status {tar.returncode})")
        if not image_exists(client, tag):
            raise SandboxUnavailable(f"docker import did not produce {tag}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _host_suite() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return DEFAULT_SUITE
    match = re.search(r"^VERSION_CODENAME=\"?([a-z]+)\"?$", text, re.M)
    return match.group(1) if match else DEFAULT_SUITE


def debian_source() -> tuple[str, str]:
    """The suite and mirror to debootstrap from: this machine's apt sources for its own release.

    ``CONDUCTOR_DEBIAN_SUITE`` and ``CONDUCTOR_DEBIAN_MIRROR`` override them.

    Returns:
        ``(suite, mirror URL)``.
    """
    suite = os.environ.get("CONDUCTOR_DEBIAN_SUITE") or _host_suite()
    mirror = os.environ.get("CONDUCTOR_DEBIAN_MIRROR")
    if mirror:
        return suite, mirror
    for uri, suites in _apt_sources():
        if suite in suites and "security" not in uri:
            return suite, uri
    return suite, DEFAULT_MIRROR


def _apt_sources() -> list[tuple[str, list[str]]]:
    """``(URI, suites)`` of every ``deb`` source in ``/etc/apt/sources.list*``."""
    found: list[tuple[str, list[str]]] = []
    paths = [Path("/etc/apt/sources.list")] + sorted(Path("/etc/apt/sources.list.d").glob("*"))
    for path in paths:
        try:
            text = path.read_text()
        except OSError:
            continue
        if path.suffix == ".sources":
            for block in re.split(r"\n\s*\n", text):
                fields = {}
                for line in block.splitlines():
                    if ":" in line and not line.lstrip().startswith("#"):
                        key, _, value = line.partition(":")
                        fields[key.strip().lower()] = value.split()
                if "deb" in fields.get("types", []):
                    for uri in fields.get("uris", []):
                        found.append((uri, fields.get("suites", [])))
        else:
            for line in text.splitlines():
                parts = re.sub(r"\[[^\]]*\]", " ", line).split()
                if len(parts) >= 3 and parts[0] == "deb":
                    found.append((parts[1], [parts[2]]))
    return found


def main(argv: list[str] | None = None) -> int:
    """``python -m conductor_env.sandboxes.image [--tag T] [--force] [--offline]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="conductor_env.sandboxes.image", description="Build the sandbox image.")
    parser.add_argument("--tag", default=DEFAULT_IMAGE)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--offline", action="store_true", help="skip the registry; debootstrap directly")
    args = parser.parse_args(argv)
    try:
        build_image(args.tag, force=args.force, offline=True if args.offline else None, log=print)
    except SandboxUnavailable as error:
        print(f"error: {error}")
        return 1
    print(f"built {args.tag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
