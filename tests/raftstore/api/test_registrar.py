"""How the servicers reach grpc's server (raftstore/api/server.py's ``_Registrar``)."""

from __future__ import annotations

from typing import Any

from raftstore.api.pb import rpc_pb2_grpc
from raftstore.api.server import _Registrar


class _Recorder:
    def __init__(self) -> None:
        self.generic: list[Any] = []
        self.registered: list[Any] = []

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self.generic.extend(handlers)

    def add_registered_method_handlers(self, service: str, handlers: Any) -> None:
        self.registered.append(service)


def test_handlers_are_generic_only() -> None:
    """grpc.aio takes each call with ``asyncio.wait`` over one pending future per registered
    method: registering none keeps that to one future (docs/benchmarks.md, eighth session)."""
    server = _Recorder()
    reg = _Registrar(server)  # type: ignore[arg-type]
    rpc_pb2_grpc.add_KVServicer_to_server(rpc_pb2_grpc.KVServicer(), reg)  # type: ignore[no-untyped-call]
    rpc_pb2_grpc.add_WatchServicer_to_server(rpc_pb2_grpc.WatchServicer(), reg)  # type: ignore[no-untyped-call]
    assert server.registered == []
    names = {h.service_name() for h in server.generic}
    assert names == {"etcdserverpb.KV", "etcdserverpb.Watch"}
