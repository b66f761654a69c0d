"""Delta snapshots on real pysyncobj members (in one process, over loopback) with the etcd
state machine: members append what changed since their last frame to the snapshot file,
restart from the chain, send it to a follower that fell behind, cut off a frame torn by a
crash only while the journal still holds what it would have covered, start a new file after
a compaction, and drop a delta captured before a snapshot was installed."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest
from pysyncobj.config import SERIALIZER_STATE

from raftstore import journal as journal_mod
from raftstore import snapshot_file
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.applier import EtcdStateMachine, encode_compact, encode_lease_grant, encode_put
from raftstore.journal import DurableJournal
from raftstore.mvcc.kvstore import KVStore
from raftstore.replication import Replication, ReplicationConfig

from .test_replication import _until, make_cluster, wait_leader


def frames(path: str) -> list[snapshot_file.Frame]:
    with open(path, "rb") as f:
        return snapshot_file.parse(f.read()).frames


def snap_path(cfg: ReplicationConfig) -> str:
    return os.path.join(cfg.data_dir, "snapshot.msgpack")


async def put_many(rep: Replication, start: int, n: int) -> None:
    for i in range(start, start + n):
        await rep.propose(encode_put(pb.PutRequest(key=b"k%d" % (i % 50), value=b"v%d" % i)))


async def preload(rep: Replication) -> None:
    """Large values first, so that the first (full) frame is far larger than the deltas that
    follow it (a chain is replaced by a full frame once it is as large)."""
    for i in range(15):
        await rep.propose(encode_put(pb.PutRequest(key=b"big%d" % i, value=b"x" * 20_000)))


def state_of(sm: EtcdStateMachine) -> bytes:
    return sm.snapshot()


async def restarted(cfg: ReplicationConfig) -> tuple[Replication, EtcdStateMachine]:
    sm = EtcdStateMachine(KVStore())
    rep = Replication(cfg, sm)
    await wait_leader([rep])
    await rep.read_barrier()
    return rep, sm


async def member_with_deltas(tmp_path: object, n_frames: int = 3) -> tuple[
        ReplicationConfig, bytes]:
    """A single member whose snapshot file holds ``n_frames`` or more frames, stopped; its
    state when it stopped."""
    cfgs, _ = make_cluster(tmp_path, 1, snapshot_count=20)
    sm = EtcdStateMachine(KVStore())
    rep = Replication(cfgs[0], sm)
    try:
        await wait_leader([rep])
        await preload(rep)
        i = 0
        while not (os.path.exists(snap_path(cfgs[0]))
                   and len(frames(snap_path(cfgs[0]))) >= n_frames):
            await put_many(rep, i, 10)
            i += 10
            assert i < 3000
        await put_many(rep, i, 7)  # entries after the last frame, in the journal only
        await _until(lambda: rep._snapshot_status == 0)
        want = state_of(sm)
    finally:
        rep.stop()
    return cfgs[0], want


async def test_a_member_appends_deltas_and_restarts_from_the_chain(tmp_path: object) -> None:
    cfg, want = await member_with_deltas(tmp_path)
    chain = frames(snap_path(cfg))
    assert len(chain) >= 3
    # Each delta is small: 20-odd puts of short values.
    assert all(len(f.body) < len(chain[0].body) for f in chain[1:])
    rep, sm = await restarted(cfg)
    try:
        assert state_of(sm) == want
        await put_many(rep, 10_000, 60)  # and appends more frames to the chain it loaded
        await _until(lambda: len(frames(snap_path(cfg))) > len(chain))
        await _until(lambda: rep._snapshot_status == 0)
        want = state_of(sm)
    finally:
        rep.stop()
    rep, sm = await restarted(cfg)
    try:
        assert state_of(sm) == want
    finally:
        rep.stop()


async def test_a_torn_last_frame_is_cut_off_when_the_journal_reaches_back(
    tmp_path: object,
) -> None:
    """A crash while a delta was appended leaves part of a frame at the end of the file. The
    journal was not cut for it, so the member restarts from the frames before it and replays
    the journal; the torn bytes are cut off, and later frames follow readable ones."""
    cfg, want = await member_with_deltas(tmp_path)
    path = snap_path(cfg)
    with open(path, "rb") as f:
        good = f.read()
    last = frames(path)[-1]
    with open(path, "ab") as f:
        f.write(snapshot_file.encode_frame(b"\x81\xa1x\x01", last.body)[:-20])
    rep, sm = await restarted(cfg)
    try:
        assert state_of(sm) == want
        with open(path, "rb") as f:  # cut off (and perhaps followed by a new frame since)
            now = f.read()
        assert now.startswith(good) and not snapshot_file.parse(now).torn
        n = len(frames(path))
        await put_many(rep, 10_000, 60)
        await _until(lambda: len(frames(path)) > n)
        await _until(lambda: rep._snapshot_status == 0)
        want = state_of(sm)
    finally:
        rep.stop()
    rep, sm = await restarted(cfg)
    try:
        assert state_of(sm) == want
    finally:
        rep.stop()


async def test_a_lost_frame_whose_entries_the_journal_still_holds_is_rebuilt(
    tmp_path: object,
) -> None:
    """The last frame is unreadable (cut short here), but the journal file still holds the
    entries it covered (a dead prefix stays on disk until it is large): the member loads the
    frames before it, replays those entries, and has every write."""
    cfg, want = await member_with_deltas(tmp_path)
    path = snap_path(cfg)
    chain = frames(path)
    with open(path, "r+b") as f:
        f.truncate(chain[-1].end - 3)
    rep, sm = await restarted(cfg)
    try:
        assert state_of(sm) == want
        assert [f.end for f in frames(path)[: len(chain) - 1]] == [f.end for f in chain[:-1]]
        assert not snapshot_file.parse(open(path, "rb").read()).torn  # noqa: SIM115
    finally:
        rep.stop()


async def test_a_lost_frame_the_journal_no_longer_covers_stops_the_member(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last frame is unreadable (cut short here) and the journal no longer holds the
    entries it covered (cut for it, and its dead prefix rewritten away): the frames before it
    are not enough, and going on would serve a state missing entries this member
    acknowledged. The member stops instead."""
    cfg, _ = await member_with_deltas(tmp_path)
    path = snap_path(cfg)
    chain = frames(path)
    prev = int(chain[-1].head["entries"][1][1])
    journal = DurableJournal(os.path.join(cfg.data_dir, "raft.journal"))
    journal._rewrite(list(journal)[prev - int(journal[0][1]):])
    journal._destroy()
    assert int(DurableJournal(os.path.join(cfg.data_dir, "raft.journal"))[0][1]) == prev
    with open(path, "r+b") as f:
        f.truncate(chain[-1].end - 3)
    stops: list[str] = []
    monkeypatch.setattr(journal_mod, "on_fatal", lambda what, exc: stops.append(what))
    rep = Replication(cfg, EtcdStateMachine(KVStore()))
    try:
        await _until(lambda: bool(stops), timeout=5)
        assert "journal does not hold" in stops[0], stops
    finally:
        rep.stop()


