"""The default strategy of a kind without a specific one, driven by the resources table and
the v1.33 schema: scope, names and short names from the table; a ``status`` sub-resource makes
the main resource keep the stored status; generation tracking for the kinds upstream bumps
``metadata.generation`` on; the name rule of the kind (``apiserver.api.names``); top-level JSON
shape checks from the schema.

``strategy_class(resource, base)`` builds the class the catalog instantiates: ``base`` is a
specific strategy (its own settings win) or ``SchemaStrategy``.
"""

from __future__ import annotations

from typing import Any, Final

from apiserver import selectors
from apiserver.api import names, schema
from apiserver.api.resources import Resource
from apiserver.registry import kinddefaults, schemavalidation
from apiserver.registry.strategy import Object, Strategy
from apiserver.registry.validation import Cause

# Kinds whose upstream strategy sets metadata.generation to 1 on create and bumps it when
# what the user asks for changes (spec, or the whole object for kinds without a spec).
GENERATION_KINDS: Final = frozenset({
    ("apps", "Deployment"), ("apps", "DaemonSet"), ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"), ("", "ReplicationController"), ("batch", "Job"),
    ("batch", "CronJob"), ("policy", "PodDisruptionBudget"),
    ("networking.plat.io", "NetworkPolicy"), ("networking.plat.io", "Ingress"),
    ("networking.plat.io", "IngressClass"),
    ("apiextensions.plat.io", "CustomResourceDefinition"),
    ("flowcontrol.apiserver.plat.io", "FlowSchema"),
    ("flowcontrol.apiserver.plat.io", "PriorityLevelConfiguration"),
    ("admissionregistration.plat.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.plat.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.plat.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.plat.io", "ValidatingWebhookConfiguration"),
    ("discovery.plat.io", "EndpointSlice"),
})
_SKIP: Final = frozenset({"apiVersion", "kind", "metadata", "status"})


def _go_type(node: schema.Node) -> str:
    """The Go type name the decoder prints for a top-level field ("" when unchecked)."""
    ref = node.get("$ref")
    target = schema.resolve(node)
    t = target.get("type")
    if t == "object" and ref:
        parts = str(ref).split(".")
        return f"{parts[-2]}.{parts[-1]}"
    if t == "string" and not target.get("format"):
        return "string"
    if t == "boolean":
        return "bool"
    if t == "object":
        add = schema.resolve(target.get("additionalProperties"))
        if add.get("type") == "string" and not add.get("format"):
            return "map[string]string"
        return ""
    if t == "array":
        item_ref = (target.get("items") or {}).get("$ref")
        items = schema.resolve(target.get("items"))
        if items.get("type") == "string" and not items.get("format"):
            return "[]string"
        if item_ref and items.get("type") == "object":
            parts = str(item_ref).split(".")
            return f"[]{parts[-2]}.{parts[-1]}"
    return ""


def typed_fields(group: str, version: str, kind: str) -> dict[str, str]:
    """Top-level fields of the kind and the Go types the decoder enforces on them."""
    node = schema.for_kind(group, version, kind)
    if node is None:
        return {}
    out: dict[str, str] = {}
    for name, prop in (node.get("properties") or {}).items():
        if name in _SKIP:
            continue
        t = _go_type(prop)
        if t:
            out[name] = t
    return out


def _has_spec(group: str, version: str, kind: str) -> bool:
    node = schema.for_kind(group, version, kind)
    return node is not None and "spec" in (node.get("properties") or {})


class SchemaStrategy(Strategy):
    """A kind served with the generic behaviour only (the catalog subclasses it per kind)."""

    # Compare the spec (True) or every field but metadata and status (False) for generation.
    generation_from_spec: bool = True

    def name_errors(self, name: str) -> list[str]:
        return names.rule_for(self.group, self.kind)(name)

    def default(self, obj: Object) -> None:
        kinddefaults.apply(self.group, self.kind, obj)

    def validate(self, obj: Object) -> list[Cause]:
        check = schemavalidation.VALIDATORS.get((self.group, self.kind))
        return check(obj) if check is not None else []

    def prepare_for_update(self, new: Object, old: Object) -> None:
        super().prepare_for_update(new, old)
        if self.subresource or not self.tracks_generation or self.generation_from_spec:
            return

        def body(o: Object) -> dict[str, Any]:
            return {k: val for k, val in o.items()
                    if k not in ("metadata", "status", "kind", "apiVersion")}
        if body(new) != body(old):
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1


