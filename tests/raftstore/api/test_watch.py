"""Watch streams through generated stubs against the real grpc.aio server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest

from raftstore.api import watch as watch_mod
from raftstore.api.pb import kv_pb2, rpc_pb2_grpc
from raftstore.api.pb import rpc_pb2 as pb
from tests.raftstore.api.conftest import Server

W = pb.WatchCreateRequest
PUT, DELETE = kv_pb2.Event.PUT, kv_pb2.Event.DELETE


class Stream:
    """One Watch RPC: send requests, receive responses with a timeout. A background task
    reads the call (cancelling a pending grpc read would cancel the whole RPC)."""

    def __init__(self, server: Server) -> None:
        self.requests: asyncio.Queue[pb.WatchRequest | None] = asyncio.Queue()
        self.responses: asyncio.Queue[pb.WatchResponse] = asyncio.Queue()

        async def gen() -> AsyncIterator[pb.WatchRequest]:
            while (req := await self.requests.get()) is not None:
                yield req

        self.call = server.watch.Watch(gen())

        async def pump() -> None:
            async for resp in self.call:
                await self.responses.put(resp)

        self.reader = asyncio.create_task(pump())

    async def create(self, **kw: object) -> pb.WatchResponse:
        await self.requests.put(pb.WatchRequest(create_request=W(**kw)))  # type: ignore[arg-type]
        return await self.recv()

    async def send(self, req: pb.WatchRequest) -> None:
        await self.requests.put(req)

    async def recv(self, wait: float = 5.0) -> pb.WatchResponse:
        return await asyncio.wait_for(self.responses.get(), wait)

    async def nothing(self, wait: float = 0.3) -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(self.responses.get(), wait)

    def close(self) -> None:
        self.call.cancel()
        self.reader.cancel()


async def put(s: Server, key: bytes, value: bytes) -> int:
    return (await s.kv.Put(pb.PutRequest(key=key, value=value))).header.revision


async def test_create_events_and_ids(server: Server) -> None:
    st = Stream(server)
    try:
        created = await st.create(key=b"w/", range_end=b"w0")
        assert created.created and created.watch_id == 0 and created.header.revision == 1
        second = await st.create(key=b"w/a", prev_kv=True)
        assert second.created and second.watch_id == 1
        await put(server, b"w/a", b"1")
        await put(server, b"w/a", b"2")
        got = [await st.recv() for _ in range(4)]
        by_watch: dict[int, list[pb.WatchResponse]] = {0: [], 1: []}
        for r in got:
            by_watch[r.watch_id].append(r)
        assert [r.events[0].kv.value for r in by_watch[0]] == [b"1", b"2"]
        assert not by_watch[0][1].events[0].HasField("prev_kv")  # not asked for
        assert by_watch[1][1].events[0].prev_kv.value == b"1"
        assert [r.header.revision for r in by_watch[1]] == [2, 3]
        # A txn's events arrive in one response, at one revision.
        await server.kv.Txn(pb.TxnRequest(success=[
            pb.RequestOp(request_put=pb.PutRequest(key=b"w/b", value=b"b")),
            pb.RequestOp(request_put=pb.PutRequest(key=b"w/c", value=b"c")),
        ]))
        r = await st.recv()
        assert r.watch_id == 0 and [e.kv.key for e in r.events] == [b"w/b", b"w/c"]
        assert {e.kv.mod_revision for e in r.events} == {4}
        # Client-chosen id; a duplicate is refused as etcd does.
        mine = await st.create(key=b"x", watch_id=7)
        assert mine.watch_id == 7 and mine.created
        dup = await st.create(key=b"x", watch_id=7)
        assert dup.watch_id == -1 and dup.canceled and dup.cancel_reason
        # Cancel.
        await st.send(pb.WatchRequest(cancel_request=pb.WatchCancelRequest(watch_id=0)))
        c = await st.recv()
        assert c.canceled and c.watch_id == 0
        await put(server, b"w/a", b"again")
        r = await st.recv()
        assert r.watch_id == 1  # watch 0 is gone
        await st.nothing()
    finally:
        st.close()


async def test_history_filters_and_deletes(server: Server) -> None:
    await put(server, b"h", b"1")  # 2
    await put(server, b"h", b"2")  # 3
    await server.kv.DeleteRange(pb.DeleteRangeRequest(key=b"h"))  # 4
    st = Stream(server)
    try:
        created = await st.create(key=b"h", start_revision=2, prev_kv=True)
        assert created.created and created.header.revision == 4
        await put(server, b"other", b"x")  # 5
        hist = await st.recv()
        assert [(e.type, e.kv.mod_revision) for e in hist.events] == [
            (PUT, 2), (PUT, 3), (DELETE, 4)]
        # As etcd's syncWatchers: history carries the store's revision it caught up to
        # (5), not its last event's (4).
        s2 = Stream(server)
        assert (await s2.create(key=b"h", start_revision=2)).header.revision == 5
        assert (await s2.recv()).header.revision == 5
        s2.close()
        assert hist.events[2].prev_kv.value == b"2"
        assert hist.events[2].kv.value == b"" and hist.events[2].kv.version == 0
        noput = await st.create(key=b"h", start_revision=2, filters=[W.NOPUT])
        r = await st.recv()
        assert r.watch_id == noput.watch_id and [e.type for e in r.events] == [DELETE]
        nodel = await st.create(key=b"h", filters=[W.NODELETE])
        await put(server, b"h", b"3")
        await server.kv.DeleteRange(pb.DeleteRangeRequest(key=b"h"))
        got = [await st.recv() for _ in range(4)]
        assert sorted((r.watch_id, r.events[0].type) for r in got) == sorted(
            [(created.watch_id, PUT), (created.watch_id, DELETE), (nodel.watch_id, PUT),
             (noput.watch_id, DELETE)])
        await st.nothing()
    finally:
        st.close()


async def test_compacted_and_future(server: Server) -> None:
    for i in range(5):
        await put(server, b"c", b"%d" % i)  # 2..6
    await server.kv.Compact(pb.CompactionRequest(revision=5))
    st = Stream(server)
    try:
        created = await st.create(key=b"c", start_revision=2)
        assert created.created and not created.canceled
        gone = await st.recv()
        assert gone.watch_id == created.watch_id and gone.canceled
        assert gone.compact_revision == 5
        future = await st.create(key=b"c", start_revision=8)
        assert future.created
        await put(server, b"c", b"7")  # 7: before the start
        await st.nothing()
        await put(server, b"c", b"8")
        r = await st.recv()
        assert r.events[0].kv.mod_revision == 8
    finally:
        st.close()


async def test_progress(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_mod, "PROGRESS_INTERVAL", 0.2)
    await put(server, b"p", b"1")
    st = Stream(server)
    try:
        w = await st.create(key=b"p", progress_notify=True)
        r = await st.recv(2.0)
        assert r.watch_id == w.watch_id and not r.events and r.header.revision == 2
        await put(server, b"other", b"x")
        await st.send(pb.WatchRequest(progress_request=pb.WatchProgressRequest()))
        while True:
            r = await st.recv(2.0)
            if r.watch_id == -1:
                break
        assert r.header.revision == 3 and not r.events
    finally:
        st.close()


class SlowClient:
    """A Watch RPC whose responses are read only when the test reads them, so gRPC's flow
    control stops the server's sends and responses pile up on its side. Its channel takes
    messages of any size, as clientv3's does (history comes in batches of 1,000 revisions)."""

    def __init__(self, server: Server) -> None:
        self.requests: asyncio.Queue[pb.WatchRequest] = asyncio.Queue()

        async def gen() -> AsyncIterator[pb.WatchRequest]:
            while True:
                yield await self.requests.get()

        self.channel = grpc.aio.insecure_channel(
            f"127.0.0.1:{server.port}", options=[("grpc.max_receive_message_length", -1)])
        self.call = rpc_pb2_grpc.WatchStub(self.channel).Watch(gen())

    async def close(self) -> None:
        self.call.cancel()
        await self.channel.close()

    async def send(self, req: pb.WatchRequest) -> None:
        await self.requests.put(req)

    async def read(self, wait: float = 10.0) -> pb.WatchResponse:
        return await asyncio.wait_for(self.call.read(), wait)


