"""etcd's RPC error table, in one place (etcd: ``api/v3rpc/rpctypes/error.go`` + ``util.go``).

Every error a client can see leaves the server as a gRPC status whose code and message are
exactly etcd v3.4's, because etcd clients match on the message text (clientv3 turns
``etcdserver: mvcc: required revision has been compacted`` back into ``ErrCompacted``, etcdctl
prints it verbatim). Lower layers raise their own errors (``MVCCError`` subclasses,
``ConsensusError``); :func:`to_etcd_error` is the only translation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import grpc

from raftstore.consensus import ConsensusError, NoLeaderError, TimeoutError_
from raftstore.mvcc.types import (
    CompactedError,
    FutureRevError,
    KeyNotFoundError,
    LeaseExistsError,
    LeaseNotFoundError,
    LeaseTTLTooLargeError,
    MVCCError,
)

# etcd's embed defaults: --max-request-bytes 1.5 MiB; gRPC accepts that plus 512 KiB of
# framing overhead (etcdserver/api/v3rpc/grpc.go grpcOverheadBytes) before the server's own
# size check answers "request is too large".
MAX_REQUEST_BYTES: Final = 1_572_864
GRPC_OVERHEAD_BYTES: Final = 512 * 1024
MAX_RECV_MESSAGE_BYTES: Final = MAX_REQUEST_BYTES + GRPC_OVERHEAD_BYTES
MAX_SEND_MESSAGE_BYTES: Final = 2**31 - 1  # etcd: math.MaxInt32
MAX_TXN_OPS: Final = 128  # etcd --max-txn-ops


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    """One row of the table: the status a client sees."""

    code: grpc.StatusCode
    message: str


class EtcdError(Exception):
    """An error with its final gRPC status. Raised by request validation in the API layer and
    *returned* (never raised) by the state machine's ``apply``."""

    def __init__(self, spec: ErrorSpec) -> None:
        super().__init__(spec.message)
        self.spec = spec

    @property
    def code(self) -> grpc.StatusCode:
        return self.spec.code

    @property
    def message(self) -> str:
        return self.spec.message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EtcdError) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(self.spec)

    def __repr__(self) -> str:
        return f"EtcdError({self.spec.code.name}, {self.spec.message!r})"


_C = grpc.StatusCode

# Request validation (etcdserver/api/v3rpc/key.go) and apply-time errors.
EMPTY_KEY: Final = ErrorSpec(_C.INVALID_ARGUMENT, "etcdserver: key is not provided")
INVALID_SORT: Final = ErrorSpec(_C.INVALID_ARGUMENT, "etcdserver: invalid sort option")
KEY_NOT_FOUND: Final = ErrorSpec(_C.INVALID_ARGUMENT, "etcdserver: key not found")
VALUE_PROVIDED: Final = ErrorSpec(_C.INVALID_ARGUMENT, "etcdserver: value is provided")
LEASE_PROVIDED: Final = ErrorSpec(_C.INVALID_ARGUMENT, "etcdserver: lease is provided")
TOO_MANY_OPS: Final = ErrorSpec(
    _C.INVALID_ARGUMENT, "etcdserver: too many operations in txn request"
)
DUPLICATE_KEY: Final = ErrorSpec(
    _C.INVALID_ARGUMENT, "etcdserver: duplicate key given in txn request"
)
REQUEST_TOO_LARGE: Final = ErrorSpec(_C.INVALID_ARGUMENT, "etcdserver: request is too large")

# MVCC.
COMPACTED: Final = ErrorSpec(
    _C.OUT_OF_RANGE, "etcdserver: mvcc: required revision has been compacted"
)
FUTURE_REV: Final = ErrorSpec(
    _C.OUT_OF_RANGE, "etcdserver: mvcc: required revision is a future revision"
)
NO_SPACE: Final = ErrorSpec(_C.RESOURCE_EXHAUSTED, "etcdserver: mvcc: database space exceeded")

# Leases.
LEASE_NOT_FOUND: Final = ErrorSpec(_C.NOT_FOUND, "etcdserver: requested lease not found")
LEASE_EXIST: Final = ErrorSpec(_C.FAILED_PRECONDITION, "etcdserver: lease already exists")
LEASE_TTL_TOO_LARGE: Final = ErrorSpec(_C.OUT_OF_RANGE, "etcdserver: too large lease TTL")

# Cluster / consensus.
MEMBER_NOT_FOUND: Final = ErrorSpec(_C.NOT_FOUND, "etcdserver: member not found")
NO_LEADER: Final = ErrorSpec(_C.UNAVAILABLE, "etcdserver: no leader")
NOT_LEADER: Final = ErrorSpec(_C.FAILED_PRECONDITION, "etcdserver: not leader")
TIMEOUT: Final = ErrorSpec(_C.UNAVAILABLE, "etcdserver: request timed out")
STOPPED: Final = ErrorSpec(_C.UNAVAILABLE, "etcdserver: server stopped")
CANCELED: Final = ErrorSpec(_C.CANCELLED, "etcdserver: request canceled")
NOT_CAPABLE: Final = ErrorSpec(_C.UNAVAILABLE, "etcdserver: not capable")
BAD_LEADER_TRANSFEREE: Final = ErrorSpec(_C.FAILED_PRECONDITION,
                                         "etcdserver: bad leader transferee")
LEADER_TRANSFER_TIMEOUT: Final = ErrorSpec(
    _C.UNAVAILABLE, "etcdserver: request timed out, leader transfer took too long")
WATCH_CANCELED: Final = ErrorSpec(_C.CANCELLED, "etcdserver: watch canceled")

# Not etcd's: a command this member cannot decode (a newer member's op, a corrupt entry).
BAD_COMMAND: Final = ErrorSpec(_C.INTERNAL, "raftstore: cannot apply command")

_MVCC: Final[dict[type[MVCCError], ErrorSpec]] = {
    CompactedError: COMPACTED,
    FutureRevError: FUTURE_REV,
    LeaseNotFoundError: LEASE_NOT_FOUND,
    LeaseExistsError: LEASE_EXIST,
    KeyNotFoundError: KEY_NOT_FOUND,
    LeaseTTLTooLargeError: LEASE_TTL_TOO_LARGE,
}

_BY_MESSAGE: Final[dict[str, ErrorSpec]] = {
    spec.message: spec for spec in (NO_LEADER, TIMEOUT, STOPPED, NOT_LEADER, CANCELED,
                                    LEADER_TRANSFER_TIMEOUT)
}


def to_etcd_error(exc: BaseException) -> EtcdError | None:
    """The client-visible error for ``exc``; None when ``exc`` is not one of ours (a bug: the
    caller answers UNKNOWN and logs it)."""
    if isinstance(exc, EtcdError):
        return exc
    if isinstance(exc, MVCCError):
        for cls in type(exc).__mro__:
            spec = _MVCC.get(cls)
            if spec is not None:
                return EtcdError(spec)
        return None
    if isinstance(exc, NoLeaderError):
        return EtcdError(NO_LEADER)
    if isinstance(exc, TimeoutError_):
        return EtcdError(TIMEOUT)
    if isinstance(exc, ConsensusError):
        known = _BY_MESSAGE.get(exc.message)
        return EtcdError(known if known else ErrorSpec(_C.UNAVAILABLE, exc.message))
    return None
