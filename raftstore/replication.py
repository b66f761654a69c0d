"""Raft replication through pysyncobj: the only module that imports it.

How it is wired (pysyncobj 0.3.17; pinned, since a few hooks below use its internals):

* **Commands.** Every command is opaque bytes from the state machine (msgpack), appended to the
  log with our own command type byte; ``_SyncObj__doApplyCommand`` is overridden to route that
  type to ``StateMachine.apply``. pysyncobj's replicated-method machinery (which pickles the call)
  is not used, so nothing pickled lands on disk. A second type is the read barrier, a no-op that
  never reaches the state machine.
* **Reads.** A linearizable read point is a read index (readindex.py): the leader's appends
  carry the number of its latest read round ("rs"), a follower's answer echoes the number and
  term of the append it answers ("rs", "rt"), and a follower asks the leader with "rx_read"
  messages. Only when that fails does a read use a barrier entry.
* **Durability** ("persist before you answer"). The journal (journal.py) buffers appended
  entries. A follower holds its acknowledgements of appended entries until the raft thread has
  synced the journal, once after everything read in one poll (``_SyncingTransport.send`` /
  ``release_held``), and syncs before a vote leaves. The leader sends its appends first and
  syncs its own journal right after, while they travel (as etcd's leader does), and counts
  itself towards a majority only up to ``DurableJournal.durable_index``
  (``_RaftNode.__applyLogEntries``), so an entry is committed, applied and answered only once
  it is on the disks of a majority; a single member waits for its own sync. Every entry
  appended between two syncs shares one fdatasync: group commit.
* **Latency.** pysyncobj in batch mode sends appends only every ``appendEntriesPeriod``; an
  on-tick callback sends as soon as the log grew or the commit index moved, and a pipe wakes the
  tick thread when a command is queued, so a write costs two network hops and two disk syncs
  that overlap (the leader's and the followers'), not a heartbeat period.
* **Snapshots.** pysyncobj's custom serializer hooks write ``StateMachine.snapshot`` plus the two
  log entries and the member list as msgpack (fsynced), or append a delta of what changed
  since the file's last frame (snapshot_file.py); followers that fall behind the compacted
  log receive that file and load it through the same hook.
* **Threads.** pysyncobj runs in one thread of ours (``autoTick`` off). ``apply`` runs in it; the
  asyncio side proposes through a thread-safe queue and gets results through a pipe the
  loop watches (``_LoopInbox``).
* **Peers.** pysyncobj's transport unpickles what it receives, so peers authenticate and encrypt
  with its ``password`` option (Fernet) whenever a peer address is not loopback (config.py
  refuses to start otherwise).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import logging
import os
import pickle
import random
import socket
import struct
import threading
import time
import weakref
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgpack
import pysyncobj.pickle as _pso_pickle
import pysyncobj.syncobj as _pso
import pysyncobj.tcp_connection as _tcp
from pysyncobj import SyncObj, SyncObjConf
from pysyncobj.config import FAIL_REASON, SERIALIZER_STATE
from pysyncobj.monotonic import monotonic as _pso_monotonic
from pysyncobj.pipe_notifier import PipeNotifier
from pysyncobj.transport import TCPTransport

from raftstore import journal as journal_mod
from raftstore import metrics
from raftstore import snapshot_file as sf
from raftstore.consensus import (
    ConsensusError,
    LeaderTransferTimeout,
    Member,
    NoLeaderError,
    TimeoutError_,
)
from raftstore.journal import DurableJournal, JournalError, fsync_dir
from raftstore.readindex import READ_MESSAGES, Answer, ReadIndex
from raftstore.statemachine import StateMachine

log = logging.getLogger("raftstore.replication")

_CMD_APPLY: Final = 0x10  # payload goes to StateMachine.apply
_CMD_BARRIER: Final = 0x11  # read barrier: committed, never applied to the state machine
_CMD_BATCH: Final = 0x12  # msgpack array of commands, applied in order; the result is a list
_LEADER: Final = 2  # pysyncobj's _RAFT_STATE.LEADER

# pysyncobj builds its journal with ``createJournal(conf.journalFile)``; let it accept a ready
# journal object, so that ours (durable) is used without forking the library.
_original_create_journal = _pso.createJournal


def _create_journal(journal_file: Any) -> Any:
    if isinstance(journal_file, DurableJournal):
        return journal_file
    return _original_create_journal(journal_file)


_pso.createJournal = _create_journal


_ZLIB_HEADER: Final = b"\x78\x01"  # deflate, 32 KiB window, no dictionary, "fastest"
_STORED_BLOCK: Final = 0xFFFF  # the largest stored deflate block
_BLOCK_HEAD: Final = struct.Struct("<BHH")  # BFINAL|BTYPE=00, LEN, NLEN
_ADLER: Final = struct.Struct(">I")


def _stored_zlib(data: bytes) -> bytes:
    """``zlib.compress(data, 0)``'s format (a zlib stream of stored deflate blocks), built
    directly: zlib sets up a full compressor state for every call (about 12-50 us a message),
    where framing the bytes costs under 3 us for a typical append."""
    n = len(data)
    adler = _ADLER.pack(zlib.adler32(data))
    if n <= _STORED_BLOCK:
        return b"".join((_ZLIB_HEADER, _BLOCK_HEAD.pack(1, n, n ^ 0xFFFF), data, adler))
    parts: list[bytes | memoryview] = [_ZLIB_HEADER]
    view = memoryview(data)
    for pos in range(0, n, _STORED_BLOCK):
        chunk = view[pos : pos + _STORED_BLOCK]
        size = len(chunk)
        final = 1 if pos + _STORED_BLOCK >= n else 0
        parts.append(_BLOCK_HEAD.pack(final, size, size ^ 0xFFFF))
        parts.append(chunk)
    parts.append(adler)
    return b"".join(parts)


class _StoredZlib:
    """pysyncobj compresses every peer message with zlib level 3, which costs the leader more
    CPU than it saves on a LAN or loopback; stored blocks keep the same framing, so members of
    either kind still read each other (any zlib stream decompresses as before)."""

    @staticmethod
    def compress(data: bytes, level: int = 0) -> bytes:
        return _stored_zlib(data)

    decompress = staticmethod(zlib.decompress)


_tcp.zlib = _StoredZlib


class _PeerPickle:
    """pysyncobj pickles peer messages with protocol 2 (for Python 2 peers), which has no
    bytes type: every command in an append is pickled as a call to ``codecs.encode`` of a
    latin-1 string and rebuilt by that call on the other side. Protocol 5 writes bytes as they
    are: an append of three 1.3 KB commands pickles in 2.3 us instead of 5.6 and unpickles in
    2.6 instead of 6.9, and pickling appends was about a sixth of the leader's raft thread
    under check perf. Any Python 3.8+ member reads either protocol, so a cluster of mixed
    versions still talks."""

    @staticmethod
    def dumps(obj: Any, protocol: int | None = None) -> bytes:
        return pickle.dumps(obj, _PEER_PICKLE_PROTOCOL)

    loads = staticmethod(_pso_pickle.loads)


_PEER_PICKLE_PROTOCOL: Final = 5
_tcp.pickle = _PeerPickle


# pysyncobj drops a peer connection when nothing was read from it for ``connectionTimeout``, but
# it checks that clock before reading what is waiting in the socket, and it checks it on every
# send. So a member whose raft thread was busy for longer than the timeout (a long apply, a GC
# pause, an fdatasync stall, a starved CPU) dropped every connection on its first send
# afterwards, though its peers had kept talking; and an idle connection (between two followers)
# was dropped by the first message sent on it (a vote request). Each drop loses the messages in
# flight: a proposal forwarded to the leader, or the leader's answer to it, was lost, and the
# client waited for its 7 s timeout (the "request timed out" seen after check perf's cleanup,
# a DeleteRange of 60,000 keys that takes about a second to apply). Here silence counts only if
# the socket has nothing to read, time this member spent in a long apply does not count (its
# peers were applying the same entry), and on a connection idle in both directions the clock
# starts with the first message sent.
_Conn = _tcp.TcpConnection
_conn_send = _Conn.send


class _ThreadState(threading.local):
    busy_until = 0.0  # pysyncobj's clock at the end of this raft thread's last long apply


_raft_thread = _ThreadState()


def _last_heard(conn: Any) -> float:
    return max(float(conn._TcpConnection__lastReadTime), _raft_thread.busy_until)


def _socket_readable(sock: socket.socket) -> bool | None:
    """True if data or an end of stream waits in ``sock``, False if not, None on an error."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return None
    return True


def _connection_timeout(conn: Any) -> None:
    now = _tcp.monotonicTime()
    silent = now - _last_heard(conn)
    if silent <= conn._TcpConnection__timeout:
        return
    sock = conn._TcpConnection__socket
    if sock is not None and _socket_readable(sock):
        conn._TcpConnection__lastReadTime = now  # the peer talked; this member was late
        return
    log.info("no data from a peer for %.1fs: dropping the connection", silent)
    conn.disconnect()


def _connection_send(conn: Any, message: Any) -> None:
    now = _tcp.monotonicTime()
    last_read = conn._TcpConnection__lastReadTime
    if (
        now - _last_heard(conn) > conn._TcpConnection__timeout
        and getattr(conn, "_rs_last_send", 0.0) <= last_read
    ):
        conn._TcpConnection__lastReadTime = now  # idle both ways: the wait starts now
    conn._rs_last_send = now
    _conn_send(conn, message)


_Conn._TcpConnection__processConnectionTimeout = _connection_timeout
_Conn.send = _connection_send

# pysyncobj buffers a peer's message for as long as its 4-byte length announces (up to 2 GiB)
# before it can authenticate it, so anyone reaching the peer port could make a member buffer
# and parse gigabytes (a fuzz run moved leadership seven times in 20 s that way). No message
# of ours comes near this bound: appends and snapshot parts are 64 KiB batches, a forwarded
# command at most a request (1.5 MiB) with its framing and encryption.
MAX_PEER_MESSAGE: Final = 8 * 1024 * 1024
_parse_message = _Conn._TcpConnection__processParseMessage


def _parse_bounded(conn: Any) -> Any:
    buf = conn._TcpConnection__readBuffer
    if len(buf) >= 4:
        (length,) = struct.unpack_from("i", buf, 0)
        if not 0 <= length <= MAX_PEER_MESSAGE:
            log.warning("a peer connection announced a message of %d bytes (at most %d are "
                        "accepted): dropping the connection", length, MAX_PEER_MESSAGE)
            conn.disconnect()
            return None
    return _parse_message(conn)