def count_catch_ups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record each watch that falls behind and catches up (its resume revision)."""
    seen: list[int] = []
    original = watch_mod._Stream._catch_up

    def spy(self: watch_mod._Stream, w: watch_mod._Watch) -> None:
        seen.append(w.resume_rev)
        original(self, w)

    monkeypatch.setattr(watch_mod._Stream, "_catch_up", spy)
    return seen


BIG = b"v" * 64 * 1024  # 200 of these: far more than flow control lets through unread


async def test_slow_consumer_falls_behind_and_catches_up_from_history(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch whose client reads slowly stops queueing at MAX_PENDING responses and, once
    the client has taken them, catches up from history: every event arrives, in order, and
    the watch stays open (as etcd's victim watchers). A progress request made while it is
    behind is answered only after every event up to the revision it reports."""
    monkeypatch.setattr(watch_mod, "MAX_PENDING", 4)
    catch_ups = count_catch_ups(monkeypatch)
    client = SlowClient(server)
    try:
        await client.send(pb.WatchRequest(create_request=W(key=b"s/", range_end=b"s0")))
        w = await client.read()
        assert w.created
        for i in range(200):
            await put(server, b"s/%03d" % i, BIG)
        await client.send(pb.WatchRequest(progress_request=pb.WatchProgressRequest()))
        await asyncio.sleep(0.2)
        last = await put(server, b"s/after", b"x")
        revs: list[int] = []
        progress: list[tuple[int, int]] = []  # (its revision, events received before it)
        while not revs or revs[-1] < last or not progress:
            r = await client.read()
            assert not r.canceled, r.cancel_reason
            if r.watch_id == -1:
                progress.append((r.header.revision, len(revs)))
                continue
            assert r.watch_id == w.watch_id
            revs.extend(e.kv.mod_revision for e in r.events)
        assert revs == list(range(2, last + 1))  # no gap, no duplicate
        assert catch_ups, "the watch never fell behind: the test no longer tests that"
        assert len(progress) == 1
        rev, before = progress[0]
        assert rev >= 201 and revs[:before] == list(range(2, rev + 1))
    finally:
        await client.close()


