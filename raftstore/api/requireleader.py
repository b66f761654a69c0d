"""Requests that need the member to have a leader: etcd's ``hasleader`` metadata, which
clientv3's ``WithRequireLeader`` sets (Kubernetes' API server sets it on its watches).

As etcd 3.4 answers it (measured against Debian's etcd with a member cut off from its peers
by a network partition):

* a unary call, or a new Watch or LeaseKeepAlive stream, that carries ``hasleader: true``
  on a member that knows no leader fails at once: UNAVAILABLE, ``etcdserver: no leader``;
* such a stream that is already open ends with the same status once the member has seen no
  leader at three checks in a row, one check per election timeout (etcd's ``monitorLeader``,
  ``maxNoLeaderCnt``): about four seconds after the cut on a default cluster, whereupon the
  client opens it again on another member. Without this, a watch on a member cut off from a
  majority stays open and silent, and its client never learns of the writes the majority
  goes on committing.

Requests without the metadata are served as before: a read waits for a read index, a write
for its commit, each until its deadline.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import grpc

    from raftstore.consensus import Consensus

log = logging.getLogger(__name__)

REQUIRE_LEADER_KEY: Final = "hasleader"  # etcd's rpctypes.MetadataRequireLeaderKey
HAS_LEADER: Final = "true"  # rpctypes.MetadataHasLeader
MAX_NO_LEADER_CHECKS: Final = 3  # etcd's maxNoLeaderCnt


def wants_leader(context: grpc.aio.ServicerContext) -> bool:
    """Whether the call carries ``hasleader: true``."""
    metadata = context.invocation_metadata()
    if not metadata:
        return False
    for key, value in metadata:
        if key == REQUIRE_LEADER_KEY:
            return bool(value == HAS_LEADER)
    return False


class Held:
    """A stream that requires a leader, while it is open."""

    __slots__ = ("lost", "task")

    def __init__(self, task: asyncio.Task[object] | None) -> None:
        self.task = task
        self.lost = False  # ended by the monitor: the member lost its leader


class LeaderMonitor:
    """Knows whether the member has a leader, and ends the streams that require one once
    it has had none for ``MAX_NO_LEADER_CHECKS`` checks (:meth:`run`)."""

    def __init__(self, consensus: Consensus, interval: float) -> None:
        self._consensus = consensus
        self.interval = interval
        self._held: set[Held] = set()

    def has_leader(self) -> bool:
        return self._consensus.leader_id() != 0

    def hold(self) -> Held:
        """Register the running stream (its task is cancelled when the leader is lost)."""
        held = Held(asyncio.current_task())
        self._held.add(held)
        return held

    def release(self, held: Held) -> None:
        self._held.discard(held)

    async def run(self) -> None:
        """Forever: one check per ``interval``."""
        misses = 0
        while True:
            await asyncio.sleep(self.interval)
            misses = 0 if self.has_leader() else misses + 1
            if misses >= MAX_NO_LEADER_CHECKS and self._held:
                held, self._held = self._held, set()
                log.info("no leader for %d checks: ending %d streams that require one",
                         misses, len(held))
                for h in held:
                    h.lost = True
                    if h.task is not None:
                        h.task.cancel()
