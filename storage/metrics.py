"""Prometheus metrics of the storage layer (upstream names). The apiserver's /metrics renders
them with its own (same default registry)."""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# Neither upstream nor etcd exposes prometheus_client's ``*_created`` series.
disable_created_metrics()  # type: ignore[no-untyped-call]

ETCD_REQUEST_DURATION: Final = Histogram(
    "etcd_request_duration_seconds",
    "Etcd request latency in seconds for each operation and object type.",
    ["operation", "type"],
    buckets=(0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8,
             10, 15, 20, 30, 45, 60),
)
WATCH_CACHE_EVENTS_RECEIVED: Final = Counter(
    "apiserver_watch_cache_events_received_total",
    "Counter of events received in watch cache broken by resource type.",
    ["resource"],
)
WATCH_CACHE_RESOURCE_VERSION: Final = Gauge(
    "apiserver_watch_cache_resource_version",
    "Current resource version of watch cache broken by resource type.",
    ["resource"],
)
WATCH_CACHE_CAPACITY: Final = Gauge(
    "apiserver_watch_cache_capacity",
    "Total capacity of watch cache broken by resource type.",
    ["resource"],
)
TERMINATED_WATCHERS: Final = Counter(
    "apiserver_terminated_watchers_total",
    "Counter of watchers closed due to unresponsiveness broken by resource type.",
    ["resource"],
)
