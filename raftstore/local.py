"""``LocalConsensus``: the Consensus of a single in-process member without Raft.

A proposal is applied at once, in the caller's thread, under the state machine's lock: there
is nobody to agree with. Used by unit tests of the API layer and by the embedded storage
backend (which adds its own persistence around it).
"""

from __future__ import annotations

import asyncio
from typing import Final

from raftstore import metrics
from raftstore.consensus import Member
from raftstore.statemachine import StateMachine

LOCAL_MEMBER_ID: Final = 0x8E9E05C52164694D  # etcd's id for a default single member
LOCAL_CLUSTER_ID: Final = 0xCDF818194E3A8C32


class LocalConsensus:
    """Implements ``raftstore.consensus.Consensus`` for one member that is always leader."""

    def __init__(
        self,
        state: StateMachine,
        *,
        member_id: int = LOCAL_MEMBER_ID,
        cluster_id: int = LOCAL_CLUSTER_ID,
        name: str = "default",
        peer_urls: list[str] | None = None,
        client_urls: list[str] | None = None,
    ) -> None:
        self._state = state
        self._member = Member(
            id=member_id, name=name, peer_urls=list(peer_urls or ["http://localhost:2380"]),
            client_urls=list(client_urls or []),
        )
        self._cluster_id = cluster_id
        self._index = 0

    @property
    def member_id(self) -> int:
        return self._member.id

    @property
    def cluster_id(self) -> int:
        return self._cluster_id

    def members(self) -> list[Member]:
        return [self._member]

    def term(self) -> int:
        return 1

    def leader_id(self) -> int:
        return self._member.id

    def is_leader(self) -> bool:
        return True

    async def move_leader(self, target: int, timeout: float = 5.0) -> None:
        """The only member leads already (the caller checked that ``target`` is a member)."""

    def applied_index(self) -> int:
        return self._index

    def commit_index(self) -> int:
        return self._index

    def propose_sync(self, command: bytes) -> object:
        """Apply ``command`` now (the state machine serialises with its own lock)."""
        self._index += 1
        result = self._state.apply(command)
        metrics.APPLIED_INDEX.set(self._index)
        metrics.COMMITTED_INDEX.set(self._index)
        return result

    async def propose(self, command: bytes, timeout: float = 7.0) -> object:  # noqa: ASYNC109
        return self.propose_sync(command)

    async def read_barrier(self, timeout: float = 7.0) -> None:  # noqa: ASYNC109
        # Every proposal is applied before propose returns: local state is always current.
        await asyncio.sleep(0)
