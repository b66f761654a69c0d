"""``plat-apiserver``: one stateless API server replica over an etcd3 store (raftstore or
etcd): ``plat-apiserver --etcd-servers URL,... --secure-port PORT ...``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from apiserver.app import main_for


def main(argv: Sequence[str] | None = None) -> int:
    return main_for(argv, allinone=False)


if __name__ == "__main__":
    sys.exit(main())
