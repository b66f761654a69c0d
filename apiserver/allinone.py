"""``plat-server``: the all-in-one server (API server, embedded store under DATA_DIR/store or
an etcd3 store with --etcd-servers, and the in-process controllers). On first start it
creates a CA and certificates under DATA_DIR/pki and writes DATA_DIR/admin.kubeconfig for
stock kubectl: ``plat-server --data-dir DIR --secure-port PORT``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from apiserver.app import main_for


def main(argv: Sequence[str] | None = None) -> int:
    return main_for(argv, allinone=True)


if __name__ == "__main__":
    sys.exit(main())
