"""KV through generated stubs against the real grpc.aio server."""

from __future__ import annotations

import grpc
import pytest

from raftstore.api.pb import rpc_pb2 as pb
from tests.raftstore.api.conftest import Server

R = pb.RangeRequest
C = pb.Compare


async def put(s: Server, key: bytes, value: bytes, **kw: object) -> pb.PutResponse:
    return await s.kv.Put(pb.PutRequest(key=key, value=value, **kw))  # type: ignore[arg-type]


async def status_of(coro: object) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as ei:
        await coro  # type: ignore[misc]
    return ei.value.code(), ei.value.details() or ""


async def test_put_range_header_and_revisions(server: Server) -> None:
    r1 = await put(server, b"a", b"1")
    assert r1.header.revision == 2
    assert r1.header.member_id == server.consensus.member_id
    assert r1.header.cluster_id == server.consensus.cluster_id
    assert r1.header.raft_term == 1
    r2 = await put(server, b"a", b"2", prev_kv=True)
    assert r2.prev_kv.value == b"1" and r2.header.revision == 3
    got = await server.kv.Range(R(key=b"a"))
    assert [(kv.key, kv.value, kv.version, kv.create_revision, kv.mod_revision)
            for kv in got.kvs] == [(b"a", b"2", 2, 2, 3)]
    assert got.count == 1 and not got.more and got.header.revision == 3
    old = await server.kv.Range(R(key=b"a", revision=2, serializable=True))
    assert old.kvs[0].value == b"1" and old.header.revision == 3


async def test_prefix_limit_sort_filters(server: Server) -> None:
    for k, v in [(b"p/c", b"x"), (b"p/a", b"z"), (b"p/b", b"y"), (b"q", b"0")]:
        await put(server, k, v)
    await put(server, b"p/a", b"zz")  # p/a: version 2, mod 6
    rng = await server.kv.Range(R(key=b"p/", range_end=b"p0"))
    assert [kv.key for kv in rng.kvs] == [b"p/a", b"p/b", b"p/c"] and rng.count == 3
    lim = await server.kv.Range(R(key=b"p/", range_end=b"p0", limit=2))
    assert [kv.key for kv in lim.kvs] == [b"p/a", b"p/b"] and lim.more and lim.count == 3
    desc = await server.kv.Range(
        R(key=b"p/", range_end=b"p0", sort_order=R.DESCEND, sort_target=R.VALUE, limit=1)
    )
    assert [kv.key for kv in desc.kvs] == [b"p/a"] and desc.more
    # A sort target without an order sorts ascending (etcd).
    by_mod = await server.kv.Range(R(key=b"p/", range_end=b"p0", sort_target=R.MOD))
    assert [kv.key for kv in by_mod.kvs] == [b"p/c", b"p/b", b"p/a"]
    by_ver = await server.kv.Range(
        R(key=b"p/", range_end=b"p0", sort_target=R.VERSION, sort_order=R.DESCEND)
    )
    assert by_ver.kvs[0].key == b"p/a"
    # Filters apply before the limit; count stays the whole range.
    # (p/c created at 2, p/a at 3 and modified at 6, p/b at 4)
    f = await server.kv.Range(R(key=b"p/", range_end=b"p0", min_mod_revision=4, limit=1))
    assert [kv.key for kv in f.kvs] == [b"p/a"] and f.more and f.count == 3
    f2 = await server.kv.Range(R(key=b"p/", range_end=b"p0", max_create_revision=2))
    assert [kv.key for kv in f2.kvs] == [b"p/c"]
    f3 = await server.kv.Range(R(key=b"p/", range_end=b"p0", min_create_revision=3,
                                 max_mod_revision=5))
    assert [kv.key for kv in f3.kvs] == [b"p/b"]
    everything = await server.kv.Range(R(key=b"\0", range_end=b"\0", keys_only=True))
    assert [kv.key for kv in everything.kvs] == [b"p/a", b"p/b", b"p/c", b"q"]
    assert all(kv.value == b"" for kv in everything.kvs)
    counted = await server.kv.Range(R(key=b"p/", range_end=b"p0", count_only=True))
    assert counted.count == 3 and not counted.kvs


async def test_delete_range(server: Server) -> None:
    for k in (b"d/1", b"d/2", b"d/3"):
        await put(server, k, b"v")
    one = await server.kv.DeleteRange(pb.DeleteRangeRequest(key=b"d/1", prev_kv=True))
    assert one.deleted == 1 and [kv.key for kv in one.prev_kvs] == [b"d/1"]
    rest = await server.kv.DeleteRange(pb.DeleteRangeRequest(key=b"d/", range_end=b"d0"))
    assert rest.deleted == 2 and not rest.prev_kvs and rest.header.revision == 6
    none = await server.kv.DeleteRange(pb.DeleteRangeRequest(key=b"d/", range_end=b"d0"))
    assert none.deleted == 0 and none.header.revision == 6


