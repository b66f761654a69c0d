"""The etcd3 store beyond the conformance suite: endpoint failover, unreachable stores, TLS,
progress bookmarks, the compactor, open_storage, metrics."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from raftstore.api.pb import rpc_pb2 as pb
from raftstore.launcher import REPO_ROOT, Cluster, free_ports
from storage.compactor import COMPACT_REV_KEY, compact_once
from storage.embedded import open_embedded
from storage.errors import Code, StorageError
from storage.etcd3.common import resource_label
from storage.etcd3.grpcclient import GrpcKVClient, parse_endpoint, progress_safe
from storage.etcd3.kvclient import KVError
from storage.etcd3.store import Etcd3Store
from storage.factory import StorageConfig, open_storage
from storage.interface import GetOptions, ListOptions, Object
from storage.metrics import ETCD_REQUEST_DURATION


def cm(name: str) -> Object:
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


def _urls(cluster: Cluster) -> list[str]:
    return [f"http://{e}" for e in cluster.endpoints]


def test_resource_label_and_endpoints() -> None:
    assert resource_label("/registry/configmaps/ns/a") == "configmaps"
    assert resource_label("/registry/apps/statefulsets/ns/a") == "statefulsets.apps"
    assert resource_label("/registry/coordination.plat.io/leases/ns/a") == \
        "leases.coordination.plat.io"
    assert parse_endpoint("https://10.0.0.1:2379") == ("10.0.0.1:2379", True)
    assert parse_endpoint("http://h:1/") == ("h:1", False)
    assert parse_endpoint("h:2") == ("h:2", False)
    assert not progress_safe("3.4.23") and not progress_safe("3.5.12")
    assert not progress_safe("3.4.0") and not progress_safe("garbage")
    assert progress_safe("3.4.0+raftstore") and not progress_safe("3.4.0+other")
    assert progress_safe("3.4.31") and progress_safe("3.5.13") and progress_safe("3.6.0")


@pytest.mark.etcd
async def test_old_etcd_refuses_progress_requests(etcd_cluster: Cluster) -> None:
    store = Etcd3Store(GrpcKVClient(_urls(etcd_cluster)), bookmark_interval=0.1)
    try:
        assert not await store.client.progress_supported()  # Debian's etcd is 3.4.23
        a = await store.create("/registry/configmaps/oldetcd/a", cm("a"))
        w = await store.watch("/registry/configmaps/oldetcd", ListOptions(
            resource_version=a["metadata"]["resourceVersion"], allow_watch_bookmarks=True))
        with pytest.raises(StorageError):
            await w.request_progress()  # type: ignore[attr-defined]
        b = await store.create("/registry/configmaps/oldetcd/b", cm("b"))
        ev = await asyncio.wait_for(w.__aiter__().__anext__(), 10)
        assert ev.type == "ADDED" and ev.object == b
        w.stop()
    finally:
        await store.close()


async def test_failover_to_next_endpoint(raftstore_cluster: Cluster) -> None:
    (dead,) = free_ports(1)
    store = Etcd3Store(GrpcKVClient([f"http://127.0.0.1:{dead}", *_urls(raftstore_cluster)]))
    try:
        created = await store.create("/registry/configmaps/failover/a", cm("a"))
        got = await store.get("/registry/configmaps/failover/a", GetOptions())
        assert got == created
        w = await store.watch("/registry/configmaps/failover",
                              ListOptions(resource_version=created["metadata"]["resourceVersion"]))
        await store.delete("/registry/configmaps/failover/a")
        ev = await asyncio.wait_for(w.__aiter__().__anext__(), 10)
        assert ev.type == "DELETED"
        w.stop()
    finally:
        await store.close()


async def test_prefers_the_leaders_endpoint(raftstore_cluster: Cluster) -> None:
    """Listed first, a follower answers the first calls; once the client has asked the
    members who leads, reads, writes and watches go to the leader's endpoint."""
    leader = await asyncio.to_thread(raftstore_cluster.leader)
    urls = _urls(raftstore_cluster)
    follower_first = [urls[(leader + 1) % 3], urls[leader], urls[(leader + 2) % 3]]
    client = GrpcKVClient(follower_first)
    store = Etcd3Store(client)
    try:
        first = await client.range(pb.RangeRequest(key=b"/registry/none"))
        leader_id = int(raftstore_cluster.status(leader)["header"]["member_id"])  # type: ignore[index]
        assert int(first.header.member_id) != leader_id
        for _ in range(100):
            resp = await client.range(pb.RangeRequest(key=b"/registry/none"))
            if int(resp.header.member_id) == leader_id:
                break
            await asyncio.sleep(0.05)
        assert int(resp.header.member_id) == leader_id
        created = await store.create("/registry/configmaps/leader/a", cm("a"))
        txn = await client.txn(pb.TxnRequest(
            success=[pb.RequestOp(request_range=pb.RangeRequest(key=b"/registry/none"))]))
        assert int(txn.header.member_id) == leader_id
        w = await store.watch("/registry/configmaps/leader",
                              ListOptions(resource_version=created["metadata"]["resourceVersion"]))
        assert w._kvw.endpoint == raftstore_cluster.endpoints[leader]  # type: ignore[attr-defined]
        w.stop()
    finally:
        await store.close()


