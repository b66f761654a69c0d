"""Lease, Maintenance and Cluster through generated stubs against the real server."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator

import grpc
import pytest

from raftstore import metrics
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.applier import encode_publish
from tests.raftstore.api.conftest import Server


async def test_lease_lifecycle(server: Server) -> None:
    g = await server.lease.LeaseGrant(pb.LeaseGrantRequest(TTL=60))
    assert 0 < g.ID < 2**63 and g.TTL == 60 and g.header.member_id
    await server.kv.Put(pb.PutRequest(key=b"l/a", value=b"1", lease=g.ID))
    await server.kv.Put(pb.PutRequest(key=b"l/b", value=b"2", lease=g.ID))
    ttl = await server.lease.LeaseTimeToLive(pb.LeaseTimeToLiveRequest(ID=g.ID, keys=True))
    assert ttl.grantedTTL == 60 and 58 <= ttl.TTL <= 60 and list(ttl.keys) == [b"l/a", b"l/b"]
    leases = await server.lease.LeaseLeases(pb.LeaseLeasesRequest())
    assert [s.ID for s in leases.leases] == [g.ID]

    async def pings() -> AsyncIterator[pb.LeaseKeepAliveRequest]:
        for lid in (g.ID, 424242):
            yield pb.LeaseKeepAliveRequest(ID=lid)

    got = [r async for r in server.lease.LeaseKeepAlive(pings())]
    assert [(r.ID, r.TTL) for r in got] == [(g.ID, 60), (424242, 0)]

    rev = await server.lease.LeaseRevoke(pb.LeaseRevokeRequest(ID=g.ID))
    assert rev.header.revision == 4  # puts at 2 and 3, then one delete txn for both keys
    gone = await server.kv.Range(pb.RangeRequest(key=b"l/", range_end=b"l0"))
    assert not gone.kvs
    missing = await server.lease.LeaseTimeToLive(pb.LeaseTimeToLiveRequest(ID=g.ID))
    assert missing.TTL == -1
    with pytest.raises(grpc.aio.AioRpcError) as ei:
        await server.lease.LeaseRevoke(pb.LeaseRevokeRequest(ID=g.ID))
    assert ei.value.code() == grpc.StatusCode.NOT_FOUND
    assert ei.value.details() == "etcdserver: requested lease not found"


async def test_lease_grant_errors_and_ids(server: Server) -> None:
    g = await server.lease.LeaseGrant(pb.LeaseGrantRequest(TTL=1, ID=77))
    assert (g.ID, g.TTL) == (77, 2)  # raised to the minimum TTL
    with pytest.raises(grpc.aio.AioRpcError) as ei:
        await server.lease.LeaseGrant(pb.LeaseGrantRequest(TTL=10, ID=77))
    assert (ei.value.code(), ei.value.details()) == (
        grpc.StatusCode.FAILED_PRECONDITION, "etcdserver: lease already exists")
    with pytest.raises(grpc.aio.AioRpcError) as ei:
        await server.lease.LeaseGrant(pb.LeaseGrantRequest(TTL=9_000_000_001))
    assert (ei.value.code(), ei.value.details()) == (
        grpc.StatusCode.OUT_OF_RANGE, "etcdserver: too large lease TTL")


async def test_lease_expires(server: Server) -> None:
    g = await server.lease.LeaseGrant(pb.LeaseGrantRequest(TTL=2))
    await server.kv.Put(pb.PutRequest(key=b"eph", value=b"1", lease=g.ID))
    for _ in range(60):
        await asyncio.sleep(0.1)
        if not (await server.kv.Range(pb.RangeRequest(key=b"eph"))).kvs:
            break
    else:
        pytest.fail("the expired lease was not revoked")
    assert (await server.lease.LeaseTimeToLive(pb.LeaseTimeToLiveRequest(ID=g.ID))).TTL == -1


async def test_status_hash_snapshot(server: Server) -> None:
    await server.kv.Put(pb.PutRequest(key=b"k", value=b"v" * 100_000))
    st = await server.maintenance.Status(pb.StatusRequest())
    assert st.version == "3.4.0+raftstore" and st.dbSize > 100_000 and st.leader == st.header.member_id
    assert st.raftIndex >= 1 and st.raftAppliedIndex == st.raftIndex and st.raftTerm == 1
    assert not st.isLearner and st.header.revision == 2
    h1 = await server.maintenance.HashKV(pb.HashKVRequest())
    h2 = await server.maintenance.HashKV(pb.HashKVRequest(revision=2))
    assert h1.hash == h2.hash and h1.header.revision == 2
    chunks = [r async for r in server.maintenance.Snapshot(pb.SnapshotRequest())]
    blob = b"".join(c.blob for c in chunks[:-1])
    assert chunks[-1].remaining_bytes == 0 and chunks[-1].blob == hashlib.sha256(blob).digest()
    assert chunks[0].remaining_bytes == len(blob) - len(chunks[0].blob)
    assert chunks[0].header.revision == 2
    assert blob == server.state.snapshot()


async def test_member_list_and_unimplemented(server: Server) -> None:
    m = (await server.cluster.MemberList(pb.MemberListRequest())).members
    assert [(x.ID, x.name) for x in m] == [(server.consensus.member_id, "default")]
    await server.consensus.propose(
        encode_publish(server.consensus.member_id, "node-1", ["http://127.0.0.1:2379"]))
    m = (await server.cluster.MemberList(pb.MemberListRequest())).members
    assert (m[0].name, list(m[0].clientURLs)) == ("node-1", ["http://127.0.0.1:2379"])
    for call in (server.maintenance.Hash(pb.HashRequest()),
                 server.cluster.MemberAdd(pb.MemberAddRequest(peerURLs=["http://x:1"]))):
        with pytest.raises(grpc.aio.AioRpcError) as ei:
            await call
        assert ei.value.code() == grpc.StatusCode.UNIMPLEMENTED
    alarms = await server.maintenance.Alarm(pb.AlarmRequest())
    assert not alarms.alarms


async def test_metrics_count_rpcs(server: Server) -> None:
    def handled(code: str) -> float:
        v = metrics.REGISTRY.get_sample_value(
            "grpc_server_handled_total",
            {"grpc_service": "etcdserverpb.KV", "grpc_method": "Range", "grpc_code": code})
        return v or 0.0

    ok, bad = handled("OK"), handled("INVALID_ARGUMENT")
    await server.kv.Range(pb.RangeRequest(key=b"a"))
    with pytest.raises(grpc.aio.AioRpcError):
        await server.kv.Range(pb.RangeRequest())
    assert handled("OK") == ok + 1 and handled("INVALID_ARGUMENT") == bad + 1
    labels = {"grpc_service": "etcdserverpb.Maintenance", "grpc_method": "Hash",
              "grpc_code": "UNIMPLEMENTED"}
    before = metrics.REGISTRY.get_sample_value("grpc_server_handled_total", labels) or 0.0
    with pytest.raises(grpc.aio.AioRpcError):
        await server.maintenance.Hash(pb.HashRequest())
    assert metrics.REGISTRY.get_sample_value("grpc_server_handled_total", labels) == before + 1