async def test_txn(server: Server) -> None:
    await put(server, b"t/a", b"1")
    await put(server, b"t/b", b"2")
    txn = pb.TxnRequest(
        compare=[C(key=b"t/a", target=C.VALUE, result=C.EQUAL, value=b"1"),
                 C(key=b"t/", range_end=b"t0", target=C.VERSION, result=C.GREATER, version=0)],
        success=[
            pb.RequestOp(request_put=pb.PutRequest(key=b"t/a", value=b"10", prev_kv=True)),
            pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=b"t/b")),
            pb.RequestOp(request_range=R(key=b"t/", range_end=b"t0")),
            pb.RequestOp(request_txn=pb.TxnRequest(
                compare=[C(key=b"t/b", target=C.CREATE, result=C.GREATER, create_revision=0)],
                success=[pb.RequestOp(request_put=pb.PutRequest(key=b"t/c", value=b"c"))],
                failure=[pb.RequestOp(request_put=pb.PutRequest(key=b"t/d", value=b"d"))],
            )),
        ],
        failure=[pb.RequestOp(request_put=pb.PutRequest(key=b"t/fail", value=b"x"))],
    )
    resp = await server.kv.Txn(txn)
    assert resp.succeeded and resp.header.revision == 4  # one revision for the whole txn
    assert resp.responses[0].response_put.prev_kv.value == b"1"
    assert resp.responses[1].response_delete_range.deleted == 1
    assert [kv.value for kv in resp.responses[2].response_range.kvs] == [b"10"]
    # Nested compares see the state before the txn (t/b existed): success branch.
    assert resp.responses[3].response_txn.succeeded
    keys = await server.kv.Range(R(key=b"t/", range_end=b"t0"))
    assert [(kv.key, kv.mod_revision) for kv in keys.kvs] == [(b"t/a", 4), (b"t/c", 4)]
    # Failure branch; compare on a missing key's value always fails.
    resp = await server.kv.Txn(pb.TxnRequest(
        compare=[C(key=b"t/zz", target=C.VALUE, result=C.NOT_EQUAL, value=b"x")],
        failure=[pb.RequestOp(request_range=R(key=b"t/a"))],
    ))
    assert not resp.succeeded and resp.responses[0].response_range.kvs[0].value == b"10"
    assert resp.header.revision == 4  # read-only txn: no new revision
    # mod_revision / lease compares on a missing key compare against 0.
    resp = await server.kv.Txn(pb.TxnRequest(
        compare=[C(key=b"t/none", target=C.MOD, result=C.EQUAL, mod_revision=0),
                 C(key=b"t/none", target=C.LEASE, result=C.EQUAL, lease=0)],
        success=[pb.RequestOp(request_put=pb.PutRequest(key=b"t/none", value=b"new"))],
    ))
    assert resp.succeeded and resp.header.revision == 5


async def test_txn_is_atomic_on_error(server: Server) -> None:
    await put(server, b"x", b"1")
    code, msg = await status_of(server.kv.Txn(pb.TxnRequest(success=[
        pb.RequestOp(request_put=pb.PutRequest(key=b"x", value=b"2")),
        pb.RequestOp(request_put=pb.PutRequest(key=b"y", value=b"2", lease=999)),
    ])))
    assert (code, msg) == (grpc.StatusCode.NOT_FOUND, "etcdserver: requested lease not found")
    got = await server.kv.Range(R(key=b"x"))
    assert got.kvs[0].value == b"1" and got.header.revision == 2


async def test_txn_validation(server: Server) -> None:
    dup = pb.TxnRequest(success=[
        pb.RequestOp(request_put=pb.PutRequest(key=b"k", value=b"1")),
        pb.RequestOp(request_put=pb.PutRequest(key=b"k", value=b"2")),
    ])
    assert await status_of(server.kv.Txn(dup)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "etcdserver: duplicate key given in txn request")
    put_in_del = pb.TxnRequest(success=[
        pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=b"a", range_end=b"z")),
        pb.RequestOp(request_put=pb.PutRequest(key=b"k", value=b"2")),
    ])
    assert (await status_of(server.kv.Txn(put_in_del)))[1] == (
        "etcdserver: duplicate key given in txn request")
    # The then / else branches of a nested txn may put the same key.
    ok = pb.TxnRequest(success=[pb.RequestOp(request_txn=pb.TxnRequest(
        success=[pb.RequestOp(request_put=pb.PutRequest(key=b"k", value=b"1"))],
        failure=[pb.RequestOp(request_put=pb.PutRequest(key=b"k", value=b"2"))],
    ))])
    assert (await server.kv.Txn(ok)).succeeded
    many = pb.TxnRequest(success=[
        pb.RequestOp(request_put=pb.PutRequest(key=b"k%d" % i, value=b"v")) for i in range(129)
    ])
    assert await status_of(server.kv.Txn(many)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "etcdserver: too many operations in txn request")
    empty_cmp = pb.TxnRequest(compare=[C(key=b"")])
    assert (await status_of(server.kv.Txn(empty_cmp)))[1] == "etcdserver: key is not provided"