@pytest.mark.slow
async def test_follows_a_new_leader(cluster_factory: object) -> None:
    """The leader dies: the client fails over, and once the survivors have elected a leader
    its calls go to the new leader's endpoint."""
    cluster = cluster_factory("raftstore", nodes=3)  # type: ignore[operator]
    client = GrpcKVClient(_urls(cluster))
    store = Etcd3Store(client)

    async def answered_by(member_id: int) -> bool:
        for _ in range(200):
            try:
                resp = await client.range(pb.RangeRequest(key=b"/registry/none"))
            except KVError:
                resp = None
            if resp is not None and int(resp.header.member_id) == member_id:
                return True
            await asyncio.sleep(0.05)
        return False

    def member_id(i: int) -> int:
        return int(cluster.status(i)["header"]["member_id"])  # type: ignore[index]

    try:
        old = await asyncio.to_thread(cluster.leader)
        assert await answered_by(await asyncio.to_thread(member_id, old))
        await asyncio.to_thread(cluster.kill, old)
        new = await asyncio.to_thread(cluster.leader, 30.0)
        assert new != old
        assert await answered_by(await asyncio.to_thread(member_id, new))
        await store.create("/registry/configmaps/newleader/a", cm("a"))
    finally:
        await store.close()


async def test_unreachable_store() -> None:
    ports = free_ports(2)
    store = Etcd3Store(GrpcKVClient([f"127.0.0.1:{p}" for p in ports]))
    try:
        with pytest.raises(StorageError) as e:
            await store.get("/registry/configmaps/x/y", GetOptions())
        assert e.value.code is Code.UNREACHABLE
        with pytest.raises(StorageError) as e:
            await store.create("/registry/configmaps/x/y", cm("y"))
        assert e.value.code is Code.UNREACHABLE
    finally:
        await store.close()


async def test_tls(tmp_path: Path) -> None:
    from tests.raftstore.test_security import self_signed

    cert, key = self_signed(tmp_path)
    client, peer = free_ports(2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "raftstore", "--name", "tls", "--data-dir", str(tmp_path / "d"),
         "--listen-client-urls", f"https://127.0.0.1:{client}",
         "--listen-peer-urls", f"http://127.0.0.1:{peer}",
         "--cert-file", str(cert), "--key-file", str(key), "--unsafe-no-fsync"],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    store = Etcd3Store(GrpcKVClient([f"https://127.0.0.1:{client}"], cafile=str(cert)))
    try:
        for _ in range(100):  # the member takes a moment to start
            try:
                await store.current_revision()
                break
            except StorageError:
                await asyncio.sleep(0.2)
        created = await store.create("/registry/configmaps/tls/a", cm("a"))
        assert await store.get("/registry/configmaps/tls/a", GetOptions()) == created
    finally:
        await store.close()
        proc.terminate()
        proc.wait(timeout=15)


