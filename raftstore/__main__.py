"""``python -m raftstore`` / ``plat-raftstore``: run one member."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop when installed (grpc.aio runs on it; it halves the event loop's own cost per
    request), else the default loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def main(argv: Sequence[str] | None = None) -> int:
    from raftstore.config import ConfigError, parse
    from raftstore.journal import JournalError
    from raftstore.server import configure_logging, serve

    try:
        cfg = parse(argv)
    except ConfigError as e:
        print(f"raftstore: {e}", file=sys.stderr)
        return 2
    configure_logging(cfg.log_level)
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(serve(cfg))
    except (OSError, JournalError) as e:
        print(f"raftstore: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
