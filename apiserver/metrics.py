"""Every Prometheus metric of the apiserver, declared once, with upstream's names and labels
so that dashboards built for the upstream API server work. Other modules import these objects;
``/metrics`` renders the default registry."""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram

from storage.metrics import (  # noqa: F401 - re-exported
    ETCD_REQUEST_DURATION,
    TERMINATED_WATCHERS,
    WATCH_CACHE_CAPACITY,
    WATCH_CACHE_EVENTS_RECEIVED,
    WATCH_CACHE_RESOURCE_VERSION,
)

_LATENCY_BUCKETS: Final = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20,
    30, 45, 60,
)

REQUEST_TOTAL: Final = Counter(
    "apiserver_request_total",
    "Counter of apiserver requests broken out for each verb, dry run value, group, version, "
    "resource, scope, component, and HTTP response code.",
    ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component",
     "code"],
)
REQUEST_DURATION: Final = Histogram(
    "apiserver_request_duration_seconds",
    "Response latency distribution in seconds for each verb, dry run value, group, version, "
    "resource, subresource, scope and component.",
    ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"],
    buckets=_LATENCY_BUCKETS,
)
CURRENT_INFLIGHT: Final = Gauge(
    "apiserver_current_inflight_requests",
    "Maximal number of currently used inflight request limit of this apiserver per request "
    "kind in last second.",
    ["request_kind"],  # "readOnly" | "mutating"
)
STORAGE_OBJECTS: Final = Gauge(
    "apiserver_storage_objects",
    "Number of stored objects at the time of last check split by kind.",
    ["resource"],
)
REGISTERED_WATCHERS: Final = Gauge(
    "apiserver_registered_watchers",
    "Number of currently registered watchers for a given resources",
    ["group", "kind"],
)
WATCH_EVENTS_TOTAL: Final = Counter(
    "apiserver_watch_events_total",
    "Number of events sent in watch clients",
    ["group", "kind"],
)
REQUESTED_DEPRECATED_APIS: Final = Gauge(
    "apiserver_requested_deprecated_apis",
    "Gauge of deprecated APIs that have been requested, broken out by API group, version, "
    "resource, subresource, and removed_release.",
    ["group", "version", "resource", "subresource", "removed_release"],
)
