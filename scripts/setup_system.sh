#!/usr/bin/env bash
# Installs the Debian packages the test suite needs beyond the sandbox's own (which
# scripts/setup_sandbox.sh installs): Chromium, to render the HTML report headless.
# Idempotent and quiet when everything is there. Needs root (or sudo) only when installing.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup_system: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "setup_system: installing ${missing[*]}"
$SUDO apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