async def test_errors(server: Server) -> None:
    inv = grpc.StatusCode.INVALID_ARGUMENT
    assert await status_of(put(server, b"", b"v")) == (inv, "etcdserver: key is not provided")
    assert await status_of(server.kv.Range(R(key=b""))) == (
        inv, "etcdserver: key is not provided")
    assert await status_of(server.kv.DeleteRange(pb.DeleteRangeRequest())) == (
        inv, "etcdserver: key is not provided")
    assert await status_of(put(server, b"nokey", b"", ignore_value=True)) == (
        inv, "etcdserver: key not found")
    assert await status_of(put(server, b"k", b"v", ignore_value=True)) == (
        inv, "etcdserver: value is provided")
    assert await status_of(put(server, b"k", b"v", lease=12345)) == (
        grpc.StatusCode.NOT_FOUND, "etcdserver: requested lease not found")
    for i in range(4):
        await put(server, b"c", b"%d" % i)  # revisions 2..5
    await server.kv.Compact(pb.CompactionRequest(revision=4))
    oor = grpc.StatusCode.OUT_OF_RANGE
    compacted = "etcdserver: mvcc: required revision has been compacted"
    assert await status_of(server.kv.Range(R(key=b"c", revision=3))) == (oor, compacted)
    assert (await server.kv.Range(R(key=b"c", revision=4))).kvs[0].value == b"2"
    assert await status_of(server.kv.Compact(pb.CompactionRequest(revision=4))) == (
        oor, compacted)
    assert await status_of(server.kv.Range(R(key=b"c", revision=99))) == (
        oor, "etcdserver: mvcc: required revision is a future revision")
    assert await status_of(server.kv.Compact(pb.CompactionRequest(revision=99))) == (
        oor, "etcdserver: mvcc: required revision is a future revision")
    # Too large: what gRPC refuses outright, and what passes gRPC but not etcd's limit.
    code, msg = await status_of(put(server, b"big", b"x" * (2 * 1024 * 1024)))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert await status_of(put(server, b"big", b"x" * 1_600_000)) == (
        inv, "etcdserver: request is too large")
    assert (await put(server, b"big", b"x" * 1_500_000)).header.revision > 0


async def test_undecodable_request_is_internal_as_in_etcd(server: Server) -> None:
    """Bytes that are not a PutRequest get grpc-go's INTERNAL "error unmarshalling request",
    and the server keeps serving."""
    put = server.channel.unary_unary(
        "/etcdserverpb.KV/Put", request_serializer=None, response_deserializer=None
    )
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await put(b"\x0a\xff\xff\xff\xff\x0f")  # field 1, a length past the end
    assert info.value.code() == grpc.StatusCode.INTERNAL
    assert (info.value.details() or "").startswith("grpc: error unmarshalling request: ")
    resp = await server.kv.Put(pb.PutRequest(key=b"k", value=b"v"))
    assert resp.header.revision == 2


async def test_undecodable_stream_request_is_internal_as_in_etcd(server: Server) -> None:
    """A Watch or LeaseKeepAlive stream whose request bytes are not a message ends as
    grpc-go ends it: INTERNAL, "grpc: failed to unmarshal the received message ..." (it was
    UNKNOWN, with a traceback in the member's log)."""
    for method in ("/etcdserverpb.Watch/Watch", "/etcdserverpb.Lease/LeaseKeepAlive"):
        call = server.channel.stream_stream(
            method, request_serializer=None, response_deserializer=None
        )

        async def requests():  # type: ignore[no-untyped-def]
            yield b"\x0a\xff\xff\xff\xff\x0f"  # field 1, a length past the end

        with pytest.raises(grpc.aio.AioRpcError) as info:
            async for _ in call(requests(), timeout=10):
                pass
        assert info.value.code() == grpc.StatusCode.INTERNAL, method
        assert (info.value.details() or "").startswith(
            "grpc: failed to unmarshal the received message "), method
    resp = await server.kv.Put(pb.PutRequest(key=b"k", value=b"v"))
    assert resp.header.revision == 2


