"""What the gRPC API layer needs from replication. Implemented by raftstore/replication.py
(pysyncobj); small enough to fake in unit tests of the API layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    id: int
    name: str
    peer_urls: list[str]
    client_urls: list[str]


class ConsensusError(Exception):
    """The command could not be committed: no leader, lost leadership, timeout. The API
    answers etcd's ``etcdserver: no leader`` / ``request timed out`` (UNAVAILABLE)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class LeaderTransferTimeout(ConsensusError):
    def __init__(self) -> None:
        super().__init__("etcdserver: request timed out, leader transfer took too long")


class NoLeaderError(ConsensusError):
    def __init__(self) -> None:
        super().__init__("etcdserver: no leader")


class TimeoutError_(ConsensusError):
    def __init__(self) -> None:
        super().__init__("etcdserver: request timed out")


class Consensus(Protocol):
    @property
    def member_id(self) -> int: ...

    @property
    def cluster_id(self) -> int: ...

    def members(self) -> list[Member]: ...

    def term(self) -> int: ...

    def leader_id(self) -> int:
        """Member id of the current leader as this member sees it; 0 when unknown."""

    def is_leader(self) -> bool: ...

    def applied_index(self) -> int: ...

    def commit_index(self) -> int: ...

    async def propose(self, command: bytes, timeout: float = 7.0) -> object:
        """Replicate ``command`` (through the leader if this member is a follower), wait until
        it is applied on this member, and return the state machine's result for it. A write is
        acknowledged only once it is on disk on a majority. Raises ConsensusError."""

    async def move_leader(self, target: int, timeout: float = 5.0) -> None:
        """(Leader) hand leadership to member ``target`` and return once it leads (etcd's
        MoveLeader). Raises LeaderTransferTimeout when it does not within ``timeout``."""

    async def read_barrier(self, timeout: float = 7.0) -> None:
        """Return once this member has applied everything committed before the call began
        (linearizable read point). Concurrent callers share one barrier. Raises
        ConsensusError."""