async def test_a_compaction_starts_a_new_file(tmp_path: object) -> None:
    cfgs, _ = make_cluster(tmp_path, 1, snapshot_count=20)
    sm = EtcdStateMachine(KVStore())
    rep = Replication(cfgs[0], sm)
    path = snap_path(cfgs[0])
    try:
        await wait_leader([rep])
        await preload(rep)
        i = 0
        while not (os.path.exists(path) and len(frames(path)) >= 2):
            await put_many(rep, i, 10)
            i += 10
        rev = sm.read(lambda s: s.rev)
        await rep.propose(encode_compact(pb.CompactionRequest(revision=rev)))
        ino = os.stat(path).st_ino
        await put_many(rep, i, 60)
        await _until(lambda: os.stat(path).st_ino != ino)
        await _until(lambda: rep._snapshot_status == 0)
        chain = frames(path)
        assert len(chain) <= 3  # a new full frame, and what followed it since
        want = state_of(sm)
    finally:
        rep.stop()
    rep, sm = await restarted(cfgs[0])
    try:
        assert state_of(sm) == want
        assert sm.read(lambda s: s.compact_rev) == rev
    finally:
        rep.stop()


async def test_a_follower_behind_the_log_receives_the_chain(tmp_path: object) -> None:
    """A follower stopped while the others wrote full and delta frames and cut their logs
    catches up from the leader's file, chain and all."""
    cfgs, _ = make_cluster(tmp_path, 3, snapshot_count=20)
    sms = [EtcdStateMachine(KVStore()) for _ in cfgs]
    reps = [Replication(c, s) for c, s in zip(cfgs, sms, strict=True)]
    try:
        leader = await wait_leader(reps)
        li = reps.index(leader)
        fi = (li + 1) % 3
        await preload(leader)
        reps[fi].stop()
        i = 10
        while len(frames(snap_path(cfgs[li])) if os.path.exists(snap_path(cfgs[li]))
                  else []) < 3:
            await put_many(leader, i, 10)
            i += 10
            assert i < 3000
        await _until(lambda: reps[li]._snapshot_status == 0)
        sms[fi] = EtcdStateMachine(KVStore())
        reps[fi] = Replication(cfgs[fi], sms[fi])
        await put_many(leader, i, 5)
        await leader.read_barrier()
        want = sms[li].read(lambda s: s.hash_kv(0))
        await _until(lambda: sms[fi].read(lambda s: s.hash_kv(0)) == want, timeout=20)
        assert len(frames(snap_path(cfgs[fi]))) >= 3
    finally:
        for r in reps:
            r.stop()