_Conn._TcpConnection__processParseMessage = _parse_bounded


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicationConfig:
    name: str
    self_peer: str  # "host:port" as the other members know this one
    bind_peer: str  # "host:port" to listen on
    peers: dict[str, str]  # name -> "host:port" for every member, this one included
    peer_urls: dict[str, list[str]]  # name -> advertised peer URLs
    client_urls: list[str]  # this member's advertised client URLs
    data_dir: str
    cluster_token: str
    password: str | None
    fsync: bool = True
    snapshot_count: int = 10_000
    heartbeat: float = 0.1
    election_timeout: float = 1.0
    # --initial-cluster-state=existing: an empty member joins as a non-voter until it has
    # caught up (Replication._catch_up_done).
    join_existing: bool = False


def member_id_for(name: str, peer_urls: list[str], token: str) -> int:
    """A stable 64-bit member id from the member's peer URLs and the cluster token (the same
    inputs etcd hashes), never 0."""
    digest = hashlib.sha1(("".join(sorted(peer_urls)) + token).encode()).digest()
    return struct.unpack(">Q", digest[:8])[0] or 1


_LONG_APPLY: Final = 0.1  # seconds; see _RaftNode._forgive_long_apply
# A tick normally starts at most the poll timeout (0.05 s) plus the tick's work after the
# previous one; a longer gap is logged (see Replication._run).
_STALLED_TICK: Final = 0.3
_CAMPAIGN_MARGIN: Final = 0.05  # see Replication._run

_ENTRY_BYTES: Final = 60_000  # see Replication._drain_inbox

_GroupCallback = Callable[[Any, int], None]

# Messages that promise nothing about this member's log, so they leave without a sync.
_NO_SYNC_MESSAGES: Final = frozenset({
    "apply_command", "apply_command_response", "pre_vote", "pre_vote_response", "term_notice",
}) | READ_MESSAGES

# A read index request answered "use the log" (readindex.py): the caller proposes a barrier.
_READ_FALLBACK: Final = -1


class _SteadyWriter:
    """File wrapper for snapshots: flushes to disk every few MiB, so that the final fsync (and
    the raft journal's fdatasync that may queue behind it on the same disk) never waits for a
    whole large snapshot's writeback at once."""

    _EVERY: Final = 4 << 20

    def __init__(self, f: Any, sync: bool) -> None:
        self._f = f
        self._sync = sync
        self._unsynced = 0

    def write(self, data: bytes) -> int:
        n = int(self._f.write(data))
        self._unsynced += n
        if self._sync and self._unsynced >= self._EVERY:
            self._f.flush()
            os.fdatasync(self._f.fileno())
            self._unsynced = 0
        return n


_Summing = journal_mod.CrcWriter




# A full snapshot replaces the deltas once they are this many frames (each costs a little at
# start-up), or once what they repeat of each other (the lease table, written whole in each)
# is as large as half the full frame.
_MAX_FRAMES: Final = 64


@dataclass(frozen=True, slots=True)
class _Frames:
    """What the snapshot file holds: ``mark`` of the state at its last frame (the state
    machine's, for a delta that follows it), the file's inode, the offset after its last
    frame, how many frames, the size of the full first frame, and how many bytes of the deltas
    after it repeat what earlier frames hold."""

    mark: object
    ino: int
    end: int
    frames: int
    full_bytes: int
    repeated_bytes: int


class _Parts:
    """A file-like sink keeping what is written as a list of parts (a delta's batches): no
    copy, where a BytesIO reallocates and copies its growing buffer over and over (70 ms of
    a 19 MB delta's 320)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        return len(data)


class _Backgrounded(Exception):
    """Raised by the snapshot serializer after handing the write to a thread (see below)."""


class _SyncingTransport(TCPTransport):  # type: ignore[misc]
    """TCP transport that makes the journal durable before any message leaves the member."""

    journal: DurableJournal | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A follower's acknowledgements waiting for the journal: (node, message, the log index
        # that must be durable, the term they were written in), sent in order.
        self._held: collections.deque[tuple[Any, Any, int, int]] = collections.deque()
        # While a follower handles an append tagged for a read round: (leader, tag, term), the
        # echo its answer carries (readindex.py).
        self._echo: tuple[Any, int, int] | None = None
        # Large entries travel in chunks (see _label_chunk / _join_chunks): per peer, the
        # bytes of the pickled entry still to send (leader), and the chunks received so far
        # (follower).
        self._chunk_left: dict[Any, int] = {}
        self._chunk_parts: dict[Any, list[bytes]] = {}

    def send(self, node: Any, message: Any) -> bool:
        # A follower's acknowledgement of appended entries is held until the journal is on
        # disk: the raft thread syncs once after reading everything that arrived, and then
        # releases them (Replication._sync_and_release), so every append read in one poll
        # shares one fdatasync. A vote leaves only after the journal is on disk. The leader's
        # appends leave before its own fdatasync, which runs right after they are sent, in
        # parallel with the followers' (it counts itself towards a commit only for entries on
        # its disk: _RaftNode.__applyLogEntries), as etcd's leader does (Raft thesis 10.2.1).
        # Forwarding a proposal and telling the proposer its log index promise nothing about
        # durability.
        if message.get("transmission") is not None:
            self._label_chunk(node, message)
        journal = self.journal
        if journal is None:
            return bool(super().send(node, message))
        kind = message.get("type")
        if kind == "request_vote" and self._syncObj._transfer_campaign:
            message["transfer"] = True  # a leader's hand-over: voters in lease vote anyway
        if kind == "append_entries":
            seq = self._syncObj._owner._read_index.seq
            if seq:
                message["rs"] = seq
        elif kind == "next_node_idx":
            echo = self._echo
            if echo is not None and echo[0] == node:
                message["rs"], message["rt"] = echo[1], echo[2]
            if journal.dirty or self._held:
                term = self._syncObj.raftCurrentTerm
                self._held.append((node, message, journal.last_index, term))
                return True
        elif journal.dirty and kind != "append_entries" and kind not in _NO_SYNC_MESSAGES:
            journal.sync()
        return bool(super().send(node, message))

    # Large entries. pysyncobj 0.3.17 sends an entry whose command is at least
    # appendEntriesBatchSizeBytes (64 KiB) as chunks of its pickle, labelled start / process /
    # finish, and the follower unpickles what it gathered when "finish" arrives. But the
    # sender picks the "finish" chunk by comparing with the length of the *command*
    # (``len(entries[0][0])``), not of the pickled entry, which is longer: by the (command,
    # index, term) framing, and (protocol 2 pickles bytes as latin-1 text written in UTF-8)
    # by one more byte for every byte >= 0x80 of the command. Whenever a multiple of 64 KiB
    # falls between the two lengths (a Put of 131,072 - d bytes, d < 160; most large binary
    # values), "finish" goes out one chunk early: the follower unpickles a truncated buffer
    # (UnpicklingError / EOFError / IndexError fail its tick), and the last chunk, labelled
    # "finish" again, only completes the buffer by luck if it is read in a later tick.
    #
    # Both ends are fixed here without changing what travels, so members with and without
    # the fix keep working together: the leader relabels its chunks by the pickled entry's
    # real length (right for a follower of any version), and a follower joins the chunks
    # itself and treats a "finish" that does not yet complete a pickle as "process" (right
    # for a leader of any version). A completed entry is handed to pysyncobj as an ordinary
    # append of one entry, which every version understands.

    def _label_chunk(self, node: Any, message: dict[str, Any]) -> None:
        """(Leader, raft thread) give the chunk of an entry its right label."""
        data = message.get("data") or b""
        if message["transmission"] == "start":
            # The chunks are slices of pickle.dumps(entry) of the entry after prevLogIdx,
            # all sent in one __sendAppendEntries call: pickle it again for its length.
            raft = self._syncObj
            entries = raft._SyncObj__getEntries(message["prevLogIdx"] + 1, 1)
            if entries:
                self._chunk_left[node] = len(_pso_pickle.dumps(entries[0])) - len(data)
            else:
                self._chunk_left.pop(node, None)
            return
        left = self._chunk_left.get(node)
        if left is None:
            return  # not started through here: leave pysyncobj's label
        left -= len(data)
        if left > 0:
            self._chunk_left[node] = left
            message["transmission"] = "process"
        else:
            del self._chunk_left[node]
            message["transmission"] = "finish"

    def _join_chunks(self, node: Any, message: dict[str, Any]) -> dict[str, Any]:
        """(Follower, raft thread) gather an entry's chunks; the message to hand pysyncobj."""
        transmission = message["transmission"]
        data = message.get("data") or b""
        if transmission == "start":
            self._chunk_parts[node] = [data]
            return message
        parts = self._chunk_parts.get(node)
        if parts is None:
            return message  # its start was not seen: let pysyncobj decide, as before
        parts.append(data)
        if transmission != "finish":
            return message
        try:
            entry = _pso_pickle.loads(b"".join(parts))
        except Exception:  # noqa: BLE001 - a truncated pickle fails in many ways
            # An early "finish" from a leader without the fix: more chunks follow.
            return {**message, "transmission": "process"}
        del self._chunk_parts[node]
        whole = {k: v for k, v in message.items() if k not in ("transmission", "data")}
        whole["entries"] = [entry]
        return whole

    @property
    def holding(self) -> bool:
        """Acknowledgements are waiting for the journal (this member was a follower)."""
        return bool(self._held)

    def release_held(self) -> None:
        """(Raft thread) send the acknowledgements whose entries are on disk now; drop those
        of an earlier term (the leader that asked is gone; the next one resends)."""
        held = self._held
        journal = self.journal
        if not held or journal is None:
            return
        durable = journal.durable_index
        term = self._syncObj.raftCurrentTerm
        while held:
            node, message, needed, written_in = held[0]
            if written_in != term:
                held.popleft()
                continue
            if needed > durable:
                break
            held.popleft()
            super().send(node, message)

    def _onDisconnected(self, conn: Any) -> None:  # noqa: N802 - pysyncobj's name
        node = self._connToNode(conn)
        if node is not None:
            log.info("peer connection to %s lost", getattr(node, "address", node))
        super()._onDisconnected(conn)

    def _onNodeDisconnected(self, node: Any) -> None:  # noqa: N802 - pysyncobj's name
        super()._onNodeDisconnected(node)
        raft = self._syncObj
        if raft is None or raft._isLeader() or raft._getLeader() != node:
            return
        # Proposals forwarded to the leader wait for its answer (their log index), which can
        # no longer arrive on this connection: fail them now rather than at the client's
        # timeout. As with any failed write, the outcome is unknown to the client (the leader
        # may have appended the entry already), which is what etcd answers too.
        waiting = raft._SyncObj__commandsWaitingReply
        if not waiting:
            return
        callbacks = list(waiting.values())
        waiting.clear()
        log.info("connection to the leader lost: failing %d forwarded proposals", len(callbacks))
        for callback in callbacks:
            callback(None, FAIL_REASON.LEADER_CHANGED)

    def setOnMessageReceivedCallback(self, callback: Any) -> None:  # noqa: N802
        """pysyncobj advances a follower's next index optimistically when it sends, but on each
        successful reply sets it back to what that reply acknowledged, so every append still
        in flight is sent again and the follower truncates and rewrites its log. Keep the
        optimistic index on success (a gap still makes the follower answer with a reset)."""
        if callback is None:
            super().setOnMessageReceivedCallback(None)
            return
        raft = self._syncObj

        def received(node: Any, message: Any) -> None:
            keep = None
            kind = message.get("type") if isinstance(message, dict) else None
            if kind == "append_entries" and message.get("transmission") is not None:
                message = self._join_chunks(node, message)
            if kind == "next_node_idx":
                if message.get("success") and not message.get("reset"):
                    keep = raft._SyncObj__raftNextIndex.get(node)
                elif "ht" in message and raft._isLeader():
                    message = _probe_past_newer_terms(raft, message)
                seq = message.get("rs")
                if (
                    seq is not None
                    and message.get("rt") == raft.raftCurrentTerm
                    and raft._isLeader()
                ):
                    raft._owner._read_index.echoed(node, seq)
            elif kind in READ_MESSAGES:
                raft._owner._on_read_message(node, message)
                return
            elif kind == "append_entries" and "rs" in message:
                # pysyncobj answers (or not: an old term) while handling it; send() echoes.
                self._echo = (node, message["rs"], message.get("term"))
                try:
                    callback(node, message)
                finally:
                    self._echo = None
                return
            callback(node, message)
            if keep is not None:
                next_index = raft._SyncObj__raftNextIndex
                if node in next_index and next_index[node] < keep:
                    next_index[node] = keep

        super().setOnMessageReceivedCallback(received)


