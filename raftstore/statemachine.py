"""The boundary between replication (raftstore/replication.py, the only module that imports
pysyncobj) and what it replicates.

Replication hands every committed command, in log order, to ``apply`` in its own thread, and
asks for ``snapshot`` / ``restore`` when it compacts its log or catches a member up. It knows
nothing of etcd: commands are opaque bytes (the state machine encodes them with msgpack).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO, Protocol


class StateMachine(Protocol):
    def apply(self, command: bytes) -> object:
        """Apply one committed command deterministically and return its result to the proposer
        (only the member that proposed it sees the result). Must not raise for bad commands:
        return an error value instead, every member must reach the same state."""

    def snapshot(self) -> bytes:
        """The whole replicated state as bytes (taken between two applies)."""

    def snapshot_writer(self) -> Callable[[BinaryIO], object]:
        """Capture the state now, cheaply (called in the raft thread between two applies), and
        return a function writing the same bytes as ``snapshot`` would have given, to be called
        later from another thread while applies go on."""

    def restore(self, data: bytes) -> None:
        """Replace the whole state with a ``snapshot``.

        A state machine may also offer deltas (raftstore/applier.py ``EtcdStateMachine``):
        ``capture(mark)`` returns a writer of the changes since the capture that gave
        ``mark`` (or of the whole state, when it cannot), whether it is a delta, and this
        capture's mark; ``mark()`` the mark of the state as it is; and
        ``restore(data, deltas)`` takes the snapshot followed by deltas. Replication then
        appends deltas to its snapshot file instead of rewriting it (snapshot_file.py)."""