class GatedMachine(EtcdStateMachine):
    """Its delta writes wait, once ``armed``, until ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__(KVStore())
        self.armed = False
        self.gate = threading.Event()
        self.writing = threading.Event()

    def capture(self, mark: object = None) -> tuple[Any, bool, object]:
        write, delta, new_mark = super().capture(mark)
        if not (self.armed and delta):
            return write, delta, new_mark

        def gated(f: Any) -> None:
            self.writing.set()
            self.gate.wait(10)
            write(f)

        return gated, delta, new_mark


async def test_a_delta_captured_before_an_install_is_dropped(tmp_path: object) -> None:
    """A member loads a snapshot (as one received from the leader) while a delta of its
    earlier state is being written: the delta is not appended, neither to the file now in
    place nor as bookkeeping, and the next snapshot follows the loaded file."""
    cfg, _ = await member_with_deltas(tmp_path)
    path = snap_path(cfg)
    sm = GatedMachine()
    rep = Replication(cfg, sm)
    try:
        await wait_leader([rep])
        loaded = open(path, "rb").read()  # noqa: SIM115
        append = rep._append_snapshot_frame
        outcome: list[tuple[int, bytes]] = []

        def watched(*args: Any) -> None:
            append(*args)
            if not outcome:  # the held delta's; later snapshots are legitimate
                outcome.append((rep._snapshot_status, open(path, "rb").read()))  # noqa: SIM115

        rep._append_snapshot_frame = watched  # type: ignore[method-assign]
        sm.armed = True
        i = 20_000
        while not sm.writing.is_set():
            await put_many(rep, i, 10)
            i += 10
            assert i < 23_000
        rep._read_snapshot(path)
        sm.gate.set()
        await _until(lambda: bool(outcome))
        assert outcome[0] == (SERIALIZER_STATE.FAILED, loaded)
    finally:
        sm.gate.set()
        rep.stop()


async def test_deltas_that_repeat_much_are_replaced_by_a_full_frame(tmp_path: object) -> None:
    """Each delta repeats the whole lease table. Once what the deltas repeat reaches half the
    full frame, the next snapshot rewrites the file whole, compaction or not; a restart
    counts what the deltas on disk repeat from their heads."""
    cfgs, _ = make_cluster(tmp_path, 1, snapshot_count=20)
    sm = EtcdStateMachine(KVStore())
    rep = Replication(cfgs[0], sm)
    path = snap_path(cfgs[0])
    try:
        await wait_leader([rep])
        await rep.propose(encode_lease_grant(pb.LeaseGrantRequest(ID=7, TTL=3600)))
        for i in range(40):
            await rep.propose(encode_put(pb.PutRequest(key=b"leased%03d" % i, lease=7)))
        await _until(lambda: os.path.exists(path))
        await _until(lambda: rep._snapshot_status == 0)
        inodes = {os.stat(path).st_ino}
        most = 0
        i = 0
        while len(inodes) < 3:  # full frames written again, without a compaction
            await put_many(rep, i, 10)
            i += 10
            inodes.add(os.stat(path).st_ino)
            most = max(most, len(frames(path)))
            assert i < 3000, (inodes, most)
        assert 2 <= most < 20
        while len(frames(path)) < 2:  # a delta after the last full frame, for the restart
            await put_many(rep, i, 10)
            i += 10
            assert i < 4000
        await _until(lambda: rep._snapshot_status == 0)
        held = rep._frame
        assert held is not None and held.repeated_bytes > 0
    finally:
        rep.stop()
    on_disk = frames(path)
    repeated = sum(f.head["repeated"] for f in on_disk[1:])
    assert repeated >= held.repeated_bytes > 0
    rep, sm = await restarted(cfgs[0])
    try:
        assert rep._frame is not None
        assert (rep._frame.frames, rep._frame.repeated_bytes) == (len(on_disk), repeated)
    finally:
        rep.stop()
