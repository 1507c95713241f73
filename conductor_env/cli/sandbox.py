"""``conductor-env sandbox build`` and ``conductor-env sandbox check``: the code sandboxes."""

from __future__ import annotations

import argparse
import time

from conductor_env.sandboxes.base import Limits, SandboxUnavailable
from conductor_env.sandboxes.image import VARIANTS, build_image

#: A tiny job per kind that a working backend passes.
SMOKE_JOBS = (
    ("stdin", "print(sum(map(int, input().split())))", [{"input": "2 3", "output": "5"}], None),
    (
        "functional",
        "class Solution:\n    def add(self, a, b):\n        return (a + b,)\n",
        [{"input": "2\n3", "output": "[5]"}],
        "add",
    ),
    ("script", "def f(x):\n    return x * 2\n\nassert f(2) == 4\n", [], None),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``sandbox build`` and ``sandbox check``."""
    parser = subparsers.add_parser("sandbox", help="build and check the code sandboxes")
    actions = parser.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)

    build = actions.add_parser(
        "build",
        help="build a Docker sandbox image (from the registry, else offline with debootstrap)",
        description="Builds an image the docker backend runs: debian slim + the variant's Debian "
        "packages from a registry when one is reachable, otherwise a debootstrap of a minimal Debian "
        "with them from this machine's Debian mirror, loaded with `docker import` (needs root). "
        "Variants: " + "; ".join(f"{v.name} ({v.tag}, {len(v.packages)} Debian packages" + (f", {len(v.pip_packages)} pinned pip requirements)" if v.pip_packages else ")") for v in VARIANTS.values()),
    )
    build.add_argument(
        "--variant",
        default="default",
        choices=sorted(VARIANTS),
        help="what the image holds: default (python3 + numpy) or bigcodebench (large; BigCodeBench's libraries)",
    )
    build.add_argument("--tag", default=None, help="image name and tag (default: the variant's)")
    build.add_argument("--force", action="store_true", help="rebuild even if the image exists")
    build.add_argument("--offline", action="store_true", help="skip the registry and debootstrap directly")
    build.set_defaults(handler=_build)

    check = actions.add_parser("check", help="run a smoke job per kind in each backend and say what works")
    check.add_argument("--backend", choices=("docker", "local"), help="check one backend only")
    check.set_defaults(handler=_check)


def _build(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env sandbox build``."""
    try:
        tag = build_image(args.tag, variant=args.variant, force=args.force, offline=True if args.offline else None, log=print)
    except SandboxUnavailable as error:
        print(f"conductor-env sandbox build: error: {error}")
        return 1
    print(f"sandbox image ready: {tag}")
    return 0


def _check(args: argparse.Namespace) -> int:
    """Handler of ``conductor-env sandbox check``; exit status 1 when every backend checked fails."""
    from conductor_env.sandboxes.factory import get_sandbox

    backends = [args.backend] if args.backend else ["docker", "local"]
    failures = 0
    for backend in backends:
        try:
            sandbox = get_sandbox(backend, pool_size=1)
        except SandboxUnavailable as error:
            print(f"{backend}: unavailable: {error}")
            failures += 1
            continue
        try:
            started = time.monotonic()
            problems = []
            for kind, program, tests, func_name in SMOKE_JOBS:
                report = sandbox.run_tests(program, tests, kind=kind, limits=Limits(), func_name=func_name)
                if not report.passed:
                    problems.append(f"{kind}: {report.error or [t.verdict + ' ' + t.detail for t in report.tests]}")
            elapsed = time.monotonic() - started
            isolation = getattr(sandbox, "isolation", "container")
            if problems:
                failures += 1
                print(f"{backend}: FAILED ({isolation}): " + "; ".join(problems))
            else:
                print(f"{backend}: ok ({isolation}; first jobs incl. start-up {elapsed:.2f}s)")
        finally:
            sandbox.close()
    return 1 if failures == len(backends) or (args.backend and failures) else 0
