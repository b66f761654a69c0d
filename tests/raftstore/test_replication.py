"""Replication on real pysyncobj members in one process, over loopback TCP, with a small
msgpack state machine: ordering, forwarding from followers, read barriers, snapshots, restart
from the journal, and the durable journal's torn-tail handling."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace

import msgpack
import pytest
from pysyncobj.config import FAIL_REASON
from pysyncobj.monotonic import monotonic as _pso_monotonic

from raftstore import metrics
from raftstore.consensus import ConsensusError
from raftstore.journal import DurableJournal
from raftstore.replication import Replication, ReplicationConfig


class Counter:
    """A state machine of appended items; apply returns the log length."""

    def __init__(self) -> None:
        self.items: list[int] = []
        self.lock = threading.Lock()

    def apply(self, command: bytes) -> object:
        with self.lock:
            self.items.append(msgpack.unpackb(command))
            return len(self.items)

    def snapshot(self) -> bytes:
        with self.lock:
            return msgpack.packb(self.items)

    def snapshot_writer(self):  # type: ignore[no-untyped-def]
        data = self.snapshot()
        return lambda f: f.write(data)

    def restore(self, data: bytes) -> None:
        with self.lock:
            self.items = list(msgpack.unpackb(data))


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def make_cluster(tmp_path: object, n: int, **kw: object) -> tuple[list[ReplicationConfig], list[Counter]]:
    ports = free_ports(n)
    peers = {f"m{i}": f"127.0.0.1:{p}" for i, p in enumerate(ports)}
    cfgs = [
        ReplicationConfig(
            name=name, self_peer=addr, bind_peer=addr, peers=peers,
            peer_urls={k: [f"http://{v}"] for k, v in peers.items()},
            client_urls=[], data_dir=os.path.join(str(tmp_path), name), cluster_token="t",
            password=None, **kw,  # type: ignore[arg-type]
        )
        for name, addr in peers.items()
    ]
    return cfgs, [Counter() for _ in cfgs]


async def _until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for ``check``: an entry whose proposal failed may still commit later, and a read
    point need not wait for it (its write was never acknowledged)."""
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert check()