async def test_a_watch_behind_meets_compaction_as_etcd(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """History compacted while a watch is behind ends it with the compacted response, after
    the events it had queued (clientv3 then reports ErrCompacted)."""
    monkeypatch.setattr(watch_mod, "MAX_PENDING", 4)
    catch_ups = count_catch_ups(monkeypatch)
    client = SlowClient(server)
    try:
        await client.send(pb.WatchRequest(create_request=W(key=b"c/", range_end=b"c0")))
        assert (await client.read()).created
        for i in range(200):
            rev = await put(server, b"c/%03d" % i, BIG)
        await server.kv.Compact(pb.CompactionRequest(revision=rev))
        revs: list[int] = []
        while True:
            r = await client.read()
            if r.compact_revision:
                break
            revs.extend(e.kv.mod_revision for e in r.events)
        assert r.canceled and r.compact_revision == rev
        assert catch_ups and revs == list(range(2, 2 + len(revs))) and len(revs) < 200
    finally:
        await client.close()


async def test_many_streams_and_writer_not_blocked(server: Server) -> None:
    streams = [Stream(server) for _ in range(5)]
    try:
        for st in streams:
            await st.create(key=b"m")
        for i in range(20):
            await put(server, b"m", b"%d" % i)
        for st in streams:
            vals = [(await st.recv()).events[0].kv.value for _ in range(20)]
            assert vals == [b"%d" % i for i in range(20)]
    finally:
        for st in streams:
            st.close()


async def test_empty_range_is_refused_as_etcd(server: Server) -> None:
    """etcd 3.4: ``watch_id -1, created, canceled, cancel_reason "mvcc: watcher range is
    empty"``, with the current revision; no id is used up (checked against a real etcd)."""
    rev = await put(server, b"w2", b"x")
    st = Stream(server)
    try:
        for end in (b"w1", b"w3"):
            r = await st.create(key=b"w3", range_end=end)
            assert (r.watch_id, r.created, r.canceled, r.cancel_reason, r.header.revision) == (
                -1, True, True, "mvcc: watcher range is empty", rev)
        ok = await st.create(key=b"w3")
        assert (ok.watch_id, ok.created, ok.canceled) == (0, True, False)
        from_key = await st.create(key=b"", range_end=b"\0")
        assert (from_key.watch_id, from_key.canceled) == (1, False)
        await st.nothing()
    finally:
        st.close()


async def test_negative_start_revision_is_compacted_as_etcd(server: Server) -> None:
    """etcd 3.4: a negative start revision below the compact revision (-1 before any
    compaction) is created, then canceled with that compact revision and a header without a
    revision. -1 on a never-compacted store watches from now."""
    st = Stream(server)
    try:
        created = await st.create(key=b"n", start_revision=-5)
        assert created.created and not created.canceled
        gone = await st.recv()
        assert (gone.watch_id, gone.canceled, gone.compact_revision, gone.header.revision) == (
            created.watch_id, True, -1, 0)
        now = await st.create(key=b"n", start_revision=-1)
        assert now.created and not now.canceled
        await st.nothing()
        rev = await put(server, b"n", b"1")
        r = await st.recv()
        assert r.watch_id == now.watch_id and r.events[0].kv.mod_revision == rev
        await server.kv.Compact(pb.CompactionRequest(revision=rev))
        created = await st.create(key=b"n", start_revision=-5)
        gone = await st.recv()
        assert (gone.watch_id, gone.canceled, gone.compact_revision, gone.header.revision) == (
            created.watch_id, True, rev, 0)
    finally:
        st.close()


async def test_fragments_at_etcd_limit(server: Server) -> None:
    """etcd splits a fragmented watch response at MaxRequestBytes + 512 KiB of gRPC overhead
    (2 MiB): three 1,000,000-byte values come as 2 events then 1 (as a real etcd 3.4 sends
    them)."""
    first = 0
    for i in range(3):
        rev = await put(server, b"frag%d" % i, b"f" * 1_000_000)
        first = first or rev
    st = Stream(server)
    try:
        await st.create(key=b"frag", range_end=b"frah", start_revision=first, fragment=True)
        a = await st.recv()
        b = await st.recv()
        assert [(len(r.events), r.fragment) for r in (a, b)] == [(2, True), (1, False)]
    finally:
        st.close()


def test_fragment_sizes_are_etcds() -> None:
    """The summed sizes split exactly where etcd's sendFragments (which encodes the growing
    part after every event) splits."""
    import random

    from raftstore.api.pb import kv_pb2 as kv

    def etcd_split(resp: pb.WatchResponse) -> list[int]:
        counts, idx = [], 0
        while idx < len(resp.events):
            cur = pb.WatchResponse(header=resp.header, watch_id=resp.watch_id, fragment=True)
            for ev in resp.events[idx:]:
                cur.events.append(ev)
                if len(cur.events) > 1 and cur.ByteSize() >= watch_mod.FRAGMENT_BYTES:
                    del cur.events[-1]
                    break
                idx += 1
            counts.append(len(cur.events))
        return counts

    rnd = random.Random(7)
    for _ in range(20):
        resp = pb.WatchResponse(watch_id=rnd.randrange(1 << 40))
        resp.header.revision = rnd.randrange(1 << 30)
        for i in range(rnd.randrange(2, 12)):
            size = rnd.choice([10, 200, 16_000, 400_000, 700_000, 1_100_000])
            resp.events.append(kv.Event(kv=kv.KeyValue(key=b"k%d" % i, value=b"v" * size,
                                                       mod_revision=i + 2)))
        parts = watch_mod._fragments(resp)
        assert [len(p.events) for p in parts] == etcd_split(resp)
        assert [p.fragment for p in parts] == [True] * (len(parts) - 1) + [False]
