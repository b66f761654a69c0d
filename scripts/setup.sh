#!/usr/bin/env bash
# Installs everything the project needs on a fresh Debian machine (run as root or with sudo):
# Debian's etcd-server and etcd-client (the comparison system of the differential tests and
# benchmarks) and a virtual environment in .venv with the project and its dev dependencies.
# Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1; then
  echo "setup: installing Debian's etcd-server and etcd-client" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    etcd-server etcd-client >/dev/null
fi
# The package may start a system etcd on 2379/2380; the project never uses it.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  $SUDO systemctl stop etcd || true
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python dependencies" >&2
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
