"""Event (core v1; upstream ``pkg/registry/core/event/strategy.go`` and
``ValidateEventCreate`` for the v1 API)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiserver import selectors
from apiserver.registry import validation as v
from apiserver.registry.strategy import GC_UNSUPPORTED, Object, Strategy, as_dict

if TYPE_CHECKING:
    from apiserver.registry.validation import Cause

EVENT_TYPES = ["Normal", "Warning"]


class EventStrategy(Strategy):
    kind = "Event"
    resource = "events"
    singular = "event"
    short_names = ("ev",)
    allow_create_on_update = True
    gc_policy = GC_UNSUPPORTED
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

    def validate(self, obj: Object) -> list[Cause]:
        causes: list[Cause] = []
        meta = as_dict(obj.get("metadata"))
        involved = as_dict(obj.get("involvedObject"))
        ns = str(meta.get("namespace") or "")
        ins = str(involved.get("namespace") or "")
        # an event about a namespaced object lives in that object's namespace
        if ins and ns != ins:
            causes.append(v.invalid("involvedObject.namespace", ins,
                                    "does not match event.namespace"))
        etype = obj.get("type")
        if etype and etype not in EVENT_TYPES:
            causes.append(v.not_supported("type", etype, EVENT_TYPES))
        for f in ("reason", "action"):
            val = obj.get(f)
            if val is not None and not isinstance(val, str):
                causes.append(v.type_invalid(f, val, "a string"))
        count = obj.get("count")
        if count is not None and (not isinstance(count, int) or count < 0):
            causes.append(v.invalid("count", count, "must be greater than or equal to 0"))
        return causes
