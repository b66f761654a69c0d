"""etcd's KV service: Range, Put, DeleteRange, Txn, Compact."""

from __future__ import annotations

import grpc

from raftstore.api.common import Api, unary
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc
from raftstore.api.validate import check_delete, check_put, check_range, check_txn
from raftstore.applier import (
    encode_compact,
    encode_delete_range,
    encode_put,
    encode_txn,
    is_txn_readonly,
    is_txn_serializable,
)


class KVService(rpc_pb2_grpc.KVServicer):
    def __init__(self, api: Api) -> None:
        self.api = api

    @unary("KV")
    async def Range(
        self, request: pb.RangeRequest, context: grpc.aio.ServicerContext
    ) -> pb.RangeResponse:
        check_range(request)
        if not request.serializable:
            # Linearizable: everything committed before this call is applied here first.
            await self.api.read_barrier()
        resp = self.api.state.range(request)
        self.api.fill(resp.header)
        return resp

    @unary("KV")
    async def Put(
        self, request: pb.PutRequest, context: grpc.aio.ServicerContext
    ) -> pb.PutResponse:
        check_put(request)
        resp: pb.PutResponse = await self.api.propose(encode_put(request))
        self.api.fill(resp.header)
        return resp

    @unary("KV")
    async def DeleteRange(
        self, request: pb.DeleteRangeRequest, context: grpc.aio.ServicerContext
    ) -> pb.DeleteRangeResponse:
        check_delete(request)
        resp: pb.DeleteRangeResponse = await self.api.propose(encode_delete_range(request))
        self.api.fill(resp.header)
        return resp

    @unary("KV")
    async def Txn(
        self, request: pb.TxnRequest, context: grpc.aio.ServicerContext
    ) -> pb.TxnResponse:
        check_txn(request)
        if is_txn_readonly(request):
            # As etcd: a transaction that only reads is served from local state, after a
            # read barrier unless every range in it is serializable.
            if not is_txn_serializable(request):
                await self.api.read_barrier()
            resp = self.api.state.txn_readonly(request)
        else:
            resp = await self.api.propose(encode_txn(request))
        self.api.fill(resp.header)
        return resp

    @unary("KV")
    async def Compact(
        self, request: pb.CompactionRequest, context: grpc.aio.ServicerContext
    ) -> pb.CompactionResponse:
        # ``physical`` needs no wait: compaction is done when the command is applied.
        resp: pb.CompactionResponse = await self.api.propose(encode_compact(request))
        self.api.fill(resp.header)
        return resp
