"""A raftstore member's own surfaces on a real three-member cluster: /health, /metrics, and
hostile bytes on the gRPC port (compared with a real etcd where etcd defines the answer)."""

from __future__ import annotations

import json
import urllib.request

import grpc
import pytest

from raftstore.api.pb import rpc_pb2
from raftstore.launcher import Cluster


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_health_on_every_member(raftstore_cluster: Cluster) -> None:
    for m in raftstore_cluster.members:
        status, body = _get(m.metrics_url + "/health")
        assert status == 200, body
        assert json.loads(body) == {"health": "true", "reason": ""}


def test_metrics_exposes_raft_and_store_state(raftstore_cluster: Cluster) -> None:
    ch = grpc.insecure_channel(raftstore_cluster.endpoints[0])
    put = ch.unary_unary(
        "/etcdserverpb.KV/Put",
        request_serializer=rpc_pb2.PutRequest.SerializeToString,
        response_deserializer=rpc_pb2.PutResponse.FromString,
    )
    put(rpc_pb2.PutRequest(key=b"/member-test/metrics", value=b"v"), timeout=10)
    ch.close()
    status, body = _get(raftstore_cluster.members[0].metrics_url + "/metrics")
    assert status == 200
    values = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    assert values["etcd_server_term"] >= 1
    assert not any(name.endswith("_created") for name in values)  # etcd has none
    assert values["etcd_server_has_leader"] == 1
    assert values["etcd_server_leader_changes_seen_total"] >= 1
    assert values["etcd_server_proposals_applied_total"] >= 1
    assert values["etcd_mvcc_current_revision"] >= 2
    assert "etcd_mvcc_compact_revision" in values
    assert values["etcd_debugging_mvcc_keys_total"] >= 1
    assert any(
        k.startswith("grpc_server_handled_total{") and 'grpc_method="Put"' in k for k in values
    )
    assert any(k.startswith("grpc_server_handling_seconds_bucket{") for k in values)


def _raw_call(endpoint: str, method: str, payload: bytes) -> grpc.StatusCode:
    ch = grpc.insecure_channel(endpoint)
    call = ch.unary_unary(method, request_serializer=None, response_deserializer=None)
    try:
        call(payload, timeout=10)
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()  # type: ignore[no-any-return]
    finally:
        ch.close()


@pytest.mark.parametrize(
    ("method", "payload"),
    [
        ("/etcdserverpb.KV/Put", b"\xff\xff\xff\xff\xff"),  # truncated varint field
        ("/etcdserverpb.KV/Range", b"\x0a\xff\x01abc"),  # length beyond the message
        ("/etcdserverpb.KV/NoSuchMethod", b""),
        ("/etcdserverpb.NoSuchService/Get", b""),
    ],
)
def test_hostile_bytes_same_code_as_etcd(
    raftstore_cluster: Cluster, etcd_cluster: Cluster, method: str, payload: bytes
) -> None:
    ours = _raw_call(raftstore_cluster.endpoints[0], method, payload)
    theirs = _raw_call(etcd_cluster.endpoints[0], method, payload)
    assert ours == theirs
    assert ours != grpc.StatusCode.OK
    # The member is unharmed: it still answers.
    ch = grpc.insecure_channel(raftstore_cluster.endpoints[0])
    rng = ch.unary_unary(
        "/etcdserverpb.KV/Range",
        request_serializer=rpc_pb2.RangeRequest.SerializeToString,
        response_deserializer=rpc_pb2.RangeResponse.FromString,
    )
    assert rng(rpc_pb2.RangeRequest(key=b"x"), timeout=10).header.revision >= 1
    ch.close()


@pytest.mark.parametrize("kind", ["raftstore", "etcd"])
def test_move_leader(cluster_factory, kind: str) -> None:  # type: ignore[no-untyped-def]
    """``etcdctl move-leader`` (rolling restarts move leadership away first): the leader hands
    over to the member named and answers once it leads; a follower refuses, as etcd's does.
    raftstore answered UNIMPLEMENTED."""
    cluster = cluster_factory(kind, nodes=3)
    ctl = cluster.ctl

    def statuses() -> list[dict]:  # type: ignore[type-arg]
        out = json.loads(ctl.check("endpoint", "status", "-w", "json"))
        return [e["Status"] for e in out]

    first = statuses()
    leader = first[0]["leader"]
    target = next(s["header"]["member_id"] for s in first if s["header"]["member_id"] != leader)
    out = ctl.check("move-leader", f"{target:x}")
    assert out.strip() == f"Leadership transferred from {leader:x} to {target:x}"
    assert {s["leader"] for s in statuses()} == {target}
    follower = next(i for i, s in enumerate(statuses()) if s["header"]["member_id"] != target)
    with grpc.insecure_channel(cluster.endpoints[follower]) as ch:
        move = ch.unary_unary(
            "/etcdserverpb.Maintenance/MoveLeader",
            request_serializer=rpc_pb2.MoveLeaderRequest.SerializeToString,
            response_deserializer=rpc_pb2.MoveLeaderResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as ei:
            move(rpc_pb2.MoveLeaderRequest(targetID=leader), timeout=10)
    assert (ei.value.code(), ei.value.details()) == (  # type: ignore[attr-defined]
        grpc.StatusCode.FAILED_PRECONDITION, "etcdserver: not leader")
    res = ctl("move-leader", "123")
    assert not res.ok and "etcdserver: bad leader transferee" in res.stderr, res


def test_a_member_with_a_damaged_journal_refuses_to_start(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Through the command line: a flipped bit in an entry the member had synced stops the
    start with a message (exit status 1), and the journal is left as it was."""
    import struct

    from raftstore.launcher import RaftstoreCluster

    cluster = RaftstoreCluster(tmp_path, nodes=1).start()
    try:
        for i in range(20):
            cluster.ctl.check("put", f"k{i}", f"v{i}")
        cluster.stop()  # SIGTERM: the journal is synced and its mark stored
        journal = cluster.members[0].data_dir / "raft.journal"
        data = bytearray(journal.read_bytes())
        offset = 0
        for _ in range(5):  # to the sixth record
            offset += 24 + struct.unpack_from("<I", data, offset)[0]
        data[offset + 24] ^= 0x08
        journal.write_bytes(bytes(data))
        member = cluster.members[0]
        cluster._spawn(member, "new")
        assert member.proc is not None
        assert member.proc.wait(30) == 1
        assert "is damaged" in member.log_tail(20)
        assert journal.read_bytes() == bytes(data)
    finally:
        cluster.stop()
