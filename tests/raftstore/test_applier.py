"""EtcdStateMachine: apply.go semantics, determinism, snapshots."""

from __future__ import annotations

import msgpack
import pytest

from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.validate import check_txn
from raftstore.applier import (
    EtcdStateMachine,
    encode_compact,
    encode_delete_range,
    encode_lease_grant,
    encode_lease_keepalive,
    encode_lease_revoke,
    encode_publish,
    encode_put,
    encode_txn,
)
from raftstore.errors import (
    COMPACTED,
    DUPLICATE_KEY,
    KEY_NOT_FOUND,
    LEASE_EXIST,
    LEASE_NOT_FOUND,
    EtcdError,
)
from raftstore.mvcc.kvstore import KVStore

C = pb.Compare


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def sm() -> EtcdStateMachine:
    return EtcdStateMachine(KVStore(), clock=Clock())


def put(key: bytes, value: bytes = b"v", **kw: object) -> bytes:
    return encode_put(pb.PutRequest(key=key, value=value, **kw))  # type: ignore[arg-type]


def test_envelope_is_msgpack_with_the_etcd_request() -> None:
    env = msgpack.unpackb(put(b"k", b"v", lease=5), raw=False)
    assert env["v"] == 1 and env["op"] == "put"
    assert pb.PutRequest.FromString(env["req"]) == pb.PutRequest(key=b"k", value=b"v", lease=5)
    env = msgpack.unpackb(encode_publish(7, "n", ["http://a"]), raw=False)
    assert env == {"v": 1, "op": "publish", "member_id": 7, "name": "n",
                   "client_urls": ["http://a"]}
    with pytest.raises(ValueError):
        encode_lease_grant(pb.LeaseGrantRequest(TTL=5))


def test_bad_commands_return_errors_and_change_nothing() -> None:
    s = sm()
    for cmd in (b"\xc1garbage", msgpack.packb({"op": "nope"}), msgpack.packb({"op": "put"})):
        r = s.apply(cmd)
        assert isinstance(r, EtcdError)
    assert s.store.rev == 1


def test_put_flags() -> None:
    s = sm()
    assert isinstance(s.apply(put(b"k", ignore_value=True)), EtcdError)
    assert s.apply(put(b"k", ignore_value=True)) == EtcdError(KEY_NOT_FOUND)
    s.apply(encode_lease_grant(pb.LeaseGrantRequest(ID=9, TTL=10)))
    s.apply(put(b"k", b"v1", lease=9))
    r = s.apply(put(b"k", b"", ignore_value=True, prev_kv=True))
    assert isinstance(r, pb.PutResponse) and r.prev_kv.value == b"v1"
    kv = s.range(pb.RangeRequest(key=b"k")).kvs[0]
    assert (kv.value, kv.lease, kv.version) == (b"v1", 0, 2)  # lease dropped, value kept
    s.apply(put(b"k", b"v2", lease=9))
    s.apply(put(b"k", b"v3", ignore_lease=True))
    kv = s.range(pb.RangeRequest(key=b"k")).kvs[0]
    assert (kv.value, kv.lease) == (b"v3", 9)
    assert s.apply(put(b"x", lease=10)) == EtcdError(LEASE_NOT_FOUND)


def test_txn_atomic_and_one_revision() -> None:
    s = sm()
    s.apply(put(b"a", b"1"))
    bad = pb.TxnRequest(success=[
        pb.RequestOp(request_put=pb.PutRequest(key=b"a", value=b"2")),
        pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=b"a")),
        pb.RequestOp(request_range=pb.RangeRequest(key=b"a", revision=1)),  # compacted below
    ])
    s.apply(encode_compact(pb.CompactionRequest(revision=2)))
    assert s.apply(encode_txn(bad)) == EtcdError(COMPACTED)
    assert s.store.rev == 2 and s.range(pb.RangeRequest(key=b"a")).kvs[0].value == b"1"
    good = pb.TxnRequest(
        compare=[C(key=b"a", target=C.VALUE, result=C.EQUAL, value=b"1")],
        success=[
            pb.RequestOp(request_put=pb.PutRequest(key=b"a", value=b"2")),
            pb.RequestOp(request_put=pb.PutRequest(key=b"b", value=b"2")),
            pb.RequestOp(request_range=pb.RangeRequest(key=b"a", range_end=b"c")),
        ],
    )
    r = s.apply(encode_txn(good))
    assert isinstance(r, pb.TxnResponse) and r.succeeded and r.header.revision == 3
    assert [kv.mod_revision for kv in r.responses[2].response_range.kvs] == [3, 3]


