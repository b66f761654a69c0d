"""etcd's Maintenance service: Status, HashKV, Snapshot, Alarm (GET: never any alarm)."""

from __future__ import annotations

import asyncio
import hashlib
import io
import time
from collections.abc import AsyncIterator
from typing import Final

import grpc

from raftstore.api.common import Api, streaming, unary, unimplemented
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc
from raftstore.consensus import ConsensusError
from raftstore.errors import BAD_LEADER_TRANSFEREE, LEADER_TRANSFER_TIMEOUT, NOT_LEADER, EtcdError

# The etcd API version we speak (clients gate features on it), with semver build metadata
# naming the implementation: the apiserver's storage client trusts raftstore's watch progress
# responses (they are queued after every event they cover, see api/watch.py), which it must
# not do for etcd 3.4 before 3.4.31.
VERSION: Final = "3.4.0+raftstore"
SNAPSHOT_CHUNK: Final = 32 * 1024  # etcd's snapshotSendBufferSize
DB_SIZE_TTL: Final = 10.0  # seconds an approximate db size is reused
MOVE_LEADER_TIMEOUT: Final = 10.0  # at most, without a client deadline


class MaintenanceService(rpc_pb2_grpc.MaintenanceServicer):
    def __init__(self, api: Api) -> None:
        self.api = api
        self._db_size = 0
        self._db_size_at = -DB_SIZE_TTL

    async def db_size(self) -> int:
        """Approximate bytes of state: the size of the last snapshot, refreshed at most every
        DB_SIZE_TTL seconds (serialising is O(state), done off the event loop)."""
        now = time.monotonic()
        if now - self._db_size_at >= DB_SIZE_TTL:
            self._db_size = len(await asyncio.to_thread(self.api.state.snapshot))
            self._db_size_at = now
        return self._db_size

    @unary("Maintenance")
    async def Status(
        self, request: pb.StatusRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        c = self.api.consensus
        size = await self.db_size()
        resp = pb.StatusResponse(
            version=VERSION, dbSize=size, dbSizeInUse=size, leader=c.leader_id(),
            raftIndex=c.commit_index(), raftTerm=c.term(), raftAppliedIndex=c.applied_index(),
            isLearner=False,
        )
        self.api.fill(resp.header, self.api.state.revision)
        return resp

    @unary("Maintenance")
    async def HashKV(
        self, request: pb.HashKVRequest, context: grpc.aio.ServicerContext
    ) -> pb.HashKVResponse:
        rev = request.revision
        h, compact_rev, cur = self.api.state.read(lambda s: s.hash_kv(rev))
        resp = pb.HashKVResponse(hash=h & 0xFFFFFFFF, compact_revision=compact_rev)
        self.api.fill(resp.header, cur)
        return resp

    @streaming("Maintenance")
    async def Snapshot(
        self, request: pb.SnapshotRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.SnapshotResponse]:
        """The state machine snapshot in 32 KiB chunks (remaining_bytes counts what follows),
        then its sha256 in a last message with remaining_bytes 0, as etcd streams its db."""
        state = self.api.state
        with state.lock:  # a cheap copy-on-write capture; serialised off the event loop
            write = state.snapshot_writer()
            rev = state.store.rev
        buf = io.BytesIO()
        await asyncio.to_thread(write, buf)
        data = buf.getvalue()
        total = len(data)
        sent = 0
        first = True
        while sent < total:
            chunk = data[sent: sent + SNAPSHOT_CHUNK]
            sent += len(chunk)
            resp = pb.SnapshotResponse(remaining_bytes=total - sent, blob=chunk)
            if first:
                self.api.fill(resp.header, rev)
                first = False
            yield resp
        resp = pb.SnapshotResponse(remaining_bytes=0, blob=hashlib.sha256(data).digest())
        if first:
            self.api.fill(resp.header, rev)
        yield resp

    @unary("Maintenance")
    async def Alarm(
        self, request: pb.AlarmRequest, context: grpc.aio.ServicerContext
    ) -> pb.AlarmResponse:
        if request.action != pb.AlarmRequest.GET:
            return await unimplemented(context, "Alarm")  # type: ignore[no-any-return]
        resp = pb.AlarmResponse()
        self.api.fill(resp.header, self.api.state.revision)
        return resp

    @unary("Maintenance")
    async def Defragment(
        self, request: pb.DefragmentRequest, context: grpc.aio.ServicerContext
    ) -> pb.DefragmentResponse:
        """Succeeds with nothing to do: the store is in memory, and its journal is rewritten
        whole at each snapshot, so no file keeps the space of compacted revisions as etcd's
        bbolt file does. Operators' routine ``etcdctl defrag`` runs (and the scripts around
        them) work unchanged."""
        resp = pb.DefragmentResponse()
        self.api.fill(resp.header, self.api.state.revision)
        return resp

    @unary("Maintenance")
    async def Hash(
        self, request: pb.HashRequest, context: grpc.aio.ServicerContext
    ) -> pb.HashResponse:
        return await unimplemented(context, "Hash")  # type: ignore[no-any-return]

    @unary("Maintenance")
    async def MoveLeader(
        self, request: pb.MoveLeaderRequest, context: grpc.aio.ServicerContext
    ) -> pb.MoveLeaderResponse:
        """etcd's: only the leader moves leadership, to a member, and answers once the
        target leads (``etcdctl move-leader`` finds the leader among its endpoints)."""
        c = self.api.consensus
        if not c.is_leader():
            raise EtcdError(NOT_LEADER)
        if request.targetID not in {m.id for m in c.members()}:
            raise EtcdError(BAD_LEADER_TRANSFEREE)
        remaining = context.time_remaining()
        timeout = remaining if remaining is not None else MOVE_LEADER_TIMEOUT
        try:
            await c.move_leader(request.targetID, timeout=min(timeout, MOVE_LEADER_TIMEOUT))
        except ConsensusError:
            raise EtcdError(LEADER_TRANSFER_TIMEOUT) from None
        resp = pb.MoveLeaderResponse()
        self.api.fill(resp.header, self.api.state.revision)
        return resp
