"""A member logs when its event loop ran late (raftstore/server.py ``watch_loop_lag``): no
request is read or answered meanwhile, which the raft thread's stall log does not show."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from raftstore.server import LOOP_STALLED, watch_loop_lag


async def test_a_blocked_event_loop_is_logged(capsys: pytest.CaptureFixture[str]) -> None:
    task = asyncio.create_task(watch_loop_lag())
    try:
        await asyncio.sleep(0.25)
        assert "event loop stalled" not in capsys.readouterr().out
        time.sleep(LOOP_STALLED + 0.3)  # blocks the loop, as a long callback would
        await asyncio.sleep(0.25)
        out = capsys.readouterr()
        assert "event loop stalled" in out.out + out.err
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