@pytest.mark.parametrize(
    ("target", "field", "result", "value", "want"),
    [
        (C.VERSION, "version", C.EQUAL, 2, True),
        (C.VERSION, "version", C.GREATER, 1, True),
        (C.VERSION, "version", C.LESS, 2, False),
        (C.CREATE, "create_revision", C.EQUAL, 2, True),
        (C.MOD, "mod_revision", C.NOT_EQUAL, 3, False),
        (C.MOD, "mod_revision", C.LESS, 4, True),
        (C.VALUE, "value", C.GREATER, b"a", True),
        (C.VALUE, "value", C.EQUAL, b"b", True),
        (C.LEASE, "lease", C.EQUAL, 0, True),
    ],
)
def test_compares(target: int, field: str, result: int, value: object, want: bool) -> None:
    s = sm()
    s.apply(put(b"k", b"a"))
    s.apply(put(b"k", b"b"))
    cmp = C(key=b"k", target=target, result=result, **{field: value})  # type: ignore[arg-type]
    r = s.apply(encode_txn(pb.TxnRequest(compare=[cmp])))
    assert isinstance(r, pb.TxnResponse) and r.succeeded is want


def test_range_compare_needs_every_key() -> None:
    s = sm()
    s.apply(put(b"r/1", b"x"))
    s.apply(put(b"r/2", b"y"))
    cmp = C(key=b"r/", range_end=b"r0", target=C.VALUE, result=C.EQUAL, value=b"x")
    assert not s.txn_readonly(pb.TxnRequest(compare=[cmp])).succeeded
    cmp = C(key=b"r/", range_end=b"r0", target=C.CREATE, result=C.GREATER, create_revision=1)
    assert s.txn_readonly(pb.TxnRequest(compare=[cmp])).succeeded


def test_delete_and_compact_responses() -> None:
    s = sm()
    s.apply(put(b"d1"))
    s.apply(put(b"d2"))
    r = s.apply(encode_delete_range(pb.DeleteRangeRequest(key=b"d", range_end=b"e",
                                                          prev_kv=True)))
    assert isinstance(r, pb.DeleteRangeResponse) and r.deleted == 2 and len(r.prev_kvs) == 2
    c = s.apply(encode_compact(pb.CompactionRequest(revision=3)))
    assert isinstance(c, pb.CompactionResponse) and c.header.revision == 4


def test_leases() -> None:
    clock = Clock()
    s = EtcdStateMachine(KVStore(), clock=clock)
    g = s.apply(encode_lease_grant(pb.LeaseGrantRequest(ID=5, TTL=10)))
    assert isinstance(g, pb.LeaseGrantResponse) and (g.ID, g.TTL) == (5, 10)
    assert s.apply(encode_lease_grant(pb.LeaseGrantRequest(ID=5, TTL=10))) == EtcdError(
        LEASE_EXIST)
    s.apply(put(b"lk", lease=5))
    clock.t += 8
    k = s.apply(encode_lease_keepalive(pb.LeaseKeepAliveRequest(ID=5)))
    assert isinstance(k, pb.LeaseKeepAliveResponse) and k.TTL == 10
    clock.t += 8
    assert s.read(lambda st: st.lessor.expired(s.now())) == []
    r = s.apply(encode_lease_revoke(pb.LeaseRevokeRequest(ID=5)))
    assert isinstance(r, pb.LeaseRevokeResponse) and r.header.revision == 3
    assert not s.range(pb.RangeRequest(key=b"lk")).kvs
    assert s.apply(encode_lease_revoke(pb.LeaseRevokeRequest(ID=5))) == EtcdError(
        LEASE_NOT_FOUND)


def test_snapshot_restore_roundtrip_and_determinism() -> None:
    cmds = [put(b"a", b"1"), put(b"b", b"2"), encode_publish(1, "n1", ["http://c:1"]),
            encode_lease_grant(pb.LeaseGrantRequest(ID=3, TTL=30)), put(b"c", lease=3),
            encode_delete_range(pb.DeleteRangeRequest(key=b"a"))]
    one, two = sm(), sm()
    for cmd in cmds:
        one.apply(cmd)
        two.apply(cmd)
    assert one.snapshot() == two.snapshot()
    three = sm()
    three.restore(one.snapshot())
    assert three.snapshot() == one.snapshot()
    assert three.member_attributes() == {1: ("n1", ["http://c:1"])}
    assert three.range(pb.RangeRequest(key=b"\0", range_end=b"\0")) == one.range(
        pb.RangeRequest(key=b"\0", range_end=b"\0"))


def test_duplicate_key_rules() -> None:
    def op_put(k: bytes) -> pb.RequestOp:
        return pb.RequestOp(request_put=pb.PutRequest(key=k, value=b"v"))

    def op_del(k: bytes, end: bytes = b"") -> pb.RequestOp:
        return pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=k, range_end=end))

    def dup(*ops: pb.RequestOp) -> bool:
        try:
            check_txn(pb.TxnRequest(success=list(ops)))
        except EtcdError as e:
            assert e.spec == DUPLICATE_KEY
            return True
        return False

    assert dup(op_put(b"a"), op_put(b"a"))
    assert not dup(op_put(b"a"), op_put(b"b"))
    assert dup(op_del(b"a", b"c"), op_put(b"b"))
    assert not dup(op_del(b"a"), op_put(b"b"))
    nested = pb.RequestOp(request_txn=pb.TxnRequest(success=[op_put(b"a")]))
    assert dup(nested, op_put(b"a"))
    assert dup(op_del(b"a", b"b"), nested)


