#!/usr/bin/env bash
# Runs a command in new network and PID namespaces that hold only a loopback interface, so
# whatever it starts (a Ray cluster) can bind nothing but 127.0.0.1, and every process it
# leaves behind ends with it (also when this script is killed). Needs root (or sudo).
#
#   bash scripts/in_loopback_ns.sh .venv/bin/python -m pytest -m ray
set -euo pipefail
if [ "$#" -eq 0 ]; then echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; fi
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then exec sudo -E "$0" "$@"; fi
  echo "in_loopback_ns: needs root for unshare --net" >&2; exit 1
fi
command -v ip >/dev/null 2>&1 || { echo "in_loopback_ns: needs ip (apt-get install iproute2)" >&2; exit 1; }
exec unshare --net --pid --fork --kill-child --mount-proc bash -c 'ip link set lo up && exec "$@"' in_loopback_ns "$@"
