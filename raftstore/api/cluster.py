"""etcd's Cluster service: MemberList only (membership changes are not served)."""

from __future__ import annotations

import grpc

from raftstore.api.common import Api, unary, unimplemented
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc


class ClusterService(rpc_pb2_grpc.ClusterServicer):
    def __init__(self, api: Api) -> None:
        self.api = api

    def members(self) -> list[pb.Member]:
        """Raft membership, with the name and client URLs each member published (etcd shows
        an unstarted member with an empty name and no client URLs)."""
        published = self.api.state.member_attributes()
        out = []
        for m in self.api.consensus.members():
            name, client_urls = published.get(m.id, (m.name, m.client_urls))
            out.append(
                pb.Member(ID=m.id, name=name, peerURLs=m.peer_urls, clientURLs=client_urls)
            )
        return out

    @unary("Cluster")
    async def MemberList(
        self, request: pb.MemberListRequest, context: grpc.aio.ServicerContext
    ) -> pb.MemberListResponse:
        resp = pb.MemberListResponse(members=self.members())
        self.api.fill(resp.header)  # etcd's cluster server sends no revision
        return resp

    @unary("Cluster")
    async def MemberAdd(
        self, request: pb.MemberAddRequest, context: grpc.aio.ServicerContext
    ) -> pb.MemberAddResponse:
        return await unimplemented(context, "MemberAdd")  # type: ignore[no-any-return]

    @unary("Cluster")
    async def MemberRemove(
        self, request: pb.MemberRemoveRequest, context: grpc.aio.ServicerContext
    ) -> pb.MemberRemoveResponse:
        return await unimplemented(context, "MemberRemove")  # type: ignore[no-any-return]

    @unary("Cluster")
    async def MemberUpdate(
        self, request: pb.MemberUpdateRequest, context: grpc.aio.ServicerContext
    ) -> pb.MemberUpdateResponse:
        return await unimplemented(context, "MemberUpdate")  # type: ignore[no-any-return]

    @unary("Cluster")
    async def MemberPromote(
        self, request: pb.MemberPromoteRequest, context: grpc.aio.ServicerContext
    ) -> pb.MemberPromoteResponse:
        return await unimplemented(context, "MemberPromote")  # type: ignore[no-any-return]
