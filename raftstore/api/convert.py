"""Conversions between the MVCC store's value types and etcd's protobuf messages."""

from __future__ import annotations

from raftstore.api.pb import kv_pb2
from raftstore.mvcc.types import Event, EventType, KeyValue


def kv_to_pb(kv: KeyValue, *, keys_only: bool = False) -> kv_pb2.KeyValue:
    return kv_pb2.KeyValue(
        key=kv.key,
        create_revision=kv.create_revision,
        mod_revision=kv.mod_revision,
        version=kv.version,
        value=b"" if keys_only else kv.value,
        lease=kv.lease,
    )


def event_to_pb(ev: Event, *, prev_kv: bool) -> kv_pb2.Event:
    kind = kv_pb2.Event.DELETE if ev.type == EventType.DELETE else kv_pb2.Event.PUT
    out = kv_pb2.Event(type=kind, kv=kv_to_pb(ev.kv))
    if prev_kv and ev.prev_kv is not None:
        out.prev_kv.CopyFrom(kv_to_pb(ev.prev_kv))
    return out


def range_end(raw: bytes) -> bytes | None:
    """etcd's wire convention to the store's: empty means "the key alone" (None); b"\\0" (every
    key >= key) and ordinary ends pass through."""
    return raw if raw else None
