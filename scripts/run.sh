#!/usr/bin/env bash
# Sets everything up, then runs the main job: plat-server, the all-in-one API server on its
# embedded store (data, PKI and admin.kubeconfig under .run/platform), on https port 6443.
# Point stock kubectl at it with the kubeconfig it prints. Ctrl-C stops it.
# Extra arguments go to plat-server (e.g. --secure-port 16443, --etcd-servers URL,...).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
mkdir -p .run/platform
echo "run: kubectl --kubeconfig $(pwd)/.run/platform/admin.kubeconfig get namespaces" >&2
exec .venv/bin/plat-server --data-dir .run/platform "$@"
