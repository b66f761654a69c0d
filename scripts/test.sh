#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite: unit tests, the differential tests
# against a real etcd cluster, and the multi-process fault tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python -m pytest -q -ra -s --durations=15 "$@"
