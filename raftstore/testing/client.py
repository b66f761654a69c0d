"""A small synchronous etcd v3 gRPC client for tests and fault injection.

One :class:`Client` per member endpoint (no load balancing, no retries): fault tests need to
know exactly which member answered and what failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, cast

import grpc

from raftstore.api.pb import rpc_pb2, rpc_pb2_grpc

DEFAULT_DEADLINE: Final = 5.0


def prefix_end(prefix: bytes) -> bytes:
    """etcd's range end for "every key starting with prefix"."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyValue:
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int


class Client:
    def __init__(self, endpoint: str, *, deadline: float = DEFAULT_DEADLINE) -> None:
        self.endpoint = endpoint
        self.deadline = deadline
        self.channel = grpc.insecure_channel(endpoint)
        # the generated stubs are untyped: keep them as Any at this one boundary
        pb: Any = rpc_pb2_grpc
        self.kv: Any = pb.KVStub(self.channel)
        self.maintenance: Any = pb.MaintenanceStub(self.channel)
        self.cluster: Any = pb.ClusterStub(self.channel)
        self.lease: Any = pb.LeaseStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def put(self, key: bytes, value: bytes, *, deadline: float | None = None) -> int:
        """Put; returns the revision of the write. Raises grpc.RpcError."""
        resp = self.kv.Put(rpc_pb2.PutRequest(key=key, value=value),
                           timeout=deadline or self.deadline)
        return int(resp.header.revision)

    def get(self, key: bytes, *, serializable: bool = False,
            deadline: float | None = None) -> KeyValue | None:
        kvs, _ = self.range(key, serializable=serializable, deadline=deadline)
        return kvs[0] if kvs else None

    def range(self, key: bytes, range_end: bytes = b"", *, serializable: bool = False,
              revision: int = 0, limit: int = 0,
              deadline: float | None = None) -> tuple[list[KeyValue], int]:
        """Range; returns (kvs, header revision). Linearizable unless ``serializable``."""
        resp = self.kv.Range(
            rpc_pb2.RangeRequest(key=key, range_end=range_end, serializable=serializable,
                                 revision=revision, limit=limit),
            timeout=deadline or self.deadline,
        )
        kvs = [KeyValue(key=kv.key, value=kv.value, create_revision=kv.create_revision,
                        mod_revision=kv.mod_revision, version=kv.version, lease=kv.lease)
               for kv in resp.kvs]
        return kvs, int(resp.header.revision)

    def prefix(self, prefix: bytes, *, serializable: bool = False,
               deadline: float | None = None) -> dict[bytes, bytes]:
        kvs, _ = self.range(prefix, prefix_end(prefix), serializable=serializable,
                            deadline=deadline)
        return {kv.key: kv.value for kv in kvs}

    def status(self, *, deadline: float | None = None) -> rpc_pb2.StatusResponse:
        resp = self.maintenance.Status(rpc_pb2.StatusRequest(), timeout=deadline or self.deadline)
        return cast(rpc_pb2.StatusResponse, resp)

    def hash_kv(self, revision: int = 0, *,
                deadline: float | None = None) -> rpc_pb2.HashKVResponse:
        resp = self.maintenance.HashKV(rpc_pb2.HashKVRequest(revision=revision),
                                       timeout=deadline or self.deadline)
        return cast(rpc_pb2.HashKVResponse, resp)

    def revision(self, *, serializable: bool = False) -> int:
        _, rev = self.range(b"\0no-such-key", serializable=serializable)
        return rev
