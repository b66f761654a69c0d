"""Event: core v1 and events.plat.io/v1 (upstream ``pkg/registry/core/event/strategy.go``,
``pkg/apis/core/validation/events.go``, ``pkg/apis/events/v1/conversion.go``).

Both APIs share one store in the core v1 form (``/registry/events/...``). The events API is
served by ``EventsV1Strategy`` over the core form plus ``to_core`` / ``from_core``
conversions done by ``apiserver.registry.converting.ConvertingStore``; its validation is the
strict one upstream applies to requests through events.k8s.io/v1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from apiserver import selectors
from apiserver.registry import validation as v
from apiserver.registry.strategy import GC_UNSUPPORTED, Object, Strategy, as_dict

if TYPE_CHECKING:
    from apiserver.registry.validation import Cause

EVENT_TYPES: Final = ("Normal", "Warning")
LENGTH_LIMIT: Final = 128
NOTE_LENGTH_LIMIT: Final = 1024
# core v1 field -> events.plat.io/v1 field (upstream Convert_core_Event_To_v1_Event)
RENAMES: Final = {
    "involvedObject": "regarding",
    "message": "note",
    "reportingComponent": "reportingController",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
SHARED: Final = ("metadata", "eventTime", "series", "reportingInstance", "action", "reason",
                 "related", "type")
# Fields Go always writes, as their empty values: struct-typed ones (omitempty does not skip
# a struct: times are null, EventSource {}) and strings without omitempty.
CORE_ALWAYS: Final[dict[str, Any]] = {
    "source": {}, "firstTimestamp": None, "lastTimestamp": None, "eventTime": None,
    "reportingComponent": "", "reportingInstance": ""}
V1_ALWAYS: Final[dict[str, Any]] = {
    "eventTime": None, "deprecatedSource": {}, "deprecatedFirstTimestamp": None,
    "deprecatedLastTimestamp": None}


def from_core(obj: Object) -> Object:
    """Core v1 Event -> events.plat.io/v1 Event (kind/apiVersion left to the caller)."""
    out: Object = {}
    for k, val in obj.items():
        if k in ("kind", "apiVersion"):
            out[k] = val
        elif k in RENAMES:
            if k == "reportingComponent" and not val:
                continue  # reportingController is omitempty in events/v1
            out[RENAMES[k]] = val
        elif k in SHARED:
            if k == "reportingInstance" and not val:
                continue
            out[k] = val
    # Go writes these struct-typed fields even when empty (omitempty skips no struct)
    for k, empty in V1_ALWAYS.items():
        if k not in out:
            out[k] = {} if type(empty) is dict else empty
    return out


def to_core(obj: Object) -> Object:
    back = {new: old for old, new in RENAMES.items()}
    out: Object = {}
    for k, val in obj.items():
        if k in ("kind", "apiVersion") or k in SHARED:
            out[k] = val
        elif k in back:
            out[back[k]] = val
    return out


def _too_long(causes: list[Cause], field: str, value: Any, limit: int) -> None:
    if isinstance(value, str) and len(value) > limit:
        causes.append(v.invalid(field, "", f"can have at most {limit} characters"))


def legacy_validate(obj: Object) -> list[Cause]:
    """Upstream legacyValidateEvent (every Event, whichever API it came through)."""
    causes: list[Cause] = []
    ns = str(as_dict(obj.get("metadata")).get("namespace") or "")
    ins = str(as_dict(obj.get("involvedObject")).get("namespace") or "")
    if not obj.get("eventTime"):
        # an event about an object lives in that object's namespace (cluster-scoped objects:
        # "" or "default", for old clients)
        if not ins:
            if ns not in ("", "default"):
                causes.append(v.invalid("involvedObject.namespace", ins,
                                        "does not match event.namespace"))
        elif ns != ins:
            causes.append(v.invalid("involvedObject.namespace", ins,
                                    "does not match event.namespace"))
    else:
        if not ins and ns not in ("default", "platform-system"):
            causes.append(v.invalid("involvedObject.namespace", ins,
                                    "does not match event.namespace"))
        ctl = obj.get("reportingComponent") or ""
        if not ctl:
            causes.append(v.required("reportingController"))
        for e in v.qualified_name_errors(str(ctl)):
            causes.append(v.invalid("reportingController", ctl, e))
        for f in ("reportingInstance", "action", "reason"):
            val = obj.get(f) or ""
            if not val:
                causes.append(v.required(f))
            _too_long(causes, f, val, LENGTH_LIMIT)
        _too_long(causes, "message", obj.get("message"), NOTE_LENGTH_LIMIT)
    for e in v.dns1123_subdomain_errors(ns):
        causes.append(v.invalid("namespace", ns, e))
    return causes


class EventStrategy(Strategy):
    kind = "Event"
    resource = "events"
    singular = "event"
    short_names = ("ev",)
    allow_create_on_update = True
    gc_policy = GC_UNSUPPORTED
    uses_event_ttl = True  # upstream: kept for --event-ttl after each write
    typed_fields = {"involvedObject": "v1.ObjectReference", "source": "v1.EventSource",
                    "series": "v1.EventSeries", "related": "v1.ObjectReference",
                    "reason": "string", "message": "string", "type": "string"}
    field_getters = {
        **{f"involvedObject.{f}": selectors.path_getter(f"involvedObject.{f}")
           for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion",
                     "fieldPath")},
        "reason": selectors.path_getter("reason"),
        "reportingComponent": selectors.path_getter("reportingComponent"),
        "source": selectors.path_getter("source.component"),
        "type": selectors.path_getter("type"),
    }

    def field_label_error(self, label: str) -> str:
        return selectors.core_unsupported(label)

    def default(self, obj: Object) -> None:
        for k, empty in CORE_ALWAYS.items():
            if k not in obj:
                obj[k] = {} if type(empty) is dict else empty

    def name_errors(self, name: str) -> list[str]:
        # core v1 Events skip ObjectMeta validation (backwards compatibility); only the
        # generic path-segment rule applies
        return v.path_segment_errors(name)

    def validate(self, obj: Object) -> list[Cause]:
        return legacy_validate(obj)


class EventsV1Strategy(EventStrategy):
    """events.plat.io/v1: the same objects, strict validation of SPEC 6.2 on create."""

    group = "events.plat.io"
    storage_group = ""
    allow_create_on_update = True
    # upstream's events.k8s.io/v1 field labels, evaluated on the stored core form
    field_getters = {
        **{f"regarding.{f}": selectors.path_getter(f"involvedObject.{f}")
           for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion",
                     "fieldPath")},
        "reason": selectors.path_getter("reason"),
        "reportingController": selectors.path_getter("reportingComponent"),
        "type": selectors.path_getter("type"),
    }

    def name_errors(self, name: str) -> list[str]:
        return v.dns1123_subdomain_errors(name)

    def validate(self, obj: Object) -> list[Cause]:
        causes = legacy_validate(obj)
        if not obj.get("eventTime"):
            causes.append(v.required("eventTime"))
        etype = obj.get("type") or ""
        if etype not in EVENT_TYPES:
            causes.append(v.invalid("type", "", f"has invalid value: {etype}"))
        for core_f, f in (("firstTimestamp", "deprecatedFirstTimestamp"),
                          ("lastTimestamp", "deprecatedLastTimestamp"),
                          ("count", "deprecatedCount")):
            if obj.get(core_f):
                causes.append(v.invalid(f, "", "needs to be unset"))
        src = as_dict(obj.get("source"))
        if src.get("component") or src.get("host"):
            causes.append(v.invalid("deprecatedSource", "", "needs to be unset"))
        series = obj.get("series")
        if isinstance(series, dict):
            count = series.get("count")
            if not isinstance(count, int) or count < 2:
                causes.append(v.invalid("series.count", "", "should be at least 2"))
            if not series.get("lastObservedTime"):
                causes.append(v.required("series.lastObservedTime"))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        # upstream ValidateEventUpdate for events.k8s.io/v1: legacy rules plus immutability
        # of everything but series (and metadata)
        causes = legacy_validate(new)
        for core_f, f in (("involvedObject", "regarding"), ("reason", "reason"),
                          ("message", "note"), ("source", "deprecatedSource"),
                          ("firstTimestamp", "deprecatedFirstTimestamp"),
                          ("lastTimestamp", "deprecatedLastTimestamp"),
                          ("count", "deprecatedCount"), ("type", "type"),
                          ("eventTime", "eventTime"), ("action", "action"),
                          ("related", "related"),
                          ("reportingComponent", "reportingController"),
                          ("reportingInstance", "reportingInstance")):
            if new.get(core_f) != old.get(core_f):
                causes.append(v.immutable(f, v.Raw("")))
        return causes
