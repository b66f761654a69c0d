"""A real grpc.aio server over LocalConsensus + EtcdStateMachine + KVStore on 127.0.0.1:0."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from raftstore.api.pb import rpc_pb2_grpc
from raftstore.api.server import bound_ports, run_lease_expiry, start_grpc_server
from raftstore.applier import EtcdStateMachine
from raftstore.local import LocalConsensus
from raftstore.mvcc.kvstore import KVStore

ETCDCTL = shutil.which("etcdctl") or "/usr/bin/etcdctl"


@dataclass
class Server:
    port: int
    state: EtcdStateMachine
    consensus: LocalConsensus
    channel: grpc.aio.Channel
    kv: rpc_pb2_grpc.KVStub
    watch: rpc_pb2_grpc.WatchStub
    lease: rpc_pb2_grpc.LeaseStub
    cluster: rpc_pb2_grpc.ClusterStub
    maintenance: rpc_pb2_grpc.MaintenanceStub

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def etcdctl(self, *args: str, stdin: bytes | None = None,
                      check: bool = True) -> tuple[int, str, str]:
        """Run the real etcdctl without blocking the loop the server runs on."""
        proc = await asyncio.create_subprocess_exec(
            ETCDCTL, f"--endpoints={self.endpoint}", "--command-timeout=5s", *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env={**os.environ, "ETCDCTL_API": "3"},
        )
        out, err = await asyncio.wait_for(proc.communicate(stdin), 20)
        rc = proc.returncode or 0
        if check and rc != 0:
            raise AssertionError(f"etcdctl {args} failed ({rc}): {err.decode()}")
        return rc, out.decode(), err.decode()


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    state = EtcdStateMachine(KVStore())
    consensus = LocalConsensus(state, client_urls=["http://127.0.0.1:0"])
    srv = await start_grpc_server(state=state, consensus=consensus, listen=["127.0.0.1:0"])
    port = bound_ports(srv)[0]
    expiry = asyncio.create_task(run_lease_expiry(state, consensus, interval=0.1))
    channel = grpc.aio.insecure_channel(
        f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", 8 * 1024 * 1024)]
    )
    try:
        yield Server(
            port=port, state=state, consensus=consensus, channel=channel,
            kv=rpc_pb2_grpc.KVStub(channel), watch=rpc_pb2_grpc.WatchStub(channel),
            lease=rpc_pb2_grpc.LeaseStub(channel), cluster=rpc_pb2_grpc.ClusterStub(channel),
            maintenance=rpc_pb2_grpc.MaintenanceStub(channel),
        )
    finally:
        expiry.cancel()
        await channel.close()
        await srv.stop(0)


def needs_etcdctl() -> None:
    if not os.path.exists(ETCDCTL):
        pytest.skip("etcdctl is not installed")
