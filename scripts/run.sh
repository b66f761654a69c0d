#!/usr/bin/env bash
# Sets everything up, then runs the main job: a local three-node raftstore cluster on loopback
# (data under .run/raftstore), printing how to talk to it with etcdctl. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python -m raftstore.launcher --nodes 3 --data-dir .run/raftstore "$@"