async def wait_leader(reps: list[Replication], timeout: float = 10.0) -> Replication:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leaders = [r for r in reps if r.is_leader()]
        if len(leaders) == 1 and all(r.leader_id() == leaders[0].member_id for r in reps):
            return leaders[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no leader")


async def test_three_members_replicate_in_order_and_forward(tmp_path: object) -> None:
    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        follower = next(r for r in reps if r is not leader)
        results = await asyncio.gather(
            *(r.propose(msgpack.packb(i)) for i, r in enumerate([leader, follower] * 50))
        )
        assert sorted(results) == list(range(1, 101))  # type: ignore[type-var]
        # A read barrier on any member sees every acknowledged write.
        for r, sm in zip(reps, sms, strict=True):
            await r.read_barrier()
            assert len(sm.items) == 100
        assert sms[0].items == sms[1].items == sms[2].items
        assert len({r.cluster_id for r in reps}) == 1
        assert len({r.member_id for r in reps}) == 3
    finally:
        for r in reps:
            r.stop()


async def test_snapshot_and_restart_catch_up(tmp_path: object) -> None:
    cfgs, sms = make_cluster(tmp_path, 3, snapshot_count=20)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        down = next(i for i, r in enumerate(reps) if r is not leader)
        reps[down].stop()
        alive = [r for i, r in enumerate(reps) if i != down]
        for i in range(200):
            await leader.propose(msgpack.packb(i))
        assert os.path.exists(os.path.join(cfgs[0].data_dir, "snapshot.msgpack")) or any(
            os.path.exists(os.path.join(c.data_dir, "snapshot.msgpack")) for c in cfgs
        )
        # The stopped member restarts from its own journal and catches up (by snapshot).
        sms[down] = Counter()
        reps[down] = Replication(cfgs[down], sms[down])
        deadline = time.monotonic() + 15
        while len(sms[down].items) < 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert sms[down].items == sms[[i for i in range(3) if i != down][0]].items
        # The log was compacted behind the snapshot on the members that stayed up.
        assert all(len(r._journal) < 150 for r in alive)
    finally:
        for r in reps:
            r.stop()


async def test_single_member_restart_replays_journal(tmp_path: object) -> None:
    cfgs, sms = make_cluster(tmp_path, 1)
    rep = Replication(cfgs[0], sms[0])
    await wait_leader([rep])
    for i in range(10):
        assert await rep.propose(msgpack.packb(i)) == i + 1
    rep.stop()
    sm = Counter()
    rep = Replication(cfgs[0], sm)
    try:
        await wait_leader([rep])
        await rep.read_barrier()
        assert sm.items == list(range(10))
    finally:
        rep.stop()


async def test_no_quorum_times_out(tmp_path: object) -> None:
    cfgs, sms = make_cluster(tmp_path, 3)
    rep = Replication(cfgs[0], sms[0])  # the other two never start
    try:
        with pytest.raises(ConsensusError):
            await rep.propose(msgpack.packb(1), timeout=1.0)
        with pytest.raises(ConsensusError):
            await rep.read_barrier(timeout=1.0)
    finally:
        rep.stop()


def _synced_journal(path: str, last: int, prefix: bytes = b"cmd") -> DurableJournal:
    """A journal holding entries 1..last of term 1, synced."""
    j = DurableJournal(path)
    for i in range(1, last + 1):
        j.add(prefix + b"%d" % i, i, 1)
    j.sync()
    return j


def test_journal_cuts_torn_tail_and_keeps_synced_entries(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "j")
    j = _synced_journal(path, 5)
    j.add(b"never-synced", 6, 1)  # buffered only: lost by a crash, never acknowledged
    j.setCurrentTerm(3, "127.0.0.1:1")
    os.close(j._fd)  # simulate a crash: no _destroy
    with open(path, "ab") as f:
        f.write(b"\x10\x00\x00\x00garbage")  # a torn record
    j2 = DurableJournal(path)
    assert [e[1] for e in j2] == [1, 2, 3, 4, 5]
    assert j2[4] == (b"cmd5", 5, 1)
    assert j2.getCurrentTerm() == 3 and j2.getVotedForNodeId() == "127.0.0.1:1"
    j2.deleteEntriesFrom(3)
    j2.add(b"x", 4, 2)
    j2.deleteEntriesTo(1)
    j2._destroy()
    j3 = DurableJournal(path)
    # entry 1 stays in the file as a dead prefix (see the next test); the rest as written
    assert list(j3[0:]) == [(b"cmd1", 1, 1), (b"cmd2", 2, 1), (b"cmd3", 3, 1), (b"x", 4, 2)]
    j3._destroy()


def _flip_byte_of_record(path: str, index: int) -> None:
    """Flip a byte inside the command of the index-th record (0-based) of a journal file."""
    with open(path, "r+b") as f:
        data = f.read()
        offset = 0
        for _ in range(index):
            (length,) = struct.unpack_from("<I", data, offset)
            offset += 24 + length
        f.seek(offset + 24)
        f.write(bytes([data[offset + 24] ^ 0x20]))


def test_journal_refuses_damage_to_entries_it_had_synced(tmp_path: object) -> None:
    """A bad CRC in the middle of the journal was read as a torn tail: the damaged record and
    every acknowledged entry after it were cut off silently. Records up to the meta file's
    ``synced`` mark were on disk, so damage there is refused, as etcd refuses a WAL with a
    CRC mismatch."""
    from raftstore.journal import JournalError

    path = os.path.join(str(tmp_path), "j")
    j = DurableJournal(path)
    for i in range(1, 11):
        j.add(b"cmd%d" % i, i, 1)
    j._destroy()  # syncs and stores the meta file: synced up to 10
    size = os.path.getsize(path)
    _flip_byte_of_record(path, 4)
    with pytest.raises(JournalError, match=r"damaged .* every entry up to index 10 was on disk"):
        DurableJournal(path)
    assert os.path.getsize(path) == size  # nothing was cut
    _flip_byte_of_record(path, 4)  # repaired: loads whole
    j2 = DurableJournal(path)
    assert [e[1] for e in j2] == list(range(1, 11))
    j2._destroy()


def test_journal_still_cuts_a_torn_write_past_the_synced_mark(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "j")
    j = _synced_journal(path, 5)
    j.setCurrentTerm(2, None)  # meta written: synced up to 5
    for i in range(6, 9):
        j.add(b"cmd%d" % i, i, 1)
    j.sync()  # on disk, but the mark still says 5 (it is written once a second)
    os.close(j._fd)  # a crash: no _destroy
    _flip_byte_of_record(path, 6)  # the write of entry 7 was torn
    j2 = DurableJournal(path)
    assert [e[1] for e in j2] == [1, 2, 3, 4, 5, 6]
    j2._destroy()


def test_journal_lowers_the_synced_mark_when_the_log_is_cut(tmp_path: object) -> None:
    """A follower whose log is cut at a conflict appends other entries at the same indexes;
    a torn write of those must not read as damage to the entries cut away."""
    path = os.path.join(str(tmp_path), "j")
    j = _synced_journal(path, 10, b"old")
    j.setCurrentTerm(2, None)  # synced up to 10
    j.deleteEntriesFrom(5)  # entries 6.. conflicted with the new leader's
    for i in range(6, 9):
        j.add(b"new%d" % i, i, 2)
    j.sync()
    os.close(j._fd)
    _flip_byte_of_record(path, 7)  # entry 8's write torn
    j2 = DurableJournal(path)
    assert [e[2] for e in j2] == [1, 1, 1, 1, 1, 2, 2]
    j2.clear()  # a snapshot from the leader replaces the log: the mark goes to 0
    j2.add(b"after", 100, 3)
    j2.add(b"after", 101, 3)
    j2.sync()
    os.close(j2._fd)
    _flip_byte_of_record(path, 1)
    j3 = DurableJournal(path)
    assert [e[1] for e in j3] == [100]
    j3._destroy()


def test_journal_records_how_far_it_is_synced_once_a_second(tmp_path: object) -> None:
    from raftstore.journal import JournalError

    path = os.path.join(str(tmp_path), "j")
    j = DurableJournal(path)
    for i in range(1, 6):
        j.add(b"cmd%d" % i, i, 1)
    j.onOneSecondTimer()  # pysyncobj's timer (and the embedded store's): syncs, then marks
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if os.path.exists(path + ".meta"):
            with open(path + ".meta", "rb") as f:
                if msgpack.unpackb(f.read()).get("synced") == 5:
                    break
        time.sleep(0.01)
    os.close(j._fd)  # a crash
    _flip_byte_of_record(path, 2)
    with pytest.raises(JournalError, match="up to index 5"):
        DurableJournal(path)


def test_journal_delete_to_past_its_end_keeps_the_last_entry(tmp_path: object) -> None:
    """pysyncobj compacts up to a snapshot's index even if its log was truncated below that
    index meanwhile (a restarted ex-leader once hit IndexError here)."""
    path = os.path.join(str(tmp_path), "j")
    j = _synced_journal(path, 5)
    j.deleteEntriesTo(40)
    assert list(j[0:]) == [(b"cmd5", 5, 1)]
    j.add(b"cmd6", 6, 1)
    j.sync()
    j._destroy()
    j2 = DurableJournal(path)
    assert [e[1] for e in j2][-2:] == [5, 6]
    j2._destroy()


class SlowCounter(Counter):
    """``Counter`` whose command -1 blocks the applying thread for a while (like a DeleteRange
    over tens of thousands of keys)."""

    def __init__(self, pause: float) -> None:
        super().__init__()
        self.pause = pause

    def apply(self, command: bytes) -> object:
        if msgpack.unpackb(command) == -1:
            time.sleep(self.pause)
        return super().apply(command)


def _connections(rep: Replication) -> list[object]:
    transport = rep._node._SyncObj__transport  # type: ignore[attr-defined]
    return list(transport._connections.values())


async def test_long_apply_keeps_peer_connections_and_forwarded_proposals(
    tmp_path: object, caplog: pytest.LogCaptureFixture
) -> None:
    """A member busy applying for longer than the peer connection timeout used to drop every
    peer connection on its first send afterwards (pysyncobj checked the silence before reading
    the socket), losing a proposal forwarded to the leader: the client waited 7 s for "request
    timed out". Now the connections stay up and every forwarded proposal is answered."""
    cfgs, _ = make_cluster(tmp_path, 3)
    sms = [SlowCounter(1.2) for _ in cfgs]
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        follower = next(r for r in reps if r is not leader)
        await follower.propose(msgpack.packb(0))
        for rep in reps:  # a short timeout, so that the pause is well past it
            for conn in _connections(rep):
                conn._TcpConnection__timeout = 0.5  # type: ignore[attr-defined]
        caplog.clear()
        with caplog.at_level("INFO", logger="raftstore.replication"):
            slow = asyncio.ensure_future(leader.propose(msgpack.packb(-1)))
            await asyncio.sleep(0.3)  # the members are applying the slow command now
            forwarded = [follower.propose(msgpack.packb(i), timeout=5.0) for i in range(1, 6)]
            results = await asyncio.gather(*forwarded)
            await slow
            # Idle follower-to-follower connections and leader connections alike survive.
            await asyncio.sleep(0.3)
            assert all(await asyncio.gather(*(r.propose(msgpack.packb(9)) for r in reps)))
        assert len(results) == 5
        lost = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
        assert lost == []
        for r in reps:
            await r.read_barrier()
        assert sms[0].items == sms[1].items == sms[2].items
    finally:
        for r in reps:
            r.stop()


def test_journal_durable_index_and_commit_hint(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "j")
    j = DurableJournal(path)
    assert j.durable_index == 0 and not j.dirty
    for i in range(1, 4):
        j.add(b"c%d" % i, i, 1)
    assert j.last_index == 3 and j.durable_index == 0 and j.dirty
    j.sync()
    assert j.durable_index == 3 and not j.dirty
    j.add(b"c4", 4, 1)
    j.setRaftCommitIndex(4)  # ahead of the disk: stored as 3 at most
    j._store_meta()
    with open(path + ".meta", "rb") as f:
        assert msgpack.unpackb(f.read())["commit"] == 3
    j.deleteEntriesFrom(2)  # keeps entries 1 and 2 (positions 0 and 1)
    assert j.last_index == 2 and j.durable_index == 2
    j.add(b"x3", 3, 2)
    j._destroy()
    j2 = DurableJournal(path)
    assert [e[1:] for e in j2] == [(1, 1), (2, 1), (3, 2)] and j2.durable_index == 3
    assert j2.getRaftCommitIndex() <= 3
    j2._destroy()


async def test_single_member_acknowledges_only_after_its_fsync(tmp_path: object) -> None:
    cfgs, sms = make_cluster(tmp_path, 1)
    rep = Replication(cfgs[0], sms[0])
    try:
        await wait_leader([rep])
        assert await rep.propose(msgpack.packb(1)) == 1
        journal = rep._journal
        # The disk never answers: every way to it (the raft thread's sync, and the journal
        # thread's sync before it stores the commit hint each second) goes through this.
        journal._flush_locked = lambda: None  # type: ignore[method-assign]
        with pytest.raises(ConsensusError):
            await rep.propose(msgpack.packb(2), timeout=1.0)
        assert sms[0].items == [1]  # not applied either
        del journal._flush_locked  # the disk answers again
        await _until(lambda: sms[0].items == [1, 2])
    finally:
        rep.stop()


async def test_follower_acknowledges_only_after_its_fsync(tmp_path: object) -> None:
    """With one follower down, a commit needs the other follower's acknowledgement, which it
    sends only once the entries are on its disk: while its disk does not answer, nothing
    commits (the leader's own disk is not enough)."""
    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        await leader.propose(msgpack.packb(0))
        followers = [r for r in reps if r is not leader]
        followers[0].stop()
        journal = followers[1]._journal
        journal._flush_locked = lambda: None  # type: ignore[method-assign]  # (as above)
        with pytest.raises(ConsensusError):
            await leader.propose(msgpack.packb(1), timeout=1.5)
        leader_sm = sms[reps.index(leader)]
        assert leader_sm.items == [0]
        del journal._flush_locked
        await _until(lambda: leader_sm.items == [0, 1])
    finally:
        for r in reps:
            r.stop()


async def test_leader_syncs_after_sending_and_one_whose_disk_hangs_is_replaced(
    tmp_path: object,
) -> None:
    """Raft thesis 10.2.1, as etcd's leader does it: the leader sends its appends before its
    own fdatasync, so the followers write an entry while the leader's sync is running. A
    leader whose disk hangs stops ticking (its raft thread waits in the sync); the other two
    elect a leader of their own and go on committing, and once the disk answers the old
    leader steps down and catches up."""
    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    disk = threading.Event()
    try:
        leader = await wait_leader(reps)
        await leader.propose(msgpack.packb(0))
        followers = [r for r in reps if r is not leader]
        journal = leader._journal
        written = [f._journal.durable_index for f in followers]
        # The leader's disk hangs (every way to it, including the journal thread's sync
        # before it stores the commit hint).
        journal._flush_locked = lambda: disk.wait(30) and None  # type: ignore[method-assign]
        stuck = asyncio.ensure_future(leader.propose(msgpack.packb(1), timeout=20))
        await _until(lambda: all(
            f._journal.durable_index > w for f, w in zip(followers, written, strict=True)))
        assert journal.durable_index < journal.last_index
        successor = await wait_leader(followers, timeout=15)
        await successor.propose(msgpack.packb(2), timeout=10)
        for r in followers:
            await r.read_barrier()
        # The new leader committed the entry the old one had sent (it was on a majority's
        # disks) before its own.
        for r in followers:
            assert sms[reps.index(r)].items == [0, 1, 2]
        disk.set()
        del journal._flush_locked
        # The old leader's proposal is answered or failed, never left waiting.
        try:
            await stuck
        except ConsensusError:
            pass
        await _until(lambda: sms[reps.index(leader)].items == [0, 1, 2], timeout=15)
        assert not leader.is_leader()
    finally:
        disk.set()
        for r in reps:
            r.stop()


async def test_restart_between_snapshot_and_log_compaction_keeps_later_entries(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member that stops after its snapshot file is in place but before its journal dropped
    the entries the snapshot covers (a crash in that window) restarts with every entry it had:
    the journal is cut at the snapshot's boundary instead of being cleared, which would lose
    the acknowledged entries after the snapshot."""
    cfgs, sms = make_cluster(tmp_path, 1, snapshot_count=20)
    # The journal never drops its prefix, as if the member always stopped before it could.
    monkeypatch.setattr(DurableJournal, "deleteEntriesTo", lambda self, entry_to: None)
    rep = Replication(cfgs[0], sms[0])
    try:
        await wait_leader([rep])
        for i in range(100):
            await rep.propose(msgpack.packb(i))
        snapshot = os.path.join(cfgs[0].data_dir, "snapshot.msgpack")
        deadline = time.monotonic() + 10
        while not os.path.exists(snapshot) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert os.path.exists(snapshot)
        for i in range(100, 110):
            await rep.propose(msgpack.packb(i))
    finally:
        rep.stop()
    monkeypatch.undo()
    sm = Counter()
    rep = Replication(cfgs[0], sm)
    try:
        await wait_leader([rep])
        await rep.read_barrier()
        assert sm.items == list(range(110))
    finally:
        rep.stop()


class GatedCounter(Counter):
    """A Counter whose snapshot writes wait, once ``gate`` is armed, until it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.gate = threading.Event()
        self.writing = threading.Event()

    def snapshot_writer(self):  # type: ignore[no-untyped-def]
        write = super().snapshot_writer()
        armed = self.armed

        def gated(f):  # type: ignore[no-untyped-def]
            if armed:
                self.writing.set()
                self.gate.wait(10)
            write(f)

        return gated


async def test_a_snapshot_loaded_while_one_is_written_is_not_replaced_by_it(
    tmp_path: object,
) -> None:
    """A follower can receive and load the leader's snapshot while its own, older one is
    still being written in the background. The older one must not be renamed over it: the
    journal was cleared for the loaded one, so a restart would read the older state followed
    by a journal that starts after it. Here the member loads a snapshot (as it does one
    received) while its own write is held; the write is then dropped, and the file is still
    the one loaded."""
    cfgs, _ = make_cluster(tmp_path, 1, snapshot_count=20)
    sm = GatedCounter()
    rep = Replication(cfgs[0], sm)
    snapshot = os.path.join(cfgs[0].data_dir, "snapshot.msgpack")
    try:
        await wait_leader([rep])
        for i in range(40):
            await rep.propose(msgpack.packb(i))
        await _until(lambda: os.path.exists(snapshot))
        await _until(lambda: rep._snapshot_status == 0)  # NOT_SERIALIZING
        loaded = open(snapshot, "rb").read()  # noqa: SIM115
        sm.armed = True
        for i in range(40, 100):
            await rep.propose(msgpack.packb(i))
        assert await asyncio.to_thread(sm.writing.wait, 10)
        rep._read_snapshot(snapshot)
        commit = rep._commit_snapshot
        after: list[tuple[bool, bytes, bool]] = []

        def watched(part: str, gen: int, *rest: object) -> bool:
            done = commit(part, gen, *rest)
            if not after:  # the held write's outcome; later snapshots are legitimate
                after.append((done, open(snapshot, "rb").read(),  # noqa: SIM115
                              os.path.exists(part)))
            return done

        rep._commit_snapshot = watched  # type: ignore[method-assign]
        sm.gate.set()
        await _until(lambda: bool(after))
        assert after[0] == (False, loaded, False)
    finally:
        sm.gate.set()
        rep.stop()


def test_journal_keeps_a_dead_prefix_until_it_is_large(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Entries a snapshot covers leave memory at once but stay in the file (read back at a
    restart, where the journal is cut at the snapshot again) until the dead prefix is large
    and larger than what follows it; then the file is rewritten without it."""
    import raftstore.journal as journal_module

    path = os.path.join(str(tmp_path), "j")
    j = DurableJournal(path)
    for i in range(1, 11):
        j.add(b"c%d" % i, i, 1)
    j.sync()
    size = os.path.getsize(path)
    j.deleteEntriesTo(4)  # entries 1-4 covered by a snapshot
    assert [e[1] for e in j] == [5, 6, 7, 8, 9, 10] and os.path.getsize(path) == size
    assert j.byte_size < size
    j.add(b"c11", 11, 1)
    j.deleteEntriesFrom(5)  # a conflict: entries 10 and 11 go
    assert [e[1] for e in j] == [5, 6, 7, 8, 9]
    j._destroy()
    j = DurableJournal(path)
    assert [e[1] for e in j] == list(range(1, 10))  # the dead prefix is read back
    monkeypatch.setattr(journal_module, "_DEAD_PREFIX", 1)
    j.deleteEntriesTo(8)  # 8 dead entries before 1 live one: rewritten away
    assert [e[1] for e in j] == [9]
    j._destroy()
    assert [e[1] for e in DurableJournal(path)] == [9]


def _read_points(path: str) -> float:
    return float(metrics.READ_POINTS.labels(path)._value.get())


async def test_reads_take_a_read_index_without_a_log_entry(tmp_path: object) -> None:
    """A read point on the leader or a follower is a heartbeat round (readindex.py), not an
    entry in the log, and still sees every write acknowledged before it began."""
    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        await leader.propose(msgpack.packb(0))
        last = leader._journal.last_index
        fast, slow = _read_points("read_index"), _read_points("log")
        for r in reps:
            await asyncio.gather(*(r.read_barrier() for _ in range(5)))
        a, b = [r for r in reps if r is not leader]
        for i in range(1, 20):
            await (a, b)[i % 2].propose(msgpack.packb(i))
            reader = (b, a)[i % 2]
            await reader.read_barrier()
            assert sms[reps.index(reader)].items == list(range(i + 1))
        assert leader._journal.last_index == last + 19  # the writes, and nothing for reads
        assert _read_points("read_index") >= fast + 3 + 19
        assert _read_points("log") == slow
    finally:
        for r in reps:
            r.stop()


async def test_a_leader_without_its_followers_serves_no_read(tmp_path: object) -> None:
    """With both followers gone, the leader cannot confirm that it still leads: its read
    index round fails, the barrier entry it falls back to cannot commit, and the read fails
    instead of returning what may be stale."""
    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        await leader.propose(msgpack.packb(0))
        await leader.read_barrier()
        slow = _read_points("log")
        for r in reps:
            if r is not leader:
                r.stop()
        with pytest.raises(ConsensusError):
            await leader.read_barrier(timeout=3.0)
        assert _read_points("log") == slow + 1
    finally:
        for r in reps:
            r.stop()


async def test_a_partitioned_leader_that_still_thinks_it_leads_serves_no_read(
    tmp_path: object,
) -> None:
    """The leader is cut off from its peers (everything it sends or receives is dropped, the
    connections stay up). The others elect a new leader and commit a write the old one never
    sees. The old leader, told not to step down on its own, still believes it leads: a read
    point on it must fail, never pass with its stale state."""
    cfgs, sms = make_cluster(tmp_path, 3, election_timeout=0.8)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        old = await wait_leader(reps)
        await old.propose(msgpack.packb(0))
        await old.read_barrier()
        old_sm = sms[reps.index(old)]
        old._node._SyncObj__conf.leaderFallbackTimeout = 3600.0
        transport = old._transport
        transport._onMessageReceivedCallback = lambda node, message: None
        transport.send = lambda node, message: True  # type: ignore[method-assign]
        rest = [r for r in reps if r is not old]
        deadline = time.monotonic() + 10
        while not any(r.is_leader() for r in rest) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        new = next(r for r in rest if r.is_leader())
        assert await new.propose(msgpack.packb(1)) == 2
        assert old.is_leader()  # it has heard nothing of the new term
        with pytest.raises(ConsensusError):
            await old.read_barrier(timeout=2.0)
        assert old_sm.items == [0]
        await rest[0].read_barrier()
        assert sms[reps.index(rest[0])].items == [0, 1]
    finally:
        for r in reps:
            r.stop()


async def test_a_leader_cut_off_fails_its_uncommitted_proposals_when_it_steps_down(
    tmp_path: object,
) -> None:
    """A leader cut off from its peers cannot commit what it appends. When it steps down (it
    heard from no follower for leaderFallbackTimeout) its proposals fail at once with
    "leader changed", not at their deadline ("request timed out"), so that its clients go
    to another member; the entries never commit, and the others' state never holds them."""
    cfgs, sms = make_cluster(tmp_path, 3, election_timeout=0.5)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        old = await wait_leader(reps)
        await old.propose(msgpack.packb(0))
        transport = old._transport
        transport._onMessageReceivedCallback = lambda node, message: None
        transport.send = lambda node, message: True  # type: ignore[method-assign]
        pending = asyncio.ensure_future(old.propose(msgpack.packb(1), timeout=10.0))
        with pytest.raises(ConsensusError) as err:
            await asyncio.wait_for(pending, 15.0)
        assert err.value.message == "etcdserver: leader changed"
        assert not old.is_leader()
        rest = [r for r in reps if r is not old]
        await _until(lambda: any(r.is_leader() for r in rest))
        new = next(r for r in rest if r.is_leader())
        await new.propose(msgpack.packb(2))
        await new.read_barrier()
        assert sms[reps.index(new)].items == [0, 2]
    finally:
        for r in reps:
            r.stop()


async def test_only_a_leader_cut_off_from_a_majority_fails_its_uncommitted_proposals(
    tmp_path: object,
) -> None:
    """A leader that steps down while a majority still answers it (a newer term: a leader
    transfer, a member that campaigned) keeps its proposals waiting: the new leader usually
    holds those entries and commits them, and each then succeeds on apply. Only one that no
    majority answered for leaderFallbackTimeout fails them early. (White box: the raft
    threads are stopped, and the step-down's hook is called on the leader's state.)"""
    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        await leader.propose(msgpack.packb(0))
    finally:
        for r in reps:
            r.stop()
    node = leader._node
    answers: list[tuple[object, int]] = []
    committed = int(node._SyncObj__raftCommitIndex)
    waiting = node._SyncObj__commandsWaitingCommit
    term = int(node.raftCurrentTerm)
    waiting[committed].append((term, lambda result, err: answers.append((result, err))))
    waiting[committed + 1].append((term, lambda result, err: answers.append((result, err))))
    leader._on_state_changed(2, 0)  # the followers answered a moment ago
    assert answers == [] and len(waiting[committed + 1]) == 1
    node._SyncObj__lastResponseTime.clear()  # nobody answered for leaderFallbackTimeout
    leader._on_state_changed(2, 0)
    assert answers == [(None, FAIL_REASON.LEADER_CHANGED)]  # the uncommitted one only
    assert committed + 1 not in waiting and len(waiting[committed]) == 1


async def test_survivor_of_a_quorum_loss_reports_no_leader(tmp_path: object) -> None:
    """etcd: a member that hears nothing from its leader for an election timeout becomes a
    candidate and reports leader 0 (Maintenance.Status), also when no peer is left to vote.
    pysyncobj starts no election without a connected peer and kept the dead leader."""
    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        survivor = next(r for r in reps if r is not leader)
        leader.stop()
        next(r for r in reps if r is not leader and r is not survivor).stop()
        started = time.monotonic()
        await _until(lambda: survivor.leader_id() == 0, timeout=5.0)
        assert time.monotonic() - started < 3.0
    finally:
        for r in reps:
            r.stop()


async def test_an_append_from_a_stale_next_index_cuts_no_entry(tmp_path: object,
                                                                 caplog: object) -> None:
    """A leader whose next index for a follower is stale sends entries the follower already
    holds. pysyncobj cut the follower's log after each such batch, applied and acknowledged
    entries included ("truncating already-applied log entries"): Raft cuts only at a
    conflict, so the follower's log must never shrink, and it still catches up."""
    import logging

    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        follower = next(r for r in reps if r is not leader)
        for i in range(300):
            await leader.propose(msgpack.packb(i))
        await follower.read_barrier()
        fnode = follower._node
        lnode = leader._node
        held = fnode._SyncObj__getCurrentLogIndex()
        peer = next(n for n in lnode._SyncObj__otherNodes
                    if getattr(n, "address", None) == follower.cfg.self_peer)
        caplog.set_level(logging.CRITICAL, logger="pysyncobj.syncobj")  # type: ignore[attr-defined]
        lowest = held
        for _ in range(3):
            lnode._SyncObj__raftNextIndex[peer] = 5  # the leader re-sends from entry 5
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                lowest = min(lowest, fnode._SyncObj__getCurrentLogIndex())
                await asyncio.sleep(0.002)
        assert lowest >= held
        assert "truncating already-applied" not in caplog.text  # type: ignore[attr-defined]
        await leader.propose(msgpack.packb(300))
        # Every member applies the last entry (the other follower learns of its commit from
        # a later append, so it may come last).
        await _until(lambda: all(len(sm.items) == 301 for sm in sms))
        assert sms[0].items == sms[1].items == sms[2].items
    finally:
        for r in reps:
            r.stop()


def test_a_journal_write_error_stops_the_member_and_acknowledges_nothing(
        tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk: the write fails, and the member must stop (as etcd does on a WAL error).
    The journal went on: the failed bytes were dropped from its buffer and the next sync
    released the acknowledgements waiting for them, so acknowledged writes were lost."""
    import errno

    from raftstore import journal as journal_mod

    stops: list[str] = []
    monkeypatch.setattr(journal_mod, "on_fatal", lambda what, exc: stops.append(what))
    j = DurableJournal(os.path.join(str(tmp_path), "j"))
    j.add(b"cmd1", 1, 1)
    j.sync()
    assert j.durable_index == 1
    real = os.pwrite

    def full(fd: int, data: object, offset: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    j.add(b"cmd2", 2, 1)
    with pytest.raises(OSError):
        j.sync()
    assert stops == ["writing entries"]
    assert j.durable_index == 1
    with pytest.raises(OSError):
        j.sync()  # still nothing on disk: still not durable
    assert j.durable_index == 1
    monkeypatch.setattr(os, "pwrite", real)
    j.sync()  # the bytes were kept: written now
    assert j.durable_index == 2
    j._destroy()
    j2 = DurableJournal(os.path.join(str(tmp_path), "j"))
    assert [e[1] for e in j2] == [1, 2]
    j2._destroy()


def test_an_unreadable_meta_file_is_refused(tmp_path: object) -> None:
    """Term and vote: starting without them could grant a second vote in a term."""
    from raftstore.journal import JournalError

    path = os.path.join(str(tmp_path), "j")
    j = DurableJournal(path)
    j.setCurrentTerm(3, "m1")
    j._destroy()
    with open(path + ".meta", "wb") as f:
        f.write(b"\xc1")
    with pytest.raises(JournalError, match="unreadable"):
        DurableJournal(path)


async def test_a_peer_message_of_absurd_size_drops_the_connection(tmp_path: object) -> None:
    """pysyncobj buffered whatever length a peer announced (up to 2 GiB) before it could
    authenticate the message: anyone reaching the peer port could load the leader."""
    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        host, port = leader.cfg.bind_peer.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=5)
        sock.sendall(struct.pack("i", 2**31 - 1) + b"\\0" * 65536)
        closed = False
        deadline = time.monotonic() + 5
        try:
            while time.monotonic() < deadline:
                try:
                    sock.sendall(b"\\0" * 65536)
                except OSError:  # reset by the member
                    closed = True
                    break
                await asyncio.sleep(0.01)
        finally:
            sock.close()
        assert closed
        assert await leader.propose(msgpack.packb(1)) is not None
    finally:
        for r in reps:
            r.stop()


async def _member_with_a_snapshot(tmp_path: object) -> tuple[ReplicationConfig, str]:
    cfgs, sms = make_cluster(tmp_path, 1, snapshot_count=20)
    rep = Replication(cfgs[0], sms[0])
    try:
        await wait_leader([rep])
        snap = os.path.join(cfgs[0].data_dir, "snapshot.msgpack")
        for i in range(300):
            await rep.propose(msgpack.packb(i))
            if os.path.exists(snap) and i > 100:
                break
        await _until(lambda: os.path.exists(snap))
    finally:
        rep.stop()
    return cfgs[0], snap


async def test_a_damaged_snapshot_stops_the_member(tmp_path: object,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A flipped byte in the middle of the snapshot was loaded and served (wrong values, a
    HashKV differing from the other members for good); now its checksum stops the member."""
    from raftstore import journal as journal_mod

    cfg, snap = await _member_with_a_snapshot(tmp_path)
    with open(snap, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(size // 2)
        byte = f.read(1)
        f.seek(size // 2)
        f.write(bytes([byte[0] ^ 0x40]))
    stops: list[str] = []
    monkeypatch.setattr(journal_mod, "on_fatal", lambda what, exc: stops.append(what))
    rep = Replication(cfg, Counter())
    try:
        await _until(lambda: bool(stops), timeout=5)
    finally:
        rep.stop()
    assert "checksum mismatch" in stops[0] and snap in stops[0]


async def test_a_missing_snapshot_behind_a_compacted_journal_is_refused(
        tmp_path: object) -> None:
    """Without its snapshot, a member replayed the rest of its journal over an empty state,
    served that, and never caught up."""
    from raftstore.journal import JournalError

    cfg, snap = await _member_with_a_snapshot(tmp_path)
    os.remove(snap)
    # as a member's journal is once rewritten without the entries the snapshot holds (or
    # after the leader sent it a snapshot)
    j = DurableJournal(os.path.join(cfg.data_dir, "raft.journal"))
    j._rewrite(list(j)[50:])
    j._destroy()
    with pytest.raises(JournalError, match="is missing but raft.journal starts at entry"):
        Replication(cfg, Counter())


async def test_a_member_rejoining_empty_votes_only_once_caught_up(tmp_path: object) -> None:
    """Fault injection lost 12,000 acknowledged writes this way: a member whose data
    directory was replaced came back empty next to a member that had missed the writes,
    while the other member holding them was down; the empty one voted for the stale one.
    Joined with --initial-cluster-state=existing, an empty member votes for nobody until it
    has caught up with a leader, so no leader is elected until the member with the writes
    is back, and nothing is lost."""
    import dataclasses
    import shutil

    cfgs, sms = make_cluster(tmp_path, 3)
    reps: list[Replication | None] = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        live = [r for r in reps if r is not None]
        leader = await wait_leader(live)
        stale = next(i for i, r in enumerate(reps) if r is not leader)
        reps[stale].stop()  # type: ignore[union-attr]
        reps[stale] = None
        holders = [i for i in range(3) if i != stale]
        leader = await wait_leader([reps[i] for i in holders])  # type: ignore[misc]
        for i in range(50):
            await leader.propose(msgpack.packb(i))
        await _until(lambda: all(len(sms[i].items) == 50 for i in holders))
        keeper, wiped = holders
        for i in holders:
            reps[i].stop()  # type: ignore[union-attr]
            reps[i] = None
        shutil.rmtree(cfgs[wiped].data_dir)  # its disk was replaced

        sms[stale], sms[wiped] = Counter(), Counter()
        reps[stale] = Replication(cfgs[stale], sms[stale])
        joined = dataclasses.replace(cfgs[wiped], join_existing=True)
        reps[wiped] = Replication(joined, sms[wiped])
        await asyncio.sleep(4 * cfgs[0].election_timeout)
        assert not any(r.is_leader() for r in reps if r is not None), \
            "the empty member voted: a member without the acknowledged writes leads"
        assert reps[wiped]._node._catching_up  # type: ignore[union-attr]

        sms[keeper] = Counter()
        reps[keeper] = Replication(cfgs[keeper], sms[keeper])
        leader = await wait_leader([r for r in reps if r is not None], timeout=15)
        await leader.propose(msgpack.packb(50))
        await _until(lambda: all(sm.items == list(range(51)) for sm in sms), timeout=15)
        await _until(lambda: not reps[wiped]._node._catching_up)  # type: ignore[union-attr]
        # caught up for good: a restart (with either state flag) is an ordinary member
        reps[wiped].stop()  # type: ignore[union-attr]
        reps[wiped] = Replication(joined, Counter())
        assert not reps[wiped]._node._catching_up  # type: ignore[union-attr]
    finally:
        for r in reps:
            if r is not None:
                r.stop()


def test_joining_empty_needs_another_member(tmp_path: object) -> None:
    import dataclasses

    from raftstore.journal import JournalError

    cfgs, _ = make_cluster(tmp_path, 1)
    with pytest.raises(JournalError, match="no other member to catch up from"):
        Replication(dataclasses.replace(cfgs[0], join_existing=True), Counter())


def test_journal_refuses_entries_missing_below_the_synced_mark(tmp_path: object) -> None:
    """A journal cut at a record boundary, emptied or deleted loaded silently (only a damaged
    record was checked against the mark): acknowledged writes were lost."""
    from raftstore.journal import JournalError

    path = os.path.join(str(tmp_path), "j")
    j = DurableJournal(path)
    for i in range(1, 11):
        j.add(b"cmd%d" % i, i, 1)
    j._destroy()  # synced up to 10
    with open(path, "rb") as f:
        data = f.read()
    offset = 0
    for _ in range(6):
        offset += 24 + struct.unpack_from("<I", data, offset)[0]
    for cut in (data[:offset], b""):
        with open(path, "wb") as f:
            f.write(cut)
        with pytest.raises(JournalError, match="up to index 10 was on disk"):
            DurableJournal(path)
    os.remove(path)
    with pytest.raises(JournalError, match="the last readable one is none"):
        DurableJournal(path)


def _records_end(data: bytes) -> int:
    offset = 0
    while offset + 24 <= len(data) and struct.unpack_from("<I", data, offset)[0]:
        offset += 24 + struct.unpack_from("<I", data, offset)[0]
    return offset


def test_journal_writes_records_over_zeros_grown_ahead(
    tmp_path: object, caplog: pytest.LogCaptureFixture
) -> None:
    """An fdatasync of a record appended to the file also commits the file's new size and
    blocks; over zeros already written it commits only the data (etcd preallocates its WAL
    for this). The file is grown ahead of its records, and the zeros read back as its end,
    not as a torn tail."""
    import raftstore.journal as journal_module

    path = os.path.join(str(tmp_path), "j")
    grow = journal_module._GROW
    j = DurableJournal(path)
    j.add(b"cmd1", 1, 1)
    j.sync()
    size = os.path.getsize(path)
    assert size >= grow
    for i in range(2, 200):
        j.add(b"cmd%d" % i, i, 1)
        j.sync()
    assert os.path.getsize(path) == size  # written over the zeros, the size unchanged
    with open(path, "rb") as f:
        data = f.read()
    end = _records_end(data)
    assert not data[end:].strip(b"\0") and len(data) - end > grow // 2
    os.close(j._fd)  # a crash: the zeros stay
    with caplog.at_level("WARNING", logger="raftstore.journal"):
        j2 = DurableJournal(path)
    assert [e[1] for e in j2] == list(range(1, 200))
    assert "torn" not in caplog.text and os.path.getsize(path) == size
    # Appends after the restart go on over the zeros; past them the file grows again.
    big = b"v" * (grow // 4)
    for i in range(200, 206):
        j2.add(big, i, 1)
        j2.sync()
    grown = os.path.getsize(path)
    assert grown > size
    j2._destroy()
    j3 = DurableJournal(path)
    assert [e[1] for e in j3] == list(range(1, 206)) and j3[-1][0] == big
    assert os.path.getsize(path) == grown
    j3._destroy()


def test_journal_on_a_disk_too_full_to_grow_appends_as_before(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Growing the file needs 4 MiB more than the records: a disk without them must not stop
    a member whose records still fit."""
    import errno

    import raftstore.journal as journal_module

    real = os.pwrite

    def pwrite(fd: int, data: bytes | memoryview, offset: int) -> int:
        if len(data) > 4096 and not bytes(data).strip(b"\0"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    monkeypatch.setattr(journal_module, "on_fatal", lambda what, exc: pytest.fail(what))
    path = os.path.join(str(tmp_path), "j")
    with caplog.at_level("WARNING", logger="raftstore.journal"):
        j = DurableJournal(path)
        for i in range(1, 21):
            j.add(b"cmd%d" % i, i, 1)
            j.sync()
    assert caplog.text.count("cannot grow") == 1  # said once, not at every sync
    assert os.path.getsize(path) < 4096  # appended, not grown
    j._destroy()
    monkeypatch.setattr(os, "pwrite", real)
    j2 = DurableJournal(path)
    assert [e[1] for e in j2] == list(range(1, 21))
    j2.add(b"cmd21", 21, 1)
    j2.sync()
    assert os.path.getsize(path) > journal_module._GROW  # grown again once there is room
    j2._destroy()


def test_journal_cut_leaves_no_record_in_the_grown_space(tmp_path: object) -> None:
    """A cut of written records (a follower's conflict) shortens the file: left in the space
    grown ahead, the old records past the cut would read back as entries after a restart."""
    path = os.path.join(str(tmp_path), "j")
    j = _synced_journal(path, 10, b"old")
    j.deleteEntriesFrom(5)
    j.sync()
    os.close(j._fd)  # a crash before anything else is appended
    j2 = DurableJournal(path)
    assert [e[1] for e in j2] == [1, 2, 3, 4, 5]
    j2.add(b"new6", 6, 2)
    j2.sync()
    os.close(j2._fd)
    j3 = DurableJournal(path)
    assert [(e[1], e[2]) for e in j3] == [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 2)]
    j3._destroy()


def test_journal_cuts_a_torn_record_in_the_grown_space(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "j")
    j = _synced_journal(path, 5)
    os.close(j._fd)
    with open(path, "r+b") as f:
        end = _records_end(f.read())
        f.seek(end)
        f.write(b"\x10\x00\x00\x00torn")  # half a record, zeros after it
    j2 = DurableJournal(path)
    assert [e[1] for e in j2] == [1, 2, 3, 4, 5] and os.path.getsize(path) == end
    j2.add(b"cmd6", 6, 1)
    j2.sync()
    j2._destroy()
    j3 = DurableJournal(path)
    assert [e[1] for e in j3] == [1, 2, 3, 4, 5, 6]
    j3._destroy()


def test_journal_rewrite_survives_short_writes(tmp_path: object,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """os.write may write less than asked (a nearly full disk); the rewrite took one write
    and lost the rest of the entries."""
    path = os.path.join(str(tmp_path), "j")
    j = DurableJournal(path)
    entries = [(b"x" * 100, i, 1) for i in range(1, 51)]
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, b: real(fd, bytes(b)[:300]))
    j._rewrite(entries)
    monkeypatch.setattr(os, "write", real)
    j._destroy()
    j2 = DurableJournal(path)
    assert [e[1] for e in j2] == list(range(1, 51))
    j2._destroy()


async def test_answered_proposals_leave_no_timer_behind(tmp_path: object) -> None:
    """A proposal's timeout timer goes with its answer: left running, every one kept its
    future and result alive for the whole timeout (seven seconds of every write under load)."""
    cfgs, sms = make_cluster(tmp_path, 1)
    rep = Replication(cfgs[0], sms[0])
    try:
        await wait_leader([rep])
        await asyncio.gather(*(rep.propose(msgpack.packb(i)) for i in range(50)))
        await rep.read_barrier()
        loop = asyncio.get_running_loop()
        pending = [h for h in loop._scheduled  # type: ignore[attr-defined]
                   if not h.cancelled() and "expire" in getattr(h._callback, "__qualname__", "")]
        assert pending == []
    finally:
        rep.stop()


def test_journal_frees_dropped_entries_and_the_replaced_file_off_the_raft_thread(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Entries a snapshot covers, and the file a rewrite replaces, are freed by the journal's
    disposer thread (on a loaded leader, freeing them in the raft thread stalled the whole
    cluster for 10-130 ms): the entries are released and the old descriptor closed, not
    kept."""
    import sys

    import raftstore.journal as journal_module

    path = os.path.join(str(tmp_path), "j")
    j = DurableJournal(path)
    commands = [b"command %d " % i + bytes(100) for i in range(1, 11)]
    for i, c in enumerate(commands, start=1):
        j.add(c, i, 1)
    j.sync()
    def refs(i: int) -> int:  # (outside the asserts: pytest's rewriting holds values)
        return sys.getrefcount(commands[i])

    held = refs(0)
    j.deleteEntriesTo(4)  # entries 1-4 leave the journal's memory
    assert [e[1] for e in j] == [5, 6, 7, 8, 9, 10]
    assert journal_module.disposer.wait()
    freed = refs(0)
    assert freed == held - 1  # the journal no longer holds it

    def deleted_journal_fds() -> list[str]:
        out = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith(path) and target.endswith("(deleted)"):
                out.append(target)
        return out

    monkeypatch.setattr(journal_module, "_DEAD_PREFIX", 1)
    j.deleteEntriesTo(4)  # entries 5-8 dead before 9-10: the file is rewritten
    assert [e[1] for e in j] == [9, 10]
    assert journal_module.disposer.wait()
    assert deleted_journal_fds() == []
    freed = refs(5)
    assert freed == held - 1
    j._destroy()
    assert [e[1] for e in DurableJournal(path)] == [9, 10]


async def test_proposals_queued_while_a_wake_up_is_pending_write_nothing(
        tmp_path: object) -> None:
    """The event loop hands proposals over one loop turn at a time; each turn used to write
    the raft thread's wake-up pipe. While a wake-up is on its way (the raft thread is busy
    and has not read the pipe yet) the next proposals ride on it, and every one of them is
    still answered."""
    cfgs, _ = make_cluster(tmp_path, 1)

    class SlowCounter(Counter):
        def apply(self, command: bytes) -> object:
            time.sleep(0.002)  # keeps the raft thread away from its poll for a while
            return super().apply(command)

    sm = SlowCounter()
    rep = Replication(cfgs[0], sm)
    try:
        await wait_leader([rep])
        writes = 0
        notify = rep._waker.notify

        def counted() -> None:
            nonlocal writes
            writes += 1
            notify()

        rep._waker.notify = counted  # type: ignore[method-assign]
        tasks = []
        for i in range(200):
            tasks.append(asyncio.ensure_future(rep.propose(msgpack.packb(i))))
            await asyncio.sleep(0)  # one proposal per loop turn, as under load
        results = await asyncio.gather(*tasks)
        assert sorted(results) == list(range(1, 201))  # type: ignore[type-var]
        assert sm.items == list(range(200))
        assert writes < 100, writes
    finally:
        rep.stop()


async def test_a_stalled_raft_thread_is_logged(tmp_path: object,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """A raft thread that does not tick for a while sends no heartbeats, which is what makes
    a peer start an election; the gap is logged so that an election can be traced to it."""
    cfgs, sms = make_cluster(tmp_path, 1)
    rep = Replication(cfgs[0], sms[0])
    try:
        await wait_leader([rep])
        with caplog.at_level("WARNING", logger="raftstore.replication"):
            rep._raft_calls.append(lambda: time.sleep(0.6))
            rep._wake()
            await _until(lambda: any("raft thread stalled" in r.getMessage()
                                     for r in caplog.records), timeout=5.0)
        stalls = [r.getMessage() for r in caplog.records if "stalled" in r.getMessage()]
        assert len(stalls) == 1 and "(leader)" in stalls[0], stalls
        assert await rep.propose(msgpack.packb(1)) is not None  # and it goes on
    finally:
        rep.stop()


async def test_a_follower_reads_waiting_heartbeats_before_it_campaigns(tmp_path: object) -> None:
    """A follower's raft thread that got no CPU between its last read and its next tick finds
    its election timeout passed while the leader's heartbeats wait in its socket; it reads them
    and stays a follower, rather than deposing a healthy leader."""
    cfgs, sms = make_cluster(tmp_path, 3, heartbeat=0.05, election_timeout=0.3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        term = leader.term()
        follower = next(r for r in reps if r is not leader)
        poller = follower._node._poller
        read = poller.poll
        stalled = threading.Event()

        def poll_then_stall(timeout: float) -> None:
            read(timeout)
            if not stalled.is_set():
                stalled.set()
                time.sleep(1.0)  # past the longest election timeout (0.6 s); heartbeats arrive

        poller.poll = poll_then_stall
        await _until(stalled.is_set, timeout=5.0)
        await asyncio.sleep(1.5)
        assert [r.term() for r in reps] == [term] * 3
        assert leader.is_leader() and follower.leader_id() == leader.member_id
        assert await follower.propose(msgpack.packb(1)) == 1
    finally:
        for r in reps:
            r.stop()


def test_the_election_timeout_is_randomized_as_etcd_does(tmp_path: object) -> None:
    """etcd campaigns after a random time in [election timeout, 2 x election timeout), and
    sooner the first time after start (its initial election tick advance)."""
    cfgs, sms = make_cluster(tmp_path, 3, election_timeout=4.0)
    rep = Replication(cfgs[0], sms[0])  # alone: connected to nobody, it never campaigns
    try:
        conf = rep._node._SyncObj__conf
        assert (conf.raftMinTimeout, conf.raftMaxTimeout) == (4.0, 8.0)
        first = rep._node._SyncObj__raftElectionDeadline - _pso_monotonic()
        assert 1.0 < first <= 4.0
    finally:
        rep.stop()


async def test_elections_as_etcd_runs_them_lease_pre_vote_and_term_notice(
    tmp_path: object,
) -> None:
    """CheckQuorum's lease, pre-vote and the term notice (Replication: _RaftNode elections).
    White box: the raft threads are stopped; messages are handed to a member's handler and
    what it sends is captured."""
    cfgs, sms = make_cluster(tmp_path, 3)
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        await leader.propose(msgpack.packb(0))
        await _until(lambda: all(r._node.raftLastApplied == leader._node.raftLastApplied
                                 for r in reps))
    finally:
        for r in reps:
            r.stop()
    follower = next(r for r in reps if r is not leader)
    node, lnode = follower._node, leader._node
    peer = next(iter(node._SyncObj__otherNodes))
    sent: list[dict[str, object]] = []
    node._SyncObj__transport.send = lambda n, m: sent.append(m) or True
    lnode._SyncObj__transport.send = lambda n, m: sent.append(m) or True
    term = int(node.raftCurrentTerm)
    up_to_date = {"last_log_index": 10**6, "last_log_term": term}

    # in its lease: a vote request of a higher term is ignored, a pre-vote refused
    node._leader_heard_at = _pso_monotonic()
    assert node.in_lease()
    node._SyncObj__onMessageReceived(peer, {"type": "request_vote", "term": term + 1,
                                            **up_to_date})
    assert int(node.raftCurrentTerm) == term and not sent
    node._SyncObj__onMessageReceived(peer, {"type": "pre_vote", "term": term + 1, **up_to_date})
    assert sent.pop() == {"type": "pre_vote_response", "term": term + 1, "granted": False}
    # ... but a leader's hand-over is voted for
    node._SyncObj__onMessageReceived(peer, {"type": "request_vote", "term": term + 1,
                                            "transfer": True, **up_to_date})
    assert int(node.raftCurrentTerm) == term + 1
    assert sent.pop() == {"type": "response_vote", "term": term + 1}

    # out of its lease: a pre-vote is granted to an up-to-date log only, and changes nothing
    term += 1
    node._leader_heard_at -= 10
    assert not node.in_lease()
    node._SyncObj__onMessageReceived(peer, {"type": "pre_vote", "term": term + 1, **up_to_date})
    assert sent.pop()["granted"] is True and int(node.raftCurrentTerm) == term
    node._SyncObj__onMessageReceived(peer, {"type": "pre_vote", "term": term + 1,
                                            "last_log_index": 0, "last_log_term": 0})
    assert sent.pop()["granted"] is False

    # before campaigning, a pre-vote round; the campaign only once a majority granted it
    node._SyncObj__raftElectionDeadline = 0
    node.before_campaign()
    request = {"type": "pre_vote", "term": term + 1,
               "last_log_index": node._SyncObj__getCurrentLogIndex(), "last_log_term": term - 1}
    assert sent == [request, request]  # to both peers
    sent.clear()
    assert node._SyncObj__raftElectionDeadline > _pso_monotonic()  # waits for answers
    assert node._getLeader() is None  # a pre-candidate forgets its leader
    node._SyncObj__onMessageReceived(peer, {"type": "pre_vote_response", "term": term + 1,
                                            "granted": True})
    assert node._SyncObj__raftElectionDeadline == 0  # won: the next tick campaigns
    node.before_campaign()
    assert not sent and node._pre_vote is None

    # a member that grants a pre-vote gives the one it granted half an election timeout
    aside = node._SyncObj__conf.raftMinTimeout / 2
    node._SyncObj__raftElectionDeadline = 0
    node._SyncObj__onMessageReceived(peer, {"type": "pre_vote", "term": term + 1, **up_to_date})
    assert sent.pop()["granted"] is True
    assert node._SyncObj__raftElectionDeadline > _pso_monotonic() + aside - 0.05

    # two members asking at once for one term: a won round is never given up; otherwise the
    # more up-to-date log goes first, then the greater address; the one that grants drops
    # its own round and stands aside
    own_log = {"last_log_index": node._SyncObj__getCurrentLogIndex(),
               "last_log_term": node._SyncObj__getCurrentLogTerm()}
    me = str(node._SyncObj__selfNode.id)
    above, below = SimpleNamespace(id=me + "0"), SimpleNamespace(id=me[:-1])
    for asker, their_log, expected in ((above, own_log, True), (below, own_log, False),
                                       (below, up_to_date, True)):
        node._SyncObj__raftElectionDeadline = 0
        node.before_campaign()
        sent.clear()
        node._on_election_message(asker, "pre_vote", {"type": "pre_vote", "term": term + 1,
                                                      **their_log})
        assert sent.pop()["granted"] is expected, (asker.id, me, their_log)
        if expected:
            assert node._pre_vote is None
            assert node._SyncObj__raftElectionDeadline > _pso_monotonic() + aside - 0.05
        else:
            assert node._pre_vote is not None and node._pre_vote.term == term + 1
    node._SyncObj__raftElectionDeadline = 0
    node.before_campaign()
    node._SyncObj__onMessageReceived(peer, {"type": "pre_vote_response", "term": term + 1,
                                            "granted": True})
    assert node._pre_vote is not None and node._pre_vote.won
    sent.clear()
    node._SyncObj__onMessageReceived(peer, {"type": "pre_vote", "term": term + 1, **up_to_date})
    assert sent.pop()["granted"] is False  # it campaigns at its next tick
    node._pre_vote = None

    # a leader that hears of a newer term steps down to it
    lterm = int(lnode.raftCurrentTerm)
    assert lnode._isLeader()
    lnode._SyncObj__onMessageReceived(peer, {"type": "term_notice", "term": lterm + 3})
    assert not lnode._isLeader() and int(lnode.raftCurrentTerm) == lterm + 3
    # a member answers an append of an older term with its own
    node._SyncObj__onMessageReceived(peer, {"type": "append_entries", "term": term - 1,
                                            "commit_index": 0})
    assert sent.pop() == {"type": "term_notice", "term": term}
