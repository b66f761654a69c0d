"""The etcd3 client's watch streams are read on a loop of their own (storage/etcd3/
watchstream.py): they keep up while the consumer's event loop is busy, still push back on a
slow consumer, and end, with the loop's thread, when the watch or the client closes."""

from __future__ import annotations

import threading
import time
import uuid

import grpc
import pytest

from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc
from raftstore.launcher import Cluster
from storage.etcd3 import watchstream
from storage.etcd3.grpcclient import GrpcKVClient
from storage.etcd3.kvclient import KVError
from storage.etcd3.watchstream import GrpcWatch

# A guard against hangs only: the conditions below are met in well under a second.
DEADLINE = 60.0


def _urls(cluster: Cluster) -> list[str]:
    return [f"http://{e}" for e in cluster.endpoints]


def _put_many(endpoint: str, prefix: bytes, n: int) -> None:
    """``n`` puts, one after another (one revision and, on etcd, one watch response each),
    through a client of its own in this thread."""
    with grpc.insecure_channel(endpoint) as ch:
        kv = rpc_pb2_grpc.KVStub(ch)  # type: ignore[no-untyped-call]
        for i in range(n):
            kv.Put(pb.PutRequest(key=prefix + b"%04d" % i, value=b"v"), timeout=10)


def _queued_events(w: GrpcWatch) -> int:
    return sum(len(r.events) for r in list(w._inbox) if isinstance(r, pb.WatchResponse))


async def _watch(client: GrpcKVClient, prefix: bytes) -> GrpcWatch:
    return await client.watch(pb.WatchCreateRequest(key=prefix, range_end=prefix[:-1] + b"0"))


async def _collect(w: GrpcWatch, n: int) -> list[bytes]:
    keys: list[bytes] = []
    async for resp in w:
        keys.extend(ev.kv.key for ev in resp.events)
        if len(keys) >= n:
            break
    return keys


@pytest.mark.etcd
async def test_watch_is_read_while_the_loop_is_busy(etcd_cluster: Cluster) -> None:
    """etcd sends one response per revision. While the event loop is held (a long turn, as
    under request load), the thread goes on reading them; the consumer then finds them all
    at once, in order. Read on the consumer's loop itself, none would be read meanwhile."""
    client = GrpcKVClient(_urls(etcd_cluster))
    prefix = f"/busy-{uuid.uuid4().hex}/".encode()
    try:
        w = await _watch(client, prefix)
        writer = threading.Thread(target=_put_many, args=(etcd_cluster.endpoints[0], prefix, 200))
        writer.start()
        # Hold the loop (no await) until every event has been read into the inbox.
        deadline = time.monotonic() + DEADLINE
        while _queued_events(w) < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        read_while_held = _queued_events(w)
        writer.join()
        assert read_while_held == 200
        assert await _collect(w, 200) == [prefix + b"%04d" % i for i in range(200)]
        w.close()
    finally:
        await client.close()


async def test_a_slow_consumer_stops_the_reader(raftstore_cluster: Cluster,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """At most MAX_QUEUED responses wait for the consumer; the rest stay with gRPC (whose
    window then pushes back on the store), and nothing is lost."""
    monkeypatch.setattr(watchstream, "MAX_QUEUED", 3)
    client = GrpcKVClient(_urls(raftstore_cluster))
    prefix = f"/slow-{uuid.uuid4().hex}/".encode()
    try:
        w = await _watch(client, prefix)
        for i in range(40):  # one at a time, so that they arrive as separate responses
            await client.txn(pb.TxnRequest(success=[pb.RequestOp(
                request_put=pb.PutRequest(key=prefix + b"%04d" % i, value=b"v"))]))
        deadline = time.monotonic() + DEADLINE
        while len(w._inbox) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # give the thread the chance to overrun, were it able to
        assert len(w._inbox) == 3
        assert await _collect(w, 40) == [prefix + b"%04d" % i for i in range(40)]
        w.close()
    finally:
        await client.close()


async def test_closing_ends_the_watch_loop(raftstore_cluster: Cluster,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A closed watch ends at once, a paused one too; closing the client closes the streams
    left open and ends the watch loop's thread."""
    monkeypatch.setattr(watchstream, "MAX_QUEUED", 1)
    client = GrpcKVClient(_urls(raftstore_cluster))
    prefix = f"/close-{uuid.uuid4().hex}/".encode()
    try:
        idle = await _watch(client, prefix + b"idle/")
        full = await _watch(client, prefix)  # its reader pauses: no room in the inbox
        for i in range(5):
            await client.txn(pb.TxnRequest(success=[pb.RequestOp(
                request_put=pb.PutRequest(key=prefix + b"%d" % i, value=b"v"))]))
        deadline = time.monotonic() + DEADLINE
        while not full._inbox and time.monotonic() < deadline:
            time.sleep(0.01)
        full.close()
        assert [r async for r in full] == []  # closed: ends at once
        assert client._watch_loop is not None
        thread = client._watch_loop.thread
    finally:
        await client.close()  # closes the channel under the idle watch
    assert [r async for r in idle] == []
    await idle.request_progress()  # nothing to ask any more: returns, no error
    thread.join(timeout=DEADLINE)
    assert not thread.is_alive()
    with pytest.raises(KVError):
        await _watch(client, prefix)


class _PollerCompletionQueue:
    """Stands in for grpc's: only its name shows in the handle's repr."""

    def _handle_events(self) -> None:
        raise RuntimeError("Event loop is closed")


def test_completions_for_a_closed_watch_loop_are_dropped_quietly(
        caplog: pytest.LogCaptureFixture) -> None:
    import asyncio
    import functools

    loop = asyncio.new_event_loop()
    try:
        watchstream._ignore_completions_for_closed_loops(loop)
        watchstream._ignore_completions_for_closed_loops(loop)  # installed once
        late = loop.call_soon(functools.partial(_PollerCompletionQueue()._handle_events))
        other = RuntimeError("something else")
        with caplog.at_level("ERROR", logger="asyncio"):
            loop.call_exception_handler({"message": "Exception in callback",
                                         "exception": RuntimeError("Event loop is closed"),
                                         "handle": late})
            assert not caplog.records
            loop.call_exception_handler({"message": "Exception in callback",
                                         "exception": other, "handle": late})
            loop.call_exception_handler({"message": "a closed loop elsewhere",
                                         "exception": RuntimeError("Event loop is closed")})
        assert [r.exc_info[1] if r.exc_info else None for r in caplog.records][0] is other
        assert len(caplog.records) == 2
        late.cancel()
    finally:
        loop.close()