_ELECTION_MESSAGES: Final = frozenset({"request_vote", "pre_vote", "pre_vote_response",
                                       "term_notice"})


class _PreVoteRound:
    """A pre-vote round: the term it asks for and the peers that granted it."""

    __slots__ = ("term", "grants", "won")

    def __init__(self, term: int) -> None:
        self.term = term
        self.grants: set[Any] = set()
        self.won = False


def probe_answer(log: Any, prev: int, ours: int, theirs: int,
                 probe: tuple[int, int, int] | None) -> tuple[int, int]:
    """(Follower) the answer to an append whose previous entry, at ``prev``, has term
    ``theirs`` in the leader's log and ``ours`` in ``log`` (pysyncobj's list of (command,
    index, term)): the next index the leader should send from, and a term that none of our
    entries before that index is newer than (the leader skips its own entries of newer
    terms: leader_next_index). Our entries of terms newer than ``theirs`` cannot be in the
    leader's log there, so they are skipped at once. The answer is never above ``probe``,
    our lowest answer of this term (``(leader's term, next index, term)``), so an answer to an
    append sent before an earlier probe cannot undo it."""
    first = int(log[0][1])
    next_index, term = prev, ours
    if ours > theirs:
        i = prev
        while i > first and int(log[i - first][2]) > theirs:
            i -= 1
        next_index, term = i + 1, int(log[i - first][2])
    if probe is not None and probe[1] < next_index:
        next_index, term = probe[1], probe[2]
    return next_index, term


def _probe_past_newer_terms(raft: Any, message: dict[str, Any]) -> dict[str, Any]:
    """(Leader) a follower's probe answer says where to probe next, and a term ("ht") that
    none of its entries before there is newer than. Our entries of newer terms cannot match
    them: go back past them, to our last entry of term ``ht`` or older (etcd's leader,
    findConflictByTerm)."""
    next_index = leader_next_index(raft._SyncObj__raftLog, int(message["next_node_idx"]),
                                   int(message["ht"]))
    if next_index == message["next_node_idx"]:
        return message
    return {**message, "next_node_idx": next_index}


def leader_next_index(log: Any, answered: int, term: int) -> int:
    """(Leader) where to send from after a follower answered ``answered`` and ``term``:
    before ``answered``, past our entries of terms newer than ``term``."""
    first = int(log[0][1])
    j = min(answered - 1, int(log[-1][1]))
    while j > first and int(log[j - first][2]) > term:
        j -= 1
    return j + 1


