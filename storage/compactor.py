"""Periodic compaction of the store's history (upstream ``etcd3/compact.go``).

Several apiservers share one store; each runs a compactor, and they agree through the
well-known key ``compact_rev_key``: every tick, a compactor compare-and-swaps the key's
*version* (a logical clock of compactions) from the value it saw last time. Only the one
whose swap succeeds compacts, and it compacts to the revision it saw at the *previous* tick,
so one interval of history is always kept. A compactor whose swap fails just learns the
current clock and tries again next tick. "Already compacted" is not an error.

Worked example (interval T): tick 1 at rev 100: swap 0 -> 1 succeeds, nothing compacted
(bootstrap), remembers 100. Tick 2 at rev 180: swap 1 -> 2 succeeds, compacts to 100 (the
revision one interval ago).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Final

from raftstore.api.pb import rpc_pb2 as pb
from storage.etcd3.kvclient import COMPACTED, KVError

if TYPE_CHECKING:
    from storage.etcd3.kvclient import KVClient

log = logging.getLogger(__name__)

COMPACT_REV_KEY: Final = b"compact_rev_key"
_Cmp = pb.Compare


async def compact_once(client: KVClient, t: int, rev: int) -> tuple[int, int]:
    """One tick: returns the new (clock, revision to compact next time)."""
    req = pb.TxnRequest(
        compare=[_Cmp(key=COMPACT_REV_KEY, target=_Cmp.VERSION, result=_Cmp.EQUAL, version=t)],
        success=[pb.RequestOp(request_put=pb.PutRequest(key=COMPACT_REV_KEY,
                                                        value=str(rev).encode()))],
        failure=[pb.RequestOp(request_range=pb.RangeRequest(key=COMPACT_REV_KEY))],
    )
    resp = await client.txn(req)
    cur_rev = int(resp.header.revision)
    if not resp.succeeded:
        kvs = resp.responses[0].response_range.kvs
        return (int(kvs[0].version) if kvs else 0), cur_rev
    if rev == 0:
        return t + 1, cur_rev  # no compaction on bootstrap
    try:
        await client.compact(rev)
    except KVError as exc:
        if exc.kind != COMPACTED:
            raise
    log.info("compacted store history to revision %d", rev)
    return t + 1, cur_rev


class Compactor:
    """Runs ``compact_once`` every ``interval`` seconds until ``stop``."""

    def __init__(self, client: KVClient, interval: float) -> None:
        self._client = client
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        t, rev = 0, 0
        while True:
            await asyncio.sleep(self._interval)
            try:
                t, rev = await compact_once(self._client, t, rev)
            except KVError as exc:
                log.warning("store compaction failed: %s", exc.message)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
