"""Assembling the etcd v3 gRPC server of a member, and the leader's lease-expiry loop."""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import TYPE_CHECKING, Any, Final

import grpc
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from raftstore.api import gogo
from raftstore.api.cluster import ClusterService
from raftstore.api.common import Api
from raftstore.api.kv import KVService
from raftstore.api.lease import LeaseService
from raftstore.api.maintenance import MaintenanceService
from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc
from raftstore.api.requireleader import LeaderMonitor
from raftstore.api.watch import WatchService
from raftstore.applier import encode_lease_revoke
from raftstore.consensus import ConsensusError
from raftstore.errors import MAX_RECV_MESSAGE_BYTES, MAX_SEND_MESSAGE_BYTES

if TYPE_CHECKING:
    from raftstore.applier import EtcdStateMachine
    from raftstore.consensus import Consensus

log = logging.getLogger(__name__)

LEASE_CHECK_INTERVAL: Final = 0.5  # seconds between looks for expired leases
MAX_REVOKES_PER_CHECK: Final = 500  # etcd revokes at most 1000 leases a second

_PORTS: weakref.WeakKeyDictionary[grpc.aio.Server, list[int]] = weakref.WeakKeyDictionary()


class _Undecodable:
    """Stands in for a request whose bytes are not a valid message."""

    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error


def _decode_errors(handler: Any) -> Any:
    """A unary handler that answers undecodable request bytes as etcd (grpc-go) does:
    INTERNAL, "grpc: error unmarshalling request: ...", with the words etcd's generated
    Unmarshal gives (``gogo``). grpc's Python server would say UNKNOWN. Streams (Watch,
    LeaseKeepAlive) keep their handler (grpc.aio picks how to run a stream handler by its
    function type, which a wrapper would hide) and get a deserializer that refuses what
    etcd refuses, with etcd's words."""
    if handler.request_deserializer is None:
        return handler
    decode = handler.request_deserializer
    # FromString of the request's message class (every generated handler has one)
    desc = getattr(getattr(decode, "__self__", None), "DESCRIPTOR", None)
    if desc is None:
        return handler
    if handler.stream_stream is not None:
        return handler._replace(request_deserializer=_stream_decoder(decode, desc))
    if handler.unary_unary is None:
        return handler

    def safe(data: bytes) -> Any:
        try:
            msg = decode(data)
        except Exception as exc:  # noqa: BLE001 - any decode failure is the client's
            return _as_etcd_reads(decode, desc, data, str(exc) or type(exc).__name__)
        size = msg.ByteSize()
        msg.DiscardUnknownFields()
        if msg.ByteSize() != size:  # unknown fields: perhaps a known one etcd refuses
            error, _ = gogo.check(desc, data)
            if error is not None:
                return _Undecodable(error)
        return msg

    inner = handler.unary_unary

    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if type(request) is _Undecodable:
            await context.abort(
                grpc.StatusCode.INTERNAL, f"grpc: error unmarshalling request: {request.error}"
            )
        return await inner(request, context)

    return handler._replace(request_deserializer=safe, unary_unary=unary)


def _stream_decoder(decode: Any, desc: Any) -> Any:
    """A stream's request deserializer: bytes etcd refuses raise DecodeError with etcd's
    words, which end the stream as grpc-go ends it (``raftstore.api.common``)."""

    def strict(data: bytes) -> Any:
        try:
            msg = decode(data)
        except DecodeError as exc:
            error, declared = gogo.check(desc, data)
            if error is not None:
                raise DecodeError(error) from None
            try:
                return decode(declared)
            except DecodeError:
                raise exc from None
        size = msg.ByteSize()
        msg.DiscardUnknownFields()
        if msg.ByteSize() != size:
            error, _ = gogo.check(desc, data)
            if error is not None:
                raise DecodeError(error)
        return msg

    return strict


def _as_etcd_reads(decode: Any, desc: Any, data: bytes, python_error: str) -> Any:
    """Bytes Python's protobuf refused: etcd's error for them, or, when etcd reads them
    (e.g. a field number Python does not allow, which etcd skips), the request parsed from
    the fields etcd keeps."""
    error, declared = gogo.check(desc, data)
    if error is not None:
        return _Undecodable(error)
    try:
        return decode(declared)
    except Exception:  # noqa: BLE001 - e.g. a string Python holds to UTF-8
        return _Undecodable(python_error)