async def test_unknown_sort_option_is_refused(server: Server) -> None:
    """A sort order or target outside the enums is etcd's "invalid sort option" (etcd 3.4
    crashed on an unknown target), alone or inside a transaction."""
    bad = "etcdserver: invalid sort option"
    inv = grpc.StatusCode.INVALID_ARGUMENT
    for kw in ({"sort_order": 3}, {"sort_target": 5}, {"sort_order": 99, "sort_target": 99}):
        assert await status_of(server.kv.Range(R(key=b"a", **kw))) == (inv, bad)  # type: ignore[arg-type]
        txn = pb.TxnRequest(success=[pb.RequestOp(request_range=R(key=b"a", **kw))])  # type: ignore[arg-type]
        assert await status_of(server.kv.Txn(txn)) == (inv, bad)
    resp = await server.kv.Range(R(key=b"a", sort_order=2, sort_target=4))
    assert resp.count == 0


async def test_txn_range_revisions_are_checked_as_etcd(server: Server) -> None:
    """Within a Txn a range's revision is checked before anything is applied, as etcd's
    checkRequestRange does (a differential fuzz against etcd 3.4 found the gaps): a negative
    revision below the compacted one (-1 before any compaction) is compacted, where a lone
    Range reads the current revision; a revision the transaction's own put would create is
    a future one; a branch not taken is not checked."""
    comp = (grpc.StatusCode.OUT_OF_RANGE, "etcdserver: mvcc: required revision has been compacted")
    fut = (grpc.StatusCode.OUT_OF_RANGE, "etcdserver: mvcc: required revision is a future revision")

    def rng(rev: int) -> pb.RequestOp:
        return pb.RequestOp(request_range=R(key=b"a", revision=rev))

    put_z = pb.RequestOp(request_put=pb.PutRequest(key=b"z", value=b"1"))
    never = pb.Compare(key=b"a", target=pb.Compare.VERSION, result=pb.Compare.EQUAL, version=9)
    assert (await server.kv.Range(R(key=b"a", revision=-5))).header.revision == 1
    assert await status_of(server.kv.Txn(pb.TxnRequest(success=[rng(-2)]))) == comp
    assert (await server.kv.Txn(pb.TxnRequest(success=[rng(-1)]))).succeeded
    nested = pb.TxnRequest(success=[pb.RequestOp(request_txn=pb.TxnRequest(success=[rng(-2)]))])
    assert await status_of(server.kv.Txn(nested)) == comp
    assert await status_of(server.kv.Txn(pb.TxnRequest(success=[put_z, rng(2)]))) == fut
    assert await status_of(server.kv.Txn(pb.TxnRequest(success=[put_z, rng(-2)]))) == comp
    assert (await server.kv.Range(R(key=b"z"))).count == 0  # nothing applied
    skipped = pb.TxnRequest(compare=[never], success=[rng(-2)], failure=[put_z])
    assert not (await server.kv.Txn(skipped)).succeeded
    for i in range(3):
        await server.kv.Put(pb.PutRequest(key=b"a", value=b"%d" % i))
    await server.kv.Compact(pb.CompactionRequest(revision=4))
    assert await status_of(server.kv.Txn(pb.TxnRequest(success=[rng(-1)]))) == comp
    assert await status_of(server.kv.Txn(pb.TxnRequest(success=[rng(3)]))) == comp
    ok = await server.kv.Txn(pb.TxnRequest(success=[rng(4)]))
    assert ok.responses[0].response_range.kvs[0].value == b"1"


async def test_txn_checks_puts_before_ranges_as_etcd(server: Server) -> None:
    """etcd checks every put on the branches taken (a kept value needs the key, a lease
    must exist) before any range's revision, whatever their order in the request."""
    gone = (grpc.StatusCode.NOT_FOUND, "etcdserver: requested lease not found")
    missing = (grpc.StatusCode.INVALID_ARGUMENT, "etcdserver: key not found")
    old = pb.RequestOp(request_range=R(key=b"a", revision=-5))
    txn = pb.TxnRequest(success=[old, pb.RequestOp(request_put=pb.PutRequest(key=b"b", lease=9))])
    assert await status_of(server.kv.Txn(txn)) == gone
    keep = pb.RequestOp(request_put=pb.PutRequest(key=b"b", ignore_value=True, lease=9))
    assert await status_of(server.kv.Txn(pb.TxnRequest(success=[old, keep]))) == missing
