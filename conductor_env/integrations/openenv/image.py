"""Builds the OpenEnv server image offline, on the package's own base image (the sandbox image).

The base is the sandbox image (:data:`conductor_env.sandboxes.image.DEFAULT_IMAGE`: a Debian
debootstrapped on this machine and loaded with ``docker import``; built first when missing), so
no registry is needed. The build context is staged in a temporary folder, never in the source
tree: the ``Dockerfile``, ``openenv.yaml`` and ``validation/`` beside this module, a wheel of
this package built from a copy of the source, pip's own wheel (Debian's ``python3`` has no pip),
and the host's CA bundle (pip inside the build reaches PyPI through it where a proxy re-signs
TLS; it stays in the build stage, not in the image)::

    python -m conductor_env.integrations.openenv.image --tag conductor-env-openenv:1
    docker run --rm -p 8000:8000 -e CONDUCTOR_OPENENV_OPTIONS='{"max_rounds": 2}' conductor-env-openenv:1
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from conductor_env.sandboxes.image import DEFAULT_IMAGE, HOST_CA_BUNDLE, build_image, docker_client, image_exists

__all__ = ["DEFAULT_TAG", "build_openenv_image", "stage_context"]

#: The image's default tag; bump it when what the image holds changes.
DEFAULT_TAG = "conductor-env-openenv:1"
HERE = Path(__file__).resolve().parent
#: The source tree's root (holding pyproject.toml) when the package runs from a checkout.
SOURCE_ROOT = HERE.parents[2]
#: What a wheel of the package is built from (the four import roots, pyproject.toml, README.md).
SOURCE_ITEMS = ("pyproject.toml", "README.md", "conductor_env", "tasks", "sandboxes", "agents")
#: Dependencies that PyPI has only as C sources: built here (the image has no compiler; the
#: base is a Debian of this machine's release, so the wheels fit it) at the versions installed here.
HOST_BUILT = ("pycosat",)


def stage_context(folder: Path, *, log: Callable[[str], None] = print) -> Path:
    """Writes a complete build context (and OpenEnv package) into ``folder``.

    Args:
        folder: An empty folder.
        log: Receives progress lines.

    Returns:
        ``folder``, holding ``Dockerfile``, ``openenv.yaml``, ``validation/``, ``wheels/`` and
        ``host-ca.pem`` (empty when the host has no CA bundle).

    Raises:
        FileNotFoundError: When the package does not run from a source checkout.
        subprocess.CalledProcessError: When building the wheel or fetching pip fails.
    """
    if not (SOURCE_ROOT / "pyproject.toml").is_file():
        raise FileNotFoundError(f"the image is built from a source checkout; no pyproject.toml in {SOURCE_ROOT}")
    for name in ("Dockerfile", "openenv.yaml"):
        shutil.copy2(HERE / name, folder / name)
    shutil.copytree(HERE / "validation", folder / "validation")
    ca = Path(HOST_CA_BUNDLE)
    (folder / "host-ca.pem").write_bytes(ca.read_bytes() if ca.is_file() else b"")
    wheels = folder / "wheels"
    with tempfile.TemporaryDirectory(prefix="conductor-source-") as source:
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "results")
        for item in SOURCE_ITEMS:
            path = SOURCE_ROOT / item
            (shutil.copytree(path, Path(source) / item, ignore=ignore) if path.is_dir() else shutil.copy2(path, Path(source) / item))
        log("building the conductor-env wheel")
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), source], check=True)
    log("fetching pip's wheel; building " + ", ".join(HOST_BUILT))
    subprocess.run([*pip, "download", "--no-deps", "--only-binary", ":all:", "-d", str(wheels), "pip"], check=True)
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), *(_pinned(name) for name in HOST_BUILT)], check=True)
    return folder


def _pinned(name: str) -> str:
    """``name==<the installed version>``, or ``name`` when it is not installed here."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{name}=={version(name)}"
    except PackageNotFoundError:
        return name


def build_openenv_image(tag: str = DEFAULT_TAG, *, base: str = DEFAULT_IMAGE, force: bool = False, log: Callable[[str], None] = print) -> str:
    """Builds the OpenEnv server image (and its base, the sandbox image, when missing).

    Args:
        tag: The image tag.
        base: The base image (the sandbox image by default).
        force: Rebuild even when the daemon has ``tag``.
        log: Receives progress lines.

    Returns:
        The tag.

    Raises:
        SandboxUnavailable: When no Docker daemon answers or the base cannot be built.
        subprocess.CalledProcessError: When staging or ``docker build`` fails.
    """
    if not force and image_exists(docker_client(), tag):
        log(f"image {tag} is already built")
        return tag
    build_image(base, log=log)
    with tempfile.TemporaryDirectory(prefix="conductor-openenv-image-") as folder:
        stage_context(Path(folder), log=log)
        log(f"docker build -t {tag} (base {base})")
        subprocess.run(["docker", "build", "--build-arg", f"BASE_IMAGE={base}", "-t", tag, folder], check=True, env={**os.environ, "DOCKER_BUILDKIT": "0"})
    return tag


def main(argv: list[str] | None = None) -> int:
    """``python -m conductor_env.integrations.openenv.image [--tag T] [--base B] [--stage-only DIR]``."""
    parser = argparse.ArgumentParser(description="Builds the Conductor env's OpenEnv server image offline.")
    parser.add_argument("--tag", default=DEFAULT_TAG)
    parser.add_argument("--base", default=DEFAULT_IMAGE, help="the base image (default: the sandbox image)")
    parser.add_argument("--force", action="store_true", help="rebuild even when the image exists")
    parser.add_argument("--stage-only", metavar="DIR", help="only write the build context (an OpenEnv package) into DIR")
    args = parser.parse_args(argv)
    if args.stage_only:
        folder = Path(args.stage_only)
        folder.mkdir(parents=True, exist_ok=True)
        stage_context(folder)
        print(folder)
        return 0
    print(build_openenv_image(args.tag, base=args.base, force=args.force))
    return 0


if __name__ == "__main__":
    sys.exit(main())
