#!/usr/bin/env bash
# Makes the code sandboxes usable on this machine; idempotent, and quick when all is in place.
#
#   1. installs docker.io, bubblewrap, debootstrap and python3-numpy (the local backend runs the
#      system python3, whose programs may import numpy, as in the image) from Debian when
#      missing (apt-get update only when the install needs it);
#   2. starts dockerd when no daemon answers (overlay2, falling back to vfs), waiting until ready;
#   3. builds the sandbox image when missing (conductor_env.sandboxes.image: from the registry if
#      reachable, else offline with debootstrap + docker import; CONDUCTOR_SANDBOX_IMAGE names it).
#      The large BigCodeBench image is not built here: `conductor-env sandbox build --variant
#      bigcodebench` builds it on demand (or CONDUCTOR_BUILD_BIGCODEBENCH=1 here).
#
# Environment: PYTHON (default .venv/bin/python, else python3), DOCKERD_LOG (default /tmp/dockerd.log),
# CONDUCTOR_SKIP_DOCKER=1 to set up bubblewrap only.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
PYTHON=$(command -v "$PYTHON")
DOCKERD_LOG=${DOCKERD_LOG:-/tmp/dockerd.log}

say() { printf 'setup_sandbox: %s\n' "$*"; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else say "needs root for: $*"; return 1
  fi
}

# -- 1. packages -------------------------------------------------------------------------------
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
[ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 && missing+=(python3-numpy)
if [ "${CONDUCTOR_SKIP_DOCKER:-0}" != 1 ]; then
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
fi
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    as_root apt-get update -qq
    as_root apt-get install -y --no-install-recommends "${missing[@]}"
  }
fi

# bubblewrap jails run as an unprivileged user: make sure user namespaces are allowed.
if [ -r /proc/sys/kernel/unprivileged_userns_clone ] && [ "$(cat /proc/sys/kernel/unprivileged_userns_clone)" = 0 ]; then
  say "enabling unprivileged user namespaces for bubblewrap"
  as_root sysctl -q -w kernel.unprivileged_userns_clone=1 || say "could not enable them: the local backend will fall back to rlimits"
fi

if [ "${CONDUCTOR_SKIP_DOCKER:-0}" = 1 ]; then
  say "CONDUCTOR_SKIP_DOCKER=1: skipping Docker"
  exit 0
fi

# -- 2. the daemon -----------------------------------------------------------------------------
daemon_up() {
  if command -v docker >/dev/null 2>&1; then docker info >/dev/null 2>&1
  else "$PYTHON" -c 'import docker; docker.from_env(timeout=5).ping()' >/dev/null 2>&1
  fi
}
started_pid=""
start_dockerd() {  # $@: extra dockerd flags; waits up to 60 s
  say "starting dockerd $* (log: $DOCKERD_LOG)"
  started_pid=$(as_root sh -c "nohup dockerd $* >>'$DOCKERD_LOG' 2>&1 & echo \$!")
  for _ in $(seq 1 60); do
    daemon_up && return 0
    sleep 1
  done
  return 1
}
if ! daemon_up; then
  if ! start_dockerd; then
    say "dockerd did not come up with its default storage driver; retrying with vfs"
    [ -n "$started_pid" ] && as_root kill "$started_pid" 2>/dev/null || true  # the one started above
    sleep 3
    start_dockerd --storage-driver=vfs || { say "dockerd did not start; see $DOCKERD_LOG"; tail -20 "$DOCKERD_LOG" >&2; exit 1; }
  fi
fi

# -- 3. the image ------------------------------------------------------------------------------
image=$("$PYTHON" -c 'from conductor_env.sandboxes.image import DEFAULT_IMAGE; print(DEFAULT_IMAGE)')
if "$PYTHON" -c "
import sys
from conductor_env.sandboxes.image import docker_client, image_exists
sys.exit(0 if image_exists(docker_client(), '$image') else 1)" 2>/dev/null; then
  say "docker daemon up, image $image present"
else
  say "building the sandbox image $image"
  as_root env PATH="$PATH" "$PYTHON" -c 'import sys; from conductor_env.sandboxes.image import main; sys.exit(main(sys.argv[1:]))' --tag "$image"
fi
if [ "${CONDUCTOR_BUILD_BIGCODEBENCH:-0}" = 1 ]; then
  say "building the BigCodeBench image (skipped when present)"
  as_root env PATH="$PATH" "$PYTHON" -c 'import sys; from conductor_env.sandboxes.image import main; sys.exit(main(sys.argv[1:]))' --variant bigcodebench
fi
