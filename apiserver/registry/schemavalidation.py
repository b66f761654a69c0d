"""Validation of kinds served by the schema-driven strategy (no module of their own in
``registry/strategies``): upstream v1.33's rules that users meet most, with its messages
(``pkg/apis/<group>/validation``). ``SchemaStrategy.validate`` runs the function registered
for its (group, kind); a kind without one is checked by the schema and required fields only.

Covered: PodDisruptionBudget, PriorityClass, ResourceQuota, StorageClass, RuntimeClass,
NetworkPolicy (ports). Not yet: Ingress, LimitRange, EndpointSlice, webhook configurations
(docs/types.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from apiserver.api.podspec import parse_quantity
from apiserver.registry import validation as v
from apiserver.registry.strategies import _workload as w
from apiserver.registry.strategy import Object, as_dict, as_list
from apiserver.registry.validation import Cause

Validator = Callable[[Object], list[Cause]]


# -- policy/v1 PodDisruptionBudget (ValidatePodDisruptionBudgetSpec) ---------------------------

_EVICTION_POLICIES: Final = ["AlwaysAllow", "IfHealthyBudget"]


def _go_pdb_spec(spec: dict[str, Any]) -> v.Raw:
    """The spec as Go's %#v prints a PodDisruptionBudgetSpec (pointers as addresses)."""
    fields = []
    for name, key in (("MinAvailable", "minAvailable"), ("Selector", "selector"),
                      ("MaxUnavailable", "maxUnavailable"),
                      ("UnhealthyPodEvictionPolicy", "unhealthyPodEvictionPolicy")):
        kind = {"Selector": "*v1.LabelSelector",
                "UnhealthyPodEvictionPolicy": "*policy.UnhealthyPodEvictionPolicyType"}.get(
            name, "*intstr.IntOrString")
        fields.append(f"{name}:({kind})({'0xc000000000' if key in spec else 'nil'})")
    return v.Raw("policy.PodDisruptionBudgetSpec{" + ", ".join(fields) + "}")