class _RaftNode(SyncObj):  # type: ignore[misc]
    _SyncObj__raftCommitIndex: int  # pysyncobj's private state, read and held back below
    _SyncObj__leaderCommitIndex: int
    _SyncObj__raftCurrentTerm: int

    def __init__(
        self,
        owner: Replication,
        self_node: str,
        other_nodes: list[str],
        conf: SyncObjConf,
        journal: DurableJournal,
    ) -> None:
        self._owner = owner
        self._journal = journal
        self._commit_ok: int | None = None  # the commit index as of the last apply pass
        # Catching up after joining empty: neither votes nor campaigns (see Replication).
        self._catching_up = False
        # (leader's term, next index, term) of this member's lowest answer to a leader's
        # probe (see _reject_conflict and probe_answer)
        self._probe: tuple[int, int, int] | None = None
        # Elections (see before_campaign): when a leader's message last arrived; the pre-vote
        # round of the moment (the term it asks for, who granted it, whether a majority did);
        # whether the campaign of this tick is a leader's hand-over.
        self._leader_heard_at = -1e9
        self._pre_vote: _PreVoteRound | None = None
        self._transfer_campaign = False
        transport_journal = journal

        class Transport(_SyncingTransport):
            journal = transport_journal

        super().__init__(self_node, other_nodes, conf, transportClass=Transport)

    # Overrides pysyncobj's private dispatcher (name-mangled ``__doApplyCommand``): our command
    # types go to the state machine; everything else (no-ops, version changes) to pysyncobj.
    def _SyncObj__applyLogEntries(self) -> Any:  # noqa: N802 - pysyncobj's private name
        """pysyncobj's leader counts itself in every majority; ours has its own entries on
        disk only once the journal's thread has synced them, so the commit index it computed
        is held back to the highest entry on the disks of a majority (counting the leader only
        up to ``durable_index``). As in Raft, an entry is committed by counting only if it is
        of the leader's term (earlier entries commit with it)."""
        # Followers first make what they read durable and acknowledge it, before applying.
        self._owner._sync_and_release()
        commit = self._SyncObj__raftCommitIndex
        ok = self._commit_ok
        if ok is None:
            ok = commit
        if self._isLeader() and commit > ok:
            matches = [self._journal.durable_index]
            matches += [self._SyncObj__raftMatchIndex.get(n, 0) for n in self._SyncObj__otherNodes]
            matches.sort(reverse=True)
            allowed = min(commit, matches[len(matches) // 2])
            if allowed < commit:
                entry = self._SyncObj__getEntries(allowed, 1) if allowed > ok else []
                if not entry or entry[0][2] != self._SyncObj__raftCurrentTerm:
                    allowed = ok
                self._SyncObj__raftCommitIndex = allowed
                self._SyncObj__leaderCommitIndex = allowed
        result = SyncObj._SyncObj__applyLogEntries(self)
        self._commit_ok = self._SyncObj__raftCommitIndex
        return result

    def _SyncObj__onMessageReceived(self, node: Any, message: Any) -> Any:  # noqa: N802
        """pysyncobj rewrites a follower's log from ``prevLogIdx`` whenever an append starts
        behind its end, even when the entries it carries are already there with the same
        term (an append sent from a stale next index, or a heartbeat): entries are deleted
        from the journal and added again, and those past the append are dropped, applied and
        acknowledged ones included ("truncating already-applied log entries"). Raft cuts only
        at a conflict (Figure 2, AppendEntries step 3): an acknowledged entry counted towards
        a commit must stay on that disk. So the entries already held are skipped here: an
        append holding nothing new is answered without touching the log, and one that goes
        on past them reaches pysyncobj starting at its first new or conflicting entry. Other
        messages go to pysyncobj unchanged, except a vote request or a leader's hand-over
        while this member is catching up (it votes for nobody until then)."""
        kind = message.get("type") if type(message) is dict else None
        if self._catching_up and kind in ("request_vote", "timeout_now"):
            return None
        if kind in _ELECTION_MESSAGES:
            return self._on_election_message(node, kind, message)
        if kind == "append_entries":
            term = message.get("term", -1)
            current = self._SyncObj__raftCurrentTerm
            if term >= current:
                self._leader_heard_at = _pso_monotonic()
                self._pre_vote = None  # a leader is there: a later campaign asks again
            elif node in self._SyncObj__otherNodes:
                # A leader of an older term: tell it ours, so that it steps down and an
                # election at our term follows (etcd answers a lower-term append so when
                # CheckQuorum is on). Otherwise a member that reached a higher term in a
                # campaign that failed would ignore the leader's appends, and the others,
                # in their lease, its vote requests, for ever.
                self._SyncObj__transport.send(node, {"type": "term_notice", "term": current})
        if kind == "append_entries" and "prevLogIdx" in message \
                and message.get("transmission") is None \
                and message.get("term", -1) >= self._SyncObj__raftCurrentTerm:
            prev = message["prevLogIdx"]
            last = self._SyncObj__getCurrentLogIndex()
            at_prev = self._SyncObj__getEntries(prev, 1) if prev <= last else []
            if at_prev and at_prev[0][2] != message["prevLogTerm"]:
                return self._reject_conflict(node, message, prev, at_prev[0][2])
            probe = self._probe
            if prev > last and probe is not None and probe[0] == message["term"] \
                    and probe[1] <= last + 1:
                return self._reject(node, message, probe[1], probe[2])
            if at_prev:
                self._probe = None  # the leader found where our logs agree
            if prev < last:
                entries = message.get("entries") or []
                held = self._SyncObj__getEntries(prev, len(entries) + 1)
                if held and held[0][2] == message["prevLogTerm"]:
                    same = 0
                    for ours, theirs in zip(held[1:], entries, strict=False):
                        if ours[1] != theirs[1] or ours[2] != theirs[2]:
                            break
                        same += 1
                    if same == len(entries):
                        return self._acknowledge_present(node, message, prev + same)
                    if same:
                        message = {**message, "prevLogIdx": prev + same,
                                   "prevLogTerm": entries[same - 1][2],
                                   "entries": entries[same:]}
        return SyncObj._SyncObj__onMessageReceived(self, node, message)

    # Elections, as etcd's raft runs them (CheckQuorum, which etcd always enables, and
    # PreVote, etcd's default since 3.5). pysyncobj campaigns as soon as its election timeout
    # passes, raising its term, and every member that hears of a higher term adopts it, a
    # leader included, which steps down. So a member that could not hear the others (a
    # one-way cut, a flaky link) campaigned every second or two and deposed a healthy leader
    # each time (writes stopped for 1-2 s several times in 20 s), and a member cut off from
    # the others raised its term, which deposed the leader once the cut healed. Now:
    # * a member that has heard from a leader within the election timeout (or is the leader)
    #   ignores a vote request of a higher term, unless it comes from a leader's hand-over
    #   (etcd: "lease is not expired");
    # * before campaigning, a member asks the others whether they would vote for it at the
    #   next term (pre-vote, nothing changes on either side) and campaigns only once a
    #   majority said yes; they say yes only outside their lease, to an up-to-date log.
    # Beyond etcd: a member that grants a pre-vote stands aside for a while (see
    # _stand_aside), and of two members asking at once only one is granted (_yields_to).
    # Without that, two followers whose timeouts passed within a message's delay of each
    # other both won their pre-votes and split the vote, and the election took another
    # timeout: 2.9 s instead of 1-1.9 s after a leader's kill, twice in 30 kills on a loaded
    # machine.

    def in_lease(self) -> bool:
        """Whether a leader is known to be there: this member leads, or heard from the leader
        within the (minimum) election timeout."""
        if self._isLeader():
            return True
        return (self._SyncObj__raftLeader is not None
                and _pso_monotonic() - self._leader_heard_at
                < self._SyncObj__conf.raftMinTimeout)

    def _log_up_to_date(self, message: dict[str, Any]) -> bool:
        their_term, our_term = message["last_log_term"], self._SyncObj__getCurrentLogTerm()
        return bool(their_term > our_term or (
            their_term == our_term
            and message["last_log_index"] >= self._SyncObj__getCurrentLogIndex()))

    def _on_election_message(self, node: Any, kind: str, message: dict[str, Any]) -> Any:
        current = self._SyncObj__raftCurrentTerm
        term = int(message.get("term", -1))
        if kind == "request_vote":
            if term > current and not message.get("transfer") and self.in_lease():
                return None  # etcd: ignored, "lease is not expired"
            return SyncObj._SyncObj__onMessageReceived(self, node, message)
        if kind == "pre_vote":
            granted = (term > current and not self._catching_up and not self.in_lease()
                       and self._log_up_to_date(message) and self._yields_to(node, term, message))
            if granted:
                self._stand_aside()
            self._SyncObj__transport.send(node, {
                "type": "pre_vote_response", "term": term, "granted": granted})
            return None
        if kind == "pre_vote_response":
            round_ = self._pre_vote
            if (round_ is not None and not round_.won and message.get("granted")
                    and term == round_.term == current + 1):
                round_.grants.add(node)
                if 2 * (len(round_.grants) + 1) > len(self._SyncObj__otherNodes) + 1:
                    round_.won = True
                    self._SyncObj__raftElectionDeadline = 0  # campaign at the next tick
            return None
        # term_notice: a member of a higher term answered our append (see above)
        if term > current and self._isLeader():
            log.info("a member is at term %d, past ours (%d): stepping down", term, current)
            self._SyncObj__setCurrentTerm(term, None)
            self._SyncObj__setState(_pso._RAFT_STATE.FOLLOWER)
            self._SyncObj__raftLeader = None
        return None

    def _yields_to(self, node: Any, term: int, message: dict[str, Any]) -> bool:
        """Whether this member lets another pre-candidate for ``term`` go first: always when it
        asks for no such term itself; never once its own round is won (it campaigns at its next
        tick); otherwise the more up-to-date log goes first and, between equal logs, the
        greater address. Two members asking at once then never both win."""
        round_ = self._pre_vote
        if round_ is None or round_.term != term:
            return True
        if round_.won:
            return False
        theirs = (message["last_log_term"], message["last_log_index"])
        ours = (self._SyncObj__getCurrentLogTerm(), self._SyncObj__getCurrentLogIndex())
        if theirs != ours:
            return bool(theirs > ours)
        return str(node.id) > str(self._SyncObj__selfNode.id)

    def _stand_aside(self) -> None:
        """(A pre-vote was granted) drop this member's own pre-vote round and give the member
        it granted half an election timeout to campaign before this one asks for itself: the
        grant is no promise (etcd's is none), but asking at once would split the vote."""
        self._pre_vote = None
        self._SyncObj__raftElectionDeadline = max(
            self._SyncObj__raftElectionDeadline,
            _pso_monotonic() + self._SyncObj__conf.raftMinTimeout / 2)

    def before_campaign(self) -> None:
        """(Raft thread, the election timeout passed, before pysyncobj's tick campaigns)
        Let the campaign go ahead when it is a leader's hand-over (tagged so that voters in
        lease vote) or when a majority granted this term's pre-vote; otherwise start a
        pre-vote round and wait another election timeout for it."""
        if self._catching_up:
            return
        if self._SyncObj__transferInProgress:
            self._transfer_campaign = True
            return
        others = self._SyncObj__otherNodes
        if not others:
            return
        term = self._SyncObj__raftCurrentTerm + 1
        round_ = self._pre_vote
        if round_ is not None and round_.won and round_.term == term:
            self._pre_vote = None
            return
        self._pre_vote = _PreVoteRound(term)
        self._SyncObj__raftElectionDeadline = (
            _pso_monotonic() + self._SyncObj__generateRaftTimeout())
        if self._SyncObj__raftLeader is not None:
            # etcd's pre-candidate forgets its leader, as a candidate does: Status reports
            # no leader, and writes forwarded to the old one fail now ("leader changed")
            self._SyncObj__raftLeader = None
            self._SyncObj__onLeaderChanged()
        request = {"type": "pre_vote", "term": term,
                   "last_log_index": self._SyncObj__getCurrentLogIndex(),
                   "last_log_term": self._SyncObj__getCurrentLogTerm()}
        for peer in others:
            self._SyncObj__transport.send(peer, request)

    def _acknowledge_present(self, node: Any, message: dict[str, Any], verified: int) -> Any:
        """Answer an append whose entries are all present: pysyncobj's bookkeeping of a
        leader's message (term, leader, election deadline, commit index) through a copy
        without log positions, then success up to ``verified``. The copy's commit index is
        held to ``verified``: pysyncobj would take it up to the end of this log, whose entries
        past ``verified`` the leader has not vouched for in this message."""
        self._heard_from_leader(node, message, verified)
        self._SyncObj__sendNextNodeIdx(node, nextNodeIdx=verified + 1, success=True)

    def _heard_from_leader(self, node: Any, message: dict[str, Any], verified: int) -> None:
        """pysyncobj's bookkeeping of a leader's append (term, leader, election deadline,
        commit index) through a copy without log positions; the commit index it may take
        is held to ``verified``, the end of what the leader vouched for."""
        bare = {k: v for k, v in message.items()
                if k not in ("prevLogIdx", "prevLogTerm", "entries")}
        bare["commit_index"] = min(int(message["commit_index"]), verified)
        SyncObj._SyncObj__onMessageReceived(self, node, bare)

    # Finding where this log and a new leader's agree. pysyncobj's follower answers an append
    # whose previous entry has another term with "probe one entry earlier", and one that
    # starts past the end of its log with "send from my end". The leader sends appends
    # without waiting for answers and takes the last reset it reads. So a member whose last
    # entries conflict (a leader cut off with writes it could not commit) answered the probe
    # "one earlier" and, for the append sent meanwhile past its end, "from my end", which
    # sent the leader back to the probe that had just failed: it never caught up, heartbeats
    # kept it from campaigning, and it held no leader's writes from then on. So, as etcd's
    # raft does: a member remembers its lowest probe answer of the term and answers an
    # append past its end with it; it skips its entries of terms newer than the leader's
    # previous entry (the leader's log cannot hold them there); and it tells the leader a term
    # ("ht") that none of its entries before the answered index is newer than, so the leader
    # goes back past its own entries of newer terms at once (_SyncingTransport's receive)
    # instead of one entry per round trip.

    def _reject_conflict(self, node: Any, message: dict[str, Any], prev: int,
                         ours: int) -> Any:
        """Our entry at ``prev`` has term ``ours``, the leader's has ``prevLogTerm``."""
        leader_term = int(message["term"])
        probe = self._probe if self._probe is not None and self._probe[0] == leader_term \
            else None
        next_index, term = probe_answer(self._SyncObj__raftLog, prev, ours,
                                        int(message["prevLogTerm"]), probe)
        self._probe = (leader_term, next_index, term)
        return self._reject(node, message, next_index, term)

    def _reject(self, node: Any, message: dict[str, Any], next_index: int, term: int) -> Any:
        self._heard_from_leader(node, message, self._SyncObj__raftCommitIndex)
        self._SyncObj__transport.send(node, {
            "type": "next_node_idx", "next_node_idx": next_index, "reset": True,
            "success": False, "ht": term,
        })

    def _commit_waits_for_self(self) -> bool:
        """(Leader) whether a majority without this member's vote is missing for entries past
        the commit index that some follower (or nobody else: a single member) already has."""
        commit = self._SyncObj__raftCommitIndex
        others = self._SyncObj__otherNodes
        if not others:
            return True
        match = self._SyncObj__raftMatchIndex
        return any(match.get(n, 0) > commit for n in others)

    def _SyncObj__doApplyCommand(self, command: bytes) -> Any:  # noqa: N802
        # No sync here: a committed entry is on the disks of a majority already (see
        # __applyLogEntries for the leader; a follower learns commits from the leader).
        kind = command[0] if command else -1
        if kind == _CMD_BARRIER:
            return None
        if kind not in (_CMD_APPLY, _CMD_BATCH):
            return SyncObj._SyncObj__doApplyCommand(self, command)
        if self._isLeader():
            # Tell the followers about the commit before spending time on our own apply, so
            # that they apply in parallel and hear from the leader even if this apply is long.
            self._owner._send_progress()
        started = time.monotonic()
        apply = self._owner.state.apply
        if kind == _CMD_APPLY:
            result: Any = apply(bytes(command[1:]))
            applied = 1
        else:
            result = [apply(c) for c in msgpack.unpackb(command[1:], raw=False)]
            applied = len(result)
        owner = self._owner
        owner._applied_since_snapshot += applied
        if owner._applied_since_snapshot >= owner._snapshot_commands:
            # --snapshot-count counts requests, as etcd's does; an entry holds many.
            self._SyncObj__forceLogCompaction = True
        took = time.monotonic() - started
        if took > _LONG_APPLY:
            log.warning("apply request took too long (%.3fs)", took)
            _raft_thread.busy_until = _tcp.monotonicTime()
            self._forgive_long_apply()
        return result

    def _forgive_long_apply(self) -> None:
        """A long apply (a DeleteRange over 50,000 keys takes most of a second) blocks this
        member's tick, and the leader is blocked by the same entry. pysyncobj checks the
        election deadline before it reads the heartbeat waiting in its socket, so without this a
        follower would start an election against a healthy leader after every such entry:
        time spent applying does not count towards the election timeout."""
        if not self._isLeader():
            # pysyncobj's clock (CLOCK_MONOTONIC_RAW), not time.monotonic.
            self._SyncObj__raftElectionDeadline = (
                _pso_monotonic() + self._SyncObj__generateRaftTimeout()
            )

    def submit(self, command: bytes, callback: Callable[[Any, int], None]) -> None:
        self._applyCommand(command, callback)

    def _checkCommandsToApply(self) -> None:  # noqa: N802 - pysyncobj's name
        # Everything proposed on this member since the last tick goes into the log first as
        # few entries (see Replication._drain_inbox), then pysyncobj appends or forwards them.
        self._owner._drain_inbox()
        SyncObj._checkCommandsToApply(self)


class Replication:
    """The ``Consensus`` implementation on pysyncobj (see the module doc for the wiring)."""

    def __init__(self, cfg: ReplicationConfig, state: StateMachine) -> None:
        self.cfg = cfg
        self.state = state
        self._loop: asyncio.AbstractEventLoop | None = None
        self._snapshot_status = SERIALIZER_STATE.NOT_SERIALIZING
        # Counts snapshots loaded (at start-up, or received from the leader). A snapshot this
        # member began writing before one was loaded must not replace it (_commit_snapshot).
        self._snapshot_gen = 0
        self._snapshot_lock = threading.Lock()
        self._batch: list[tuple[bytes, asyncio.Future[Any], float]] = []
        # Proposals waiting for the raft thread: (commands, callback(results, err)). Appended
        # by the event loop, drained by the raft thread (deque operations are atomic).
        self._inbox: collections.deque[tuple[list[bytes], _GroupCallback]] = collections.deque()
        # Read points asked for on this member (their callbacks), and by followers of this
        # leader (node, question id): appended by the event loop / the transport, drained by
        # the raft thread (readindex.py).
        self._reads: collections.deque[_GroupCallback] = collections.deque()
        # Calls other threads hand to the raft thread (pysyncobj is not thread-safe).
        self._raft_calls: collections.deque[Callable[[], None]] = collections.deque()
        self._remote_reads: collections.deque[tuple[Any, int]] = collections.deque()
        self._read_index = ReadIndex(cfg.election_timeout)
        self._ready: list[tuple[_LoopInbox, asyncio.Future[Any], Any, int]] = []
        self._loop_inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopInbox] = (
            weakref.WeakKeyDictionary()
        )
        os.makedirs(cfg.data_dir, exist_ok=True)
        self._snapshot_path = os.path.join(cfg.data_dir, "snapshot.msgpack")
        self._journal = DurableJournal(os.path.join(cfg.data_dir, "raft.journal"), fsync=cfg.fsync)
        first = int(self._journal[0][1]) if len(self._journal) else 1
        if first > 1 and not os.path.exists(self._snapshot_path):
            # The log was compacted into a snapshot that is gone: the entries it held are
            # nowhere on this member, and replaying the rest over an empty state serves a
            # state that never was (it did, and never caught up).
            self._journal._destroy()
            raise JournalError(
                f"{self._snapshot_path} is missing but raft.journal starts at entry "
                f"{first}, after a snapshot; restore the snapshot, or replace the member "
                "with an empty data directory and --initial-cluster-state=existing to have "
                "it fetch the state from the leader")
        empty = (not len(self._journal) and not os.path.exists(self._snapshot_path)
                 and self._journal.getCurrentTerm() == 0)
        if cfg.join_existing and empty:
            if len(cfg.peers) < 2:
                self._journal._destroy()
                raise JournalError(
                    f"{cfg.data_dir} is empty and --initial-cluster-state=existing, but "
                    "--initial-cluster names no other member to catch up from; start a "
                    "new single-member cluster with --initial-cluster-state=new")
            self._journal.set_flag("catching_up", True)
        self._member_ids = {
            name: member_id_for(name, cfg.peer_urls[name], cfg.cluster_token) for name in cfg.peers
        }
        self._addr_to_name = {addr: name for name, addr in cfg.peers.items()}
        ids = sorted(self._member_ids.values())
        self._cluster_id = struct.unpack(
            ">Q", hashlib.sha1(b"".join(struct.pack(">Q", i) for i in ids)).digest()[:8]
        )[0]
        conf = SyncObjConf(
            autoTick=False,
            appendEntriesUseBatch=True,
            appendEntriesPeriod=cfg.heartbeat,
            # As etcd's raft: a follower that hears nothing from the leader campaigns after a
            # random time in [--election-timeout, 2 x --election-timeout).
            raftMinTimeout=cfg.election_timeout,
            raftMaxTimeout=2 * cfg.election_timeout,
            leaderFallbackTimeout=max(cfg.election_timeout * 2, 1.0),
            # How long a peer may stay silent (with nothing waiting in its socket) before its
            # connection is dropped. Dead processes close their sockets; this is for a peer
            # whose machine or network is gone. Longer than a long apply on the leader (a
            # DeleteRange of 60,000 keys takes over a second), during which it sends nothing.
            connectionTimeout=max(cfg.election_timeout * 5, 5.0),
            connectionRetryTime=0.3,
            commandsWaitLeader=True,
            journalFile=self._journal,
            fullDumpFile=self._snapshot_path,
            serializer=self._write_snapshot,
            deserializer=self._read_snapshot,
            serializeChecker=self._check_snapshot,
            # Members snapshot at staggered log lengths so that they do not all write (and
            # fsync) a large snapshot at the same moment.
            logCompactionMinEntries=cfg.snapshot_count
            + sorted(cfg.peers).index(cfg.name) * cfg.snapshot_count // (2 * len(cfg.peers)),
            logCompactionMinTime=3600 * 24,
            password=cfg.password,
            bindAddress=cfg.bind_peer,
            dynamicMembershipChange=False,
            onStateChanged=self._on_state_changed,
        )
        self._snapshot_floor = int(conf.logCompactionMinEntries)
        self._entry_bytes = 0.0
        # Requests applied since the last snapshot's capture. A state machine that writes
        # deltas snapshots once they reach --snapshot-count (staggered), however few log
        # entries carried them: a delta holds what they wrote, so it stays small.
        self._applied_since_snapshot = 0
        self._snapshot_commands = (self._snapshot_floor if hasattr(state, "capture")
                                   else 1 << 62)
        # What the snapshot file holds, for appending a delta to it; None when it cannot be
        # (no file yet, or one written before deltas). Set under the snapshot lock.
        self._frame: _Frames | None = None
        others = [addr for name, addr in cfg.peers.items() if name != cfg.name]
        self._node = _RaftNode(self, cfg.self_peer, others, conf, self._journal)
        # The first timeout after start is shorter, [1/2, 1) election timeout, as etcd's
        # --initial-election-tick-advance shortens it: a new cluster elects its first leader
        # sooner, while a restarted member still gives the leader several heartbeats to
        # reach it before it campaigns.
        self._node._SyncObj__raftElectionDeadline = _pso_monotonic() + cfg.election_timeout * (
            0.5 + 0.5 * random.random())
        # True from a wake-up's write until the raft thread has read the pipe: proposals
        # that arrive meanwhile are taken by the tick that wake-up starts (it drains the
        # queues after reading the pipe), so they write nothing (see _wake).
        self._wake_pending = False
        self._waker = PipeNotifier(self._node._poller, self._woken)
        self._transport: _SyncingTransport = self._node._SyncObj__transport
        self._last_sent: tuple[int, int] = (0, 0)
        self._node.addOnTickCallback(self._after_tick)
        self._barrier_pending: asyncio.Future[None] | None = None
        self._barrier_inflight = False
        self._last_leader: Any = None
        self._stopping = threading.Event()
        if self._journal.get_flag("catching_up"):
            self._node._catching_up = True
            self._hold_election()
            log.info("joined with an empty data directory: this member neither votes nor "
                     "campaigns until it holds every entry the leader has committed")
        self._thread = threading.Thread(target=self._run, name="raft", daemon=True)
        self._thread.start()

    # -- raft thread --------------------------------------------------------------------------

    def _run(self) -> None:
        node = self._node
        last = time.monotonic()
        while not self._stopping.is_set():
            now = time.monotonic()
            if now - last > _STALLED_TICK:
                # The raft thread did not tick for a while (a slow sync or apply, a snapshot
                # holding the GIL, no CPU): heartbeats stop for as long, which is what makes a
                # peer start an election. Logged so that one can be traced to its cause.
                log.warning("raft thread stalled: %.3fs between ticks (%s)", now - last,
                            "leader" if node._isLeader() else "follower")
            last = now
            try:
                if not node._isLeader() and node._SyncObj__raftElectionDeadline < _pso_monotonic():
                    self._read_before_campaigning()
                # A deadline that passes before pysyncobj's tick looks at it (a few calls
                # in) would let it campaign unasked: the margin covers that.
                if not node._isLeader() and (node._SyncObj__raftElectionDeadline
                                             < _pso_monotonic() + _CAMPAIGN_MARGIN):
                    node.before_campaign()
                node.doTick(0.05)
                node._transfer_campaign = False
            except Exception:  # keep the member alive; pysyncobj's own loop does the same
                log.exception("raft tick failed")
                time.sleep(0.05)
        try:
            node._destroy()
        except Exception:
            log.exception("raft shutdown failed")
        self._journal._destroy()

    def _read_before_campaigning(self) -> None:
        """(Raft thread) pysyncobj decides to campaign at the start of a tick, from the time
        it last handled a leader's message, and reads its sockets only at the tick's end. A
        raft thread that got no CPU (or no GIL) for a while after its last read would find its
        election timeout passed while the leader's heartbeats wait unread in the socket, and
        depose a healthy leader. So what is waiting is read first; a leader that is really gone
        sent nothing, and the election goes ahead."""
        self._node._poller.poll(0)

    def _wake(self) -> None:
        """(Any thread) make the raft thread's poll return now, unless a wake-up is already
        on its way: at 64 clients the event loop queued about one proposal per turn and
        wrote the pipe for each, waking the raft thread once per proposal."""
        if self._wake_pending:
            return
        self._wake_pending = True
        try:
            self._waker.notify()
        except (BlockingIOError, OSError):  # the pipe is full (already woken) or closed
            pass

    def _woken(self) -> None:
        """(Raft thread, in the poll) the pipe was read: the next proposal wakes it again.
        Everything queued before this point is drained by the tick that follows."""
        self._wake_pending = False

    def _after_tick(self) -> None:
        """Runs inside every tick, before the poll: send new entries / a new commit index to
        the followers now rather than at the next heartbeat."""
        node = self._node
        calls = self._raft_calls
        while calls:
            calls.popleft()()
        if node._catching_up:
            self._catch_up_step()
        if self._reads or self._remote_reads or not self._read_index.idle:
            self._serve_reads()
        if self._ready:
            self._deliver_ready()
        if node._isLeader():
            self._send_progress()
        if self._sync_and_release() and node._isLeader() and node._commit_waits_for_self():
            self._wake()  # tick again now rather than after the poll's timeout
        leader = node._getLeader()
        if leader != self._last_leader:
            if leader is not None:
                metrics.LEADER_CHANGES.inc()
            log.info(
                "leader is now %s (term %d)",
                getattr(leader, "address", None) if leader is not None else "unknown",
                node.raftCurrentTerm,
            )
            self._last_leader = leader

    def _hold_election(self) -> None:
        """(Catching up) push pysyncobj's election deadline past the next ticks."""
        self._node._SyncObj__raftElectionDeadline = (
            _pso_monotonic() + 2 * self.cfg.election_timeout)

    def _catch_up_step(self) -> None:
        """(Raft thread) A member that joined empty (``--initial-cluster-state=existing``)
        has forgotten its log and its vote. Were it to vote, it and a member that missed
        recent writes could elect that member while the members holding those writes are
        down, and acknowledged writes would be lost. So it neither votes nor campaigns (as
        a learner) until its journal holds, on disk and applied, an entry the current
        leader committed in its own term: a leader holds every entry committed before it
        (Raft's leader completeness), so everything committed is then on this disk too.
        The state is kept in the meta file, so a restart before that goes on catching up."""
        node = self._node
        commit = int(node._SyncObj__raftCommitIndex)
        term = int(node.raftCurrentTerm)
        entry = node._SyncObj__getEntries(commit, 1) if commit else None
        if (node._getLeader() is None or not entry or entry[0][2] != term
                or self._journal.durable_index < commit or node.raftLastApplied < commit):
            self._hold_election()
            return
        self._journal.set_flag("catching_up", False)
        node._catching_up = False
        log.info("caught up with the leader at entry %d (term %d): this member votes from "
                 "now on", commit, term)

    def _sync_and_release(self) -> bool:
        """(Raft thread) fdatasync what was appended (one sync for everything since the last)
        and send the acknowledgements waiting for it. True if anything was synced.

        A leader has sent its appends already (``_send_progress`` runs first), so its own
        fdatasync runs while the followers write theirs, as etcd's leader persists its entries
        after sending them (Raft thesis 10.2.1); it counts itself towards a commit only up to
        ``durable_index`` (_RaftNode.__applyLogEntries). The sync runs on this thread: handing
        it to a thread of its own, which then woke this one, cost more in wake-ups than the
        sync takes on this project's machines (measured: docs/benchmarks.md)."""
        journal = self._journal
        synced = False
        if journal.dirty:
            journal.sync()
            synced = True
        self._transport.release_held()
        return synced

    def _send_progress(self) -> None:
        """(Leader, raft thread) send appends now if the log grew or the commit index moved
        since the last send."""
        node = self._node
        mark = (node._SyncObj__getCurrentLogIndex(), node.raftCommitIndex)
        if mark != self._last_sent:
            self._last_sent = mark
            node._SyncObj__sendAppendEntries()

    def _serve_reads(self) -> None:
        """(Raft thread) start read rounds (leader) or ask the leader (follower) for the read
        points asked for since the last tick, and answer those that are ready (readindex.py)."""
        node = self._node
        ri = self._read_index
        now = time.monotonic()
        leading = bool(node._isLeader())
        term = int(node.raftCurrentTerm)
        answers: list[Answer] = []
        reads = self._reads
        while reads:
            answers.append(self._local_answer(reads.popleft()))
        remote = self._remote_reads
        if remote and not leading:
            while remote:  # asked while this member led, or by a member that thinks so
                _answer_all([self._remote_answer(*remote.popleft())], None)
        while remote:
            answers.append(self._remote_answer(*remote.popleft()))
        others = node._SyncObj__otherNodes
        if answers:
            if leading:
                commit = int(node._SyncObj__raftCommitIndex)
                entry = node._SyncObj__getEntries(commit, 1)
                if not entry or entry[0][2] != term:
                    # Not yet committed anything in its term: its commit index may be behind.
                    _answer_all(answers, None)
                elif not others:
                    _answer_all(answers, commit)  # a single member leads alone
                else:
                    ri.start_round(term, commit, answers, now)
                    node._SyncObj__sendAppendEntries()  # the appends carry the new tag
            else:
                leader = node._getLeader()
                if leader is None or leader not in node._SyncObj__connectedNodes:
                    _answer_all(answers, None)
                else:
                    ask_id = ri.ask(leader, answers, now)
                    self._transport.send(leader, {"type": "rx_read", "id": ask_id})
        for done_answers, index in ri.rounds_done(term if leading else None, others, now):
            _answer_all(done_answers, index)
        _answer_all(ri.expired(None if leading else node._getLeader(), now), None)
        for done in ri.applied(int(node.raftLastApplied)):
            done()

    def _local_answer(self, callback: _GroupCallback) -> Answer:
        ri = self._read_index

        def answer(index: int | None) -> None:
            if index is None:
                callback(None, _READ_FALLBACK)
            else:
                ri.when_applied(index, lambda: callback(None, FAIL_REASON.SUCCESS))

        return answer

    def _remote_answer(self, asker: Any, ask_id: int) -> Answer:
        transport = self._transport

        def answer(index: int | None) -> None:
            if index is None:
                transport.send(asker, {"type": "rx_read_fail", "id": ask_id})
            else:
                transport.send(asker, {"type": "rx_read_ok", "id": ask_id, "index": index})

        return answer

    def _on_read_message(self, node: Any, message: dict[str, Any]) -> None:
        """(Raft thread, from the transport) a follower's question or the leader's answer."""
        kind = message.get("type")
        ask_id = message.get("id")
        if not isinstance(ask_id, int):
            return
        if kind == "rx_read":
            self._remote_reads.append((node, ask_id))
            return
        index = message.get("index") if kind == "rx_read_ok" else None
        _answer_all(self._read_index.answered(ask_id), index if isinstance(index, int) else None)

    def _drain_inbox(self) -> None:
        """(Raft thread, at the start of pysyncobj's command processing) turn every proposal
        queued since the last tick into as few log entries as possible: at 1,000 writes/s from
        many clients the event loop hands over a few proposals per tick, and each log entry
        costs a journal record, an append per follower, a forward from a follower and an
        apply dispatch. An entry stays under pysyncobj's 64 KiB message chunk size unless a
        single command is larger."""
        inbox = self._inbox
        group: list[tuple[list[bytes], _GroupCallback]] = []
        size = 0
        while inbox:
            item = inbox.popleft()
            item_size = sum(len(c) for c in item[0])
            if group and size + item_size > _ENTRY_BYTES:
                self._propose_group(group)
                group, size = [], 0
            group.append(item)
            size += item_size
        if group:
            self._propose_group(group)

    def _propose_group(self, group: list[tuple[list[bytes], _GroupCallback]]) -> None:
        commands = [c for cmds, _ in group for c in cmds]
        if len(commands) == 1:
            entry = bytes([_CMD_APPLY]) + commands[0]
        else:
            entry = bytes([_CMD_BATCH]) + msgpack.packb(commands, use_bin_type=True)
        single = len(commands) == 1

        def done(result: Any, err: int) -> None:
            if err != FAIL_REASON.SUCCESS:
                for _, callback in group:
                    callback(None, err)
                return
            results = [result] if single else result
            start = 0
            for cmds, callback in group:
                callback(results[start : start + len(cmds)], err)
                start += len(cmds)

        self._node.submit(entry, done)

    def _deliver_ready(self) -> None:
        ready, self._ready = self._ready, []
        by_loop: dict[_LoopInbox, list[tuple[Any, Any, int]]] = {}
        for inbox, fut, result, err in ready:
            by_loop.setdefault(inbox, []).append((fut, result, err))
        for inbox, items in by_loop.items():
            inbox.post(items)

    def _on_state_changed(self, old: int, new: int) -> None:
        names = {0: "follower", 1: "candidate", 2: "leader"}
        log.info("raft state %s -> %s", names.get(old, old), names.get(new, new))
        self._last_sent = (0, 0)
        if old == _LEADER and new != _LEADER:
            self._fail_uncommitted()

    def _fail_uncommitted(self) -> None:
        """(Raft thread) This member stopped leading because no majority answered it for
        ``leaderFallbackTimeout``: it is cut off, and will hear of no commit until that ends.
        A proposal it appended and has not committed can only commit under a new leader that
        holds the entry, or be replaced: it is failed now ("leader changed", an unknown
        outcome for the client, as a timeout is) instead of at its deadline (seven seconds by
        default), so that the client goes to another member at once. Entries up to the commit
        index are committed: their proposals wait for the apply.

        A leader that steps down while a majority still answers it (a newer term: a leader
        transfer, a member that campaigned) keeps its proposals waiting: the new leader
        usually holds those entries and commits them, and each then succeeds on apply (or is
        answered as discarded when another entry takes its place)."""
        node = self._node
        others = node._SyncObj__otherNodes
        answered = node._SyncObj__lastResponseTime
        since = _pso_monotonic() - node._SyncObj__conf.leaderFallbackTimeout
        if 1 + sum(1 for n in others if answered.get(n, 0) > since) > (len(others) + 1) / 2:
            return
        waiting = node._SyncObj__commandsWaitingCommit
        commit = int(node._SyncObj__raftCommitIndex)
        stale = [idx for idx in waiting if idx > commit]
        callbacks = [cb for idx in stale for _, cb in waiting.pop(idx)]
        if not callbacks:
            return
        log.info("stopped leading: failing %d proposals not committed", len(callbacks))
        for callback in callbacks:
            callback(None, FAIL_REASON.LEADER_CHANGED)

    # Snapshots. pysyncobj calls the serializer in the raft thread and then renames its temporary
    # file over the snapshot. Encoding a large state takes long enough to stall elections, so the
    # serializer only captures a copy-on-write view and hands the writing to a thread; it then
    # raises ``_Backgrounded`` so pysyncobj skips its rename, and the serialize checker reports
    # progress until the thread has written, fsynced and renamed (or appended) the file itself.
    # pysyncobj drops the log only after the checker reports success, so the log is never ahead
    # of the snapshot. It sends no snapshot to a follower while one is being written.
    #
    # File layout: snapshot_file.py. A state machine that can (``capture``) writes a delta of
    # what changed since the file's last frame, appended to the file, instead of the whole state.

    def _write_snapshot(self, tmp_path: str, data: Any) -> None:
        last, prev, cluster = data
        entries = [list(last), list(prev)]
        addresses = sorted(getattr(n, "address", str(n)) for n in cluster)
        frame = self._frame
        capture = getattr(self.state, "capture", None)
        if capture is None:
            writer, delta, mark = self.state.snapshot_writer(), False, None
        else:
            chain_ok = (frame is not None and frame.frames < _MAX_FRAMES
                        and frame.repeated_bytes < frame.full_bytes // 2)
            writer, delta, mark = capture(frame.mark if frame is not None and chain_ok else None)
        held = len(self._journal)
        self._entry_bytes = self._journal.byte_size / held if held else 0.0
        self._applied_since_snapshot = 0
        self._snapshot_status = SERIALIZER_STATE.SERIALIZING
        if delta:
            assert frame is not None
            target: Callable[..., None] = self._append_snapshot_frame
            args: tuple[Any, ...] = (entries, addresses, writer, mark, frame,
                                     self._snapshot_gen)
        else:
            target = self._write_snapshot_file
            args = (sf.encode_head(entries, addresses), writer, mark, self._snapshot_gen)
        threading.Thread(target=target, args=args, name="snapshot", daemon=True).start()
        raise _Backgrounded()

    def _write_snapshot_file(self, head: bytes, writer: Callable[[Any], Any], mark: object,
                             gen: int) -> None:
        """Write the whole state as the one frame of a new file, then rename it over the
        snapshot (``_commit_snapshot``)."""
        part = self._snapshot_path + ".part"
        started, cpu = time.monotonic(), time.thread_time()
        try:
            with open(part, "wb") as raw:
                steady = _SteadyWriter(raw, self.cfg.fsync)
                f = _Summing(steady)
                f.write(sf.HEAD_LEN.pack(len(head)))
                f.write(head)
                steady.write(sf.BODY_LEN.pack(0))  # filled in below, outside the CRC
                body_at = raw.tell()
                writer(f)
                body = raw.tell() - body_at
                steady.write(sf.TRAILER.pack(sf.MAGIC, f.crc))
                raw.flush()
                os.pwrite(raw.fileno(), sf.BODY_LEN.pack(body), sf.HEAD_LEN.size + len(head))
                if self.cfg.fsync:
                    os.fsync(raw.fileno())
                size = raw.tell()
                ino = os.fstat(raw.fileno()).st_ino
            if not self._commit_snapshot(part, gen, _Frames(mark, ino, size, 1, size, 0)):
                log.info("snapshot dropped: a newer one was installed while it was written")
                self._snapshot_status = SERIALIZER_STATE.FAILED
                return
            if self.cfg.fsync:
                fsync_dir(self.cfg.data_dir)
            if mark is None:
                self._adapt_snapshot_threshold(size)
            else:  # deltas follow, each of --snapshot-count requests
                self._node._getConf().logCompactionMinEntries = self._snapshot_floor
            self._snapshot_status = SERIALIZER_STATE.SUCCESS
            log.info("snapshot written (%d bytes, %.3fs, cpu %.3fs)", size,
                     time.monotonic() - started, time.thread_time() - cpu)
        except Exception:
            log.exception("snapshot failed")
            self._snapshot_status = SERIALIZER_STATE.FAILED

    def _commit_snapshot(self, part: str, gen: int, frames: _Frames | None = None) -> bool:
        """Rename the written snapshot over the current one, unless a snapshot was loaded
        since this one was captured. A follower that receives the leader's snapshot while
        writing its own loads it and clears its journal; renaming the older state over it
        afterwards would leave a snapshot behind a journal that starts after it, and a
        restart would then drop that journal: entries this member acknowledged, lost from
        its disk. Loading takes the same lock (``_read_snapshot``)."""
        with self._snapshot_lock:
            if gen != self._snapshot_gen:
                with contextlib.suppress(OSError):
                    os.unlink(part)
                return False
            os.replace(part, self._snapshot_path)
            self._frame = frames
            return True

    def _append_snapshot_frame(self, entries: list[list[Any]], addresses: list[str],
                               writer: Callable[[Any], int], mark: object, frame: _Frames,
                               gen: int) -> None:
        """Append a delta frame to the snapshot file. It is packed in memory first, then
        written and synced under the snapshot lock, and only if the file is still the one
        ``frame`` describes: no snapshot was loaded since the capture (see
        ``_commit_snapshot``), and the path still names the same file. pysyncobj renames a
        snapshot received from the leader over it before it loads it; appending to the file
        it replaced would leave the new one without the frame and this member believing
        otherwise."""
        started, cpu = time.monotonic(), time.thread_time()
        try:
            body = _Parts()
            repeated = writer(body) or 0
            # The frame's head records what it repeats (with its own head and trailer, about
            # 150 bytes), for a restart to count it too.
            repeated += 150
            parts = sf.frame_parts(sf.encode_head(entries, addresses, repeated), body.parts)
            del body
            size = sum(len(p) for p in parts)
            with self._snapshot_lock:
                if gen != self._snapshot_gen or self._frame is not frame:
                    appended = False
                else:
                    appended = self._append_frame_locked(frame, parts, mark, repeated)
            if not appended:
                log.info("snapshot delta dropped: a newer snapshot was installed meanwhile")
                self._snapshot_status = SERIALIZER_STATE.FAILED
                return
            self._node._getConf().logCompactionMinEntries = self._snapshot_floor
            self._snapshot_status = SERIALIZER_STATE.SUCCESS
            log.info("snapshot delta appended (%d bytes, %d frames, %.3fs, cpu %.3fs)", size,
                     frame.frames + 1, time.monotonic() - started, time.thread_time() - cpu)
        except Exception:
            log.exception("snapshot delta failed")
            self._snapshot_status = SERIALIZER_STATE.FAILED

    def _append_frame_locked(self, frame: _Frames, parts: list[bytes], mark: object,
                             repeated: int) -> bool:
        try:
            fd = os.open(self._snapshot_path, os.O_WRONLY)
        except FileNotFoundError:
            return False
        try:
            if os.fstat(fd).st_ino != frame.ino:
                return False
            # Bytes after the last frame (none, unless a write failed half-way) are cut off.
            os.ftruncate(fd, frame.end)
            pos = frame.end
            unsynced = 0
            for part in parts:
                view = memoryview(part)
                while view:
                    n = os.pwrite(fd, view, pos)
                    view = view[n:]
                    pos += n
                    unsynced += n
                # Synced every few MiB, as a full frame is (_SteadyWriter), so that the
                # journal's syncs never queue behind the writeback of a whole large delta.
                if self.cfg.fsync and unsynced >= _SteadyWriter._EVERY:
                    os.fdatasync(fd)
                    unsynced = 0
            if self.cfg.fsync:
                os.fdatasync(fd)
        finally:
            os.close(fd)
        self._frame = _Frames(mark, frame.ino, pos, frame.frames + 1, frame.full_bytes,
                              frame.repeated_bytes + repeated)
        return True

    def _adapt_snapshot_threshold(self, snapshot_bytes: int) -> None:
        """For a state machine that cannot write deltas: snapshot again only once the log holds
        at least half the snapshot's size, since writing a large state every
        ``--snapshot-count`` entries would cost more disk bandwidth than the writes themselves.
        This bounds snapshot traffic at about twice the write traffic, and the log kept in
        memory at about half the state. (With deltas, a full frame is written again once the
        deltas after it are as large as it is: the same bound on traffic.)"""
        base = self._node._getConf()
        floor = self._snapshot_floor
        if self._entry_bytes > 0:
            base.logCompactionMinEntries = max(floor, int(snapshot_bytes / 2 / self._entry_bytes))

    def _check_snapshot(self) -> int:
        status = self._snapshot_status
        if status in (SERIALIZER_STATE.SUCCESS, SERIALIZER_STATE.FAILED):
            self._snapshot_status = SERIALIZER_STATE.NOT_SERIALIZING
        return int(status)

    def _read_snapshot(self, path: str) -> tuple[Any, Any, Any]:
        """Load a snapshot (this member's, at start-up, or one just received from the leader).
        One that is damaged stops the member with a message saying so: pysyncobj would log
        the failure and go on with an empty state, serving it and never catching up. A
        snapshot this member is still writing is dropped (``_commit_snapshot``)."""
        with self._snapshot_lock:
            self._snapshot_gen += 1
            return self._load_snapshot(path)

    def _load_snapshot(self, path: str) -> tuple[Any, Any, Any]:
        try:
            with open(path, "rb") as f:
                if self.cfg.fsync:
                    os.fsync(f.fileno())  # it may be a snapshot just received from the leader
                data = f.read()
                ino = os.fstat(f.fileno()).st_ino
            if self.cfg.fsync:
                fsync_dir(os.path.dirname(os.path.abspath(path)))
            parsed = sf.parse(data)
            del data
            frames = parsed.frames
            last, prev = (tuple(e) for e in frames[-1].head["entries"])
            if parsed.torn:
                self._drop_torn_frame(path, parsed.end, prev, last)
            if len(frames) == 1:
                self.state.restore(frames[0].body)
            else:
                restore: Any = self.state.restore
                restore(frames[0].body, [fr.body for fr in frames[1:]])
        except Exception as e:  # noqa: BLE001 - any failure to read it is damage
            journal_mod.on_fatal(
                f"loading the snapshot {path} ({e}); restore it, or "
                "replace the member with an empty data directory and "
                "--initial-cluster-state=existing, to have it fetch the state from the "
                "leader", e)
            raise
        mark = getattr(self.state, "mark", None)
        repeated = sum(int(fr.head.get("repeated", 0)) for fr in frames[1:])
        self._frame = (
            _Frames(mark(), ino, parsed.end, len(frames), frames[0].end, repeated)
            if parsed.chained and mark is not None else None)
        self._cut_journal_at(prev, last)
        cluster = {_pso.TCPNode(a) for a in frames[-1].head["cluster"]}
        return last, prev, cluster

    def _drop_torn_frame(self, path: str, end: int, prev: tuple[Any, ...],
                         last: tuple[Any, ...]) -> None:
        """The snapshot file goes on after its last readable frame: a frame cut short by a
        crash while it was appended, or damage. The state of the frames before it is enough
        only when this member's journal still holds every entry after them: the journal is
        cut only once a frame is on disk, so after such a crash it still reaches back to the
        frame before. A snapshot just received from the leader needs no journal (the leader
        sends what follows). The unreadable bytes are cut off, so that frames appended later
        follow a readable one."""
        # pysyncobj loads this member's own snapshot in its first tick, with this flag still
        # set; any snapshot loaded later was received from the leader.
        if getattr(self._node, "_SyncObj__needLoadDumpFile", False):
            journal = self._journal
            first = int(journal[0][1]) if len(journal) else None
            if first is None or first > int(prev[1]) or first + len(journal) <= int(last[1]):
                raise ValueError(
                    f"a frame after entry {last[1]} cannot be read, and the journal does not "
                    "hold the entries after that frame")
        log.warning("snapshot %s: cutting off an unreadable last frame at byte %d", path, end)
        with open(path, "r+b") as f:
            f.truncate(end)
            if self.cfg.fsync:
                os.fsync(f.fileno())

    def _cut_journal_at(self, prev: tuple[Any, ...], last: tuple[Any, ...]) -> None:
        """pysyncobj keeps the journal only if it starts with the snapshot's last two entries
        and clears it otherwise. A member stopped after writing a snapshot but before its
        journal dropped the entries the snapshot covers (``deleteEntriesTo`` right after) still
        holds them: cut them off here, so that the entries after the snapshot (acknowledged,
        on this disk) are kept rather than cleared with them. A journal without those two
        entries (behind the snapshot, or a snapshot sent by the leader) is left to
        pysyncobj."""
        journal = self._journal
        if len(journal) < 2:
            return
        i = int(prev[1]) - int(journal[0][1])
        if i <= 0 or i + 1 >= len(journal):
            return
        if tuple(journal[i]) == prev and tuple(journal[i + 1]) == last:
            log.info("journal holds entries behind the snapshot: keeping it from index %d",
                     prev[1])
            journal.deleteEntriesTo(i)

    # -- Consensus ----------------------------------------------------------------------------

    @property
    def member_id(self) -> int:
        return self._member_ids[self.cfg.name]

    @property
    def cluster_id(self) -> int:
        return int(self._cluster_id)

    def members(self) -> list[Member]:
        out = []
        for name in self.cfg.peers:
            out.append(
                Member(
                    id=self._member_ids[name],
                    name=name,
                    peer_urls=list(self.cfg.peer_urls[name]),
                    client_urls=list(self.cfg.client_urls) if name == self.cfg.name else [],
                )
            )
        return out

    def term(self) -> int:
        return int(self._node.raftCurrentTerm)

    def leader_id(self) -> int:
        """The leader this member follows, 0 if none. As in etcd's raft, a follower that has
        not heard from its leader for its election timeout has none: etcd's raft resets
        ``lead`` when it turns (pre-)candidate at that point. pysyncobj clears its leader only
        when it starts an election, which it never does while no peer is connected (the
        survivor of a quorum loss kept reporting the dead leader), so the election deadline
        it keeps (pushed back by every append from the leader) is checked here."""
        node = self._node
        leader = node._getLeader()
        if leader is None:
            return 0
        if not node._isLeader() and node._SyncObj__raftElectionDeadline < _pso_monotonic():
            return 0
        name = self._addr_to_name.get(getattr(leader, "address", str(leader)))
        return self._member_ids.get(name, 0) if name else 0

    def is_leader(self) -> bool:
        return bool(self._node._isLeader())

    async def move_leader(self, target: int, timeout: float = 5.0) -> None:
        """etcd's MoveLeader over pysyncobj's transferLeadership (Raft's TimeoutNow). pysyncobj
        refuses a target that is not fully caught up, where etcd's raft first catches it up:
        the request is repeated every tick until the target leads or ``timeout`` passes."""
        if target == self.member_id:
            return
        names = {mid: name for name, mid in self._member_ids.items()}
        address = self.cfg.peers[names[target]]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        node = self._node
        while loop.time() < deadline:
            if self.leader_id() == target:
                return
            if node._isLeader():
                self._raft_calls.append(lambda: node.transferLeadership(address))
                self._wake()
            await asyncio.sleep(0.05)
        if self.leader_id() != target:
            raise LeaderTransferTimeout()

    def applied_index(self) -> int:
        return int(self._node.raftLastApplied)

    def commit_index(self) -> int:
        return int(self._node.raftCommitIndex)

    def status(self) -> dict[str, Any]:
        return dict(self._node.getStatus())

    def _submit(self, command: bytes | list[bytes] | None, timeout: float) -> asyncio.Future[Any]:
        """Propose a read barrier (``command`` bytes: its own log entry) or state machine
        commands (a list: the future's result is the list of their results), or (None) ask
        for a read point without a log entry (readindex.py; it may fail with
        ``_ReadIndexUnavailable``)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        inbox = self._loop_inboxes.get(loop)
        if inbox is None:
            inbox = self._loop_inboxes[loop] = _LoopInbox(loop)

        def done(result: Any, err: int) -> None:
            # Collected here and handed to the loop once per tick (see _after_tick): one wake-up
            # of the event loop for every result of a tick instead of one per result.
            self._ready.append((inbox, fut, result, err))

        def expire() -> None:
            if not fut.done():
                metrics.PROPOSALS_FAILED.inc()
                fut.set_exception(TimeoutError_())

        # The timer goes when the proposal is answered: left to run out, each one kept its
        # future, result and closure alive for the whole timeout (thousands of objects under
        # load, walked by every older-generation garbage collection).
        timer = loop.call_later(timeout, expire)
        fut.add_done_callback(lambda _: timer.cancel())
        if command is None:
            self._reads.append(done)
        elif isinstance(command, list):
            self._inbox.append((command, done))
        else:
            self._node.submit(command, done)
        self._wake()
        return fut

    async def propose(self, command: bytes, timeout: float = 7.0) -> object:
        # Proposals made in the same event-loop iteration travel as one log entry: one append,
        # one message per follower, one forward from a follower to the leader, instead of one
        # per command (the log entry is the unit pysyncobj pays for).
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._batch.append((command, fut, timeout))
        if len(self._batch) == 1:
            asyncio.get_running_loop().call_soon(self._flush)
        return await fut

    def _flush(self) -> None:
        batch, self._batch = self._batch, []
        if not batch:
            return
        timeout = min(t for _, _, t in batch)
        waiters = [f for _, f, _ in batch]

        def done(f: asyncio.Future[Any]) -> None:
            exc = f.exception()
            results = None if exc is not None else f.result()
            for i, w in enumerate(waiters):
                if w.done():
                    continue
                if exc is not None:
                    w.set_exception(exc)
                else:
                    assert results is not None
                    w.set_result(results[i])

        self._submit([c for c, _, _ in batch], timeout).add_done_callback(done)

    async def read_barrier(self, timeout: float = 7.0) -> None:
        # Readers that arrive while a read point is being established wait for the next one:
        # the one they join must begin after their read did.
        if self._barrier_pending is None:
            self._barrier_pending = asyncio.get_running_loop().create_future()
        waiter = self._barrier_pending
        if not self._barrier_inflight:
            self._start_barrier()
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError:
            raise TimeoutError_() from None

    def _start_barrier(self) -> None:
        group = self._barrier_pending
        assert group is not None
        self._barrier_pending = None
        self._barrier_inflight = True

        def finished(f: asyncio.Future[Any]) -> None:
            self._barrier_inflight = False
            exc = f.exception()
            if exc is not None:
                group.set_exception(exc)
                group.exception()  # marks it retrieved when no reader is left to see it
            else:
                group.set_result(None)
            if self._barrier_pending is not None:
                self._start_barrier()

        def read_index(f: asyncio.Future[Any]) -> None:
            if isinstance(f.exception(), _ReadIndexUnavailable):
                # No quick read index (see readindex.py): a barrier entry through the log.
                metrics.READ_POINTS.labels("log").inc()
                self._submit(bytes([_CMD_BARRIER]), 7.0).add_done_callback(finished)
                return
            if f.exception() is None:
                metrics.READ_POINTS.labels("read_index").inc()
            finished(f)

        self._submit(None, 7.0).add_done_callback(read_index)

    def stop(self) -> None:
        self._stopping.set()
        try:
            self._waker.notify()
        except OSError:
            pass
        self._thread.join(timeout=5)


class _LoopInbox:
    """Results handed from the raft thread to one event loop.

    ``loop.call_soon_threadsafe`` wakes the loop by writing to its eventfd while holding the
    GIL (uvloop's ``uv_async_send``); the write wakes the loop thread, which on a busy machine
    often preempts the raft thread there, and then waits for the GIL the raft thread still
    holds (py-spy: 13% of the leader's GIL-holding samples at one client were that write).
    ``os.write`` releases the GIL around the system call, so the woken loop thread can take it
    at once. One byte per batch of results, written only when the loop has not been woken
    since it last drained."""

    __slots__ = ("_loop", "_items", "_signalled", "_r", "_w", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Weak: Replication keeps its inboxes in a dict weakly keyed by the loop.
        self._loop = weakref.ref(loop)
        self._items: collections.deque[tuple[asyncio.Future[Any], Any, int]] = (
            collections.deque()
        )
        self._signalled = False
        self._r, self._w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        loop.add_reader(self._r, self._drain)
        weakref.finalize(self, _close_fds, self._r, self._w)

    def post(self, items: list[tuple[asyncio.Future[Any], Any, int]]) -> None:
        """(Raft thread) queue ``items`` and wake the loop unless a wake-up is pending."""
        loop = self._loop()
        if loop is None or loop.is_closed():
            return  # nobody is waiting any more
        self._items.extend(items)
        if not self._signalled:
            self._signalled = True
            try:
                os.write(self._w, b"\0")
            except (BlockingIOError, OSError):  # full (a wake-up is pending) or closed
                pass

    def _drain(self) -> None:
        """(Event loop) resolve every queued result."""
        try:
            os.read(self._r, 4096)
        except (BlockingIOError, OSError):
            pass
        # Cleared before taking the items: the raft thread queues and then looks at the flag,
        # so an item it queued after this point comes with a new wake-up.
        self._signalled = False
        items = self._items
        while items:
            fut, result, err = items.popleft()
            _resolve(fut, result, err)


def _close_fds(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class _ReadIndexUnavailable(ConsensusError):
    """The read point needs a barrier entry in the log instead (readindex.py)."""


def _answer_all(answers: list[Answer], index: int | None) -> None:
    for answer in answers:
        answer(index)


def _resolve(fut: asyncio.Future[Any], result: Any, err: int) -> None:
    if fut.done():
        return
    if err == FAIL_REASON.SUCCESS:
        fut.set_result(result)
    elif err == _READ_FALLBACK:
        fut.set_exception(_ReadIndexUnavailable("read index unavailable"))
    elif err == FAIL_REASON.MISSING_LEADER:
        metrics.PROPOSALS_FAILED.inc()
        fut.set_exception(NoLeaderError())
    else:
        metrics.PROPOSALS_FAILED.inc()
        fut.set_exception(ConsensusError("etcdserver: leader changed"))
