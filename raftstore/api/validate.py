"""Request checks made before proposing (etcd's ``api/v3rpc/key.go``): a bad request never
reaches the log. Each raises ``EtcdError`` with etcd's status."""

from __future__ import annotations

from typing import Final

from raftstore.api.pb import rpc_pb2 as pb
from raftstore.errors import (
    DUPLICATE_KEY,
    EMPTY_KEY,
    INVALID_SORT,
    KEY_NOT_FOUND,
    LEASE_PROVIDED,
    MAX_TXN_OPS,
    TOO_MANY_OPS,
    VALUE_PROVIDED,
    EtcdError,
)

_SORT_ORDERS: Final = frozenset(pb.RangeRequest.SortOrder.values())
_SORT_TARGETS: Final = frozenset(pb.RangeRequest.SortTarget.values())


def check_range(r: pb.RangeRequest) -> None:
    if not r.key:
        raise EtcdError(EMPTY_KEY)
    # An order or target outside the enums (etcd 3.4 panicked on an unknown target; later
    # versions refuse both, as here).
    if r.sort_order not in _SORT_ORDERS or r.sort_target not in _SORT_TARGETS:
        raise EtcdError(INVALID_SORT)


def check_put(r: pb.PutRequest) -> None:
    if not r.key:
        raise EtcdError(EMPTY_KEY)
    if r.ignore_value and r.value:
        raise EtcdError(VALUE_PROVIDED)
    if r.ignore_lease and r.lease:
        raise EtcdError(LEASE_PROVIDED)


def check_delete(r: pb.DeleteRangeRequest) -> None:
    if not r.key:
        raise EtcdError(EMPTY_KEY)


def check_txn(r: pb.TxnRequest, max_ops: int = MAX_TXN_OPS) -> None:
    """Sizes, keys and nested ops (etcd's checkTxnRequest), then put/delete overlaps."""
    _check_txn(r, max_ops)
    _intervals(r.success)
    _intervals(r.failure)


def _check_txn(r: pb.TxnRequest, max_ops: int) -> None:
    opc = max(len(r.compare), len(r.success), len(r.failure))
    if opc > max_ops:
        raise EtcdError(TOO_MANY_OPS)
    for c in r.compare:
        if not c.key:
            raise EtcdError(EMPTY_KEY)
    for op in (*r.success, *r.failure):
        _check_op(op, max_ops - opc)


def _check_op(op: pb.RequestOp, max_ops: int) -> None:
    kind = op.WhichOneof("request")
    if kind == "request_range":
        check_range(op.request_range)
    elif kind == "request_put":
        check_put(op.request_put)
    elif kind == "request_delete_range":
        check_delete(op.request_delete_range)
    elif kind == "request_txn":
        _check_txn(op.request_txn, max_ops)
    else:
        raise EtcdError(KEY_NOT_FOUND)  # etcd answers an empty op so


class _Dels:
    """Delete intervals [start, end), compared as etcd's checkIntervals compares them: with
    adt.StringAffineComparable over the literal bytes. ``range_end`` b"\\0" is *not* +infinity
    there (unlike a range read): [key, "\\0") is empty for every non-empty key, so a
    ``DeleteRange(key, "\\0")`` overlaps no put. A reversed or empty interval overlaps
    nothing either. (etcd's Union of nested intervals skips those ending in "\\0", which are
    empty anyway.)"""

    def __init__(self) -> None:
        self.ivs: list[tuple[bytes, bytes]] = []

    def add(self, r: pb.DeleteRangeRequest) -> None:
        self.ivs.append((r.key, r.range_end or r.key + b"\0"))

    def hits(self, key: bytes) -> bool:
        return any(s <= key < e for s, e in self.ivs)


def _intervals(ops: object) -> tuple[set[bytes], _Dels]:
    """etcd's checkIntervals: a key may be put once per branch and not both put and deleted;
    the then/else branches of a nested txn exclude each other."""
    dels = _Dels()
    for op in ops:  # type: ignore[attr-defined]
        if op.WhichOneof("request") == "request_delete_range":
            dels.add(op.request_delete_range)
    puts: set[bytes] = set()
    for op in ops:  # type: ignore[attr-defined]
        if op.WhichOneof("request") != "request_txn":
            continue
        puts_then, dels_then = _intervals(op.request_txn.success)
        puts_else, dels_else = _intervals(op.request_txn.failure)
        for k in puts_then:
            if k in puts or dels.hits(k):
                raise EtcdError(DUPLICATE_KEY)
            puts.add(k)
        for k in puts_else:
            if (k in puts and k not in puts_then) or dels.hits(k):
                raise EtcdError(DUPLICATE_KEY)
            puts.add(k)
        dels.ivs.extend(dels_then.ivs)
        dels.ivs.extend(dels_else.ivs)
    for op in ops:  # type: ignore[attr-defined]
        if op.WhichOneof("request") != "request_put":
            continue
        k = op.request_put.key
        if k in puts or dels.hits(k):
            raise EtcdError(DUPLICATE_KEY)
        puts.add(k)
    return puts, dels