def validate_pdb(obj: Object) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes: list[Cause] = []
    min_a, max_u = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_a is not None and max_u is not None:
        causes.append(v.invalid("spec", _go_pdb_spec(spec),
                                "minAvailable and maxUnavailable cannot be both set"))
    for name, val in (("minAvailable", min_a), ("maxUnavailable", max_u)):
        if val is not None:
            causes += w.validate_int_or_percent(val, f"spec.{name}")
            causes += w.not_more_than_100(val, f"spec.{name}")
    causes += v.validate_label_selector(spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _EVICTION_POLICIES:
        causes.append(v.not_supported("spec.unhealthyPodEvictionPolicy", policy,
                                      _EVICTION_POLICIES))
    return causes


# -- scheduling PriorityClass (ValidatePriorityClass) ------------------------------------------

HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_PRIORITY_CLASSES: Final = {"system-node-critical": 2_000_001_000,
                                  "system-cluster-critical": 2_000_000_000}
_PREEMPTION_POLICIES: Final = ["Never", "PreemptLowerPriority"]


def _known_system_class(name: str, value: Any, global_default: bool) -> str:
    """scheduling.IsKnownSystemPriorityClass's error, or ""."""
    want = SYSTEM_PRIORITY_CLASSES.get(name)
    if want is None:
        return f"{name} is not a known system priority class"
    if value != want:
        return f"value of {name} PriorityClass must be {want}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def validate_priority_class(obj: Object) -> list[Cause]:
    name = str(as_dict(obj.get("metadata")).get("name") or "")
    value = obj.get("value")
    causes: list[Cause] = []
    if name.startswith("system-"):
        err = _known_system_class(name, value, bool(obj.get("globalDefault")))
        if err:
            causes.append(v.forbidden("metadata.name", "priority class names with 'system-' "
                                      f"prefix are reserved for system use only. error: {err}"))
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(v.forbidden("value", "maximum allowed value of a user defined priority "
                                  f"is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in _PREEMPTION_POLICIES:
        causes.append(v.not_supported("preemptionPolicy", policy, _PREEMPTION_POLICIES))
    return causes


# -- core ResourceQuota (ValidateResourceQuotaSpec, the parts users meet) ----------------------

_STANDARD_SCOPES: Final = frozenset({
    "Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
    "CrossNamespacePodAffinity", "VolumeAttributesClass"})
_INTEGER_RESOURCES: Final = frozenset({
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})


def _scopes_value(scopes: list[Any]) -> v.Raw:
    return v.Raw("[]core.ResourceQuotaScope{" + ", ".join(
        v.go_quote(str(s)) for s in scopes) + "}")


def validate_resource_quota(obj: Object) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes: list[Cause] = []
    hard = as_dict(spec.get("hard"))
    for name in sorted(hard):
        field = f"spec.hard[{name}]"
        parsed = parse_quantity(hard[name])
        if parsed is None:
            continue  # the decoder refused it already
        amount = parsed[0]
        if amount < 0:
            causes.append(v.invalid(field, str(hard[name]),
                                    "must be greater than or equal to 0"))
        if (name in _INTEGER_RESOURCES or name.startswith("count/")) \
                and amount != amount.to_integral_value():
            causes.append(v.invalid(field, str(hard[name]), "must be an integer"))
    scopes = as_list(spec.get("scopes"))
    seen = set()
    for scope in scopes:
        if scope not in _STANDARD_SCOPES:
            causes.append(v.invalid("spec.scopes", _scopes_value(scopes), "unsupported scope"))
        elif scope == "BestEffort" and any(
                k != "pods" and not k.startswith("count/") for k in hard):
            # a BestEffort pod requests no compute resources: only the pod count applies
            causes.append(v.invalid("spec.scopes", _scopes_value(scopes),
                                    "unsupported scope applied to resource"))
        seen.add(scope)
    for pair in (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")):
        if seen.issuperset(pair):
            causes.append(v.invalid("spec.scopes", _scopes_value(scopes), "conflicting scopes"))
    return causes


# -- storage StorageClass, node RuntimeClass ----------------------------------------------------

_RECLAIM_POLICIES: Final = ["Delete", "Retain"]
_BINDING_MODES: Final = ["Immediate", "WaitForFirstConsumer"]


def validate_storage_class(obj: Object) -> list[Cause]:
    causes: list[Cause] = []
    provisioner = obj.get("provisioner")
    if not provisioner:
        causes.append(v.required("provisioner"))
    elif isinstance(provisioner, str):
        causes += [v.invalid("provisioner", provisioner, e)
                   for e in v.qualified_name_errors(provisioner)]
    policy = obj.get("reclaimPolicy")
    if policy is not None and policy not in _RECLAIM_POLICIES:
        causes.append(v.not_supported("reclaimPolicy", policy, _RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is not None and mode not in _BINDING_MODES:
        causes.append(v.not_supported("volumeBindingMode", mode, _BINDING_MODES))
    return causes


def validate_runtime_class(obj: Object) -> list[Cause]:
    handler = obj.get("handler")
    if not handler:
        return [v.required("handler")]
    if not isinstance(handler, str):
        return []
    return [v.invalid("handler", handler, e) for e in v.dns1123_label_errors(handler)]


# -- networking NetworkPolicy (ports and protocols) ---------------------------------------------

_PROTOCOLS: Final = ["SCTP", "TCP", "UDP"]
_PORT_RANGE_MSG: Final = "must be between 1 and 65535, inclusive"


def _validate_policy_ports(ports: list[Any], field: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, p in enumerate(ports):
        port = as_dict(p)
        f = f"{field}[{i}]"
        proto = port.get("protocol")
        if proto is not None and proto not in _PROTOCOLS:
            causes.append(v.not_supported(f"{f}.protocol", proto, _PROTOCOLS))
        num, end = port.get("port"), port.get("endPort")
        if isinstance(num, int) and not isinstance(num, bool):
            if not 1 <= num <= 65535:
                causes.append(v.invalid(f"{f}.port", num, _PORT_RANGE_MSG))
            if isinstance(end, int) and end < num:
                causes.append(v.invalid(f"{f}.endPort", end,
                                        "must be greater than or equal to `port`"))
        elif end is not None:
            causes.append(v.invalid(f"{f}.endPort", end,
                                    "may not be specified when `port` is non-numeric"
                                    if num is not None else
                                    "may not be specified when `port` is not specified"))
        if isinstance(end, int) and not 1 <= end <= 65535:
            causes.append(v.invalid(f"{f}.endPort", end, _PORT_RANGE_MSG))
    return causes


def validate_network_policy(obj: Object) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes = v.validate_label_selector(spec.get("podSelector"), "spec.podSelector")
    for direction in ("ingress", "egress"):
        for i, rule in enumerate(as_list(spec.get(direction))):
            causes += _validate_policy_ports(as_list(as_dict(rule).get("ports")),
                                             f"spec.{direction}[{i}].ports")
    return causes


VALIDATORS: Final[dict[tuple[str, str], Validator]] = {
    ("policy", "PodDisruptionBudget"): validate_pdb,
    ("scheduling.plat.io", "PriorityClass"): validate_priority_class,
    ("", "ResourceQuota"): validate_resource_quota,
    ("storage.plat.io", "StorageClass"): validate_storage_class,
    ("node.plat.io", "RuntimeClass"): validate_runtime_class,
    ("networking.plat.io", "NetworkPolicy"): validate_network_policy,
}
