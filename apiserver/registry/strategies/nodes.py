"""Node (core v1, cluster-scoped; upstream ``pkg/registry/core/node/strategy.go``,
``SetDefaults_NodeStatus`` and ``ValidateNode`` / ``ValidateNodeUpdate``).

Status may be set on create (a node agent registers with its status); afterwards the main
resource keeps the stored status and ``nodes/status`` changes only the status.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any, Final

from apiserver import selectors
from apiserver.registry import validation as v
from apiserver.registry.strategy import Object, Strategy, as_dict, as_list, dict_at
from apiserver.registry.treecopy import deep_copy

if TYPE_CHECKING:
    from apiserver.registry.validation import Cause

TAINT_EFFECTS: Final = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
CIDR_MSG: Final = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
NODE_INFO_FIELDS: Final = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                           "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                           "operatingSystem", "architecture")
ADDRESS_TYPES: Final = ("Hostname", "InternalIP", "ExternalIP", "InternalDNS", "ExternalDNS")


def taint_go(t: dict[str, Any]) -> v.Raw:
    added = t.get("timeAdded")
    ta = "(*v1.Time)(nil)" if not added else f"(*v1.Time)({v.go_quote(str(added))})"
    return v.Raw(f"core.Taint{{Key:{v.go_quote(str(t.get('key') or ''))}, "
                 f"Value:{v.go_quote(str(t.get('value') or ''))}, "
                 f"Effect:{v.go_quote(str(t.get('effect') or ''))}, TimeAdded:{ta}}}")


def validate_taints(taints: Any, field: str) -> list[Cause]:
    """Upstream validateNodeTaints."""
    causes: list[Cause] = []
    seen: dict[str, set[str]] = {}
    for i, t in enumerate(as_list(taints)):
        tf = f"{field}[{i}]"
        t = as_dict(t)
        key = str(t.get("key") or "")
        for e in v.qualified_name_errors(key):
            causes.append(v.invalid(f"{tf}.key", key, e))
        value = str(t.get("value") or "")
        errs = v.label_value_errors(value)
        if errs:
            causes.append(v.invalid(f"{tf}.value", value, ";".join(errs)))
        effect = str(t.get("effect") or "")
        if not effect:
            causes.append(v.required(f"{tf}.effect", ""))
        elif effect not in TAINT_EFFECTS:
            causes.append(v.not_supported(f"{tf}.effect", effect, TAINT_EFFECTS))
        if key in seen.get(effect, set()):
            dup = v.duplicate(tf, taint_go(t))
            dup["message"] += ": taints must be unique by key and effect pair"
            causes.append(dup)
            continue
        seen.setdefault(effect, set()).add(key)
    return causes


def _cidr_ok(s: Any) -> bool:
    try:
        ipaddress.ip_network(str(s), strict=False)
    except ValueError:
        return False
    return "/" in str(s)


class NodeStrategy(Strategy):
    kind = "Node"
    resource = "nodes"
    singular = "node"
    namespaced = False
    short_names = ("no",)
    has_status = True
    # strconv.FormatBool(node.Spec.Unschedulable): "false" when unset
    field_getters = {"spec.unschedulable": selectors.path_getter("spec.unschedulable",
                                                                 missing="false")}

    def field_label_error(self, label: str) -> str:
        return selectors.core_unsupported(label)

    def default(self, obj: Object) -> None:
        spec = dict_at(obj, "spec")
        # v1 podCIDR and podCIDRs name one list (upstream's conversion keeps them in step)
        if spec.get("podCIDR") and not spec.get("podCIDRs"):
            spec["podCIDRs"] = [spec["podCIDR"]]
        elif spec.get("podCIDRs") and isinstance(spec["podCIDRs"], list) \
                and not spec.get("podCIDR"):
            spec["podCIDR"] = spec["podCIDRs"][0]
        st = dict_at(obj, "status")
        if st.get("allocatable") is None and isinstance(st.get("capacity"), dict):
            st["allocatable"] = deep_copy(st["capacity"])
        # struct fields without omitempty: a Node always shows them (zero values)
        de = dict_at(st, "daemonEndpoints")
        ke = dict_at(de, "kubeletEndpoint")
        ke.setdefault("Port", 0)
        info = dict_at(st, "nodeInfo")
        for f in NODE_INFO_FIELDS:
            info.setdefault(f, "")

    def prepare_for_create(self, obj: Object) -> None:
        # nodes may be created with their status (upstream allows every field on create)
        st = obj.get("status")
        super().prepare_for_create(obj)
        if st is not None:
            obj["status"] = st

    def validate(self, obj: Object) -> list[Cause]:
        causes: list[Cause] = []
        spec = as_dict(obj.get("spec"))
        causes += validate_taints(spec.get("taints"), "spec.taints")
        cidrs = as_list(spec.get("podCIDRs"))
        for i, c in enumerate(cidrs):
            if not _cidr_ok(c):
                causes.append(v.invalid(f"spec.podCIDRs[{i}]", c, CIDR_MSG))
        if len(cidrs) > 2:
            causes.append(v.invalid("spec.podCIDRs", v.Raw(_go_list(cidrs)),
                                    "may specify no more than one CIDR for each IP family"))
        elif len(cidrs) == 2 and all(_cidr_ok(c) for c in cidrs):
            a, b = (ipaddress.ip_network(str(c), strict=False).version for c in cidrs)
            if a == b:
                causes.append(v.invalid("spec.podCIDRs", v.Raw(_go_list(cidrs)),
                                        "may specify no more than one CIDR for each IP family"))
        causes += self._validate_status(obj)
        return causes

    def _validate_status(self, obj: Object) -> list[Cause]:
        causes: list[Cause] = []
        st = as_dict(obj.get("status"))
        for i, a in enumerate(as_list(st.get("addresses"))):
            a = as_dict(a)
            t = a.get("type")
            if t and t not in ADDRESS_TYPES:
                causes.append(v.not_supported(f"status.addresses[{i}].type", t,
                                              list(ADDRESS_TYPES)))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes = self.validate(new)
        if self.subresource == "status":
            return causes
        ns, os_ = as_dict(new.get("spec")), as_dict(old.get("spec"))
        if os_.get("podCIDRs") and ns.get("podCIDRs") != os_.get("podCIDRs"):
            causes.append(v.forbidden("spec.podCIDRs",
                                      'node updates may not change podCIDR except from "" to '
                                      "valid"))
        if os_.get("providerID") and ns.get("providerID") != os_.get("providerID"):
            causes.append(v.forbidden("spec.providerID",
                                      'node updates may not change providerID except from "" '
                                      "to valid"))
        return causes


def _go_list(items: list[Any]) -> str:
    return "[]string{" + ", ".join(v.go_quote(str(x)) for x in items) + "}"
