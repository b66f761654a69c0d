"""``python -m raftstore`` / ``plat-raftstore``: run one member."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from raftstore.config import ConfigError, parse
    from raftstore.server import configure_logging, serve

    try:
        cfg = parse(argv)
    except ConfigError as e:
        print(f"raftstore: {e}", file=sys.stderr)
        return 2
    configure_logging(cfg.log_level)
    # The default event loop, not uvloop: grpc.aio drives its own completion queue on it.
    try:
        asyncio.run(serve(cfg))
    except OSError as e:
        print(f"raftstore: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
