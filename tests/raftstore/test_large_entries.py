"""Large log entries on a real three-member raftstore cluster.

pysyncobj sends an entry of 64 KiB or more in chunks and labelled the last one by the
command's length instead of the pickled entry's, so for sizes just under a multiple of 64 KiB
(and most large binary values, whose pickle is longer still) followers unpickled a truncated
entry and failed their tick (raftstore/replication.py, _SyncingTransport._label_chunk)."""

from __future__ import annotations

import random
import time

import grpc

from raftstore.api.pb import rpc_pb2 as pb
from raftstore.api.pb import rpc_pb2_grpc
from raftstore.launcher import Cluster

PREFIX = b"/large-entries/"


def _stubs(cluster: Cluster) -> tuple[list[grpc.Channel], list[rpc_pb2_grpc.KVStub],
                                      list[rpc_pb2_grpc.MaintenanceStub]]:
    opts = [("grpc.max_receive_message_length", 256 << 20),
            ("grpc.max_send_message_length", 8 << 20)]
    chans = [grpc.insecure_channel(ep, options=opts) for ep in cluster.endpoints]
    return (chans, [rpc_pb2_grpc.KVStub(c) for c in chans],
            [rpc_pb2_grpc.MaintenanceStub(c) for c in chans])


def test_entries_near_chunk_boundaries_reach_every_member_intact(
    raftstore_cluster: Cluster,
) -> None:
    members = raftstore_cluster.members
    log_offsets = [m.log_path.stat().st_size for m in members]
    rnd = random.Random(131072)
    values = {PREFIX + b"q%03d" % d: b"q" * (131072 - d) for d in range(0, 160, 3)}
    for i, size in enumerate((70_000, 100_000, 131_000, 300_000, 1_000_000)):
        values[PREFIX + b"bin%d" % i] = rnd.randbytes(size)
    chans, kvs, maint = _stubs(raftstore_cluster)
    try:
        last = 0
        for key, value in values.items():
            last = kvs[0].Put(pb.PutRequest(key=key, value=value), timeout=20).header.revision
        deadline = time.monotonic() + 20
        for kv in kvs:
            while kv.Range(pb.RangeRequest(key=b"x", serializable=True),
                           timeout=10).header.revision < last:
                assert time.monotonic() < deadline, "a member did not catch up"
                time.sleep(0.1)
        hashes = set()
        for kv, mt in zip(kvs, maint, strict=True):
            got = kv.Range(pb.RangeRequest(key=PREFIX, range_end=PREFIX[:-1] + b"0",
                                           serializable=True), timeout=20)
            assert {x.key: x.value for x in got.kvs} == values
            hashes.add(mt.HashKV(pb.HashKVRequest(revision=last), timeout=20).hash)
        assert len(hashes) == 1
    finally:
        for c in chans:
            c.close()
    for m, offset in zip(members, log_offsets, strict=True):
        with open(m.log_path, "rb") as f:
            f.seek(offset)
            log = f.read().decode(errors="replace")
        assert "raft tick failed" not in log, f"{m.name}: {log[-3000:]}"
        assert "Traceback" not in log, f"{m.name}: {log[-3000:]}"