def test_duplicate_key_intervals_as_etcd_checks_them() -> None:
    """etcd 3.4's checkIntervals compares the literal range_end: [key, "\\0") is empty, not
    "every key >= key" as in a range read. Each case answered so by a real etcd 3.4."""

    def op_put(k: bytes) -> pb.RequestOp:
        return pb.RequestOp(request_put=pb.PutRequest(key=k, value=b"v"))

    def op_del(k: bytes, end: bytes = b"") -> pb.RequestOp:
        return pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=k, range_end=end))

    def nested(*ops: pb.RequestOp) -> pb.RequestOp:
        return pb.RequestOp(request_txn=pb.TxnRequest(success=list(ops)))

    def dup(*ops: pb.RequestOp) -> bool:
        try:
            check_txn(pb.TxnRequest(success=list(ops)))
        except EtcdError as e:
            assert e.spec == DUPLICATE_KEY
            return True
        return False

    assert not dup(op_del(b"a", b"\0"), op_put(b"b"))
    assert not dup(op_del(b"a", b"\0"), op_put(b"zzz"))
    assert not dup(nested(op_del(b"a", b"\0")), op_put(b"b"))
    assert not dup(nested(op_put(b"b")), op_del(b"a", b"\0"))
    assert not dup(op_del(b"\0", b"\0"), op_put(b"p"))
    assert not dup(op_del(b"b", b"\0"), op_put(b"\0"))
    assert not dup(op_del(b"b", b"a"), op_put(b"b"))
    assert not dup(op_del(b"b", b"b"), op_put(b"b"))
    assert not dup(op_del(b"b"), op_put(b"b\0"))
    assert not dup(op_del(b"a", b"\0\0"), op_put(b"\0"))
    assert dup(op_del(b"a", b"c"), op_put(b"b"))
    assert dup(op_del(b"\0"), op_put(b"\0"))
    assert dup(op_del(b"\0", b"\0\0"), op_put(b"\0"))


def test_txn_inner_header_revisions_as_etcd() -> None:
    """Inner headers as a real etcd 3.4 answered the same transactions at revision 1."""

    def r(k: bytes) -> pb.RequestOp:
        return pb.RequestOp(request_range=pb.RangeRequest(key=k))

    def p(k: bytes) -> pb.RequestOp:
        return pb.RequestOp(request_put=pb.PutRequest(key=k, value=b"v"))

    def d(k: bytes) -> pb.RequestOp:
        return pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=k))

    def t(*ops: pb.RequestOp) -> pb.RequestOp:
        return pb.RequestOp(request_txn=pb.TxnRequest(success=list(ops)))

    def revs(resp: pb.TxnResponse) -> list[object]:
        out: list[object] = []
        for op in resp.responses:
            kind = op.WhichOneof("response")
            inner = getattr(op, kind)
            if kind == "response_txn":
                assert inner.HasField("header") and inner.header == pb.ResponseHeader()
                out.append(revs(inner))
            else:
                out.append(inner.header.revision)
        return out

    s = sm()
    resp = s.apply(encode_txn(pb.TxnRequest(success=[d(b"nothing")])))
    assert isinstance(resp, pb.TxnResponse)
    assert (resp.header.revision, revs(resp)) == (1, [1])
    resp = s.apply(encode_txn(pb.TxnRequest(success=[
        r(b"p1"), d(b"nothing"), r(b"p1"), p(b"p1"), r(b"p1"), d(b"nothing"),
        t(r(b"p1"), d(b"nothing")), t(p(b"p2")),
    ])))
    assert isinstance(resp, pb.TxnResponse)
    assert (resp.header.revision, revs(resp)) == (2, [1, 1, 1, 2, 2, 2, [2, 2], [2]])
    resp = s.apply(encode_txn(pb.TxnRequest(success=[t(r(b"p1"), d(b"nothing")), d(b"zz")])))
    assert isinstance(resp, pb.TxnResponse)
    assert (resp.header.revision, revs(resp)) == (2, [[2, 2], 2])
    resp = s.txn_readonly(pb.TxnRequest(success=[r(b"p1"), t(r(b"p1"))]))
    assert (resp.header.revision, revs(resp)) == (2, [2, [2]])
    # A delete that deletes something, then a delete of nothing: both at the new revision.
    resp = s.apply(encode_txn(pb.TxnRequest(success=[d(b"p1"), d(b"nothing")])))
    assert isinstance(resp, pb.TxnResponse)
    assert (resp.header.revision, revs(resp)) == (3, [3, 3])