def _own(cls: type[Strategy], attr: str) -> Any:
    """``cls.attr`` when set for ``cls``'s own kind: a value inherited from a strategy of
    another kind (a subclass serving a sibling kind) counts as unset."""
    for klass in cls.__mro__:
        if attr in vars(klass):
            return vars(klass)[attr] if getattr(klass, "kind", "") == cls.kind else None
    return None


# Upstream v1.33's registry options, as facts: the stores whose DELETE answers with the
# deleted object rather than a Status (``ReturnDeletedObject: true``; the OpenAPI, and so
# the generated clients, type those responses as the kind), and the strategies whose
# ``AllowCreateOnUpdate`` is true (a PUT to a missing name creates it). Kinds with a
# strategy of their own may set either attribute there too (namespaces, leases, events).
RETURN_DELETED_OBJECT: Final = frozenset({
    ("", "pods"), ("", "services"), ("", "serviceaccounts"), ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"), ("", "podtemplates"), ("", "resourcequotas"),
    ("storage.plat.io", "storageclasses"), ("storage.plat.io", "csidrivers"),
    ("storage.plat.io", "csinodes"), ("storage.plat.io", "volumeattachments"),
})
CREATE_ON_UPDATE: Final = frozenset({
    ("", "services"), ("", "limitranges"), ("", "endpoints"), ("", "events"),
    ("events.plat.io", "events"), ("coordination.plat.io", "leases"),
    ("rbac.authorization.plat.io", "roles"), ("rbac.authorization.plat.io", "rolebindings"),
    ("rbac.authorization.plat.io", "clusterroles"),
    ("rbac.authorization.plat.io", "clusterrolebindings"), ("node.plat.io", "runtimeclasses"),
})


# Field selectors upstream offers for kinds served by the schema-driven strategy
# (certificates/v1 conversion.go: spec.signerName).
FIELD_LABELS: Final = {
    ("certificates.plat.io", "certificatesigningrequests"): ("spec.signerName",),
}


def fill_attrs(res: Resource, base: type[Strategy]) -> dict[str, Any]:
    """Class attributes ``base`` leaves empty, from the table (scope always from the
    table), and the store options above."""
    attrs: dict[str, Any] = {"namespaced": res.namespaced}
    for attr, value in (("resource", res.name), ("singular", res.singular),
                        ("short_names", res.short_names), ("categories", res.categories)):
        if not _own(base, attr):
            attrs[attr] = value
    if (res.group, res.name) in RETURN_DELETED_OBJECT:
        attrs["return_deleted_object"] = True
    if (res.group, res.name) in CREATE_ON_UPDATE:
        attrs["allow_create_on_update"] = True
    labels = FIELD_LABELS.get((res.group, res.name))
    if labels and not _own(base, "field_getters"):
        attrs["field_getters"] = {label: selectors.path_getter(label) for label in labels}
    return attrs


def strategy_class(res: Resource, base: type[Strategy] | None = None) -> type[Strategy]:
    """The class serving ``res``: ``base`` with the table's facts filled in, or a
    ``SchemaStrategy`` for the kind."""
    if base is not None:
        attrs = fill_attrs(res, base)
        if all(getattr(base, k) == val for k, val in attrs.items()):
            return base
        return type(base.__name__, (base,), {**attrs, "__module__": base.__module__})
    attrs = fill_attrs(res, SchemaStrategy)
    has_status = res.subresource("status") is not None
    attrs.update(group=res.group, version=res.version, kind=res.kind, has_status=has_status,
                 tracks_generation=(res.group, res.kind) in GENERATION_KINDS,
                 generation_from_spec=_has_spec(res.group, res.version, res.kind),
                 typed_fields=typed_fields(res.group, res.version, res.kind),
                 __module__=__name__)
    return type(f"{res.kind}SchemaStrategy", (SchemaStrategy,), attrs)


