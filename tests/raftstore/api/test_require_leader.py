"""Requests that require a leader (``hasleader`` metadata, raftstore/api/requireleader.py),
on a real grpc.aio server whose consensus can be told it has no leader: refused at once
when there is none, and open streams ended after three checks without one, as etcd's
monitorLeader does. (e2e/test_api_failover.py has the same through a network partition.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc
from raftstore.api.requireleader import MAX_NO_LEADER_CHECKS, LeaderMonitor
from raftstore.api.server import bound_ports, start_grpc_server
from raftstore.applier import EtcdStateMachine
from raftstore.local import LocalConsensus
from raftstore.mvcc.kvstore import KVStore

HAS_LEADER = (("hasleader", "true"),)
CHECK = 0.05  # seconds between the monitor's checks here


class Leaderless(LocalConsensus):
    """LocalConsensus that can be told it knows no leader (it still commits)."""

    lost = False

    def leader_id(self) -> int:
        return 0 if self.lost else super().leader_id()


@dataclass
class Member:
    consensus: Leaderless
    kv: rpc_pb2_grpc.KVStub
    watch: rpc_pb2_grpc.WatchStub
    lease: rpc_pb2_grpc.LeaseStub


@pytest.fixture
async def member() -> AsyncIterator[Member]:
    state = EtcdStateMachine(KVStore())
    consensus = Leaderless(state, client_urls=["http://127.0.0.1:0"])
    leaders = LeaderMonitor(consensus, CHECK)
    srv = await start_grpc_server(state=state, consensus=consensus, listen=["127.0.0.1:0"],
                                  leaders=leaders)
    monitor = asyncio.create_task(leaders.run())
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{bound_ports(srv)[0]}")
    try:
        yield Member(consensus, rpc_pb2_grpc.KVStub(channel), rpc_pb2_grpc.WatchStub(channel),
                     rpc_pb2_grpc.LeaseStub(channel))
    finally:
        monitor.cancel()
        await channel.close()
        await srv.stop(0)


def _watch_create(key: bytes) -> pb.WatchRequest:
    return pb.WatchRequest(create_request=pb.WatchCreateRequest(key=key))


async def _requests(*first: object) -> AsyncIterator[object]:
    for r in first:
        yield r
    await asyncio.sleep(3600)  # the client keeps its side open


async def test_unary_calls_with_hasleader_are_refused_without_a_leader(member: Member) -> None:
    put = pb.PutRequest(key=b"k", value=b"v")
    await member.kv.Put(put, metadata=HAS_LEADER)
    member.consensus.lost = True
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await member.kv.Put(put, metadata=HAS_LEADER)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert err.value.details() == "etcdserver: no leader"
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await member.kv.Range(pb.RangeRequest(key=b"k"), metadata=HAS_LEADER)
    assert err.value.details() == "etcdserver: no leader"
    # without the metadata the call is served as before (this consensus still commits)
    await member.kv.Put(put)
    await member.kv.Put(put, metadata=(("hasleader", "false"),))


async def test_a_new_stream_with_hasleader_is_refused_without_a_leader(member: Member) -> None:
    member.consensus.lost = True
    call = member.watch.Watch(_requests(_watch_create(b"k")), metadata=HAS_LEADER)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call.read()
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert err.value.details() == "etcdserver: no leader"
    # without it the watch is created
    plain = member.watch.Watch(_requests(_watch_create(b"k")))
    assert (await plain.read()).created
    plain.cancel()


async def test_open_streams_that_require_a_leader_end_after_three_checks_without_one(
    member: Member,
) -> None:
    required = member.watch.Watch(_requests(_watch_create(b"k")), metadata=HAS_LEADER)
    plain = member.watch.Watch(_requests(_watch_create(b"k")))
    keepalive = member.lease.LeaseKeepAlive(_requests(), metadata=HAS_LEADER)
    assert (await required.read()).created and (await plain.read()).created

    # a leader back before the third check: nothing ends
    member.consensus.lost = True
    await asyncio.sleep(CHECK * (MAX_NO_LEADER_CHECKS - 1.5))
    member.consensus.lost = False
    await asyncio.sleep(CHECK * (MAX_NO_LEADER_CHECKS + 2))
    await member.kv.Put(pb.PutRequest(key=b"k", value=b"1"))
    assert (await required.read()).events[0].kv.value == b"1"
    assert (await plain.read()).events[0].kv.value == b"1"

    member.consensus.lost = True
    started = asyncio.get_running_loop().time()
    for call in (required, keepalive):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await asyncio.wait_for(call.read(), 5)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert err.value.details() == "etcdserver: no leader"
    assert asyncio.get_running_loop().time() - started >= CHECK * (MAX_NO_LEADER_CHECKS - 1)
    # the watch that did not ask for a leader goes on
    await member.kv.Put(pb.PutRequest(key=b"k", value=b"2"))
    assert (await asyncio.wait_for(plain.read(), 5)).events[0].kv.value == b"2"
    plain.cancel()