class _Registrar:
    """Stands in for the server in the generated ``add_*Servicer_to_server`` functions and
    registers their handlers, wrapped by ``_decode_errors``, on the real server. (A server
    interceptor did the same at the cost of an extra coroutine and handler look-up on every
    call.)"""

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass  # the same handlers come through add_registered_method_handlers

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        # Only as generic handlers, never as grpc's "registered methods": grpc.aio's server
        # keeps one pending request future per registered method and takes each call with
        # ``asyncio.wait`` over all of them (about 25 here), which sets and clears a callback
        # on every one of them per call. With one generic future that was about a third of
        # the Python time of a member's event loop at 64 clients (cProfile); the generic
        # look-up is one dict access. Measured: docs/benchmarks.md, eighth session.
        wrapped = {name: _decode_errors(h) for name, h in handlers.items()}
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service, wrapped),)
        )


async def start_grpc_server(
    *,
    state: EtcdStateMachine,
    consensus: Consensus,
    listen: list[str],
    tls: tuple[bytes, bytes] | None = None,
    leaders: LeaderMonitor | None = None,
) -> grpc.aio.Server:
    """Serve KV, Watch, Lease, Cluster and Maintenance on every "host:port" of ``listen``
    (port 0: any; see ``bound_ports``), with TLS when ``tls`` is (cert PEM, key PEM). Message
    size limits are etcd's defaults. ``leaders`` ends the streams that require a leader when
    there is none (its ``run`` is the caller's to start). Returns the started server (the
    caller stops it)."""
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", MAX_RECV_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_SEND_MESSAGE_BYTES),
            ("grpc.max_concurrent_streams", 2**31 - 1),
        ]
    )
    api = Api(state, consensus, leaders)
    reg = _Registrar(server)
    rpc_pb2_grpc.add_KVServicer_to_server(KVService(api), reg)  # type: ignore[no-untyped-call]
    rpc_pb2_grpc.add_WatchServicer_to_server(WatchService(api), reg)  # type: ignore[no-untyped-call]
    rpc_pb2_grpc.add_LeaseServicer_to_server(LeaseService(api), reg)  # type: ignore[no-untyped-call]
    rpc_pb2_grpc.add_ClusterServicer_to_server(ClusterService(api), reg)  # type: ignore[no-untyped-call]
    rpc_pb2_grpc.add_MaintenanceServicer_to_server(MaintenanceService(api), reg)  # type: ignore[no-untyped-call]
    ports = []
    for addr in listen:
        if tls is not None:
            cert, key = tls
            creds = grpc.ssl_server_credentials([(key, cert)])
            ports.append(server.add_secure_port(addr, creds))
        else:
            ports.append(server.add_insecure_port(addr))
    await server.start()
    _PORTS[server] = ports
    return server


def bound_ports(server: grpc.aio.Server) -> list[int]:
    """The ports ``start_grpc_server`` bound, in the order of ``listen``."""
    return list(_PORTS.get(server, []))


async def run_lease_expiry(
    state: EtcdStateMachine, consensus: Consensus, *, interval: float = LEASE_CHECK_INTERVAL
) -> None:
    """Forever: while this member leads, propose the revocation of every expired lease. On
    becoming leader (a new term) first give every lease its full TTL again, as etcd's
    ``Promote``: followers' deadlines were never authoritative."""
    led_term: int | None = None
    while True:
        await asyncio.sleep(interval)
        try:
            if not consensus.is_leader():
                led_term = None
                continue
            term = consensus.term()
            if term != led_term:
                state.read(lambda s: s.lessor.promote(state.now()))
                led_term = term
                continue
            expired = state.read(lambda s: s.lessor.expired(state.now()))
            for lease_id in expired[:MAX_REVOKES_PER_CHECK]:
                if not consensus.is_leader():
                    break
                # A lease revoked meanwhile answers "not found": harmless.
                await consensus.propose(encode_lease_revoke(pb.LeaseRevokeRequest(ID=lease_id)))
        except ConsensusError as exc:
            log.info("lease expiry: %s", exc.message)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - keep expiring leases
            log.exception("lease expiry failed")