@pytest.fixture(params=["embedded", "raftstore"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Etcd3Store]:
    if request.param == "embedded":
        s = await open_embedded(str(tmp_path / "d"))
        s.bookmark_interval = 0.2
    else:
        cluster = request.getfixturevalue("raftstore_cluster")
        s = Etcd3Store(GrpcKVClient(_urls(cluster), trust_progress=True),
                       bookmark_interval=0.2)
    yield s
    await s.close()


async def test_progress_bookmarks(store: Etcd3Store) -> None:
    a = await store.create("/registry/configmaps/bm/a", cm("a"))
    w = await store.watch("/registry/configmaps/bm", ListOptions(
        resource_version=a["metadata"]["resourceVersion"], allow_watch_bookmarks=True))
    it = w.__aiter__()
    b = await store.create("/registry/configmaps/bm/b", cm("b"))
    ev = await asyncio.wait_for(it.__anext__(), 10)
    assert ev.type == "ADDED"
    # Idle: the watch asks for progress and turns it into a BOOKMARK at least as new as b.
    ev = await asyncio.wait_for(it.__anext__(), 10)
    assert ev.type == "BOOKMARK"
    assert int(ev.object["metadata"]["resourceVersion"]) >= int(b["metadata"]["resourceVersion"])
    w.stop()


async def test_compactor_agreement(store: Etcd3Store) -> None:
    client = store.client
    resp = await client.range(__import__("raftstore.api.pb.rpc_pb2", fromlist=["x"])
                              .RangeRequest(key=COMPACT_REV_KEY))
    t0 = int(resp.kvs[0].version) if resp.kvs else 0
    # Two apiservers tick at once: exactly one wins, the other learns the clock.
    (t1, rev1), (t2, rev2) = await asyncio.gather(
        compact_once(client, t0, 0), compact_once(client, t0, 0)
    )
    assert sorted([t1, t2]) == [t0 + 1, t0 + 1]
    await store.create("/registry/configmaps/cmp/a", cm("a"))
    t, _ = await compact_once(client, t0 + 1, max(rev1, rev2))
    assert t == t0 + 2
    assert await store.compacted_revision() >= max(rev1, rev2)
    # A compactor behind the clock does not compact; it catches up.
    t_late, _ = await compact_once(client, t0, 1)
    assert t_late == t0 + 2


async def test_open_storage(tmp_path: Path, raftstore_cluster: Cluster) -> None:
    with pytest.raises(ValueError):
        await open_storage(StorageConfig(backend="embedded"))
    with pytest.raises(ValueError):
        await open_storage(StorageConfig(backend="etcd3"))
    emb = await open_storage(StorageConfig(backend="embedded", data_dir=str(tmp_path / "e"),
                                           compaction_interval=0.05))
    try:
        for i in range(3):
            await emb.create(f"/registry/configmaps/f/{i}", cm(str(i)))
        for _ in range(200):  # the compactor runs on its own; wait for its second tick
            if await emb.compacted_revision() > 0:
                break
            await asyncio.sleep(0.05)
        assert await emb.compacted_revision() > 0
    finally:
        await emb.close()
    remote = await open_storage(StorageConfig(backend="etcd3",
                                              etcd_servers=tuple(_urls(raftstore_cluster)),
                                              compaction_interval=0))
    try:
        assert await remote.current_revision() > 0
    finally:
        await remote.close()


async def test_request_metrics(tmp_path: Path) -> None:
    s = await open_embedded(str(tmp_path / "m"))
    try:
        before = ETCD_REQUEST_DURATION.labels("create", "widgets.example.io")._sum.get()
        await s.create("/registry/example.io/widgets/ns/a", cm("a"))
        await s.get_list("/registry/example.io/widgets", ListOptions())
        samples = {
            (m.labels.get("operation"), m.labels.get("type"))
            for metric in ETCD_REQUEST_DURATION.collect() for m in metric.samples
        }
        assert ("create", "widgets.example.io") in samples
        assert ("list", "widgets.example.io") in samples
        assert ETCD_REQUEST_DURATION.labels("create", "widgets.example.io")._sum.get() >= before
    finally:
        await s.close()


@pytest.mark.slow
async def test_member_killed_under_a_watch(cluster_factory: object) -> None:
    """The member serving a watch dies: the watch ends without an ERROR (nothing skipped),
    writes move to another member, and a re-watch from the last revision sees every change."""
    cluster = cluster_factory("raftstore", nodes=3)  # type: ignore[operator]
    store = Etcd3Store(GrpcKVClient(_urls(cluster)))
    try:
        a = await store.create("/registry/configmaps/kill/a", cm("a"))
        w = await store.watch("/registry/configmaps/kill",
                              ListOptions(resource_version=a["metadata"]["resourceVersion"]))
        it = w.__aiter__()
        b = await store.create("/registry/configmaps/kill/b", cm("b"))
        ev = await asyncio.wait_for(it.__anext__(), 10)
        assert ev.object == b
        served_by = w._kvw.endpoint  # type: ignore[attr-defined]
        await asyncio.to_thread(cluster.kill, cluster.endpoints.index(served_by))
        with pytest.raises(StopAsyncIteration):
            while True:  # ends; never an ERROR
                ev = await asyncio.wait_for(it.__anext__(), 30)
                assert ev.type != "ERROR"
        c = None
        for _ in range(100):  # the survivors may need an election first
            try:
                c = await store.create("/registry/configmaps/kill/c", cm("c"))
                break
            except StorageError as err:
                assert err.code is Code.UNREACHABLE
                await asyncio.sleep(0.2)
        assert c is not None
        w2 = await store.watch("/registry/configmaps/kill",
                               ListOptions(resource_version=b["metadata"]["resourceVersion"]))
        ev = await asyncio.wait_for(w2.__aiter__().__anext__(), 10)
        assert ev.object == c
        w2.stop()
    finally:
        await store.close()


def test_etcds_context_deadline_is_unavailable_not_internal() -> None:
    """etcd 3.4 without quorum answers a write after 7 s with UNKNOWN "context deadline
    exceeded"; that became an InternalError (500) where every other outage is a 503."""
    from storage.etcd3.common import storage_error
    from storage.etcd3.grpcclient import to_kv_error
    from storage.etcd3.kvclient import UNAVAILABLE

    exc = grpc.aio.AioRpcError(grpc.StatusCode.UNKNOWN, grpc.aio.Metadata(),
                               grpc.aio.Metadata(), details="context deadline exceeded")
    err = to_kv_error(exc)
    assert err.kind == UNAVAILABLE
    assert storage_error(err).code is Code.UNREACHABLE
    other = to_kv_error(grpc.aio.AioRpcError(grpc.StatusCode.UNKNOWN, grpc.aio.Metadata(),
                                             grpc.aio.Metadata(), details="something else"))
    assert other.kind != UNAVAILABLE
