"""Prometheus metrics of a raftstore member, one registry per process.

Names follow etcd's where etcd has one (``etcd_server_*``, ``etcd_mvcc_*``,
``grpc_server_*``) so existing dashboards read them unchanged.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)

# Neither upstream nor etcd exposes prometheus_client's ``*_created`` series.
disable_created_metrics()  # type: ignore[no-untyped-call]

REGISTRY: Final = CollectorRegistry(auto_describe=True)

RAFT_TERM: Final = Gauge("etcd_server_term", "The current raft term.", registry=REGISTRY)
HAS_LEADER: Final = Gauge(
    "etcd_server_has_leader", "1 if a leader exists, 0 if not.", registry=REGISTRY
)
IS_LEADER: Final = Gauge(
    "etcd_server_is_leader", "1 if this member is the leader, 0 if not.", registry=REGISTRY
)
LEADER_CHANGES: Final = Counter(
    "etcd_server_leader_changes_seen", "Leader changes seen by this member.", registry=REGISTRY
)
APPLIED_INDEX: Final = Gauge(
    "etcd_server_proposals_applied_total", "The raft index applied on this member.",
    registry=REGISTRY,
)
COMMITTED_INDEX: Final = Gauge(
    "etcd_server_proposals_committed_total", "The raft index committed.", registry=REGISTRY
)
PROPOSALS_FAILED: Final = Counter(
    "etcd_server_proposals_failed", "Proposals that failed (no leader, timeout).",
    registry=REGISTRY,
)
DB_KEYS: Final = Gauge("etcd_debugging_mvcc_keys_total", "Live keys in the store.",
                       registry=REGISTRY)
REVISION: Final = Gauge("etcd_mvcc_current_revision", "The store's current revision.",
                        registry=REGISTRY)
COMPACT_REVISION: Final = Gauge(
    "etcd_mvcc_compact_revision", "The store's last compacted revision.", registry=REGISTRY
)
WATCHERS: Final = Gauge("etcd_debugging_mvcc_watcher_total", "Active watchers.",
                        registry=REGISTRY)
READ_POINTS: Final = Counter(
    "raftstore_read_points",
    "Linearizable read points, by how they were reached: read_index (a heartbeat round with"
    " the followers) or log (a barrier entry, when no read index could be had quickly).",
    ["path"], registry=REGISTRY,
)
JOURNAL_SYNCS: Final = Counter(
    "raftstore_journal_fsyncs", "fdatasync calls on the raft journal (group commits).",
    registry=REGISTRY,
)
GRPC_HANDLED: Final = Counter(
    "grpc_server_handled_total", "RPCs completed on the server, by method and code.",
    ["grpc_service", "grpc_method", "grpc_code"], registry=REGISTRY,
)
GRPC_LATENCY: Final = Histogram(
    "grpc_server_handling_seconds", "Latency of unary RPCs by method.",
    ["grpc_service", "grpc_method"], registry=REGISTRY,
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
GC_PAUSE: Final = Histogram(
    "raftstore_gc_pause_seconds", "Pauses of Python's cyclic garbage collector, by generation.",
    ["generation"], registry=REGISTRY,
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1),
)
JOURNAL_SYNC_SECONDS: Final = Histogram(
    "etcd_disk_wal_fsync_duration_seconds", "Latency of the raft journal's fdatasync.",
    registry=REGISTRY,
    buckets=(0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1, 2),
)
