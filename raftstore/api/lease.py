"""etcd's Lease service. Grants, revocations and keep-alives are replicated commands, so every
member knows every lease and resets its deadline on keep-alive; only the leader revokes
expired leases (``raftstore.api.server.run_lease_expiry``)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import grpc

from raftstore.api.common import Api, streaming, unary
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc
from raftstore.applier import encode_lease_grant, encode_lease_keepalive, encode_lease_revoke
from raftstore.errors import LEASE_NOT_FOUND, LEASE_TTL_TOO_LARGE, EtcdError
from raftstore.mvcc.lease import MAX_LEASE_TTL
from raftstore.mvcc.types import LeaseNotFoundError


def new_lease_id() -> int:
    """A random positive int63, as etcd's lessor picks when the client sends ID 0."""
    while True:
        lid = secrets.randbits(63)
        if lid:
            return lid


class LeaseService(rpc_pb2_grpc.LeaseServicer):
    def __init__(self, api: Api) -> None:
        self.api = api

    @unary("Lease")
    async def LeaseGrant(
        self, request: pb.LeaseGrantRequest, context: grpc.aio.ServicerContext
    ) -> pb.LeaseGrantResponse:
        if request.TTL > MAX_LEASE_TTL:
            raise EtcdError(LEASE_TTL_TOO_LARGE)
        req = pb.LeaseGrantRequest(TTL=request.TTL, ID=request.ID or new_lease_id())
        resp: pb.LeaseGrantResponse = await self.api.propose(encode_lease_grant(req))
        self.api.fill(resp.header)
        return resp

    @unary("Lease")
    async def LeaseRevoke(
        self, request: pb.LeaseRevokeRequest, context: grpc.aio.ServicerContext
    ) -> pb.LeaseRevokeResponse:
        resp: pb.LeaseRevokeResponse = await self.api.propose(encode_lease_revoke(request))
        self.api.fill(resp.header)
        return resp

    @streaming("Lease")
    async def LeaseKeepAlive(
        self,
        request_iterator: AsyncIterator[pb.LeaseKeepAliveRequest],
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[pb.LeaseKeepAliveResponse]:
        async for req in request_iterator:
            try:
                resp: pb.LeaseKeepAliveResponse = await self.api.propose(
                    encode_lease_keepalive(pb.LeaseKeepAliveRequest(ID=req.ID))
                )
            except EtcdError as err:
                if err.spec != LEASE_NOT_FOUND:
                    raise
                # etcd: an unknown lease answers TTL 0 (the client reports it expired).
                resp = pb.LeaseKeepAliveResponse(ID=req.ID, TTL=0)
                resp.header.revision = self.api.state.revision
            self.api.fill(resp.header)
            yield resp

    @unary("Lease")
    async def LeaseTimeToLive(
        self, request: pb.LeaseTimeToLiveRequest, context: grpc.aio.ServicerContext
    ) -> pb.LeaseTimeToLiveResponse:
        await self.api.read_barrier()
        state = self.api.state
        with state.lock:
            rev = state.store.rev
            try:
                granted, remaining, keys = state.store.lessor.time_to_live(
                    request.ID, state.now()
                )
            except LeaseNotFoundError:
                # etcd: an unknown lease is not an error here, it has TTL -1.
                resp = pb.LeaseTimeToLiveResponse(ID=request.ID, TTL=-1)
            else:
                resp = pb.LeaseTimeToLiveResponse(
                    ID=request.ID, TTL=remaining, grantedTTL=granted,
                    keys=keys if request.keys else [],
                )
        self.api.fill(resp.header, rev)
        return resp

    @unary("Lease")
    async def LeaseLeases(
        self, request: pb.LeaseLeasesRequest, context: grpc.aio.ServicerContext
    ) -> pb.LeaseLeasesResponse:
        await self.api.read_barrier()
        ids, rev = self.api.state.read(lambda s: (s.lessor.leases(), s.rev))
        resp = pb.LeaseLeasesResponse(leases=[pb.LeaseStatus(ID=i) for i in ids])
        self.api.fill(resp.header, rev)
        return resp
